"""What the service's tests and the remote detector's share: the host, small limits, helpers."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT
from truthlens_integrations.core import DetectionResult

CLEAN = "The Eiffel Tower was built between 1887 and 1889 and is 330 meters tall."


HOST = "127.0.0.1"


# Small limits so the 413 paths are cheap to reach.
SERVICE = {
    "max_request_bytes": 65536,
    "max_inputs": 8,
    "max_batch_size": 8,
    "max_answer_chars": 4000,
    "max_context_chars": 20000,
    "max_request_answer_chars": 8000,
    "max_request_context_chars": 40000,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def detect_eiffel(detector: Any, answer: str = EIFFEL_ANSWER) -> DetectionResult:
    result: DetectionResult = detector.detect(
        context=[EIFFEL_CONTEXT], question=None, answer=answer
    )
    return result


# Ray starts a local cluster: the slow lane (CI runs every lane).
SERVICE_MARKS = [pytest.mark.allow_hosts([HOST]), pytest.mark.slow]


def skip_without_the_serve_extra(*modules: str) -> None:
    """Skip the calling test module unless ``modules`` (the ``serve`` extra's) import."""
    for module in modules:
        pytest.importorskip(module, reason="the serve extra is not installed")
