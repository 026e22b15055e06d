"""Tests of ``core/engine/_options.py``: options said once, typed and checked: every
constructor, every adapter, every knob.

- Each ``TypedDict`` has exactly the keys of the model it mirrors (``EngineKwargs`` and
  ``EngineOptions``, ``DetectionConfigKwargs`` and ``DetectionConfig``, an adapter's
  ``...Kwargs`` and its pydantic fields), so the typed signature and the runtime check
  cannot drift apart.
- Every public constructor and call exposes them: its ``**`` parameter is
  ``Unpack[...]`` of a ``TypedDict`` holding every engine option and policy knob, and
  no adapter re-declares one as its own parameter (one vocabulary).
- Unknown keywords still raise at runtime, with a suggestion.

That mypy rejects wrong callers is checked by ``scripts/typecheck.sh`` on
``tests/typing/check_options.py``.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import typing
from collections.abc import Callable
from typing import Any, Unpack

import pytest
from langchain_core.language_models import FakeListChatModel
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.agent.workflow.base_agent import WORKFLOW_KWARGS
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import CustomQueryEngine

from tests._fakes import RuleNLI, make_engine
from tests._paths import REPO
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations import TruthLens
from truthlens_integrations.core import (
    BlockedResponseError,
    ConfigError,
    DetectionConfig,
    DetectionConfigKwargs,
    InvalidArgumentError,
    UnknownArgumentError,
)
from truthlens_integrations.core.engine import (
    EngineKwargs,
    EngineOptions,
    GuardKwargs,
    PolicyKnobKwargs,
    PolicyKnobs,
)
from truthlens_integrations.core.engine._options import (
    ENGINE_OPTION_NAMES,
    POLICY_KNOB_NAMES,
    reject_unknown,
)
from truthlens_integrations.core.mitigation import MitigationOptions
from truthlens_integrations.core.models.detection import (
    Detector,
    LoadDetectorKwargs,
    RemoteDetector,
    TransformerDetector,
    load_detector,
)
from truthlens_integrations.core.policy import load_policy
from truthlens_integrations.langchain_adapter import (
    AsyncTruthLensCallbackHandler,
    LLMChatModel,
    RetrievalQualityFilter,
    TruthLensCallbackHandler,
    TruthLensGraphGuard,
    TruthLensMiddleware,
    TruthLensRunnable,
    guard_chain,
    truthlens_callback,
)
from truthlens_integrations.langchain_adapter._compressor import QualityFilterKwargs
from truthlens_integrations.langchain_adapter._llm import LLMChatModelKwargs
from truthlens_integrations.langchain_adapter._runnable import RunnableKwargs
from truthlens_integrations.llamaindex_adapter import (
    TruthLensEvaluator,
    TruthLensFunctionAgent,
    TruthLensNodePostprocessor,
    TruthLensQueryEngine,
)
from truthlens_integrations.llamaindex_adapter._agent import (
    FunctionAgentKwargs,
    TruthLensAgentKwargs,
)
from truthlens_integrations.llamaindex_adapter._postprocessor import NodePostprocessorKwargs

# -- Typed options: every public constructor's keywords are typed, from one definition. ----


GUARD_KEYS = set(ENGINE_OPTION_NAMES) | set(POLICY_KNOB_NAMES)


def keys(typed: Any) -> set[str]:
    """Every key of a ``TypedDict`` (required or not)."""
    return set(typed.__required_keys__) | set(typed.__optional_keys__)


def own(typed: Any) -> set[str]:
    """The keys a ``TypedDict`` adds to the engine options and knobs."""
    return keys(typed) - GUARD_KEYS


# -- each TypedDict mirrors its model ---------------------------------------------------


def test_engine_kwargs_mirror_engine_options() -> None:
    assert keys(EngineKwargs) == set(EngineOptions.model_fields)
    assert keys(EngineKwargs) == set(ENGINE_OPTION_NAMES)
    assert keys(PolicyKnobKwargs) == set(PolicyKnobs.model_fields) == set(POLICY_KNOB_NAMES)
    assert keys(GuardKwargs) == GUARD_KEYS
    assert not (keys(EngineKwargs) & keys(PolicyKnobKwargs))


def test_the_typed_literals_are_the_models() -> None:
    hints = typing.get_type_hints(GuardKwargs)
    assert hints["on_block"] == EngineOptions.model_fields["on_block"].annotation
    for knob in ("mode", "action"):
        assert hints[knob] == PolicyKnobs.model_fields[knob].annotation


def test_detector_kwargs_mirror_the_config_and_the_loaders() -> None:
    assert keys(DetectionConfigKwargs) == set(DetectionConfig.model_fields)
    assert typing.get_type_hints(DetectionConfigKwargs)["aggregation"] == (
        DetectionConfig.model_fields["aggregation"].annotation
    )

    def parameters(init: Callable[..., Any], *skip: str) -> set[str]:
        return set(inspect.signature(init).parameters) - {"self", "config", *skip}

    loading = parameters(TransformerDetector.__init__, "model") | {"strategy"}
    service = parameters(RemoteDetector.__init__, "url", "client")
    assert keys(LoadDetectorKwargs) == keys(DetectionConfigKwargs) | loading | service


def test_adapter_kwargs_mirror_their_fields() -> None:
    runnable = set(TruthLensRunnable.model_fields) - {"engine", "chain"}
    assert keys(RunnableKwargs) == runnable | GUARD_KEYS
    assert keys(NodePostprocessorKwargs) == set(TruthLensNodePostprocessor.model_fields)
    assert keys(QualityFilterKwargs) == set(RetrievalQualityFilter.model_fields)
    assert keys(LLMChatModelKwargs) == set(LLMChatModel.model_fields)  # LangChain's too


# Where a model's field is wider than its keyword argument, on purpose: pydantic cannot
# check a protocol (the engine's ``kind`` check does, at the call), and a list field
# takes any sequence. Any other difference is drift.
WIDER_FIELDS = {
    ("EngineOptions", "detector"),
    ("EngineOptions", "nli"),
    ("EngineOptions", "fact_checker"),
    ("EngineOptions", "claim_checker"),
    ("EngineOptions", "metrics"),
    ("EngineOptions", "tracer"),
    ("EngineOptions", "domain_classifier"),
    ("EngineOptions", "audit_hook"),
    ("TruthLensRunnable", "verification_llms"),
    ("LLMChatModel", "llm"),
}


@pytest.mark.parametrize(
    ("typed", "model"),
    [
        (EngineKwargs, EngineOptions),
        (PolicyKnobKwargs, PolicyKnobs),
        (DetectionConfigKwargs, DetectionConfig),
        (RunnableKwargs, TruthLensRunnable),
        (NodePostprocessorKwargs, TruthLensNodePostprocessor),
        (QualityFilterKwargs, RetrievalQualityFilter),
        (LLMChatModelKwargs, LLMChatModel),
    ],
    ids=lambda x: x.__name__,
)
def test_each_keyword_is_typed_as_its_field(typed: Any, model: Any) -> None:
    hints = typing.get_type_hints(typed)
    differ = {
        (model.__name__, name)
        for name, field in model.model_fields.items()
        if name in hints and hints[name] != field.annotation
    }
    wider = {(m, name) for m, name in WIDER_FIELDS if m == model.__name__}
    assert differ == wider


def test_function_agent_kwargs_mirror_llama_index() -> None:
    # service_manager is in WORKFLOW_KWARGS, but Workflow.__init__ no longer takes it.
    workflow = set(WORKFLOW_KWARGS) - {"service_manager"}
    assert keys(FunctionAgentKwargs) == set(FunctionAgent.model_fields) | workflow
    ours = set(TruthLensFunctionAgent.model_fields) - set(FunctionAgent.model_fields)
    assert own(TruthLensAgentKwargs) == keys(FunctionAgentKwargs) | (ours - {"engine"})
    assert keys(TruthLensAgentKwargs) >= GUARD_KEYS


# -- every public signature exposes them ------------------------------------------------

#: Public constructors and calls that take engine options, and the TypedDict of their **.
TAKES_GUARD_OPTIONS: dict[str, Callable[..., Any]] = {
    "TruthLens.from_config": TruthLens.from_config,
    "TruthLens.derive": TruthLens.derive,
    "TruthLensRunnable": TruthLensRunnable.__init__,
    "TruthLensRunnable.from_config": TruthLensRunnable.from_config,
    "guard_chain": guard_chain,
    "TruthLensCallbackHandler": TruthLensCallbackHandler.__init__,
    "AsyncTruthLensCallbackHandler": AsyncTruthLensCallbackHandler.__init__,
    "truthlens_callback": truthlens_callback,
    "TruthLensMiddleware": TruthLensMiddleware.__init__,
    "TruthLensMiddleware.from_config": TruthLensMiddleware.from_config,
    "TruthLensGraphGuard": TruthLensGraphGuard.__init__,
    "TruthLensQueryEngine": TruthLensQueryEngine.__init__,
    "TruthLensEvaluator": TruthLensEvaluator.__init__,
    "TruthLensFunctionAgent": TruthLensFunctionAgent.__init__,
}


def unpacked(func: Callable[..., Any]) -> Any:
    """The ``TypedDict`` of ``func``'s ``**`` parameter; fails unless it is ``Unpack[...]``."""
    star = [p for p in inspect.signature(func).parameters.values() if p.kind is p.VAR_KEYWORD]
    assert star, f"{func.__qualname__} takes no **keywords"
    hint = typing.get_type_hints(func)[star[0].name]
    assert typing.get_origin(hint) is Unpack, f"{func.__qualname__}: **{star[0].name}: {hint}"
    return typing.get_args(hint)[0]


@pytest.mark.parametrize("name", list(TAKES_GUARD_OPTIONS))
def test_every_adapter_takes_the_one_typed_vocabulary(name: str) -> None:
    func = TAKES_GUARD_OPTIONS[name]
    typed = unpacked(func)
    assert keys(typed) >= GUARD_KEYS
    # one vocabulary: no adapter re-declares an engine option or a knob as its own
    explicit = set(inspect.signature(func).parameters)
    assert not (explicit & GUARD_KEYS), f"{name} re-declares {explicit & GUARD_KEYS}"
    # and its own keywords never collide with the typed ones
    assert not (explicit & keys(typed))


def test_the_engine_and_the_loader_are_typed() -> None:
    assert unpacked(TruthLens.__init__) is EngineKwargs
    assert unpacked(load_detector) is LoadDetectorKwargs
    assert unpacked(TruthLensNodePostprocessor.__init__) is NodePostprocessorKwargs
    assert unpacked(RetrievalQualityFilter.__init__) is QualityFilterKwargs
    assert unpacked(LLMChatModel.__init__) is LLMChatModelKwargs


def test_middleware_from_config_takes_what_the_constructor_takes() -> None:
    def explicit(func: Callable[..., Any], *skip: str) -> dict[str, object]:
        params = inspect.signature(func).parameters.values()
        return {p.name: p.default for p in params if p.name not in skip}

    init = explicit(TruthLensMiddleware.__init__, "self", "engine")
    assert explicit(TruthLensMiddleware.from_config, "policy") == init


PUBLIC_PACKAGES = (
    "truthlens_integrations.core.engine",
    "truthlens_integrations.core.models.detection",
    "truthlens_integrations.langchain_adapter",
    "truthlens_integrations.llamaindex_adapter",
    "truthlens_integrations.serve",
)


def test_service_kwargs_mirror_the_service_block() -> None:
    from truthlens_integrations.core.policy._service import (
        ReplicaKwargs,
        ServiceKwargs,
        ServiceSettings,
    )
    from truthlens_integrations.serve import deploy, service_app, start_local

    own = {"host", "port", "num_cpus"}  # the service functions' own keywords
    assert keys(ReplicaKwargs) == set(ServiceSettings.model_fields) - own
    assert keys(ServiceKwargs) == keys(ReplicaKwargs) | {"num_cpus"}
    # start_local's num_cpus is Ray's (CPUs of this machine), not a replica's
    assert "num_cpus" in inspect.signature(start_local).parameters
    for func in (deploy, service_app):
        assert {"host", "port"} <= set(inspect.signature(func).parameters)


def _public_callables() -> list[tuple[str, Callable[..., Any]]]:
    found: list[tuple[str, Callable[..., Any]]] = []
    for package in PUBLIC_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and not getattr(value, "_is_protocol", False):
                for attr in ("__init__", "from_config"):
                    func = value.__dict__.get(attr)
                    if isinstance(func, classmethod):
                        func = func.__func__
                    if func is not None:
                        found.append((f"{package}.{name}.{attr}", func))
            elif inspect.isfunction(value) and value.__module__.startswith(package):
                found.append((f"{package}.{name}", value))
    return found


def _unpacked(annotation: object) -> bool:
    # a string under `from __future__ import annotations`; the object itself in a module
    # that needs real annotations at runtime (the Ray Serve app)
    return "Unpack[" in str(annotation) or typing.get_origin(annotation) is typing.Unpack


def test_no_public_constructor_takes_untyped_keywords() -> None:
    untyped = [
        f"{name}(**{param.name}: {param.annotation})"
        for name, func in _public_callables()
        for param in inspect.signature(func).parameters.values()
        if param.kind is param.VAR_KEYWORD and not _unpacked(param.annotation)
    ]
    assert not untyped


# -- unknown keywords still raise at runtime ---------------------------------------------


class _Echo(CustomQueryEngine):
    def custom_query(self, query_str: str) -> str:
        return query_str


@pytest.fixture(scope="module")
def engine() -> TruthLens:
    return TruthLens.from_config()  # models load on first use: none is loaded here


BUILDERS: dict[str, Callable[..., Any]] = {
    "TruthLens.from_config": lambda engine, **kw: TruthLens.from_config(**kw),
    "TruthLens.derive": lambda engine, **kw: engine.derive(**kw),
    "TruthLensRunnable": lambda engine, **kw: TruthLensRunnable(engine=engine, **kw),
    "guard_chain": lambda engine, **kw: guard_chain(
        FakeListChatModel(responses=["ok"]), engine=engine, **kw
    ),
    "TruthLensCallbackHandler": TruthLensCallbackHandler,
    "TruthLensMiddleware": TruthLensMiddleware,
    "TruthLensGraphGuard": TruthLensGraphGuard,
    "TruthLensQueryEngine": lambda engine, **kw: TruthLensQueryEngine(_Echo(), engine=engine, **kw),
    "TruthLensEvaluator": TruthLensEvaluator,
    "TruthLensFunctionAgent": lambda engine, **kw: TruthLensFunctionAgent(
        tools=[], llm=MockLLM(), engine=engine, **kw
    ),
}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_untyped_callers_still_get_runtime_errors(engine: TruthLens, name: str) -> None:
    build = BUILDERS[name]
    with pytest.raises(UnknownArgumentError, match="did you mean 'threshold'"):
        build(engine, treshold=0.6)
    with pytest.raises(InvalidArgumentError, match="threshold"):
        build(engine, threshold="high")
    with pytest.raises(InvalidArgumentError, match="blocked_message"):
        build(engine, blocked_message=None)  # None is not "keep the engine's": leave it out
    made = build(engine, threshold=0.25, on_block="raise")
    built = made if isinstance(made, TruthLens) else made.engine
    assert built.on_block == "raise"
    assert built.policy.hallucination.response_threshold == 0.25


def test_names_the_package_never_keeps_are_unknown(engine: TruthLens) -> None:
    # Before the first release nothing is deprecated: an old spelling is an unknown name
    # (with the current one suggested) or a refused value, never silently mapped.
    chat = FakeListChatModel(responses=["ok"])
    with pytest.raises(UnknownArgumentError, match="judge_model"):
        TruthLensMiddleware(engine, judge_model=chat)  # type: ignore[call-arg]
    with pytest.raises(UnknownArgumentError, match="verification_models"):
        TruthLensMiddleware(engine, verification_models=[chat])  # type: ignore[call-arg]
    with pytest.raises(UnknownArgumentError, match="raise_on_block"):
        TruthLens(load_policy(None), raise_on_block=True)  # type: ignore[call-arg]
    with pytest.raises(InvalidArgumentError, match="on_block"):
        TruthLensQueryEngine(_Echo(), engine=engine, on_block="response")  # type: ignore[arg-type]


# -- ``max_iterations`` is a policy knob every adapter takes, as docs/engine.md says. ------


ROUTED = REPO / "cookbook" / "policies" / "truthlens_decisions.yaml"


@pytest.fixture(scope="module")
def routed_engine() -> TruthLens:
    return TruthLens.from_config(ROUTED)  # models load on first use: none is loaded here


def _chat() -> FakeListChatModel:
    return FakeListChatModel(responses=["ok"])


ROUTED_BUILDERS: dict[str, Callable[..., Any]] = {
    "TruthLens.from_config": lambda routed_engine, **kw: TruthLens.from_config(ROUTED, **kw),
    "TruthLens.derive": lambda routed_engine, **kw: routed_engine.derive(**kw),
    "TruthLensRunnable": lambda routed_engine, **kw: TruthLensRunnable(
        engine=routed_engine, llm=_chat(), **kw
    ),
    "TruthLensRunnable.from_config": lambda routed_engine, **kw: TruthLensRunnable.from_config(
        ROUTED, llm=_chat(), **kw
    ),
    "guard_chain": lambda routed_engine, **kw: guard_chain(_chat(), engine=routed_engine, **kw),
    "TruthLensCallbackHandler": TruthLensCallbackHandler,
    "TruthLensMiddleware": TruthLensMiddleware,
    "TruthLensMiddleware.from_config": lambda routed_engine, **kw: TruthLensMiddleware.from_config(
        ROUTED, **kw
    ),
    "TruthLensGraphGuard": TruthLensGraphGuard,
    "TruthLensQueryEngine": lambda routed_engine, **kw: TruthLensQueryEngine(
        _Echo(), engine=routed_engine, **kw
    ),
    "TruthLensEvaluator": TruthLensEvaluator,
    "TruthLensFunctionAgent": lambda routed_engine, **kw: TruthLensFunctionAgent(
        tools=[], llm=MockLLM(), engine=routed_engine, **kw
    ),
}


def _engine(made: Any) -> TruthLens:
    return made if isinstance(made, TruthLens) else made.engine


@pytest.mark.parametrize("name", list(ROUTED_BUILDERS))
def test_every_adapter_takes_max_iterations_on_every_route(
    routed_engine: TruthLens, name: str
) -> None:
    built = _engine(ROUTED_BUILDERS[name](routed_engine, mode="standard", max_iterations=1))
    policy = built.policy
    routes = [None, *(d.name for d in policy.decisions)]
    assert len(routes) > 2  # the routed policy: the knob must reach each decision
    for route in routes:
        for mode in ("standard", "premium"):
            assert policy.settings_for(route, mode=mode).max_iterations == 1, (route, mode)


@pytest.mark.parametrize("name", ["TruthLensRunnable", "TruthLensQueryEngine", "TruthLens.derive"])
def test_max_iterations_is_checked_like_every_knob(routed_engine: TruthLens, name: str) -> None:
    for bad in (True, 1.5, "2", -1, 101):
        with pytest.raises(InvalidArgumentError, match="max_iterations"):
            ROUTED_BUILDERS[name](routed_engine, max_iterations=bad)


def test_the_runnable_refines_at_most_max_iterations_rounds() -> None:
    llm = FakeListChatModel(responses=["The Eiffel Tower was built in 1950."])  # never fixes it
    guard = TruthLensRunnable(mode="standard", llm=llm, max_iterations=1)
    out = guard.invoke(
        {
            "question": "When was the Eiffel Tower built?",
            "context": ['{"name": "Eiffel Tower", "built": "1887-1889"}'],
            "answer": "The Eiffel Tower was built in 1950.",
        }
    )
    assert guard.max_iterations == 1
    assert (out["truthlens"]["status"], out["truthlens"]["iterations"]) == (
        "max_iterations_reached",
        1,
    )


# -- Issue 13, engine side: options said once and checked, time budget, poisoned context, redaction.


EIFFEL = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}


# -- 3. unknown arguments, one definition of the options ---------------------------------


def test_unknown_engine_option_is_rejected_with_a_suggestion(detector: Detector) -> None:
    with pytest.raises(UnknownArgumentError, match=r"'threshhold' \(did you mean 'threshold'\?\)"):
        make_engine(detector, threshhold=0.3)
    with pytest.raises(UnknownArgumentError, match="did you mean 'on_block'"):
        TruthLens(load_policy(None), on_blok="raise")
    with pytest.raises(TypeError):  # generic handlers keep working
        make_engine(detector, retreiver=object())


def test_wrong_types_fail_at_the_call(detector: Detector) -> None:
    with pytest.raises(InvalidArgumentError, match="nli"):
        make_engine(detector, nli=42)
    with pytest.raises(InvalidArgumentError, match="redact"):
        make_engine(detector, redact="yes")
    with pytest.raises(InvalidArgumentError, match="threshold"):
        make_engine(detector, threshold=True)
    with pytest.raises(InvalidArgumentError, match="threshold"):
        make_engine(detector, threshold="0.3")
    with pytest.raises(InvalidArgumentError, match="mode"):
        make_engine(detector, mode="gold")
    engine = make_engine(detector)
    with pytest.raises(InvalidArgumentError, match="llm must be a truthlens LLM"):
        engine.guard(**EIFFEL, llm="gpt")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="verification_llms"):
        engine.guard(**EIFFEL, verification_llms="gpt")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="retriever"):
        asyncio.run(engine.aguard(**EIFFEL, retriever=3))  # type: ignore[arg-type]


def test_engine_options_of_from_config_all_take_effect(detector: Detector) -> None:
    options = MitigationOptions(max_tokens=17)
    engine = make_engine(
        detector,
        {"hallucination": {"hallucination_action": "block"}},
        on_block="raise",
        align_quantities=False,
        mitigation_options=options,
    )
    assert engine.on_block == "raise" and not engine.align_quantities
    assert engine.mitigation_options is options
    with pytest.raises(BlockedResponseError):
        engine.guard(**EIFFEL)


def test_policy_knobs_hold_on_every_route(detector: Detector) -> None:
    policy = {
        "decisions": [
            {
                "name": "facts",
                "rules": {"conditions": [{"type": "keyword", "name": "x", "keywords": ["Eiffel"]}]},
                "plugins": [
                    {
                        "type": "hallucination",
                        "configuration": {"response_threshold": 0.2, "mode": "premium"},
                    }
                ],
            }
        ]
    }
    engine = make_engine(detector, policy, mode="standard", threshold=0.99, action="body")
    routed = engine.policy.settings_for("facts")
    assert (routed.mode, routed.threshold, routed.hallucination_action) == (
        "standard",
        0.99,
        "body",
    )
    glob = engine.policy.settings_for(None)
    assert (glob.mode, glob.threshold, glob.hallucination_action) == ("standard", 0.99, "body")
    assert PolicyKnobs().apply(engine.policy) is engine.policy


def test_derive_changes_options_and_shares_loaded_models(detector: Detector) -> None:
    nli = RuleNLI()
    engine = make_engine(detector, nli=nli)
    derived = engine.derive(threshold=0.9, on_block="raise")
    assert derived.detector is engine.detector and derived.nli is nli
    assert derived.on_block == "raise" and derived.policy.hallucination.response_threshold == 0.9
    assert engine.policy.hallucination.response_threshold == 0.5 and engine.on_block == "message"
    with pytest.raises(UnknownArgumentError):
        engine.derive(treshold=0.9)


def test_one_definition_lists_every_engine_option() -> None:
    assert set(ENGINE_OPTION_NAMES) == set(EngineOptions.model_fields)
    assert {"on_block", "align_quantities", "mitigation_options", "redact"} <= set(
        ENGINE_OPTION_NAMES
    )
    with pytest.raises(UnknownArgumentError, match="unknown arguments 'a', 'b'"):
        reject_unknown(["a", "b", "c"], ["c"], "X")


# -- Withheld text and the explicit channel: the audit hook, contradictory options, and the


# -- contradictory options ----------------------------------------------------------------------


def test_redact_with_expose_blocked_text_is_refused(detector: Detector) -> None:
    with pytest.raises(ConfigError, match="redact=True and expose_blocked_text=True"):
        make_engine(detector, redact=True, expose_blocked_text=True)
    make_engine(detector, redact=True)  # each alone is fine
    make_engine(detector, expose_blocked_text=True)


def test_the_adapters_refuse_the_contradiction_too(detector: Detector) -> None:
    from truthlens_integrations.langchain_adapter import TruthLensRunnable
    from truthlens_integrations.llamaindex_adapter import TruthLensEvaluator

    with pytest.raises(ConfigError, match="contradict"):
        TruthLensRunnable(detector=detector, redact=True, expose_blocked_text=True)
    with pytest.raises(ConfigError, match="contradict"):
        TruthLensEvaluator(detector=detector, redact=True, expose_blocked_text=True)
