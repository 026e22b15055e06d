"""Tests of ``langchain_adapter/_inputs.py``: reading a runnable's input: tool messages and
grounding.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests._langchain_support import make_engine
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.langchain_adapter import TruthLensRunnable

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
