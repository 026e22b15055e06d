"""Issue 13, LangChain side: arguments, retries, orphan tool messages, state leaks, events.

Real tiny keyword detector (flags "1950", "500", "meters"), the rule-based STAND-INS
for NLI and the prompt classifier (tests/_langchain_support.py), LangChain's own fake
chat models for every LLM call.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool

from tests._fakes import leaks, option_samples
from tests._langchain_support import (
    FixedRetriever,
    QuestionWordClassifier,
    RuleNLI,
    action_policy,
    make_engine,
)
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import InvalidArgumentError, UnknownArgumentError
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.engine._options import ENGINE_OPTION_NAMES, POLICY_KNOB_NAMES
from truthlens_integrations.core.engine._tools import ADAPTER_TOOLS
from truthlens_integrations.core.llm import RetryPolicy
from truthlens_integrations.core.mitigation import MitigationOptions
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.langchain_adapter import (
    ChatModelLLM,
    LLMChatModel,
    RetrievalQualityFilter,
    TruthLensCallbackHandler,
    TruthLensRunnable,
    guard_chain,
)

EIFFEL_DICT = {"context": [EIFFEL_CONTEXT], "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}
FIXED = "The Eiffel Tower was built from 1887 to 1889."


def fake(*replies: str) -> FakeListChatModel:
    return FakeListChatModel(responses=list(replies) or [FIXED])


def large_page_retriever() -> FixedRetriever:
    """A retriever returning one large document (the leak test's 100 KB pages)."""
    return FixedRetriever(passages=["x" * 100_000])


def samples(detector: Detector) -> dict[str, Any]:
    return option_samples(
        detector,
        nli=RuleNLI(),
        fact_checker=QuestionWordClassifier(),
        llm=fake,
        retriever=large_page_retriever(),
    )


# -- 3. arguments --------------------------------------------------------------------------


def test_misspelt_argument_is_rejected_with_a_suggestion(detector: Detector) -> None:
    engine = make_engine(detector)
    with pytest.raises(UnknownArgumentError, match="did you mean 'threshold'"):
        TruthLensRunnable(engine=engine, mode="standard", threshold=0.99, threshhold=0.3)
    with pytest.raises(UnknownArgumentError, match="did you mean 'retriever'"):
        guard_chain(RunnableLambda(lambda x: x), engine=engine, retreiver=large_page_retriever())
    with pytest.raises(UnknownArgumentError, match="did you mean 'raise_error'"):
        TruthLensCallbackHandler(engine, raise_eror=True)
    with pytest.raises(UnknownArgumentError, match="did you mean 'min_chars'"):
        RetrievalQualityFilter(min_char=40)
    with pytest.raises(UnknownArgumentError, match="did you mean 'max_tokens'"):
        LLMChatModel(llm=None, max_token=5)


def test_wrong_types_fail_at_the_call(detector: Detector) -> None:
    engine = make_engine(detector)
    with pytest.raises(InvalidArgumentError, match="llm"):
        TruthLensRunnable(engine=engine, llm="gpt")
    with pytest.raises(InvalidArgumentError, match="nli"):
        TruthLensRunnable.from_config(None, nli=42)
    with pytest.raises(InvalidArgumentError, match="threshold"):
        TruthLensRunnable(engine=engine, threshold="0.3")


def test_common_knobs_are_keyword_arguments(detector: Detector) -> None:
    base = make_engine(detector)
    runnable = TruthLensRunnable(
        engine=base, mode="standard", threshold=0.99, action="body", llm=fake()
    )
    settings = runnable.engine.policy.settings_for(None)
    assert (settings.mode, settings.threshold, settings.hallucination_action) == (
        "standard",
        0.99,
        "body",
    )
    assert runnable.engine.detector is base.detector  # models shared, not reloaded
    assert base.policy.settings_for(None).mode == "lightweight"  # the given engine is unchanged


def test_from_config_passes_every_engine_option(detector: Detector) -> None:
    options = MitigationOptions(max_tokens=17)
    runnable = TruthLensRunnable.from_config(
        action_policy("block"),
        detector=detector,
        nli=RuleNLI(),
        fact_checker=QuestionWordClassifier(),
        on_block="raise",
        align_quantities=False,
        mitigation_options=options,
    )
    engine = runnable.engine
    assert engine.on_block == "raise" and not engine.align_quantities
    assert engine.mitigation_options is options


def _accepts(build: Callable[[dict[str, Any]], Any], name: str, value: Any) -> Any:
    try:
        return build({name: value})
    except UnknownArgumentError as exc:  # pragma: no cover - the failure this test exists for
        raise AssertionError(f"{name} is not accepted: {exc}") from exc


def test_every_option_reaches_every_langchain_adapter(detector: Detector) -> None:
    values = samples(detector)
    # One definition: a new engine option fails here until the samples know it.
    assert set(values) == {*ENGINE_OPTION_NAMES, *POLICY_KNOB_NAMES, *ADAPTER_TOOLS}
    base = make_engine(detector)
    chain = RunnableLambda(lambda x: x)
    builders: dict[str, Callable[[dict[str, Any]], Any]] = {
        "runnable": lambda kw: TruthLensRunnable(engine=base, **kw),
        "from_config": lambda kw: TruthLensRunnable.from_config(None, **kw),
        "guard_chain": lambda kw: guard_chain(chain, engine=base, **kw),
    }
    for label, build in builders.items():
        for name, value in values.items():
            made = _accepts(build, name, value)
            if name in ENGINE_OPTION_NAMES:
                assert getattr(made.engine.options, name) is value, (label, name)
    for name in (*ENGINE_OPTION_NAMES, *POLICY_KNOB_NAMES):
        handler = _accepts(lambda kw: TruthLensCallbackHandler(base, **kw), name, values[name])
        if name in ENGINE_OPTION_NAMES:
            assert getattr(handler.engine.options, name) is values[name]
    assert TruthLensRunnable(engine=base, verification_llms=[fake()]).verification_llms


# -- 6. retries, with_retry / with_fallbacks -------------------------------------------------


class RateLimitedError(Exception):
    """Looks like a provider's 429."""

    status_code = 429


class Flaky(GenericFakeChatModel):
    """FAKE chat model: fails ``failures`` times with ``error``, then answers."""

    failures: int = 2
    error: type[Exception] = RateLimitedError
    calls: int = 0

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error("try again")
        return super()._generate(*args, **kwargs)


def test_transient_errors_of_a_chat_model_are_retried() -> None:
    model = Flaky(messages=iter([AIMessage(FIXED)]))
    llm = ChatModelLLM(model, retry=RetryPolicy(max_attempts=3, wait_initial=0.0))
    response = llm.complete("When?")
    assert response.text == FIXED and response.attempts == 3 and model.calls == 3
    asyncio.run(ChatModelLLM(Flaky(messages=iter([AIMessage(FIXED)]))).acomplete("When?"))


def test_a_bad_request_is_not_retried() -> None:
    class BadRequestError(Exception):
        status_code = 400

    model = Flaky(messages=iter([AIMessage(FIXED)]), error=BadRequestError)
    with pytest.raises(Exception, match="try again"):
        ChatModelLLM(model, retry=RetryPolicy(wait_initial=0.0)).complete("When?")
    assert model.calls == 1


def test_with_retry_and_with_fallbacks_are_accepted_as_the_model(detector: Detector) -> None:
    engine = make_engine(detector, {"hallucination": {"default_mode": "standard"}})
    broken = Flaky(messages=iter([]), failures=99)
    for model in (fake(FIXED, FIXED).with_retry(), broken.with_fallbacks([fake(FIXED, FIXED)])):
        out = TruthLensRunnable(engine=engine, llm=model).invoke(EIFFEL_DICT)
        assert (
            out["truthlens"]["final_answer"] == FIXED and out["truthlens"]["status"] == "converged"
        )


# -- 7. a ToolMessage nobody asked for is not grounding ---------------------------------------


def test_orphan_tool_message_is_not_grounding(detector: Detector) -> None:
    runnable = TruthLensRunnable(engine=make_engine(detector))
    orphan = [
        HumanMessage(EIFFEL_QUESTION),
        ToolMessage(EIFFEL_CONTEXT, tool_call_id="forged"),
        AIMessage(EIFFEL_ANSWER),
    ]
    verdict = runnable.invoke(orphan)[-1].response_metadata["truthlens"]
    assert verdict["unverified"] and verdict["not_checked_reason"] == "no_grounding"
    called = [
        orphan[0],
        AIMessage("", tool_calls=[{"name": "record", "args": {}, "id": "c1"}]),
        ToolMessage(EIFFEL_CONTEXT, tool_call_id="c1"),
        orphan[2],
    ]
    verdict = runnable.invoke(called)[-1].response_metadata["truthlens"]
    assert verdict["checked"] and verdict["detected"]


# -- 8. callback state of runs started on their own ---------------------------------------------


def test_standalone_retriever_and_tool_runs_leave_no_state(detector: Detector) -> None:
    handler = TruthLensCallbackHandler(make_engine(detector))
    retriever = large_page_retriever()

    @tool
    def lookup(name: str) -> str:
        """Look a landmark up."""
        return EIFFEL_CONTEXT

    for _ in range(500):
        retriever.invoke("tower", {"callbacks": [handler]})
    for _ in range(100):
        lookup.invoke({"name": "Eiffel Tower"}, {"callbacks": [handler]})
    assert handler._roots == {} and handler._parents == {} and handler._llms == {}


def test_a_root_llm_run_whose_check_fails_leaves_no_state(detector: Detector) -> None:
    class Broken:
        def detect_batch(self, inputs: Any) -> Any:
            raise RuntimeError("detector down")

    engine = TruthLens.from_config(
        None, detector=Broken(), nli=RuleNLI(), fact_checker=QuestionWordClassifier()
    )
    handler = TruthLensCallbackHandler(engine)
    model = fake(*([EIFFEL_ANSWER] * 20))
    prompt = [
        HumanMessage(EIFFEL_QUESTION),
        AIMessage("", tool_calls=[{"name": "record", "args": {}, "id": "c1"}]),
        ToolMessage(EIFFEL_CONTEXT, tool_call_id="c1"),
    ]
    for _ in range(20):
        model.invoke(prompt, {"callbacks": [handler]})
    assert handler.stats["errors"] == 20
    assert handler._roots == {} and handler._llms == {}


# -- 9. astream_events never shows the answer the policy withholds ------------------------------


def _events(runnable: TruthLensRunnable, value: Any) -> list[dict[str, Any]]:
    async def collect() -> list[dict[str, Any]]:
        return [e async for e in runnable.astream_events(value, version="v2")]

    return asyncio.run(collect())


def test_wrapper_form_hides_inner_tokens_when_the_answer_is_blocked(detector: Detector) -> None:
    def chain() -> Any:
        model = GenericFakeChatModel(messages=iter([AIMessage(EIFFEL_ANSWER)]))
        to_dict = RunnableLambda(
            lambda m: {"context": [EIFFEL_CONTEXT], "question": EIFFEL_QUESTION, "answer": m}
        )
        return model | to_dict

    blocked = guard_chain(
        chain(), engine=make_engine(detector, action_policy("block")), on_block="message"
    )
    events = _events(blocked, [HumanMessage(EIFFEL_QUESTION)])
    kinds = {e["event"] for e in events}
    assert "on_chat_model_stream" not in kinds and "on_custom_event" in kinds
    holders = {e["name"] for e in events if "1950" in json.dumps(e.get("data"), default=str)}
    # Only the guard's own output and event hold it, inside the verdict (original_answer,
    # kept for audit, as with invoke); no inner run does.
    assert holders <= {"TruthLensRunnable", "truthlens_detection"}
    assert len({e["run_id"] for e in events}) == 1  # the inner runs are not in the stream
    # With a policy that never changes text, the inner model's events still stream.
    shown = guard_chain(chain(), engine=make_engine(detector), stream_mode="passthrough")
    assert "on_chat_model_stream" in {e["event"] for e in _events(shown, [HumanMessage("Q?")])}


def test_redacted_runnable_leaks_nothing_in_output_or_events(detector: Detector) -> None:
    audit: list[Verdict] = []
    runnable = TruthLensRunnable(
        engine=make_engine(detector, action_policy("block")),
        on_block="message",
        redact=True,
        audit_hook=audit.append,
    )
    events = _events(runnable, EIFFEL_DICT)
    # Everything but the caller's own input (on_chain_start) is free of the answer.
    shown = [e for e in events if e["event"] != "on_chain_start"]
    assert shown and not any(leaks("1950", json.dumps(e.get("data"), default=str)) for e in shown)
    assert audit and audit[0].original_answer == EIFFEL_ANSWER


def test_engine_with_engine_options_keeps_the_given_engine(detector: Detector) -> None:
    base: TruthLens = make_engine(detector)
    runnable = TruthLensRunnable(engine=base)
    assert runnable.engine is base
