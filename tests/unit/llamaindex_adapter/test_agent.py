"""Tests of ``llamaindex_adapter/_agent.py``: TruthLensFunctionAgent in real LlamaIndex agent
workflows.

Only the LLM is scripted: a ``MockFunctionCallingLLM`` whose reply depends on the
conversation (call the tool, then answer; answer again when sent TruthLens feedback).
Checks are on behaviour (1950 flagged, a correct answer not blocked), not exact scores.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.agent.workflow.workflow_events import AgentOutput, AgentStream
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole, ToolCallBlock
from llama_index.core.base.llms.types import ChatMessage as LIChatMessage
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from tests._agents_support import EIFFEL_RECORD, QUESTION, RIGHT, WRONG, engine_for
from tests._fakes import leaks
from tests._llamaindex_support import make_engine
from tests._scripts import run_here
from truthlens_integrations.core import BlockedResponseError, ConfigError, UnknownArgumentError
from truthlens_integrations.core.engine import DEFAULT_BLOCKED_MESSAGE, TruthLens, Verdict
from truthlens_integrations.core.engine._verdict import REDACTED
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.llamaindex_adapter import (
    FEEDBACK_KEY,
    TruthLensAgentEvent,
    TruthLensDetectionStartEvent,
    TruthLensFunctionAgent,
)

# -- TruthLensFunctionAgent in real LlamaIndex agent workflows, with the real bundled models.


BLOCKED = DEFAULT_BLOCKED_MESSAGE


def landmark_record(name: str) -> str:
    """Return the stored record of a landmark as JSON."""
    return EIFFEL_RECORD if "eiffel" in name.lower() else '{"error": "unknown landmark"}'


class Script:
    """The scripted LLM's rules; remembers every conversation it was shown."""

    def __init__(self, first: str = WRONG, fixed: str = RIGHT, *, call_tool: bool = True):
        self.first, self.fixed, self.call_tool = first, fixed, call_tool
        self.seen: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        if messages[-1].additional_kwargs.get(FEEDBACK_KEY):
            return ChatMessage(role="assistant", content=self.fixed)
        if self.call_tool and not any(m.role == MessageRole.TOOL for m in messages):
            call = ToolCallBlock(
                tool_call_id="c1", tool_name="landmark_record", tool_kwargs={"name": "Eiffel"}
            )
            return ChatMessage(role="assistant", blocks=[call])
        user = next(m for m in messages if m.role == MessageRole.USER)
        if "(ok)" in (user.content or ""):
            return ChatMessage(role="assistant", content=RIGHT)
        return ChatMessage(role="assistant", content=self.first)


def make_agent(engine: TruthLens, script: Script | None = None, **kwargs: Any) -> Any:
    return TruthLensFunctionAgent(
        tools=[FunctionTool.from_defaults(landmark_record)],
        llm=MockFunctionCallingLLM(response_generator=script or Script()),
        engine=engine,
        **kwargs,
    )


async def run(agent: Any, question: str = QUESTION) -> tuple[Any, list[Any], Context]:
    ctx = Context(agent)
    handler = agent.run(user_msg=question, ctx=ctx)
    events = [event async for event in handler.stream_events()]
    return await handler, events, ctx


def verdict(output: Any) -> dict[str, Any]:
    payload = output.response.additional_kwargs["truthlens"]
    assert isinstance(payload, dict)
    return payload


async def test_header_flags_1950_with_the_tool_output_as_grounding(base: TruthLens) -> None:
    output, events, _ = await run(make_agent(base, action="header"))
    found = verdict(output)
    assert output.response.content == WRONG
    assert found["detected"] and found["action"] == "header"
    assert "1950" in " ".join(s["text"] for s in found["spans"])
    assert not found["unverified"]
    checks = [e for e in events if isinstance(e, TruthLensAgentEvent)]
    assert len(checks) == 1 and checks[0].verdict["original_answer"] == WRONG
    assert output.tool_calls and output.tool_calls[0].tool_name == "landmark_record"


async def test_a_correct_answer_is_not_blocked(base: TruthLens) -> None:
    agent = make_agent(engine_for(base, hallucination_action="block"), Script(first=RIGHT))
    output, _, _ = await run(agent)
    assert output.response.content == RIGHT
    assert not verdict(output)["blocked"]


async def test_body_adds_the_warning(base: TruthLens) -> None:
    engine = engine_for(base, hallucination_action="body")
    output, _, _ = await run(make_agent(engine))
    text = output.response.content
    assert text.startswith(WRONG) and engine.policy.hallucination.warning_template.strip() in text


async def test_block_withholds_the_answer_from_output_stream_and_memory(base: TruthLens) -> None:
    output, events, ctx = await run(make_agent(engine_for(base, hallucination_action="block")))
    assert output.response.content == BLOCKED
    assert verdict(output)["original_answer"] == REDACTED  # withheld from the message
    deltas = [e.delta for e in events if isinstance(e, AgentStream)]
    assert BLOCKED in deltas
    assert not any("1950" in d for d in deltas)
    memory = await ctx.store.get("memory")
    said = [m.content or "" for m in await memory.aget() if m.role == MessageRole.ASSISTANT]
    assert BLOCKED in said and not any("1950" in s for s in said)


async def test_block_can_raise(base: TruthLens) -> None:
    agent = make_agent(engine_for(base, hallucination_action="block"), on_block="raise")
    with pytest.raises(BlockedResponseError):
        await run(agent)


async def test_header_streams_the_llm_deltas(base: TruthLens) -> None:
    _, events, _ = await run(make_agent(base))
    assert any(WRONG in e.delta for e in events if isinstance(e, AgentStream))


async def test_standard_mode_refines_through_the_agent_llm(base: TruthLens) -> None:
    script = Script()
    output, _, _ = await run(make_agent(engine_for(base, default_mode="standard"), script))
    found = verdict(output)
    assert output.response.content == RIGHT
    assert found["original_answer"] == WRONG and found["strategy"] == "self_refine"
    assert [h["answer"] for h in found["history"]][:2] == [WRONG, RIGHT]
    feedback = script.seen[-1][-1]
    assert "1950" in (feedback.content or "") and "1887-1889" in (feedback.content or "")
    assert any(m.role == MessageRole.TOOL for m in script.seen[-1])


async def test_an_answer_without_tool_calls_is_unverified(base: TruthLens) -> None:
    output, _, _ = await run(make_agent(base, Script(call_tool=False)))
    found = verdict(output)
    assert found["unverified"] and found["decision"] != "PASS"


async def test_inside_an_agent_workflow(base: TruthLens) -> None:
    agent = make_agent(engine_for(base, hallucination_action="block"))
    workflow = AgentWorkflow(agents=[agent], root_agent=agent.name)
    handler = workflow.run(user_msg=QUESTION)
    events = [e async for e in handler.stream_events()]
    output = await handler
    assert output.response.content == BLOCKED
    assert any(isinstance(e, TruthLensAgentEvent) for e in events)


async def test_concurrent_runs_keep_their_own_verdicts(base: TruthLens) -> None:
    agent = make_agent(engine_for(base, hallucination_action="block"))
    questions = [f"{QUESTION} {tag}" for tag in ("(ok)", "(bad)", "(ok)", "(bad)")]
    outs = await asyncio.gather(*(run(agent, q) for q in questions))
    for question, (output, _, _) in zip(questions, outs, strict=True):
        expected = RIGHT if "(ok)" in question else BLOCKED
        assert output.response.content == expected


def test_constructor_checks(base: TruthLens) -> None:
    with pytest.raises(UnknownArgumentError, match="on_block"):
        make_agent(base, onblock="raise")
    with pytest.raises(ConfigError, match="passthrough"):
        make_agent(engine_for(base, hallucination_action="block"), stream_mode="passthrough")
    assert isinstance(make_agent(base), FunctionAgent)


def test_cookbook_function_agent_runs_offline(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = run_here("llamaindex_function_agent.py", monkeypatch, capsys)
    assert "flagged span: '1950'" in out
    assert "round 1 (refine, kept): The Eiffel Tower was built from 1887 to 1889" in out
    deltas = [line for line in out.splitlines() if "stream delta:" in line]
    assert len(deltas) == 3 and "1950" not in deltas[-1]  # block: no unchecked delta


def test_policy_knobs_apply_to_a_copy_of_the_engine(base: TruthLens) -> None:
    agent = make_agent(base, action="block", mode="standard")
    assert agent.engine is not base and agent.engine.detector is base.detector
    settings = agent.engine.policy.settings_for(None)
    assert settings.hallucination_action == "block" and settings.mode == "standard"
    assert agent.holds_tokens


def test_agent_names_are_exported() -> None:
    import truthlens_integrations.llamaindex_adapter as li

    names = {"FEEDBACK_KEY", "TruthLensAgentEvent", "TruthLensFunctionAgent"}
    assert names <= set(li.__all__)
    assert all(getattr(li, name) is not None for name in li.__all__)


async def test_premium_mode_uses_other_llms(base: TruthLens) -> None:
    def verifier(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        return ChatMessage(role="assistant", content=RIGHT)

    engine = engine_for(base, default_mode="premium", hallucination_action="body")
    agent = make_agent(
        engine, verification_llms=[MockFunctionCallingLLM(response_generator=verifier)]
    )
    output, _, _ = await run(agent)
    found = verdict(output)
    assert found["strategy"] == "cross_model" and found["original_answer"] == WRONG
    assert any(use["role"] == "verifier" for use in found["cost"]["models"])


# -- Issue 29, agents and LangGraph: attacks on the agent middleware, the graph guard, -----


# -- LlamaIndex agent under block: the provider's payload and the streamed AgentOutput --------


class _PayloadLLM(MockFunctionCallingLLM):
    """The scripted LLM, with a provider payload (``raw``) holding the reply, as real ones do."""

    async def achat(self, messages: Sequence[LIChatMessage], **kwargs: Any) -> ChatResponse:
        response = await super().achat(messages, **kwargs)
        raw = {"choices": [{"message": {"content": response.message.content}}]}
        return response.model_copy(update={"raw": raw})


def _li_script(messages: Sequence[LIChatMessage], **kwargs: Any) -> LIChatMessage:
    if not any(m.role == MessageRole.TOOL for m in messages):
        call = ToolCallBlock(
            tool_call_id="c1", tool_name="landmark_record", tool_kwargs={"name": "Eiffel"}
        )
        return LIChatMessage(role="assistant", blocks=[call])
    return LIChatMessage(role="assistant", content=WRONG)


async def test_llamaindex_agent_block_withholds_raw_payload_and_streamed_output(
    base: TruthLens,
) -> None:
    def record(name: str) -> str:
        """Return the stored record of a landmark as JSON."""
        return EIFFEL_RECORD

    agent = TruthLensFunctionAgent(
        tools=[FunctionTool.from_defaults(record, name="landmark_record")],
        llm=_PayloadLLM(response_generator=_li_script),
        engine=engine_for(base, hallucination_action="block"),
    )
    handler = agent.run(user_msg=QUESTION, ctx=Context(agent))
    events = [event async for event in handler.stream_events()]
    output = await handler
    assert output.response.content != WRONG
    assert not leaks("1950", json.dumps(output.raw, default=str))  # before: the payload held it
    streamed = [e for e in events if isinstance(e, AgentOutput)]
    assert len(streamed) == 2  # the tool call, then the final answer
    for event in streamed:
        assert not leaks("1950", json.dumps(event.raw, default=str))
        assert not leaks("1950", event.response.content or "")


# -- Issue 43, withheld text on the LlamaIndex side: what a blocked answer leaves behind.


# -- TruthLensFunctionAgent -----------------------------------------------------------------


def _agent(engine: TruthLens, **options: Any) -> TruthLensFunctionAgent:
    def landmark_record(name: str) -> str:
        """Return the stored record of a landmark as JSON."""
        return EIFFEL_RECORD

    return TruthLensFunctionAgent(
        tools=[FunctionTool.from_defaults(landmark_record)],
        llm=MockFunctionCallingLLM(response_generator=_li_script),
        engine=engine,
        **options,
    )


async def _run(agent: TruthLensFunctionAgent) -> tuple[Any, list[Any]]:
    handler = agent.run(user_msg=QUESTION, ctx=Context(agent))
    events = [event async for event in handler.stream_events()]
    return await handler, events


def _looping_script(messages: Sequence[LIChatMessage], **kwargs: Any) -> LIChatMessage:
    """Calls the tool again and again; answers only when told to stop (early stopping)."""
    if messages[-1].role == MessageRole.SYSTEM:
        return LIChatMessage(role="assistant", content=WRONG)
    calls = sum(m.role == MessageRole.TOOL for m in messages)
    call = ToolCallBlock(
        tool_call_id=f"c{calls}", tool_name="landmark_record", tool_kwargs={"name": "Eiffel"}
    )
    return LIChatMessage(role="assistant", blocks=[call])


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


@pytest.mark.parametrize("streaming", [False, True])
def test_an_early_stopping_answer_is_checked_too(detector: Detector, streaming: bool) -> None:
    engine = make_engine(detector, hallucination_action="block")
    agent = _agent(engine, early_stopping_method="generate", streaming=streaming)
    agent.llm = MockFunctionCallingLLM(response_generator=_looping_script)

    async def run() -> tuple[Any, list[Any], list[str]]:
        ctx = Context(agent)
        handler = agent.run(user_msg=QUESTION, ctx=ctx, max_iterations=2)
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
