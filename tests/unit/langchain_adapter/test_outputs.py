"""Tests of ``langchain_adapter/_outputs.py``: the guarded message: provider payloads of a
blocked answer are dropped.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests._agents_support import (
    EIFFEL_RECORD,
    QUESTION,
    RIGHT,
    WRONG,
    engine_for,
    with_payloads,
    without_verdicts,
)
from tests._fakes import leaks
from truthlens_integrations.core.engine import DEFAULT_BLOCKED_MESSAGE, TruthLens
from truthlens_integrations.langchain_adapter import TruthLensRunnable

# -- provider payloads of a withheld answer ------------------------------------------------------


def test_a_blocked_message_keeps_no_provider_payload(base: TruthLens) -> None:
    engine = engine_for(base, hallucination_action="block")
    guard = TruthLensRunnable(engine=engine, on_block="message")
    tool_call = AIMessage(
        content="",
        tool_calls=[{"name": "landmark_record", "args": {"name": "Eiffel"}, "id": "c1"}],
    )
    messages = [
        HumanMessage(QUESTION),
        tool_call,
        ToolMessage(EIFFEL_RECORD, tool_call_id="c1"),
        with_payloads(WRONG),
    ]
    out = guard.invoke(messages)
    final = out[-1]
    assert final.content == DEFAULT_BLOCKED_MESSAGE
    assert not leaks("1950", without_verdicts(final))
    assert final.response_metadata["model_name"] == "m"  # what names the run stays
    assert "logprobs" not in final.response_metadata and not final.additional_kwargs
    assert final.response_metadata["truthlens"]["blocked"]


def test_a_passing_message_keeps_its_provider_payload(base: TruthLens) -> None:
    engine = engine_for(base, hallucination_action="block")
    guard = TruthLensRunnable(engine=engine)
    message = with_payloads(RIGHT)
    out = guard.invoke({"context": [EIFFEL_RECORD], "question": QUESTION, "answer": message})
    answer = out["answer"]
    assert answer.additional_kwargs["reasoning_content"].endswith(RIGHT)
    assert "logprobs" in answer.response_metadata
