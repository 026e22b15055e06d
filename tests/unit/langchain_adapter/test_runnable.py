"""Tests of ``langchain_adapter/_runnable.py``: TruthLensRunnable in real LCEL chains, with
mitigation.

Detector: the real keyword model (flags "1950", "500", "meters"); NLI and prompt
classifier: rule-based stand-ins (tests/_langchain_support.py); LLMs: LangChain's fakes.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from operator import itemgetter
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda, RunnablePassthrough
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import Field

from tests._fakes import leaks, option_samples
from tests._langchain_support import (
    CLEAN,
    EIFFEL_DICT,
    PROMPT,
    FixedRetriever,
    Flaky,
    LoopRecordingModel,
    QuestionWordClassifier,
    RuleNLI,
    RunRecorder,
    action_policy,
    make_engine,
    rag_chain_over,
)
from tests._scripts import run_python
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import (
    BlockedResponseError,
    ConfigError,
    Decision,
    InvalidArgumentError,
    InvalidInputError,
    UnknownArgumentError,
)
from truthlens_integrations.core.engine import DEFAULT_BLOCKED_MESSAGE, TruthLens, Verdict
from truthlens_integrations.core.engine._options import ENGINE_OPTION_NAMES, POLICY_KNOB_NAMES
from truthlens_integrations.core.engine._tools import ADAPTER_TOOLS
from truthlens_integrations.core.engine._verdict import REDACTED
from truthlens_integrations.core.mitigation import MitigationOptions
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.core.policy._fields import DEFAULT_WARNING_TEMPLATE
from truthlens_integrations.langchain_adapter import (
    TRUTHLENS_EVENT,
    LLMChatModel,
    RetrievalQualityFilter,
    TruthLensCallbackHandler,
    TruthLensRunnable,
    guard_chain,
)
from truthlens_integrations.langchain_adapter._chain_tools import find_chat_model
from truthlens_integrations.langchain_adapter._inputs import parse_input
from truthlens_integrations.langchain_adapter._outputs import GuardedText

# -- TruthLensRunnable in real LCEL chains: pipe and wrapper forms, actions, sync/async, batch, streaming, custom events and config propagation.


CLEAN_ANSWER = "The Eiffel Tower was built from 1887 to 1889 in Paris."
LOUVRE = "The Louvre museum in Paris opened to the public in 1793 and holds the Mona Lisa."


@pytest.fixture(scope="module")
def engine(detector: Detector) -> TruthLens:
    return make_engine(detector)


def guard(engine: TruthLens, **kwargs: Any) -> TruthLensRunnable:
    return TruthLensRunnable(engine=engine, **kwargs)


def V(value: Any) -> Verdict:  # noqa: N802 - reads as the type it gives
    """The verdict an output carries under ``"truthlens"`` (its ``to_dict()``)."""
    assert isinstance(value, dict), f"expected the verdict's dict, got {type(value)}"
    return Verdict.model_validate(value)


def spans_of(verdict: Verdict) -> list[str]:
    return [s.text for s in verdict.spans]


@pytest.fixture(scope="module")
def retriever() -> Any:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(
        [
            Document(EIFFEL_CONTEXT, metadata={"source": "landmarks.json"}),
            Document(LOUVRE, metadata={"source": "museums.txt"}),
        ]
    )
    return store.as_retriever(search_kwargs={"k": 2})


def fake_model(*answers: str | AIMessage) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(answers))


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(d.page_content for d in docs)


def rag_chain(retriever: Any, *answers: str) -> Runnable[Any, str]:
    """retrieve -> prompt -> a fake chat model saying ``answers`` in turn -> text."""
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | PROMPT
        | fake_model(*answers)
        | StrOutputParser()
    )


# -- input parsing ------------------------------------------------------------------


def test_parse_dict_with_documents_strings_and_string() -> None:
    keys = {"answer_key": "answer", "context_key": "context", "question_key": "question"}
    docs = [Document(EIFFEL_CONTEXT), Document(LOUVRE)]
    for context, expected in [
        (docs, [EIFFEL_CONTEXT, LOUVRE]),
        ([EIFFEL_CONTEXT, LOUVRE, EIFFEL_CONTEXT, "  "], [EIFFEL_CONTEXT, LOUVRE]),
        (EIFFEL_CONTEXT, [EIFFEL_CONTEXT]),
        (None, []),
    ]:
        parsed = parse_input(
            {"answer": AIMessage(EIFFEL_ANSWER), "context": context, "question": "q?"}, **keys
        )
        assert parsed.kind == "dict" and parsed.context == expected
        assert parsed.answer == EIFFEL_ANSWER and parsed.question == "q?"


def test_parse_agent_state_uses_every_tool_message() -> None:
    records = json.dumps([{"name": "Louvre", "opened": "1793"}, {"name": "Eiffel Tower"}])
    state = {
        "messages": [
            HumanMessage("Tell me about Paris"),
            AIMessage("ok"),
            HumanMessage(EIFFEL_QUESTION),
            AIMessage(
                "",
                tool_calls=[
                    {"name": "a", "args": {}, "id": "1"},
                    {"name": "b", "args": {}, "id": "2"},
                    {"name": "c", "args": {}, "id": "3"},
                ],
            ),
            ToolMessage(EIFFEL_CONTEXT, tool_call_id="1"),
            ToolMessage(records, tool_call_id="2"),
            ToolMessage("lookup failed: timeout", tool_call_id="3", status="error"),
            AIMessage([{"type": "text", "text": EIFFEL_ANSWER}]),
        ]
    }
    parsed = parse_input(state, answer_key="answer", context_key="context", question_key="question")
    assert parsed.kind == "state" and parsed.answer_index == 7
    assert parsed.question == EIFFEL_QUESTION and parsed.answer == EIFFEL_ANSWER
    # the JSON record as the model saw it; a JSON list split per item; the error dropped
    assert parsed.context == [
        EIFFEL_CONTEXT,
        '{"name": "Louvre", "opened": "1793"}',
        '{"name": "Eiffel Tower"}',
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"text": "x"}, "no 'answer' key"),
        ([HumanMessage("hi")], "no AI message"),
        (
            [HumanMessage("hi"), AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "1"}])],
            "only tool calls",
        ),
        (42, "cannot guard a int"),
        ({"answer": 3}, "answer must be a string"),
    ],
)
def test_bad_inputs_raise_typed_errors(engine: TruthLens, value: object, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        guard(engine).invoke(value)


# -- pipe form, output types ------------------------------------------------------------


def test_dict_gains_verdict_and_spans_found(engine: TruthLens) -> None:
    out = guard(engine).invoke(EIFFEL_DICT)
    verdict = V(out["truthlens"])
    assert isinstance(verdict, Verdict) and verdict.decision is Decision.MITIGATE
    assert spans_of(verdict) == ["1950", "500 meters"]
    assert out["answer"] == EIFFEL_ANSWER and out["answer"].verdict.to_dict() == out["truthlens"]
    assert out["question"] == EIFFEL_QUESTION and out["context"] == [EIFFEL_CONTEXT]


def test_clean_grounded_answer_passes(engine: TruthLens) -> None:
    out = guard(engine).invoke({**EIFFEL_DICT, "answer": CLEAN_ANSWER})
    assert V(out["truthlens"]).passed and V(out["truthlens"]).spans == []


def test_custom_keys(engine: TruthLens) -> None:
    runnable = guard(
        engine, answer_key="result", context_key="docs", question_key="query", verdict_key="check"
    )
    out = runnable.invoke(
        {"result": EIFFEL_ANSWER, "docs": [Document(EIFFEL_CONTEXT)], "query": EIFFEL_QUESTION}
    )
    assert spans_of(V(out["check"])) == ["1950", "500 meters"] and "truthlens" not in out


def test_bare_string_is_unverified_never_clean(engine: TruthLens) -> None:
    out = guard(engine).invoke(EIFFEL_ANSWER)
    assert isinstance(out, str) and isinstance(out, GuardedText) and out == EIFFEL_ANSWER
    assert out.verdict is not None and out.verdict.unverified
    assert out.verdict.decision is Decision.MITIGATE and out.verdict.context_missing


def test_ai_message_keeps_type_and_carries_verdict(engine: TruthLens) -> None:
    message = AIMessage(EIFFEL_ANSWER, id="m1", response_metadata={"model_name": "fake"})
    out = guard(engine).invoke(message)
    assert type(out) is AIMessage and out.id == "m1" and out.content == EIFFEL_ANSWER
    meta = out.response_metadata["truthlens"]
    assert out.response_metadata["model_name"] == "fake"
    assert meta["unverified"] is True and meta["decision"] == "MITIGATE"
    assert meta["metadata"]["x-vsr-unverified-factual-response"] == "true"
    json.dumps(meta)  # plain data, safe for tracers and persistence


def test_message_list_keeps_type(engine: TruthLens) -> None:
    messages = [
        HumanMessage(EIFFEL_QUESTION),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "1"}]),
        ToolMessage(EIFFEL_CONTEXT, tool_call_id="1"),
        AIMessage(EIFFEL_ANSWER),
    ]
    out = guard(engine).invoke(messages)
    assert isinstance(out, list) and len(out) == 4 and out[:3] == messages[:3]
    meta = out[3].response_metadata["truthlens"]
    assert [s["text"] for s in meta["spans"]] == ["1950", "500 meters"]
    assert meta["metadata"]["x-vsr-hallucination-spans"] == "30-34; 42-52"


# -- actions -----------------------------------------------------------------------------


def test_header_action_keeps_text(detector: Detector) -> None:
    out = guard(make_engine(detector, action_policy("header"))).invoke(EIFFEL_DICT)
    assert out["answer"] == EIFFEL_ANSWER and V(out["truthlens"]).action == "header"
    assert V(out["truthlens"]).metadata["x-vsr-hallucination-detected"] == "true"


def test_none_action_keeps_text(detector: Detector) -> None:
    out = guard(make_engine(detector, action_policy("none"))).invoke(AIMessage(EIFFEL_ANSWER))
    assert out.content == EIFFEL_ANSWER


def test_body_action_changes_text_keeps_original(detector: Detector) -> None:
    runnable = guard(make_engine(detector, action_policy("body")))
    out = runnable.invoke({**EIFFEL_DICT, "answer": AIMessage(EIFFEL_ANSWER)})
    assert out["answer"].content == (
        f"{EIFFEL_ANSWER}\n\n{DEFAULT_WARNING_TEMPLATE} "
        'Contradicted by the context: "1950", "500 meters".'
    )
    assert V(out["truthlens"]).original_answer == EIFFEL_ANSWER
    assert out["answer"].response_metadata["truthlens"]["original_answer"] == EIFFEL_ANSWER
    text = runnable.invoke(EIFFEL_ANSWER)  # unverified -> header by default: unchanged
    assert text == EIFFEL_ANSWER


def test_block_raises_typed_error_with_verdict(detector: Detector) -> None:
    runnable = guard(make_engine(detector, action_policy("block")), on_block="raise")
    events = RunRecorder()
    with pytest.raises(BlockedResponseError) as info:
        runnable.invoke(EIFFEL_DICT, {"callbacks": [events]})
    verdict = info.value.verdict
    assert isinstance(verdict, Verdict) and verdict.blocked
    assert verdict.full().original_answer == EIFFEL_ANSWER  # the application's channel
    assert "built in 1950" not in json.dumps(verdict.to_dict())
    # the event still goes out, withholding the text too
    [(name, payload, _)] = events.events
    assert (
        name == TRUTHLENS_EVENT
        and payload["blocked"]
        and payload["original_answer"] != EIFFEL_ANSWER
    )


def test_block_as_message(detector: Detector) -> None:
    engine = make_engine(detector, action_policy("block"))
    out = guard(engine, on_block="message").invoke(AIMessage(EIFFEL_ANSWER))
    # Unverified (no grounding): on a block route it is withheld too, unless the policy
    # sets unverified_factual_action.
    assert out.content == DEFAULT_BLOCKED_MESSAGE
    assert out.response_metadata["truthlens"]["unverified"] is True
    out = guard(engine, on_block="message").invoke(
        {**EIFFEL_DICT, "answer": AIMessage(EIFFEL_ANSWER)}
    )
    assert out["answer"].content == DEFAULT_BLOCKED_MESSAGE and V(out["truthlens"]).blocked
    out = guard(engine, on_block="message", blocked_message="[withheld]").invoke(
        [
            HumanMessage(EIFFEL_QUESTION),
            AIMessage("", tool_calls=[{"name": "record", "args": {}, "id": "1"}]),
            ToolMessage(EIFFEL_CONTEXT, tool_call_id="1"),
            AIMessage(EIFFEL_ANSWER),
        ]
    )
    assert out[-1].content == "[withheld]"
    # the blocked text is withheld from the message's metadata too
    assert out[-1].response_metadata["truthlens"]["original_answer"] == REDACTED
    assert "built in 1950" not in json.dumps([m.model_dump() for m in out])


def test_unverified_factual_block(detector: Detector) -> None:
    engine = make_engine(detector, action_policy("header", unverified_factual_action="block"))
    with pytest.raises(BlockedResponseError):
        guard(engine, on_block="raise").invoke(EIFFEL_ANSWER)
    assert guard(engine).invoke(EIFFEL_ANSWER) == DEFAULT_BLOCKED_MESSAGE  # the default


# -- a real LCEL RAG chain with an in-memory vector store ------------------------------------


def test_rag_chain_pipe_form(engine: TruthLens, retriever: Any) -> None:
    chain = RunnablePassthrough.assign(context=itemgetter("question") | retriever).assign(
        answer=PROMPT | fake_model(EIFFEL_ANSWER) | StrOutputParser()
    )
    out = (chain | guard(engine)).invoke({"question": EIFFEL_QUESTION})
    assert {d.page_content for d in out["context"]} == {EIFFEL_CONTEXT, LOUVRE}
    assert spans_of(V(out["truthlens"])) == ["1950", "500 meters"]


def test_rag_chain_wrapper_form_captures_retrieved_documents(
    engine: TruthLens, retriever: Any
) -> None:
    chain = rag_chain(retriever, EIFFEL_ANSWER)
    out = guard_chain(chain, engine=engine).invoke(EIFFEL_QUESTION)
    assert isinstance(out, GuardedText) and out.verdict is not None
    assert spans_of(out.verdict) == ["1950", "500 meters"] and not out.verdict.unverified
    # without the wrapper the same output string has no grounding
    assert guard(engine).invoke(str(out)).verdict.unverified  # type: ignore[union-attr]


# -- the tool-calling loop (design example) ---------------------------------------------------


@tool
def landmark_record(name: str) -> str:
    """Return the stored record of a landmark as JSON."""
    assert name == "Eiffel Tower"
    return EIFFEL_CONTEXT


def make_agent() -> RunnableLambda[dict[str, Any], dict[str, Any]]:
    model = fake_model(
        AIMessage(
            "",
            tool_calls=[{"name": "landmark_record", "args": {"name": "Eiffel Tower"}, "id": "c1"}],
        ),
        EIFFEL_ANSWER,
    )

    def agent(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages = list(state["messages"])
        for _ in range(4):
            reply = model.invoke(messages, config)
            messages.append(reply)
            if not reply.tool_calls:
                break
            messages.extend(landmark_record.invoke(call, config) for call in reply.tool_calls)
        return {"messages": messages}

    return RunnableLambda(agent, name="agent")


def test_tool_loop_pipe_form(engine: TruthLens) -> None:
    out = (make_agent() | guard(engine)).invoke({"messages": [HumanMessage(EIFFEL_QUESTION)]})
    assert isinstance(out["messages"][2], ToolMessage)
    verdict = V(out["truthlens"])
    assert spans_of(verdict) == ["1950", "500 meters"] and not verdict.unverified
    assert out["messages"][-1].response_metadata["truthlens"]["detected"] is True


def test_tool_loop_wrapper_form_captures_tool_output(engine: TruthLens) -> None:
    # the agent returns only its final message: the grounding comes from on_tool_end
    final_only = make_agent() | RunnableLambda(lambda state: state["messages"][-1])
    recorder = RunRecorder()
    out = guard_chain(final_only, engine=engine).invoke(
        {"messages": [HumanMessage(EIFFEL_QUESTION)]}, {"callbacks": [recorder]}
    )
    assert isinstance(out, AIMessage) and out.content == EIFFEL_ANSWER
    meta = out.response_metadata["truthlens"]
    assert [s["text"] for s in meta["spans"]] == ["1950", "500 meters"]
    assert meta["unverified"] is False
    assert [r["name"] for r in recorder.of("tool")] == ["landmark_record"]


async def test_tool_loop_async(engine: TruthLens) -> None:
    out = await guard_chain(make_agent(), engine=engine).ainvoke(
        {"messages": [HumanMessage(EIFFEL_QUESTION)]}
    )
    assert spans_of(V(out["truthlens"])) == ["1950", "500 meters"]


# -- async, batch ------------------------------------------------------------------------


async def test_ainvoke_matches_invoke(engine: TruthLens) -> None:
    sync = guard(engine).invoke(EIFFEL_DICT)["truthlens"]
    out = await guard(engine).ainvoke(EIFFEL_DICT)
    assert out["truthlens"]["spans"] == sync["spans"] and out["truthlens"]["score"] == sync["score"]


async def test_ainvoke_awaits_the_engine(detector: Detector) -> None:
    calls: list[str] = []

    class Spy(TruthLens):
        def guard(self, **kwargs: Any) -> Verdict:
            calls.append("guard")
            return super().guard(**kwargs)

        async def aguard(self, **kwargs: Any) -> Verdict:
            calls.append("aguard")
            return await super().aguard(**kwargs)

    spy = Spy(make_engine(detector).policy, detector=detector, nli=None, fact_checker=None)
    spy._nli_resolved = True
    spy._fact_checker = make_engine(detector).fact_checker
    await guard(spy).ainvoke(EIFFEL_DICT)
    assert calls[0] == "aguard"


def test_batch_one_detector_pass_and_per_item_errors(detector: Detector) -> None:
    class Counting:
        def __init__(self, inner: Detector) -> None:
            self.inner, self.model_id, self.config, self.batches = (
                inner,
                inner.model_id,
                inner.config,
                0,
            )

        def detect_batch(self, inputs: Any) -> Any:
            self.batches += 1
            return self.inner.detect_batch(inputs)

    counting = Counting(detector)
    engine = make_engine(counting, action_policy("block"))  # type: ignore[arg-type]
    recorder = RunRecorder()
    inputs = [EIFFEL_DICT, {**EIFFEL_DICT, "answer": CLEAN_ANSWER}, 42, AIMessage(EIFFEL_ANSWER)]
    runnable = guard(engine, on_block="raise")
    out = runnable.batch(inputs, {"callbacks": [recorder]}, return_exceptions=True)
    assert counting.batches == 1
    assert isinstance(out[0], BlockedResponseError) and out[0].verdict.blocked  # type: ignore[union-attr]
    assert V(out[1]["truthlens"]).passed
    assert isinstance(out[2], InvalidInputError)
    assert isinstance(out[3], BlockedResponseError) and out[3].verdict.unverified  # type: ignore[union-attr]
    assert [e[0] for e in recorder.events] == [TRUTHLENS_EVENT] * 3
    assert len([r for r in recorder.of("chain") if r["parent"] is None]) == 4
    with pytest.raises(BlockedResponseError):
        runnable.batch(inputs)


async def test_abatch(engine: TruthLens) -> None:
    out = await guard(engine).abatch(
        [EIFFEL_DICT, {**EIFFEL_DICT, "answer": CLEAN_ANSWER}, EIFFEL_ANSWER]
    )
    assert spans_of(V(out[0]["truthlens"])) == ["1950", "500 meters"]
    assert V(out[1]["truthlens"]).passed and out[2].verdict.unverified


def test_wrapper_batch(engine: TruthLens, retriever: Any) -> None:
    chain = rag_chain(retriever, EIFFEL_ANSWER, CLEAN_ANSWER)
    out = guard_chain(chain, engine=engine).batch(
        [EIFFEL_QUESTION, EIFFEL_QUESTION], {"max_concurrency": 1}
    )
    assert sorted(o.verdict.passed for o in out) == [False, True]


# -- streaming ------------------------------------------------------------------------------


def streaming_rag(retriever: Any, answer: str = EIFFEL_ANSWER) -> Any:
    return RunnablePassthrough.assign(context=itemgetter("question") | retriever).assign(
        answer=PROMPT | fake_model(answer) | StrOutputParser()
    )


def test_stream_verified_is_one_chunk_after_detection(engine: TruthLens, retriever: Any) -> None:
    chunks = list((streaming_rag(retriever) | guard(engine)).stream({"question": EIFFEL_QUESTION}))
    assert len(chunks) == 1
    assert chunks[0]["answer"] == EIFFEL_ANSWER
    assert spans_of(V(chunks[0]["truthlens"])) == ["1950", "500 meters"]


def test_stream_verified_applies_body(detector: Detector) -> None:
    engine = make_engine(detector, action_policy("body"))
    chunks = list((fake_model(EIFFEL_ANSWER) | guard(engine)).stream("q"))
    assert len(chunks) == 1 and isinstance(chunks[0], AIMessageChunk)
    assert chunks[0].content == EIFFEL_ANSWER  # unverified -> header: unchanged


def test_stream_passthrough_dicts(engine: TruthLens, retriever: Any) -> None:
    runnable = streaming_rag(retriever) | guard(engine, stream_mode="passthrough")
    chunks = list(runnable.stream({"question": EIFFEL_QUESTION}))
    answer_pieces = [c["answer"] for c in chunks if "answer" in c]
    assert len(answer_pieces) > 3 and "".join(answer_pieces) == EIFFEL_ANSWER
    assert list(chunks[-1]) == ["truthlens"]
    assert spans_of(V(chunks[-1]["truthlens"])) == ["1950", "500 meters"]
    assert all("truthlens" not in c for c in chunks[:-1])


def test_stream_passthrough_message_chunks(engine: TruthLens) -> None:
    runnable = fake_model(EIFFEL_ANSWER) | guard(engine, stream_mode="passthrough")
    chunks = list(runnable.stream("When?"))
    assert len(chunks) > 3 and all(isinstance(c, AIMessageChunk) for c in chunks)
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    assert total.content == EIFFEL_ANSWER
    assert total.response_metadata["truthlens"]["unverified"] is True
    assert chunks[-1].content == ""


def test_stream_passthrough_strings(engine: TruthLens) -> None:
    runnable = (
        fake_model(EIFFEL_ANSWER) | StrOutputParser() | guard(engine, stream_mode="passthrough")
    )
    chunks = list(runnable.stream("When?"))
    assert "".join(chunks) == EIFFEL_ANSWER
    assert chunks[-1] == "" and chunks[-1].verdict.unverified


async def test_astream_both_modes(engine: TruthLens, retriever: Any) -> None:
    verified = [
        c
        async for c in (streaming_rag(retriever) | guard(engine)).astream(
            {"question": EIFFEL_QUESTION}
        )
    ]
    assert len(verified) == 1 and spans_of(V(verified[0]["truthlens"])) == ["1950", "500 meters"]
    passthrough = guard(engine, stream_mode="passthrough")
    chunks = [
        c
        async for c in (streaming_rag(retriever) | passthrough).astream(
            {"question": EIFFEL_QUESTION}
        )
    ]
    assert len(chunks) > 3 and spans_of(V(chunks[-1]["truthlens"])) == ["1950", "500 meters"]


def test_wrapper_stream_passthrough(engine: TruthLens, retriever: Any) -> None:
    chain = rag_chain(retriever, EIFFEL_ANSWER)
    chunks = list(
        guard_chain(chain, engine=engine, stream_mode="passthrough").stream(EIFFEL_QUESTION)
    )
    assert "".join(chunks) == EIFFEL_ANSWER and len(chunks) > 3
    assert spans_of(chunks[-1].verdict) == ["1950", "500 meters"]


@pytest.mark.parametrize(
    "policy",
    [
        action_policy("body"),
        action_policy("header", unverified_factual_action="block"),
        action_policy("header", require_disclaimer=True),
        {"hallucination": {"default_mode": "standard"}},
        {
            "decisions": [
                {
                    "name": "medical",
                    "rules": {
                        "conditions": [{"type": "keyword", "name": "m", "keywords": ["dose"]}]
                    },
                    "plugins": [
                        {
                            "type": "hallucination",
                            "configuration": {"hallucination_action": "block"},
                        }
                    ],
                }
            ]
        },
    ],
)
def test_passthrough_refused_when_policy_changes_text(
    detector: Detector, policy: dict[str, Any]
) -> None:
    with pytest.raises(ConfigError, match="passthrough"):
        guard(make_engine(detector, policy), stream_mode="passthrough")


# -- events, config and callbacks -------------------------------------------------------------


def test_custom_event_reaches_callbacks(engine: TruthLens) -> None:
    recorder = RunRecorder()
    guard(engine).invoke(EIFFEL_DICT, {"callbacks": [recorder], "run_name": "guard"})
    [(name, data, run_id)] = recorder.events
    assert name == TRUTHLENS_EVENT
    assert [s["text"] for s in data["spans"]] == ["1950", "500 meters"]
    assert data["metadata"]["x-vsr-hallucination-detected"] == "true"
    [root] = recorder.of("chain")
    assert root["name"] == "guard" and run_id == root["run_id"]


async def test_custom_event_in_astream_events(engine: TruthLens, retriever: Any) -> None:
    chain = streaming_rag(retriever) | guard(engine)
    events = [
        e
        async for e in chain.astream_events({"question": EIFFEL_QUESTION}, version="v2")
        if e["event"] == "on_custom_event"
    ]
    assert [e["name"] for e in events] == [TRUTHLENS_EVENT]
    assert [s["text"] for s in events[0]["data"]["spans"]] == ["1950", "500 meters"]


def test_config_tags_and_callbacks_reach_inner_runs(engine: TruthLens, retriever: Any) -> None:
    chain = rag_chain(retriever, EIFFEL_ANSWER)
    recorder = RunRecorder()
    runnable = guard_chain(chain, engine=engine)
    runnable.invoke(EIFFEL_QUESTION, {"callbacks": [recorder], "tags": ["t-1"]})
    [root] = [r for r in recorder.runs if r["parent"] is None]
    assert root["name"] == "TruthLensRunnable"
    [inner] = [r for r in recorder.runs if r["parent"] == root["run_id"]]
    assert inner["name"] == "RunnableSequence"
    [model] = recorder.of("chat_model")
    [retrieval] = recorder.of("retriever")
    assert "t-1" in model["tags"] and "t-1" in retrieval["tags"]
    by_id = {r["run_id"]: r for r in recorder.runs}

    def root_of(run: dict[str, Any]) -> Any:
        while run["parent"] is not None:
            run = by_id[run["parent"]]
        return run["run_id"]

    assert root_of(model) == root_of(retrieval) == root["run_id"]


def test_runnable_is_a_native_runnable(engine: TruthLens) -> None:
    runnable = guard(engine).with_config(run_name="guard", tags=["x"])
    assert V(runnable.invoke(EIFFEL_DICT)["truthlens"]).detected
    retried = guard(engine).with_retry(stop_after_attempt=2)
    assert V(retried.invoke(EIFFEL_DICT)["truthlens"]).detected
    assert not TruthLensRunnable.is_lc_serializable()


# -- packaging --------------------------------------------------------------------------------


def test_import_without_langchain_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['langchain_core'] = None\n"
        "import truthlens_integrations\n"
        "assert 'langchain_core' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "try:\n"
        "    import truthlens_integrations.langchain_adapter\n"
        "except ImportError as exc:\n"
        "    from truthlens_integrations.core import MissingDependencyError\n"
        "    assert isinstance(exc, MissingDependencyError), type(exc)\n"
        "    print(exc)\n"
    )
    result = run_python(code)
    assert "pip install 'truthlens-integrations[langchain]'" in result.stdout


def test_top_level_import_stays_light() -> None:
    code = (
        "import sys, truthlens_integrations\n"
        "heavy = [m for m in ('langchain_core', 'torch', 'transformers') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    result = run_python(code)
    assert result.stdout.strip() == "[]"


def test_async_event_loop_not_blocked_by_sync_paths(engine: TruthLens) -> None:
    # ainvoke from plain asyncio.run works (no running-loop assumptions)
    out = asyncio.run(guard(engine).ainvoke(EIFFEL_ANSWER))
    assert out.verdict.unverified


# -- Issue 13, LangChain side: arguments, retries, orphan tool messages, state leaks, events.


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


def _accepts(build: Callable[[dict[str, Any]], Any], name: str, value: Any) -> Any:
    try:
        return build({name: value})
    except UnknownArgumentError as exc:  # pragma: no cover - the failure this test exists for
        raise AssertionError(f"{name} is not accepted: {exc}") from exc


# -- 6. retries, with_retry / with_fallbacks -------------------------------------------------


# -- 9. astream_events never shows the answer the policy withholds ------------------------------


def _events(runnable: TruthLensRunnable, value: Any) -> list[dict[str, Any]]:
    async def collect() -> list[dict[str, Any]]:
        return [e async for e in runnable.astream_events(value, version="v2")]

    return asyncio.run(collect())


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


def test_with_retry_and_with_fallbacks_are_accepted_as_the_model(detector: Detector) -> None:
    engine = make_engine(detector, {"hallucination": {"default_mode": "standard"}})
    broken = Flaky(messages=iter([]), failures=99)
    for model in (fake(FIXED, FIXED).with_retry(), broken.with_fallbacks([fake(FIXED, FIXED)])):
        out = TruthLensRunnable(engine=engine, llm=model).invoke(EIFFEL_DICT)
        assert (
            out["truthlens"]["final_answer"] == FIXED and out["truthlens"]["status"] == "converged"
        )


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
    holders = {e["name"] for e in events if leaks("1950", json.dumps(e.get("data"), default=str))}
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


# -- Standard / premium / retrieval-feedback mitigation through TruthLensRunnable, and -----


VAGUE = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."


STANDARD = {"hallucination": {"default_mode": "standard"}}


PREMIUM = {"hallucination": {"default_mode": "premium"}}


class VagueFirstRetriever(BaseRetriever):
    """A retriever whose first query finds a passage without the facts (so the
    spans are 'neutral' and the retrieval-feedback loop runs) and any rewritten
    query finds the Eiffel record."""

    queries: list[str] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.queries.append(query)
        return [Document(VAGUE if query == EIFFEL_QUESTION else EIFFEL_CONTEXT)]


# -- standard mode --------------------------------------------------------------------------


def test_standard_refines_with_the_given_model_as_a_child_run(detector: Detector) -> None:
    recorder = RunRecorder()
    runnable = TruthLensRunnable(
        engine=make_engine(detector, STANDARD), llm=FakeListChatModel(responses=[CLEAN])
    )
    out = runnable.invoke(EIFFEL_DICT, {"callbacks": [recorder], "tags": ["req-7"]})
    verdict = Verdict.model_validate(out["truthlens"])
    assert out["answer"] == CLEAN and verdict.final_answer == CLEAN
    assert verdict.strategy == "self_refine" and verdict.status in {"converged", "success"}
    assert verdict.original_answer == EIFFEL_ANSWER and verdict.cost.llm_calls == 1
    [root] = recorder.of("chain")
    [call] = recorder.of("chat_model")
    assert call["parent"] == root["run_id"] and "req-7" in call["tags"]
    # the event reports the final verdict
    [(_, data, _)] = recorder.events
    assert data["final_answer"] == CLEAN and data["history"][0]["answer"] == EIFFEL_ANSWER


async def test_standard_async_awaits_the_models_native_async_path(detector: Detector) -> None:
    model = LoopRecordingModel(messages=iter([CLEAN]))
    recorder = RunRecorder()
    runnable = TruthLensRunnable(engine=make_engine(detector, STANDARD), llm=model)
    out = await runnable.ainvoke(
        {**EIFFEL_DICT, "answer": AIMessage(EIFFEL_ANSWER)}, {"callbacks": [recorder]}
    )
    assert out["answer"].content == CLEAN
    assert out["answer"].response_metadata["truthlens"]["original_answer"] == EIFFEL_ANSWER
    assert model.threads == [threading.main_thread().name]  # ran on the event loop
    [root] = recorder.of("chain")
    assert [c["parent"] for c in recorder.of("chat_model")] == [root["run_id"]]


def test_lightweight_policy_never_calls_the_model(detector: Detector) -> None:
    model = FakeListChatModel(responses=[])  # would raise if called
    out = TruthLensRunnable(engine=make_engine(detector), llm=model).invoke(EIFFEL_DICT)
    assert out["answer"] == EIFFEL_ANSWER and out["truthlens"]["status"] == "not_run"


def test_wrapper_refines_with_the_chains_own_model(detector: Detector) -> None:
    model = FakeListChatModel(responses=[EIFFEL_ANSWER, CLEAN])
    chain = (
        {"context": FixedRetriever(passages=[EIFFEL_CONTEXT]), "question": RunnablePassthrough()}
        | PROMPT
        | model
    )
    assert find_chat_model(chain) is model
    recorder = RunRecorder()
    out = guard_chain(chain, engine=make_engine(detector, STANDARD)).invoke(
        EIFFEL_QUESTION, {"callbacks": [recorder]}
    )
    assert isinstance(out, AIMessage) and out.content == CLEAN
    assert out.response_metadata["truthlens"]["strategy"] == "self_refine"
    roots = {recorder.root_of(c["run_id"]) for c in recorder.of("chat_model")}
    assert len(recorder.of("chat_model")) == 2 and len(roots) == 1


def test_model_failure_keeps_the_original_answer(detector: Detector) -> None:
    class Broken(GenericFakeChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise ConnectionError("provider down")

    runnable = TruthLensRunnable(
        engine=make_engine(detector, STANDARD), llm=Broken(messages=iter([]))
    )
    verdict = Verdict.model_validate(runnable.invoke(EIFFEL_DICT)["truthlens"])
    assert verdict.status == "llm_error" and verdict.final_answer == EIFFEL_ANSWER
    assert [s.text for s in verdict.spans] == ["1950", "500 meters"]


# -- premium mode ------------------------------------------------------------------------------


async def test_premium_with_two_verification_models_and_a_judge(detector: Detector) -> None:
    verifiers = [
        FakeListChatModel(responses=[CLEAN] * 4),
        FakeListChatModel(responses=["It was built between 1887 and 1889, in Paris."] * 4),
    ]
    recorder = RunRecorder()
    runnable = TruthLensRunnable(
        engine=make_engine(detector, PREMIUM),
        llm=FakeListChatModel(responses=[CLEAN] * 4),
        verification_llms=verifiers,
        judge_llm=FakeListChatModel(responses=[CLEAN] * 4),
    )
    out = await runnable.ainvoke(EIFFEL_DICT, {"callbacks": [recorder]})
    verdict = Verdict.model_validate(out["truthlens"])
    assert verdict.strategy == "cross_model" and verdict.final_answer is not None
    assert "1950" not in verdict.final_answer and out["answer"] == verdict.final_answer
    assert verdict.cost.llm_calls >= 2
    [root] = recorder.of("chain")
    calls = recorder.of("chat_model")
    assert len(calls) == verdict.cost.llm_calls
    assert all(recorder.root_of(c["run_id"]) == root["run_id"] for c in calls)


# -- retrieval feedback ------------------------------------------------------------------------


def test_pipe_form_retrieval_feedback_with_a_langchain_retriever(detector: Detector) -> None:
    retriever = VagueFirstRetriever()
    recorder = RunRecorder()
    chain = RunnablePassthrough.assign(context=itemgetter("question") | retriever).assign(
        answer=PROMPT | FakeListChatModel(responses=[EIFFEL_ANSWER]) | StrOutputParser()
    )
    guard = TruthLensRunnable(
        engine=make_engine(detector, STANDARD),
        llm=FakeListChatModel(responses=["Eiffel Tower construction years and height", CLEAN]),
        retriever=retriever,
    )
    out = (chain | guard).invoke({"question": EIFFEL_QUESTION}, {"callbacks": [recorder]})
    verdict = Verdict.model_validate(out["truthlens"])
    assert verdict.strategy == "retrieval_feedback"
    assert len(retriever.queries) >= 2 and retriever.queries[0] == EIFFEL_QUESTION
    assert verdict.final_context is not None and EIFFEL_CONTEXT in verdict.final_context
    roots = {recorder.root_of(r["run_id"]) for r in recorder.of("retriever")}
    assert len(roots) == 1  # the feedback retrievals are child runs of the same invoke


def test_wrapper_retrieval_feedback_reinvokes_the_chain(detector: Detector) -> None:
    retriever = VagueFirstRetriever()
    model = FakeListChatModel(responses=[EIFFEL_ANSWER, "Eiffel Tower build dates", CLEAN, CLEAN])
    chain = rag_chain_over(retriever, model)
    recorder = RunRecorder()
    out = guard_chain(chain, engine=make_engine(detector, STANDARD)).invoke(
        EIFFEL_QUESTION, {"callbacks": [recorder]}
    )
    assert out.verdict is not None and out.verdict.strategy == "retrieval_feedback"
    assert out == CLEAN and len(retriever.queries) == 2
    [requery] = [r for r in recorder.of("chain") if r["name"] == "truthlens_requery"]
    [root] = [r for r in recorder.runs if r["parent"] is None]
    assert requery["parent"] == root["run_id"]
