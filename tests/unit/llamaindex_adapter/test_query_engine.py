"""TruthLensQueryEngine over a real VectorStoreIndex: detection, actions, metadata, events.

Real parts: the keyword detector (flags "1950", "500", "meters"), LlamaIndex's
VectorStoreIndex / retriever / response synthesizer, a deterministic bag-of-words
embedding. STAND-INS: the LLM (``ScriptedLLM``) and the prompt classifier.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
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

from tests._fakes import AlwaysFactual
from tests._llamaindex_support import (
    HISTORY_DOC,
    QUESTION,
    RIGHT_ANSWER,
    VISITOR_DOC,
    WRONG_ANSWER,
    ScriptedLLM,
    make_engine,
)
from truthlens_integrations.core import (
    BlockedResponseError,
    InvalidArgumentError,
    InvalidInputError,
)
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.engine._verdict import REDACTED
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.core.policy._config import DEFAULT_WARNING_TEMPLATE
from truthlens_integrations.llamaindex_adapter import (
    TruthLensDetectionEndEvent,
    TruthLensDetectionStartEvent,
    TruthLensQueryEngine,
    get_verdict,
)

#: The wrong answer as the body action shows it: the warning names the flagged part.
WARNED = f'{WRONG_ANSWER}\n\n{DEFAULT_WARNING_TEMPLATE} Flagged: "1950".'


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
    assert response.response == f"{WRONG_ANSWER}\n\n{DEFAULT_WARNING_TEMPLATE}"
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
    with pytest.warns(DeprecationWarning, match="on_block='response' is deprecated"):
        qe = guarded(index, detector, on_block="response")
    assert qe.on_block == "message"


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
