"""Issue 43, withheld text on the LlamaIndex side: what a blocked answer leaves behind.

A blocked (or replaced) answer must not reach the caller through a payload the inner
engine or the provider attached to it, nor through the adapter's own events when the
engine redacts. The detector is the tiny keyword model (flags exactly "1950", "500" and
"meters"); LLMs are SCRIPTED STAND-INS (tests/_llamaindex_support.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage as LIChatMessage
from llama_index.core.base.llms.types import MessageRole, ToolCallBlock
from llama_index.core.base.response.schema import Response, StreamingResponse
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from tests._agents_support import EIFFEL_RECORD, WRONG
from tests._agents_support import QUESTION as AGENT_QUESTION
from tests._fakes import leaks
from tests._llamaindex_support import QUESTION, WRONG_ANSWER, ScriptedLLM, make_engine
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.llamaindex_adapter import (
    TruthLensDetectionStartEvent,
    TruthLensFunctionAgent,
    TruthLensMitigationIterationEvent,
    TruthLensQueryEngine,
    get_verdict,
)


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


# -- TruthLensFunctionAgent -----------------------------------------------------------------


def _agent_script(messages: Sequence[LIChatMessage], **kwargs: Any) -> LIChatMessage:
    if not any(m.role == MessageRole.TOOL for m in messages):
        call = ToolCallBlock(
            tool_call_id="c1", tool_name="landmark_record", tool_kwargs={"name": "Eiffel"}
        )
        return LIChatMessage(role="assistant", blocks=[call])
    return LIChatMessage(role="assistant", content=WRONG)


def _agent(engine: TruthLens, **options: Any) -> TruthLensFunctionAgent:
    def landmark_record(name: str) -> str:
        """Return the stored record of a landmark as JSON."""
        return EIFFEL_RECORD

    return TruthLensFunctionAgent(
        tools=[FunctionTool.from_defaults(landmark_record)],
        llm=MockFunctionCallingLLM(response_generator=_agent_script),
        engine=engine,
        **options,
    )


async def _run(agent: TruthLensFunctionAgent) -> tuple[Any, list[Any]]:
    handler = agent.run(user_msg=AGENT_QUESTION, ctx=Context(agent))
    events = [event async for event in handler.stream_events()]
    return await handler, events


def test_a_redacting_agent_keeps_the_answer_out_of_its_events(
    detector: Detector, collected: list[Any]
) -> None:
    audit: list[Verdict] = []
    engine = make_engine(detector, hallucination_action="block")
    agent = _agent(engine, redact=True, audit_hook=audit.append)
    output, streamed = asyncio.run(_run(agent))
    assert output.response.content == engine.blocked_message
    ours = [e for e in collected if "TruthLens" in e.class_name()]
    assert any(isinstance(e, TruthLensDetectionStartEvent) for e in ours)
    for event in ours:  # before: the start event held the answer
        assert not leaks("1950", json.dumps(event.model_dump(), default=str))
    for event in streamed:
        assert not leaks("1950", json.dumps(event.model_dump(), default=str))
    assert [v.original_answer for v in audit] == [WRONG]


def _looping_script(messages: Sequence[LIChatMessage], **kwargs: Any) -> LIChatMessage:
    """Calls the tool again and again; answers only when told to stop (early stopping)."""
    if messages[-1].role == MessageRole.SYSTEM:
        return LIChatMessage(role="assistant", content=WRONG)
    calls = sum(m.role == MessageRole.TOOL for m in messages)
    call = ToolCallBlock(
        tool_call_id=f"c{calls}", tool_name="landmark_record", tool_kwargs={"name": "Eiffel"}
    )
    return LIChatMessage(role="assistant", blocks=[call])


@pytest.mark.parametrize("streaming", [False, True])
def test_an_early_stopping_answer_is_checked_too(detector: Detector, streaming: bool) -> None:
    engine = make_engine(detector, hallucination_action="block")
    agent = _agent(engine, early_stopping_method="generate", streaming=streaming)
    agent.llm = MockFunctionCallingLLM(response_generator=_looping_script)

    async def run() -> tuple[Any, list[Any], list[str]]:
        ctx = Context(agent)
        handler = agent.run(user_msg=AGENT_QUESTION, ctx=ctx, max_iterations=2)
        events = [event async for event in handler.stream_events()]
        output = await handler
        memory = await ctx.store.get("memory")
        said = [m.content or "" for m in await memory.aget() if m.role == MessageRole.ASSISTANT]
        return output, events, said

    output, events, said = asyncio.run(run())
    # before: the answer generated at max_iterations went out unchecked
    assert output.response.content == engine.blocked_message
    assert output.response.additional_kwargs["truthlens"]["blocked"]
    assert not leaks("1950", json.dumps(output.raw, default=str))
    for event in events:
        assert not leaks("1950", json.dumps(event.model_dump(), default=str))
    assert engine.blocked_message in said and not any("1950" in s for s in said)


class _EchoingRefiner(ScriptedLLM):
    """The query refiner's reply is not JSON: the fallback query (question + claims) runs."""

    def reply(self, prompt: str) -> str:
        if "search quer" in prompt.lower():
            self.prompts.append(prompt)
            return "Sure: look up 1950."
        return super().reply(prompt)


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
