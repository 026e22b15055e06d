"""Tests of ``core/observability/_logging.py``: structured log events."""

from __future__ import annotations

import json
import logging

import pytest

from truthlens_integrations.core.observability import JsonFormatter, get_logger
from truthlens_integrations.core.observability._logging import log_event

# --- logging -------------------------------------------------------------------


def test_structured_log_event(caplog: pytest.LogCaptureFixture) -> None:
    logger = get_logger("guard")
    assert logger.name == "truthlens_integrations.guard"
    assert get_logger("truthlens_integrations.x").name == "truthlens_integrations.x"
    with caplog.at_level(logging.INFO, logger="truthlens_integrations"):
        log_event(logger, "guard.verdict", decision="medical_assistant", score=0.92, spans=2)
    (record,) = caplog.records
    assert record.truthlens == {  # type: ignore[attr-defined]
        "event": "guard.verdict",
        "decision": "medical_assistant",
        "score": 0.92,
        "spans": 2,
    }
    assert "guard.verdict" in record.getMessage()
    assert "score=0.92" in record.getMessage()
    payload = json.loads(JsonFormatter().format(record))
    assert payload["event"] == "guard.verdict"
    assert payload["decision"] == "medical_assistant"
    assert payload["level"] == "INFO"


def test_log_event_skips_work_below_level(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="truthlens_integrations"):
        log_event(get_logger("quiet"), "debug.thing", level=logging.DEBUG, x=1)
    assert caplog.records == []
