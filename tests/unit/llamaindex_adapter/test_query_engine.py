"""Tests of ``llamaindex_adapter/_query_engine.py``: TruthLensQueryEngine over a real
VectorStoreIndex, with mitigation.

Real parts: the keyword detector (flags "1950", "500", "meters"), LlamaIndex's
VectorStoreIndex / retriever / response synthesizer, a deterministic bag-of-words
embedding. STAND-INS: the LLM (``ScriptedLLM``) and the prompt classifier.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.base.response.schema import (
    AsyncStreamingResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.instrumentation.events.query import QueryEndEvent, QueryStartEvent
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import CustomQueryEngine

from tests import _llamaindex_support as support
from tests._fakes import AlwaysFactual, leaks, option_samples
from tests._llamaindex_support import (
    HISTORY_DOC,
    NO_DATES_ANSWER,
    QUESTION,
    REWRITTEN_QUERY,
    RIGHT_ANSWER,
    VISITOR_DOC,
    WRONG_ANSWER,
    RuleNLI,
    ScriptedLLM,
    make_engine,
)
from truthlens_integrations.core import (
    BlockedResponseError,
    ConfigError,
    InvalidArgumentError,
    InvalidInputError,
    UnknownArgumentError,
)
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.engine._options import ENGINE_OPTION_NAMES, POLICY_KNOB_NAMES
from truthlens_integrations.core.engine._tools import ADAPTER_TOOLS
from truthlens_integrations.core.engine._verdict import REDACTED
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.core.policy._fields import DEFAULT_WARNING_TEMPLATE
from truthlens_integrations.llamaindex_adapter import (
    CoreLLMAsLlamaIndex,
    LlamaIndexLLM,
    TruthLensDetectionEndEvent,
    TruthLensDetectionStartEvent,
    TruthLensEvaluator,
    TruthLensMitigationIterationEvent,
    TruthLensNodePostprocessor,
    TruthLensQueryEngine,
    get_verdict,
)

#: The wrong answer as the body action shows it: the warning names the flagged part.
# -- TruthLensQueryEngine over a real VectorStoreIndex: detection, actions, metadata, events.


WARNED = f'{WRONG_ANSWER}\n\n{DEFAULT_WARNING_TEMPLATE} Not supported by the context: "1950".'


def guarded(
    index,
    detector: Detector,
    *,
    llm: ScriptedLLM | None = None,
    streaming: bool = False,
    engine: TruthLens | None = None,
    **kwargs: Any,
) -> TruthLensQueryEngine:  # type: ignore[no-untyped-def]
    inner = index.as_query_engine(llm=llm or ScriptedLLM(), similarity_top_k=1, streaming=streaming)
    return TruthLensQueryEngine(inner, engine=engine or make_engine(detector), **kwargs)


# -- detection and metadata -----------------------------------------------------------------


def test_flagged_answer_gets_header_metadata_and_keeps_source_nodes(index, detector) -> None:
    response = guarded(index, detector).query(QUESTION)
    assert isinstance(response, Response)
    assert response.response == WRONG_ANSWER  # header: text unchanged
    assert [n.node.get_content() for n in response.source_nodes] == [VISITOR_DOC]
    meta = response.metadata["truthlens"]["metadata"]  # the verdict's x-* headers
    assert meta["x-truthlens-detected"] == "true" and meta["x-vsr-hallucination-detected"] == "true"
    start = WRONG_ANSWER.index("1950")
    assert meta["x-vsr-hallucination-spans"] == f"{start}-{start + 4}"  # offsets: no details
    verdict = get_verdict(response)
    assert verdict is not None and verdict.action == "header" and not verdict.passed
    assert [s.text for s in verdict.spans] == ["1950"]
    assert verdict.original_answer == WRONG_ANSWER
    # the inner engine's own metadata (node id -> node metadata) is kept
    node_id = response.source_nodes[0].node.node_id
    assert node_id in response.metadata


def test_clean_answer_passes(index, detector) -> None:
    llm = ScriptedLLM(answer_without_dates="The Eiffel Tower was built for a world fair.")
    response = guarded(index, detector, llm=llm).query(QUESTION)
    verdict = get_verdict(response)
    assert verdict is not None and verdict.passed and verdict.score is not None
    assert response.response == "The Eiffel Tower was built for a world fair."
    assert response.metadata["truthlens"] == verdict.to_dict()  # one shape, everywhere
    assert response.metadata["truthlens"]["metadata"]["x-truthlens-detected"] == "false"


def test_question_comes_from_the_bundle_and_context_from_source_nodes(index, detector) -> None:
    calls: list[dict[str, Any]] = []
    engine = make_engine(detector)
    real = engine.guard

    def spy(**kwargs: Any):  # type: ignore[no-untyped-def]
        calls.append(kwargs)
        return real(**kwargs)

    engine.guard = spy  # type: ignore[method-assign]
    qe_llm = ScriptedLLM()
    guarded(index, detector, engine=engine, llm=qe_llm).query(QUESTION)
    assert len(calls) == 1
    assert calls[0]["context"] == [VISITOR_DOC] and calls[0]["question"] == QUESTION
    assert calls[0]["answer"] == WRONG_ANSWER
    # the inner engine's LLM was found and handed over (used by standard/premium routes)
    assert calls[0]["llm"].llm is qe_llm and calls[0]["answerer"] is None


class NoRetrieval(CustomQueryEngine):
    """An engine that answers without retrieving anything (no source nodes)."""

    def custom_query(self, query_str: str) -> Response:
        return Response(response=WRONG_ANSWER, source_nodes=[])


def test_unverified_when_nothing_was_retrieved(detector) -> None:
    engine = make_engine(detector, unverified_factual_action="body")
    response = TruthLensQueryEngine(NoRetrieval(), engine=engine).query(QUESTION)
    verdict = get_verdict(response)
    assert verdict is not None and verdict.unverified and verdict.context_missing
    assert verdict.detection is None  # nothing to check against: not reported as clean
    said = "Not checked: there was no context to check it against."
    assert response.response == f"{WRONG_ANSWER}\n\n{DEFAULT_WARNING_TEMPLATE} {said}"
    meta = response.metadata["truthlens"]["metadata"]
    assert meta["x-vsr-unverified-factual-response"] == "true"


# -- actions ------------------------------------------------------------------------------


def test_body_action_appends_the_warning(index, detector) -> None:
    engine = make_engine(detector, hallucination_action="body")
    response = guarded(index, detector, engine=engine).query(QUESTION)
    assert response.response == WARNED


def test_none_action_leaves_text(index, detector) -> None:
    engine = make_engine(detector, hallucination_action="none")
    response = guarded(index, detector, engine=engine).query(QUESTION)
    verdict = get_verdict(response)
    assert response.response == WRONG_ANSWER and verdict is not None and verdict.action == "none"


def test_block_returns_a_blocked_response_by_default(index, detector) -> None:
    engine = make_engine(detector, hallucination_action="block", include_hallucination_details=True)
    qe = guarded(index, detector, engine=engine, blocked_message="Withheld.")
    response = qe.query(QUESTION)
    assert response.response == "Withheld."
    assert response.source_nodes  # kept, so the user can read the sources
    # the blocked text is nowhere in the response: text, metadata, headers
    assert "built in 1950" not in json.dumps(response.metadata["truthlens"])
    verdict = get_verdict(response)
    assert verdict is not None and verdict.blocked and verdict.original_answer == REDACTED


@pytest.mark.parametrize("how", ["adapter", "engine"])
def test_block_can_raise_the_typed_error(index, detector, how: str) -> None:
    if how == "adapter":
        engine = make_engine(detector, hallucination_action="block")
        qe = guarded(index, detector, engine=engine, on_block="raise")
    else:
        engine = TruthLens.from_config(
            {"hallucination": {"use_nli": False, "hallucination_action": "block"}},
            detector=detector,
            fact_checker=AlwaysFactual(),
            on_block="raise",
        )
        qe = guarded(index, detector, engine=engine)
    with pytest.raises(BlockedResponseError) as info:
        qe.query(QUESTION)
    assert info.value.verdict.full().original_answer == WRONG_ANSWER  # type: ignore[attr-defined]
    assert "1950" not in str(info.value)


def test_on_block_is_validated(index, detector) -> None:
    with pytest.raises(InvalidArgumentError, match="on_block"):
        guarded(index, detector, on_block="ignore")
    with pytest.raises(InvalidArgumentError, match="on_block"):
        guarded(index, detector, on_block="response")  # never a name of this package's


def test_engine_or_config_not_both(index, detector) -> None:
    with pytest.raises(ValueError, match="either engine or config"):
        TruthLensQueryEngine(
            index.as_query_engine(llm=ScriptedLLM()), engine=make_engine(detector), config={}
        )


# -- async ------------------------------------------------------------------------------


async def test_aquery_awaits_the_inner_engine_and_the_guard(index, detector, monkeypatch) -> None:
    engine = make_engine(detector, hallucination_action="body")
    qe = guarded(index, detector, engine=engine)
    seen: list[str] = []
    inner = qe._query_engine
    original = inner.aquery

    async def aquery(bundle):  # type: ignore[no-untyped-def]
        seen.append("inner.aquery")
        return await original(bundle)

    def no_sync(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the sync path ran inside aquery")

    monkeypatch.setattr(inner, "aquery", aquery)
    monkeypatch.setattr(inner, "query", no_sync)
    real_aguard = engine.aguard

    async def aguard(**kwargs: Any):  # type: ignore[no-untyped-def]
        seen.append("engine.aguard")
        return await real_aguard(**kwargs)

    monkeypatch.setattr(engine, "aguard", aguard)
    results = await asyncio.gather(qe.aquery(QUESTION), qe.aquery(QUESTION))
    assert sorted(seen) == ["engine.aguard"] * 2 + ["inner.aquery"] * 2
    for response in results:
        assert response.response == WARNED
        verdict = get_verdict(response)
        assert verdict is not None and verdict.action == "body"


async def test_async_block_raises(index, detector) -> None:
    engine = make_engine(detector, hallucination_action="block")
    with pytest.raises(BlockedResponseError):
        await guarded(index, detector, engine=engine, on_block="raise").aquery(QUESTION)


# -- streaming: buffered, checked, then streamed ---------------------------------------------


def test_sync_stream_is_buffered_then_checked(index, detector) -> None:
    engine = make_engine(detector, hallucination_action="body")
    response = guarded(index, detector, engine=engine, streaming=True).query(QUESTION)
    assert isinstance(response, StreamingResponse)
    assert response.metadata is not None and "truthlens" in response.metadata
    text = "".join(response.response_gen)
    assert text == WARNED
    assert str(response) == text


async def test_async_stream_is_buffered_then_checked(index, detector) -> None:
    engine = make_engine(detector, hallucination_action="block")
    qe = guarded(index, detector, engine=engine, streaming=True, blocked_message="Withheld.")
    response = await qe.aquery(QUESTION)
    assert isinstance(response, AsyncStreamingResponse)
    chunks = [c async for c in response.async_response_gen()]
    assert "".join(chunks) == "Withheld."


def test_structured_responses_are_refused(index, detector) -> None:
    from llama_index.core.base.response.schema import PydanticResponse
    from pydantic import BaseModel

    class Out(BaseModel):
        year: int

    class Structured:
        callback_manager = CallbackManager([])

        def query(self, bundle):  # type: ignore[no-untyped-def]
            return PydanticResponse(response=Out(year=1950))

    with pytest.raises(InvalidInputError, match="structured"):
        TruthLensQueryEngine(Structured(), engine=make_engine(detector)).query(QUESTION)  # type: ignore[arg-type]


# -- prompts --------------------------------------------------------------------------------


def test_prompts_can_be_read_and_updated_the_llamaindex_way(index, detector) -> None:
    qe = guarded(index, detector)
    prompts = qe.get_prompts()
    assert {"refine_prompt", "query_rewrite_prompt"} <= set(prompts)
    assert "query_engine:response_synthesizer:text_qa_template" in prompts  # the inner's too
    assert isinstance(prompts["refine_prompt"], PromptTemplate)
    custom = PromptTemplate("Fix {answer} for {query_str} using {context_str}; bad: {spans}")
    qe.update_prompts({"refine_prompt": custom})
    assert qe.get_prompts()["refine_prompt"].template == custom.template
    # the inner engine's prompts, three levels deep, update through the wrapper too
    qa = PromptTemplate("Context: {context_str}\nQ: {query_str}\nA: ")
    qe.update_prompts({"query_engine:response_synthesizer:text_qa_template": qa})
    key = "query_engine:response_synthesizer:text_qa_template"
    assert qe.get_prompts()[key].template == qa.template
    with pytest.raises(ValueError, match="not found"):
        qe.update_prompts({"retriever:prompt": qa})


# -- instrumentation --------------------------------------------------------------------------


def test_dispatcher_events_fire_inside_the_query_span(index, detector, collected) -> None:
    guarded(index, detector).query(QUESTION)
    kinds = [type(e) for e in collected]
    ours = [
        e
        for e in collected
        if isinstance(e, TruthLensDetectionStartEvent | TruthLensDetectionEndEvent)
    ]
    assert [type(e) for e in ours] == [TruthLensDetectionStartEvent, TruthLensDetectionEndEvent]
    start, end = ours
    assert isinstance(start, TruthLensDetectionStartEvent)
    assert start.query == QUESTION and start.answer == WRONG_ANSWER and start.num_passages == 1
    assert isinstance(end, TruthLensDetectionEndEvent)
    assert end.decision == "MITIGATE" and [s.text for s in end.spans] == ["1950"]
    assert end.metadata["x-truthlens-detected"] == "true"
    # query start/end fire for the wrapper (BaseQueryEngine.query) and for the inner engine
    assert kinds.count(QueryStartEvent) == 2 and kinds.count(QueryEndEvent) == 2
    assert kinds.index(QueryStartEvent) < kinds.index(TruthLensDetectionStartEvent)
    assert start.span_id is not None and "TruthLensQueryEngine" in start.span_id


def test_legacy_callback_manager_sees_the_guard(index, detector) -> None:
    debug = LlamaDebugHandler()
    manager = CallbackManager([debug])
    guarded(index, detector, callback_manager=manager).query(QUESTION)
    pairs = debug.get_event_pairs(CBEventType.FUNCTION_CALL)
    assert len(pairs) == 1
    start, end = pairs[0]
    assert start.payload["tool"].name == "truthlens_guard"
    assert start.payload["function_call"]["answer"] == WRONG_ANSWER
    assert end.payload["function_call_response"]["decision"] == "MITIGATE"
    assert debug._trace_map  # the wrapper's trace was recorded (the debug handler prints it)


# -- packaging --------------------------------------------------------------------------------


def test_top_level_import_stays_light() -> None:
    code = "import sys, truthlens_integrations; assert 'llama_index' not in sys.modules, 'heavy'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_llama_index_names_the_extra(monkeypatch) -> None:
    from truthlens_integrations.core import MissingDependencyError

    for name in list(sys.modules):
        if name.startswith("truthlens_integrations.llamaindex_adapter"):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "llama_index.core", None)
    with pytest.raises(MissingDependencyError) as info:
        __import__("truthlens_integrations.llamaindex_adapter")
    assert "pip install 'truthlens-integrations[llamaindex]'" in str(info.value)
    assert isinstance(info.value, ImportError)


def test_history_doc_exists_for_the_feedback_tests(index) -> None:
    # guards the fixture: the history document is retrievable but not for the question
    retriever = index.as_retriever(similarity_top_k=1)
    assert retriever.retrieve(QUESTION)[0].node.get_content() == VISITOR_DOC
    assert retriever.retrieve("Eiffel construction history")[0].node.get_content() == HISTORY_DOC
    assert RIGHT_ANSWER != WRONG_ANSWER


# -- Issue 13, LlamaIndex side: arguments from one definition, typed errors, retries, redaction.


def inner(index: Any) -> Any:
    return index.as_query_engine(llm=ScriptedLLM(), similarity_top_k=1)


def samples(detector: Detector, index: Any) -> dict[str, Any]:
    retriever = index.as_retriever(similarity_top_k=1)
    return option_samples(
        detector, nli=None, fact_checker=AlwaysFactual(), llm=ScriptedLLM, retriever=retriever
    )


def _accepts(build: Callable[[dict[str, Any]], Any], name: str, value: Any) -> Any:
    try:
        return build({name: value})
    except UnknownArgumentError as exc:  # pragma: no cover - the failure this test exists for
        raise AssertionError(f"{name} is not accepted: {exc}") from exc


def test_misspelt_arguments_are_rejected_with_a_suggestion(index, detector) -> None:
    engine = make_engine(detector)
    with pytest.raises(UnknownArgumentError, match="did you mean 'retrieval_feedback'"):
        TruthLensQueryEngine(inner(index), engine=engine, retrival_feedback=True)
    with pytest.raises(UnknownArgumentError, match="did you mean 'threshold'"):
        TruthLensEvaluator(engine, threshhold=0.3)
    with pytest.raises(UnknownArgumentError, match="did you mean 'min_score'"):
        TruthLensNodePostprocessor(min_scor=0.5)
    with pytest.raises(UnknownArgumentError, match="did you mean 'num_output'"):
        CoreLLMAsLlamaIndex(None, num_outputs=5)  # type: ignore[arg-type]


def test_wrong_types_fail_at_the_call(index, detector) -> None:
    engine = make_engine(detector)
    with pytest.raises(InvalidArgumentError, match="retrieval_feedback"):
        TruthLensQueryEngine(inner(index), engine=engine, retrieval_feedback="no")
    with pytest.raises(InvalidArgumentError, match="nli"):
        TruthLensQueryEngine(inner(index), nli=42)
    with pytest.raises(InvalidArgumentError, match="LlamaIndex LLM"):
        TruthLensQueryEngine(inner(index), engine=engine, llm="gpt")
    with pytest.raises(InvalidArgumentError, match="retriever"):
        TruthLensQueryEngine(inner(index), engine=engine, retriever="bm25")
    with pytest.raises(ConfigError, match="either engine or config"):
        TruthLensEvaluator(engine, config={})


def test_every_option_reaches_the_llamaindex_adapters(index, detector) -> None:
    values = samples(detector, index)
    assert set(values) == {*ENGINE_OPTION_NAMES, *POLICY_KNOB_NAMES, *ADAPTER_TOOLS}
    base = make_engine(detector)
    for name, value in values.items():
        made = _accepts(
            lambda kw: TruthLensQueryEngine(inner(index), engine=base, **kw), name, value
        )
        if name in ENGINE_OPTION_NAMES and value is not None:
            assert getattr(made.engine.options, name) is value, name
    for name in (*ENGINE_OPTION_NAMES, *POLICY_KNOB_NAMES):
        evaluator = _accepts(lambda kw: TruthLensEvaluator(base, **kw), name, values[name])
        if name in ENGINE_OPTION_NAMES and values[name] is not None:
            assert getattr(evaluator.engine.options, name) is values[name]
    knobbed = TruthLensQueryEngine(inner(index), engine=base, mode="standard", threshold=0.9)
    settings = knobbed.engine.policy.settings_for(None)
    assert (settings.mode, settings.threshold) == ("standard", 0.9)


def test_redacted_query_engine_leaks_no_hallucinated_text(index, detector, collected) -> None:
    audit: list[Verdict] = []
    guarded = TruthLensQueryEngine(
        inner(index),
        engine=make_engine(detector, hallucination_action="block"),
        redact=True,
        audit_hook=audit.append,
    )
    response = guarded.query(QUESTION)
    assert not leaks("1950", json.dumps(response.metadata, default=str))
    assert "1950" not in (response.response or "")
    starts = [e for e in collected if isinstance(e, TruthLensDetectionStartEvent)]
    assert starts and all("1950" not in e.answer for e in starts)
    assert not any(
        leaks("1950", json.dumps(e.model_dump(), default=str))
        for e in collected
        if "TruthLens" in e.class_name()
    )
    assert audit and "1950" in audit[0].original_answer


# -- TruthLensQueryEngine with mitigation: standard refinement, retrieval feedback, premium.


def mitigating_engine(
    detector: Detector, mode: str = "standard", **hallucination: Any
) -> TruthLens:
    options: dict[str, Any] = {"default_mode": mode, "standard": {"max_iterations": 2}}
    return support.make_engine(detector, **{**options, **hallucination})


async def ask(
    index: Any, detector: Detector, llm: ScriptedLLM, use_async: bool, **options: Any
) -> tuple[Any, Verdict]:
    """``QUESTION`` through a guarded query engine on ``llm`` (sync or async), and its verdict."""
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    qe = TruthLensQueryEngine(inner, engine=mitigating_engine(detector), **options)
    response = await qe.aquery(QUESTION) if use_async else qe.query(QUESTION)
    verdict = get_verdict(response)
    assert verdict is not None
    return response, verdict


# -- standard: re-synthesis with the inner engine's LLM ------------------------------------


@pytest.mark.parametrize("use_async", [False, True])
async def test_standard_mode_refines_with_the_inner_engines_llm(
    index, detector, collected, use_async: bool
) -> None:
    llm = ScriptedLLM()
    response, verdict = await ask(index, detector, llm, use_async)
    assert verdict.status == "converged" and verdict.strategy == "self_refine"
    assert response.response == NO_DATES_ANSWER == verdict.final_answer
    assert verdict.original_answer == WRONG_ANSWER and verdict.original_score is not None
    assert [h.kind for h in verdict.history] == ["initial", "refine"]
    headers = response.metadata["truthlens"]["metadata"]
    assert headers["x-truthlens-iterations"] == "1" and headers["x-truthlens-detected"] == "false"
    # the refinement went through the inner engine's LlamaIndex LLM, after its QA call
    assert len(llm.prompts) == 2 and "Corrected answer" in llm.prompts[1]
    assert VISITOR_DOC in llm.prompts[1] and "[[1950]]" in llm.prompts[1]
    steps = [e for e in collected if isinstance(e, TruthLensMitigationIterationEvent)]
    assert [(s.index, s.kind, s.accepted) for s in steps] == [(1, "refine", True)]


def test_a_given_llm_replaces_the_inner_one(index, detector) -> None:
    inner_llm, refiner = ScriptedLLM(), ScriptedLLM()
    inner = index.as_query_engine(llm=inner_llm, similarity_top_k=1)
    qe = TruthLensQueryEngine(inner, engine=mitigating_engine(detector), llm=refiner)
    qe.query(QUESTION)
    assert len(inner_llm.prompts) == 1 and len(refiner.prompts) == 1


def test_refinement_that_cannot_fix_the_answer_is_blocked(index, detector) -> None:
    llm = ScriptedLLM(always_wrong=True)
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    engine = mitigating_engine(detector, hallucination_action="block")
    qe = TruthLensQueryEngine(inner, engine=engine, blocked_message="Withheld.")
    response = qe.query(QUESTION)
    verdict = get_verdict(response)
    # the scripted model gives the same wrong answer to the refine and the fresh prompt
    assert verdict is not None and verdict.status == "answer_stagnation"
    assert verdict.iterations == 2 and verdict.blocked and response.response == "Withheld."
    with pytest.raises(BlockedResponseError):
        TruthLensQueryEngine(inner, engine=engine, on_block="raise").query(QUESTION)


def test_lightweight_route_does_not_call_the_llm(index, detector) -> None:
    llm = ScriptedLLM()
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    qe = TruthLensQueryEngine(inner, engine=mitigating_engine(detector, mode="lightweight"))
    verdict = get_verdict(qe.query(QUESTION))
    assert verdict is not None and verdict.status == "not_run" and len(llm.prompts) == 1


# -- retrieval feedback: the rewritten query finds the missing document -------------------------


@pytest.mark.parametrize("use_async", [False, True])
async def test_retrieval_feedback_requeries_and_accumulates_source_nodes(
    index, detector, collected, use_async: bool
) -> None:
    llm = ScriptedLLM()
    response, verdict = await ask(index, detector, llm, use_async, retrieval_feedback=True)
    assert verdict.strategy == "retrieval_feedback" and verdict.status == "success"
    # the first retrieval missed the dates; the rewritten query found them
    assert response.response == RIGHT_ANSWER == verdict.final_answer
    assert [n.node.get_content() for n in response.source_nodes] == [VISITOR_DOC, HISTORY_DOC]
    retrieve = verdict.history[-1]
    assert retrieve.kind == "retrieve" and retrieve.query == REWRITTEN_QUERY
    assert retrieve.new_passages == 1
    assert verdict.final_context == [VISITOR_DOC, HISTORY_DOC]
    # the inner engine's LLM answered twice: the question, then the rewritten query
    qa_prompts = [p for p in llm.prompts if "search quer" not in p.lower()]
    assert len(qa_prompts) == 2 and HISTORY_DOC in qa_prompts[1]
    steps = [e for e in collected if isinstance(e, TruthLensMitigationIterationEvent)]
    assert [(s.kind, s.query, s.new_passages) for s in steps] == [("retrieve", REWRITTEN_QUERY, 1)]


def test_retrieval_feedback_with_postprocessor_filters_and_keeps_evidence(index, detector) -> None:
    llm = ScriptedLLM()
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    post = TruthLensNodePostprocessor(min_length=20, evidence_action="drop")
    qe = TruthLensQueryEngine(
        inner, engine=mitigating_engine(detector), retrieval_feedback=True, node_postprocessor=post
    )
    response = qe.query(QUESTION)
    # the visitor document supports nothing in "built from 1887 to 1889": dropped
    assert response.response == RIGHT_ANSWER
    assert [n.node.get_content() for n in response.source_nodes] == [HISTORY_DOC]


# -- premium: LlamaIndex LLMs as verifiers and judge ---------------------------------------------


def test_premium_mode_uses_llamaindex_verifiers(index, detector) -> None:
    engine = TruthLens.from_config(
        {"hallucination": {"default_mode": "premium", "premium": {"max_iterations": 1}}},
        detector=detector,
        fact_checker=AlwaysFactual(),
        nli=RuleNLI(),
    )
    # the inner engine sees both documents but its LLM still says 1950
    inner = index.as_query_engine(llm=ScriptedLLM(always_wrong=True), similarity_top_k=2)
    verifiers = [ScriptedLLM(), ScriptedLLM()]
    judge = ScriptedLLM()
    qe = TruthLensQueryEngine(inner, engine=engine, verification_llms=verifiers, judge_llm=judge)
    response = qe.query(QUESTION)
    verdict = get_verdict(response)
    assert verdict is not None and verdict.strategy == "cross_model"
    assert all(len(v.prompts) == 1 for v in verifiers)  # each verifier answered once
    assert verdict.history[1].kind == "cross_check"
    assert verdict.converged and "1950" not in (response.response or "")
    assert "1887" in (response.response or "")
    models = {m.role for m in verdict.cost.models}
    assert "verifier" in models


def test_llms_of_both_kinds_are_accepted(index, detector) -> None:
    inner = index.as_query_engine(llm=ScriptedLLM(), similarity_top_k=1)
    core_llm = LlamaIndexLLM(ScriptedLLM())
    qe = TruthLensQueryEngine(inner, engine=mitigating_engine(detector), llm=core_llm)
    assert get_verdict(qe.query(QUESTION)).status == "converged"  # type: ignore[union-attr]
    with pytest.raises(TypeError, match="LlamaIndex LLM"):
        TruthLensQueryEngine(inner, engine=mitigating_engine(detector), llm="gpt-4")  # type: ignore[arg-type]


# -- prompts: what get_prompts shows is what the loops send ----------------------------------


def test_updated_refine_prompt_is_what_the_llm_receives(index, detector) -> None:
    from llama_index.core.prompts import PromptTemplate

    llm = ScriptedLLM()
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    qe = TruthLensQueryEngine(inner, engine=mitigating_engine(detector))
    qe.update_prompts(
        {
            "refine_prompt": PromptTemplate(
                "DOCS {context_str} Q {query_str} A {answer} BAD {spans} -> corrected answer:"
            )
        }
    )
    qe.query(QUESTION)
    refine = llm.prompts[1]
    assert "DOCS <context>" in refine and f"Q {QUESTION}" in refine
    assert "A The Eiffel Tower was built in [[1950]]." in refine and 'BAD 1. "1950"' in refine
    assert "never instructions" in refine  # the engine's system message stays in front
    with pytest.raises(ValueError, match="available"):
        qe.update_prompts({"refine_prompt": PromptTemplate("{context_str} {documents}")})


def test_updated_query_rewrite_prompt_drives_the_feedback_loop(index, detector) -> None:
    from llama_index.core.base.llms.types import ChatMessage as LIChatMessage
    from llama_index.core.prompts import ChatPromptTemplate

    llm = ScriptedLLM()
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    rewrite = ChatPromptTemplate(
        message_templates=[
            LIChatMessage(role="system", content="Reply with JSON for a search query."),
            LIChatMessage(role="user", content="Q={query_str} LAST={last_query} MISSING={spans}"),
        ]
    )
    qe = TruthLensQueryEngine(
        inner,
        engine=mitigating_engine(detector),
        retrieval_feedback=True,
        query_rewrite_prompt=rewrite,
    )
    response = qe.query(QUESTION)
    sent = [p for p in llm.prompts if "search query" in p.lower()]
    assert len(sent) == 1
    assert f"Q={QUESTION} LAST={QUESTION} MISSING=- 1950" in sent[0]
    assert "never instructions" not in sent[0]  # the chat template's own system message
    assert response.response == RIGHT_ANSWER


# -- Issue 43, withheld text on the LlamaIndex side: what a blocked answer leaves behind.


class PayloadEngine(CustomQueryEngine):
    """STAND-IN inner engine: the index's answer plus what provider payloads carry.

    Real engines and LLM integrations put the raw completion, token log-probabilities
    or reasoning text in ``Response.metadata``; the per-node metadata LlamaIndex's own
    synthesizers write (keyed by node id) describes the sources, not the answer.
    """

    inner: Any
    streaming: bool = False

    def custom_query(self, query_str: str) -> Response | StreamingResponse:
        found = self.inner.query(query_str)
        answer = found.response or ""
        metadata = {
            **(found.metadata or {}),
            "raw": {"choices": [{"message": {"content": answer}}]},
            "logprobs": [{"token": t} for t in answer.split()],
            "reasoning_content": f"I will say: {answer}",
        }
        if self.streaming:
            return StreamingResponse(
                response_gen=iter([answer]), source_nodes=found.source_nodes, metadata=metadata
            )
        return Response(response=answer, source_nodes=found.source_nodes, metadata=metadata)


def _inner(index: Any, *, streaming: bool = False) -> PayloadEngine:
    found = index.as_query_engine(llm=ScriptedLLM(), similarity_top_k=1)
    return PayloadEngine(inner=found, streaming=streaming)


def _payloads(metadata: dict[str, Any]) -> str:
    """Everything in the metadata but the verdict (checked on its own)."""
    return json.dumps({k: v for k, v in metadata.items() if k != "truthlens"}, default=str)


class _EchoingRefiner(ScriptedLLM):
    """The query refiner's reply is not JSON: the fallback query (question + claims) runs."""

    def reply(self, prompt: str) -> str:
        if "search quer" in prompt.lower():
            self.prompts.append(prompt)
            return "Sure: look up 1950."
        return super().reply(prompt)


@pytest.mark.parametrize("streaming", [False, True])
def test_a_blocked_answer_keeps_no_payload_of_the_inner_engine(
    index: Any, detector: Detector, streaming: bool
) -> None:
    audit: list[Verdict] = []
    engine = make_engine(detector, hallucination_action="block")
    guarded = TruthLensQueryEngine(
        _inner(index, streaming=streaming), engine=engine, audit_hook=audit.append
    )
    response = guarded.query(QUESTION)
    verdict = get_verdict(response)
    assert verdict is not None and verdict.blocked
    metadata = response.metadata or {}
    assert not leaks("1950", _payloads(metadata))  # before: raw, logprobs, reasoning held it
    assert not leaks("1950", json.dumps(metadata["truthlens"]))
    # The sources' own metadata, keyed by node id, stays (it is on the source nodes too).
    for node in response.source_nodes:
        assert metadata.get(node.node.node_id) == node.node.metadata
    assert [v.original_answer for v in audit] == [WRONG_ANSWER]  # the explicit channel


def test_a_shown_answer_keeps_the_inner_engines_payload(index: Any, detector: Detector) -> None:
    guarded = TruthLensQueryEngine(_inner(index), engine=make_engine(detector))  # header
    response = asyncio.run(guarded.aquery(QUESTION))
    metadata = response.metadata or {}
    assert response.response == WRONG_ANSWER  # shown as it came: nothing withheld
    assert metadata["raw"]["choices"][0]["message"]["content"] == WRONG_ANSWER
    assert "logprobs" in metadata and "reasoning_content" in metadata


def test_a_replaced_answer_keeps_no_payload_of_the_original(index: Any, detector: Detector) -> None:
    engine = make_engine(detector, default_mode="standard")
    guarded = TruthLensQueryEngine(_inner(index), engine=engine, llm=ScriptedLLM())
    response = guarded.query(QUESTION)
    verdict = get_verdict(response)
    assert verdict is not None and verdict.strategy == "self_refine"
    assert response.response != WRONG_ANSWER and "1950" not in (response.response or "")
    # The payload described the answer the guard replaced; the verdict keeps the original.
    assert not leaks("1950", _payloads(response.metadata or {}))
    assert verdict.original_answer == WRONG_ANSWER


def test_rewritten_queries_of_a_blocked_answer_stay_out_of_the_events(
    index: Any, detector: Detector, collected: list[Any]
) -> None:
    audit: list[Verdict] = []
    inner = index.as_query_engine(llm=ScriptedLLM(always_wrong=True), similarity_top_k=1)
    guarded = TruthLensQueryEngine(
        inner,
        engine=make_engine(detector, default_mode="standard", hallucination_action="block"),
        llm=_EchoingRefiner(always_wrong=True),
        retrieval_feedback=True,
        audit_hook=audit.append,
    )
    response = guarded.query(QUESTION)
    verdict = get_verdict(response)
    assert verdict is not None and verdict.blocked
    assert verdict.strategy == "retrieval_feedback"
    (full,) = audit  # the loop did search for the claims: the application still sees it
    assert any("1950" in (step.query or "") for step in full.history)
    rounds = [e for e in collected if isinstance(e, TruthLensMitigationIterationEvent)]
    assert rounds and all(e.query in (None, "[redacted]") for e in rounds)
    # What the guard reports after the check; the start event names the unchecked
    # answer like LlamaIndex's own LLM events do (tracing; ``redact=True`` hides it).
    for event in collected:
        if (
            "TruthLens" in event.class_name()
            and event.class_name() != "TruthLensDetectionStartEvent"
        ):
            assert not leaks("1950", json.dumps(event.model_dump(), default=str))
    assert not leaks("1950", json.dumps(response.metadata, default=str))
