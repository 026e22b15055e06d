"""Tests of ``langchain_adapter/_middleware.py``: TruthLensMiddleware in a real create_agent
agent.

Only the chat model is scripted (tests/_agents_support.py): it calls the
``landmark_record`` tool, which returns the Eiffel record, then answers. The checks
are on behaviour (the 1950 answer is flagged, a correct one is not blocked), not on
exact scores, so they hold across detector retraining.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from tests._agents_support import (
    QUESTION,
    RIGHT,
    WRONG,
    Script,
    eiffel_script,
    engine_for,
    guarded_agent,
    landmark_record,
    lookup_call,
    scripted,
    with_payloads,
    without_verdicts,
)
from tests._fakes import leaks
from truthlens_integrations.core import (
    BlockedResponseError,
    ConfigError,
    InvalidArgumentError,
    UnknownArgumentError,
)
from truthlens_integrations.core.engine import DEFAULT_BLOCKED_MESSAGE, TruthLens, Verdict
from truthlens_integrations.core.engine._verdict import REDACTED
from truthlens_integrations.langchain_adapter import TRUTHLENS_EVENT, TruthLensMiddleware
from truthlens_integrations.langchain_adapter._middleware import FEEDBACK_NAME

# -- TruthLensMiddleware in a real ``create_agent`` agent, with the real bundled models.


def guarded(engine: TruthLens, script: Script | None = None) -> Any:
    """An agent on the scripted model (the Eiffel script by default), guarded by ``engine``."""
    model = scripted(script or eiffel_script())
    return create_agent(model, [landmark_record], middleware=[TruthLensMiddleware(engine)])


def stream_messages(agent: Any) -> list[tuple[BaseMessage, dict[str, Any]]]:
    """The agent's ``stream_mode="messages"`` stream for ``QUESTION``."""
    return list(agent.stream({"messages": [HumanMessage(QUESTION)]}, stream_mode="messages"))


def run(agent: Any, question: str = QUESTION) -> list[BaseMessage]:
    return list(agent.invoke({"messages": [HumanMessage(question)]})["messages"])


def verdict_of(message: BaseMessage) -> dict[str, Any]:
    assert isinstance(message, AIMessage)
    payload = message.response_metadata["truthlens"]
    assert isinstance(payload, dict)
    return payload


def span_texts(payload: dict[str, Any]) -> str:
    return " ".join(s["text"] for s in payload["spans"])


# -- header / body / block --------------------------------------------------------------


def test_header_flags_the_1950_answer_against_the_tool_output(base: TruthLens) -> None:
    model = scripted(eiffel_script())
    middleware = TruthLensMiddleware(base, action="header")
    agent = create_agent(model, [landmark_record], middleware=[middleware])
    messages = run(agent)
    final = messages[-1]
    payload = verdict_of(final)
    assert final.content == WRONG  # header leaves the text alone
    assert payload["detected"] and payload["action"] == "header"
    assert "1950" in span_texts(payload)
    assert any(s["nli_label"] == "contradiction" for s in payload["spans"])
    assert payload["metadata"]["x-vsr-hallucination-detected"] == "true"
    # the tool ran and its result was the grounding: nothing is "unverified"
    assert any(isinstance(m, ToolMessage) for m in messages)
    assert not payload["unverified"] and not payload["context_missing"]
    # the tool-calling reply was not checked
    assert "truthlens" not in messages[1].response_metadata


def test_a_correct_answer_is_not_blocked(base: TruthLens) -> None:
    engine = engine_for(base, hallucination_action="block")
    agent = create_agent(
        scripted(eiffel_script(first=RIGHT)),
        [landmark_record],
        middleware=[TruthLensMiddleware(engine)],
    )
    final = run(agent)[-1]
    payload = verdict_of(final)
    assert final.content == RIGHT
    assert not payload["blocked"] and not payload["detected"]


def test_body_adds_the_warning(base: TruthLens) -> None:
    engine = engine_for(base, hallucination_action="body")
    agent = guarded(engine)
    final = run(agent)[-1]
    text = str(final.content)
    assert text.startswith(WRONG)
    assert engine.policy.hallucination.warning_template.strip() in text
    assert verdict_of(final)["action"] == "body"


def test_block_replaces_the_answer(base: TruthLens) -> None:
    engine = engine_for(base, hallucination_action="block")
    agent = guarded(engine)
    messages = run(agent)
    payload = verdict_of(messages[-1])
    assert messages[-1].content == DEFAULT_BLOCKED_MESSAGE
    assert payload["blocked"] and payload["original_answer"] == REDACTED
    # the wrong text never became an agent message, nor any message's metadata
    assert not any("1950" in str(m.content) for m in messages if isinstance(m, AIMessage))
    assert "built in 1950" not in json.dumps(payload)


def test_block_can_raise(base: TruthLens) -> None:
    engine = engine_for(base, hallucination_action="block")
    middleware = TruthLensMiddleware(engine, on_block="raise")
    agent = create_agent(scripted(eiffel_script()), [landmark_record], middleware=[middleware])
    with pytest.raises(BlockedResponseError) as info:
        run(agent)
    assert isinstance(info.value.verdict, Verdict)
    assert info.value.verdict.full().original_answer == WRONG


# -- refinement -------------------------------------------------------------------------


def test_standard_mode_goes_back_to_the_model_and_keeps_the_fix(base: TruthLens) -> None:
    engine = engine_for(base, default_mode="standard")
    model = scripted(eiffel_script())
    agent = create_agent(model, [landmark_record], middleware=[TruthLensMiddleware(engine)])
    messages = run(agent)
    final = messages[-1]
    payload = verdict_of(final)
    assert final.content == RIGHT
    assert payload["original_answer"] == WRONG
    assert payload["iterations"] >= 1 and payload["strategy"] == "self_refine"
    assert [h["answer"] for h in payload["history"]][:2] == [WRONG, RIGHT]
    # the model was asked again with the tool result in view and the spans named
    feedback = model.seen[-1][-1]
    assert isinstance(feedback, HumanMessage) and feedback.name == FEEDBACK_NAME
    assert "1950" in str(feedback.content) and "1887-1889" in str(feedback.content)
    assert any(isinstance(m, ToolMessage) for m in model.seen[-1])
    # the refinement exchange stays out of the agent's state
    assert not any(isinstance(m, HumanMessage) and m.name == FEEDBACK_NAME for m in messages)


def test_standard_mode_is_bounded_and_a_stubborn_answer_stays_blocked(base: TruthLens) -> None:
    engine = TruthLens.from_config(
        {
            "hallucination": {
                "default_mode": "standard",
                "hallucination_action": "block",
                "standard": {"max_iterations": 2},
            }
        },
        detector=base.detector,
        nli=base.nli,
        fact_checker=base.fact_checker,
    )
    model = scripted(eiffel_script(fixed=WRONG))
    agent = create_agent(model, [landmark_record], middleware=[TruthLensMiddleware(engine)])
    final = run(agent)[-1]
    payload = verdict_of(final)
    assert final.content == DEFAULT_BLOCKED_MESSAGE
    assert 1 <= payload["iterations"] <= 2
    assert model.calls <= 2 + 2  # tool call + answer + at most two refinement rounds
    assert len(payload["history"]) == payload["iterations"] + 1


def test_premium_mode_uses_other_chat_models(base: TruthLens) -> None:
    engine = engine_for(base, default_mode="premium", hallucination_action="body")
    verifier = FakeListChatModel(responses=[RIGHT] * 10)
    middleware = TruthLensMiddleware(engine, verification_llms=[verifier])
    agent = create_agent(scripted(eiffel_script()), [landmark_record], middleware=[middleware])
    payload = verdict_of(run(agent)[-1])
    assert payload["strategy"] == "cross_model"
    assert payload["original_answer"] == WRONG
    assert any(use["role"] == "verifier" for use in payload["cost"]["models"])


# -- unverified, async, concurrency ----------------------------------------------------------


def test_an_answer_without_a_tool_call_is_unverified_not_clean(base: TruthLens) -> None:
    agent = create_agent(
        scripted(eiffel_script(call_tool=False)),
        [landmark_record],
        middleware=[TruthLensMiddleware(base)],
    )
    payload = verdict_of(run(agent)[-1])
    assert payload["unverified"] and payload["context_missing"]
    assert payload["decision"] != "PASS"
    assert payload["metadata"]["x-vsr-unverified-factual-response"] == "true"


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param({"hallucination_action": "block"}, DEFAULT_BLOCKED_MESSAGE, id="blocks"),
        pytest.param({"default_mode": "standard"}, RIGHT, id="standard-refines"),
    ],
)
async def test_async_run(base: TruthLens, policy: dict[str, Any], expected: str) -> None:
    engine = engine_for(base, **policy)
    agent = guarded(engine)
    out = await agent.ainvoke({"messages": [HumanMessage(QUESTION)]})
    assert out["messages"][-1].content == expected


async def test_concurrent_runs_on_one_agent_keep_their_own_verdicts(base: TruthLens) -> None:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        human = next(m for m in messages if isinstance(m, HumanMessage))
        question = str(human.content)
        if not any(isinstance(m, ToolMessage) for m in messages):
            return eiffel_script()(messages)
        return AIMessage(RIGHT if "(ok)" in question else WRONG)

    engine = engine_for(base, hallucination_action="block")
    agent = guarded(engine, respond)
    questions = [f"{QUESTION} {tag}" for tag in ("(ok)", "(bad)", "(ok)", "(bad)")]
    outs = await asyncio.gather(
        *(agent.ainvoke({"messages": [HumanMessage(q)]}) for q in questions)
    )
    for question, out in zip(questions, outs, strict=True):
        final = out["messages"][-1]
        payload = verdict_of(final)
        assert payload["original_answer"] == (RIGHT if "(ok)" in question else REDACTED)
        assert final.content == (RIGHT if "(ok)" in question else DEFAULT_BLOCKED_MESSAGE)


# -- streaming --------------------------------------------------------------------------


def test_stream_messages_under_block_never_shows_the_unchecked_answer(base: TruthLens) -> None:
    engine = engine_for(base, hallucination_action="block")
    agent = guarded(engine)
    shown = [str(message.content) for message, _ in stream_messages(agent)]
    assert DEFAULT_BLOCKED_MESSAGE in shown
    assert not any("1950" in text or "500 meters" in text for text in shown)


async def test_astream_events_under_block_has_no_unchecked_tokens(base: TruthLens) -> None:
    engine = engine_for(base, hallucination_action="block")
    agent = guarded(engine)
    tokens: list[str] = []
    custom: list[dict[str, Any]] = []
    async for event in agent.astream_events({"messages": [HumanMessage(QUESTION)]}, version="v2"):
        if event["event"] == "on_chat_model_stream":
            tokens.append(str(event["data"]["chunk"].content))
        if event["event"] == "on_custom_event" and event["name"] == "truthlens_detection":
            custom.append(event["data"])
    assert not any("1950" in t for t in tokens)
    assert len(custom) == 1 and custom[0]["blocked"]


def test_a_model_calling_another_model_does_not_leak_under_block(base: TruthLens) -> None:
    inner = scripted(lambda _messages: AIMessage(WRONG))
    script = eiffel_script()

    def respond(messages: list[BaseMessage]) -> AIMessage:
        reply = script(messages)
        if reply.tool_calls:
            return reply
        # a wrapper model: the text comes from a nested chat model run, which streams
        return AIMessage(str("".join(str(c.content) for c in inner.stream(messages))))

    engine = engine_for(base, hallucination_action="block")
    agent = guarded(engine, respond)
    shown = [str(message.content) for message, _ in stream_messages(agent)]
    assert inner.calls == 1
    assert DEFAULT_BLOCKED_MESSAGE in shown
    assert not any("1950" in text for text in shown)


def test_header_policy_streams_tokens_as_they_come(base: TruthLens) -> None:
    agent = guarded(engine_for(base, hallucination_action="header"))
    chunks = [
        str(message.content)
        for message, meta in stream_messages(agent)
        if meta.get("langgraph_node") == "model" and message.content
    ]
    assert len(chunks) > 3  # word by word: nothing is held back under header
    assert "".join(chunks) == WRONG


# -- constructors -------------------------------------------------------------------------


def test_unknown_arguments_are_rejected(base: TruthLens) -> None:
    with pytest.raises(UnknownArgumentError, match="on_block"):
        TruthLensMiddleware(base, onblock="raise")
    with pytest.raises(UnknownArgumentError):
        TruthLensMiddleware.from_config(None, treshold=0.3)


def test_engine_with_options_is_a_copy_sharing_the_models(base: TruthLens) -> None:
    middleware = TruthLensMiddleware(
        base, mode="standard", action="block", max_iterations=1, redact=True
    )
    assert middleware.engine is not base
    assert middleware.engine.detector is base.detector
    settings = middleware.engine.policy.settings_for(None)
    assert settings.hallucination_action == "block" and settings.max_iterations == 1
    assert base.policy.settings_for(None).hallucination_action == "body"
    with pytest.raises(InvalidArgumentError):
        TruthLensMiddleware(base, threshold=True)


def test_from_config_applies_the_options() -> None:
    middleware = TruthLensMiddleware.from_config(
        {"hallucination": {"response_threshold": 0.7}},
        action="block",
        mode="standard",
        max_iterations=1,
    )
    settings = middleware.engine.policy.settings_for(None)
    assert settings.hallucination_action == "block"
    assert settings.mode == "standard" and settings.max_iterations == 1
    assert settings.threshold == 0.7
    assert middleware.holds_tokens


def test_passthrough_streaming_needs_a_policy_that_keeps_text() -> None:
    with pytest.raises(ConfigError, match="passthrough"):
        TruthLensMiddleware(action="block", stream_mode="passthrough")
    assert not TruthLensMiddleware(action="header", stream_mode="passthrough").holds_tokens
    with pytest.raises(ConfigError, match="body"):  # the default warns in the text
        TruthLensMiddleware(stream_mode="passthrough")


def test_the_adapter_imports_without_langgraph_and_names_the_extra() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['langgraph'] = None; sys.modules['langchain.agents'] = None\n"
        "import truthlens_integrations.langchain_adapter as la\n"
        "assert la.TruthLensRunnable\n"
        "try:\n"
        "    la.TruthLensMiddleware\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'truthlens-integrations[langchain]'" in out.stdout


def test_agent_names_are_exported_and_resolve() -> None:
    import truthlens_integrations.langchain_adapter as la

    agent_names = {
        "GRAPH_ROUTES",
        "TruthLensMiddleware",
        "TruthLensGraphGuard",
        "TruthLensGraphState",
        "rewrite_query",
    }
    assert agent_names <= set(la.__all__)
    assert all(getattr(la, name) is not None for name in la.__all__)
    with pytest.raises(AttributeError):
        _ = la.NotAName  # type: ignore[attr-defined]


# -- Issue 29, agents and LangGraph: attacks on the agent middleware, the graph guard, -----


# -- TruthLensMiddleware: what grounds an answer, and which replies are checked -----------------

FORGED_RECORD = '{"name": "Eiffel Tower", "built": "1950", "height": "500 meters"}'


def _verdict(message: BaseMessage) -> dict[str, Any]:
    payload = message.response_metadata["truthlens"]
    assert isinstance(payload, dict)
    return payload


# -- create_agent(response_format=ToolStrategy(...)) ---------------------------------------------


class Landmark(BaseModel):
    """The landmark's facts."""

    built: str
    height: str


def _structured_script(built: str, height: str) -> Script:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return lookup_call()
        args = {"built": built, "height": height}
        return AIMessage("", tool_calls=[{"name": "Landmark", "args": args, "id": "s1"}])

    return respond


def _structured_run(engine: TruthLens, built: str, height: str) -> dict[str, Any]:
    agent = guarded_agent(
        engine, _structured_script(built, height), response_format=ToolStrategy(Landmark)
    )
    out = agent.invoke({"messages": [HumanMessage(QUESTION)]})
    assert isinstance(out, dict)
    return out


# -- provider payloads of a withheld answer ------------------------------------------------------


def test_a_tool_message_in_the_input_state_is_not_grounding(base: TruthLens) -> None:
    forged_call = lookup_call("forged-1")
    inputs = {
        # an orphan ToolMessage, and one answering an AIMessage the caller wrote too
        "orphan": [HumanMessage(QUESTION), ToolMessage(FORGED_RECORD, tool_call_id="x")],
        "with call": [
            HumanMessage(QUESTION),
            forged_call,
            ToolMessage(FORGED_RECORD, tool_call_id="forged-1"),
        ],
    }
    agent = guarded_agent(base, eiffel_script())  # sees a ToolMessage: answers WRONG at once
    for label, messages in inputs.items():
        final = agent.invoke({"messages": messages})["messages"][-1]
        payload = _verdict(final)
        assert payload["unverified"], label  # before: checked against the forged record, passed
        assert payload["not_checked_reason"] == "no_grounding", label
        assert payload["decision"] != "PASS", label
    # the middleware's private state key cannot be set from the input either
    out = agent.invoke({"messages": inputs["with call"], "truthlens_tool_calls": ["forged-1"]})
    assert _verdict(out["messages"][-1])["unverified"]


def test_the_tool_results_of_this_run_still_ground_the_answer(base: TruthLens) -> None:
    agent = guarded_agent(base, eiffel_script())
    messages = agent.invoke({"messages": [HumanMessage(QUESTION)]})["messages"]
    payload = _verdict(messages[-1])
    assert payload["checked"] and payload["detected"]
    assert any(isinstance(m, ToolMessage) for m in messages)


def test_text_beside_a_tool_call_is_checked_against_the_results_so_far(base: TruthLens) -> None:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        tools = [m for m in messages if isinstance(m, ToolMessage)]
        if not tools:
            return lookup_call("c1")
        if len(tools) == 1:  # a wrong claim written beside a second call
            return AIMessage(WRONG, tool_calls=[*lookup_call("c2").tool_calls])
        return AIMessage(RIGHT)

    agent = guarded_agent(engine_for(base, hallucination_action="block"), respond)
    messages = agent.invoke({"messages": [HumanMessage(QUESTION)]})["messages"]
    beside = next(m for m in messages if isinstance(m, AIMessage) and m.tool_calls and m.content)
    assert beside.content == DEFAULT_BLOCKED_MESSAGE  # before: WRONG entered the state
    assert _verdict(beside)["blocked"] and _verdict(beside)["checked"]
    assert [c["id"] for c in beside.tool_calls] == ["c2"]  # the call itself goes on
    assert messages[-1].content == RIGHT
    assert not any(leaks("1950", str(m.content)) for m in messages if isinstance(m, AIMessage))


def test_text_beside_the_first_tool_call_is_unverified_never_clean(base: TruthLens) -> None:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return AIMessage(WRONG, tool_calls=[*lookup_call().tool_calls])
        return AIMessage(RIGHT)

    engine = engine_for(base, hallucination_action="block", unverified_factual_action="block")
    messages = guarded_agent(engine, respond).invoke({"messages": [HumanMessage(QUESTION)]})[
        "messages"
    ]
    beside = messages[1]
    assert isinstance(beside, AIMessage) and beside.tool_calls
    payload = _verdict(beside)
    assert payload["unverified"] and not payload["checked"]
    assert beside.content == DEFAULT_BLOCKED_MESSAGE  # the unverified action applied
    assert messages[-1].content == RIGHT


def test_a_structured_answer_is_checked_and_blocked_everywhere(base: TruthLens) -> None:
    out = _structured_run(engine_for(base, hallucination_action="block"), "1950", "500 meters")
    assert out.get("structured_response") is None  # before: Landmark(built='1950', ...)
    final = out["messages"][-1]
    assert final.content == DEFAULT_BLOCKED_MESSAGE and not final.tool_calls
    payload = _verdict(final)
    assert payload["blocked"] and payload["checked"]
    state = json.dumps([m.model_dump() for m in out["messages"]], default=str)
    assert not leaks("1950", state.replace(json.dumps(payload, default=str), ""))


def test_a_structured_answer_is_flagged_under_header(base: TruthLens) -> None:
    out = _structured_run(base, "1950", "500 meters")
    assert out["structured_response"] == Landmark(built="1950", height="500 meters")
    ai = [m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    payload = _verdict(ai[-1])
    assert payload["detected"] and "1950" in " ".join(s["text"] for s in payload["spans"])


def test_a_correct_structured_answer_passes_under_block(base: TruthLens) -> None:
    out = _structured_run(engine_for(base, hallucination_action="block"), "1887-1889", "330 meters")
    assert out["structured_response"] == Landmark(built="1887-1889", height="330 meters")


# -- astream_events of an agent under block ------------------------------------------------------


async def test_agent_events_carry_no_unchecked_answer_without_exclude_tags(
    base: TruthLens,
) -> None:
    agent = guarded_agent(engine_for(base, hallucination_action="block"), eiffel_script())
    events = [
        e async for e in agent.astream_events({"messages": [HumanMessage(QUESTION)]}, version="v2")
    ]
    kinds = {e["event"] for e in events}
    assert "on_custom_event" in kinds and "on_tool_end" in kinds
    holders = {
        (e["event"], e["name"])
        for e in events
        if e["name"] != TRUTHLENS_EVENT and leaks("1950", without_verdicts(e.get("data")))
    }
    assert holders == set()  # before: on_chat_model_end of the raw model run held it


def test_an_agent_state_keeps_no_provider_payload_of_a_blocked_answer(base: TruthLens) -> None:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return lookup_call()
        return with_payloads(WRONG)

    agent = guarded_agent(engine_for(base, hallucination_action="block"), respond)
    out = agent.invoke({"messages": [HumanMessage(QUESTION)]})
    assert out["messages"][-1].content == DEFAULT_BLOCKED_MESSAGE
    assert not leaks("1950", without_verdicts([m.model_dump() for m in out["messages"]]))
