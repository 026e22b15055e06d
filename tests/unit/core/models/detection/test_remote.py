"""Tests of ``core/models/detection/_remote.py``: the remote detector against a faked service:
timeouts, retries, malformed replies, limits.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests._serve_support import (
    CLEAN,
    HOST,
    SERVICE_MARKS,
    detect_eiffel,
    free_port,
    skip_without_the_serve_extra,
)
from tests.conftest import EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations import core
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import load_detector

skip_without_the_serve_extra("ray.serve", "httpx")
pytestmark = SERVICE_MARKS


# -- failure paths against a tiny local HTTP server --------------------------------------


class _Fake:
    """A scripted HTTP server on 127.0.0.1: each path answers from a list of replies."""

    def __init__(self, replies: dict[str, list[tuple[int, bytes, float]]]) -> None:
        self.replies = replies
        self.hits: dict[str, int] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                self._answer()

            def _answer(self) -> None:
                n = fake.hits.get(self.path, 0)
                fake.hits[self.path] = n + 1
                script = fake.replies.get(self.path, [(404, b"{}", 0.0)])
                status, body, delay = script[min(n, len(script) - 1)]
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((HOST, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{HOST}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _healthz() -> tuple[int, bytes, float]:
    body = {"status": "ok", "model_id": "fake", "config": {"token_threshold": 0.5}}
    return 200, json.dumps(body).encode(), 0.0


def _result(answer: str, status: str = "supported") -> dict[str, Any]:
    return {
        "answer": answer,
        "spans": [],
        "score": 0.0,
        "threshold": 0.5,
        "detected": False,
        "status": status,
        "coverage": {
            "answer_chars": len(answer),
            "answer_chars_scored": len(answer),
            "max_length": 512,
        },
        "model_id": "fake",
        "latency_ms": 1.0,
    }


@pytest.fixture
def fake() -> Iterator[Callable[[dict[str, list[tuple[int, bytes, float]]]], _Fake]]:
    made: list[_Fake] = []

    def make(replies: dict[str, list[tuple[int, bytes, float]]]) -> _Fake:
        server = _Fake(replies)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


# -- issue 29: the remote client against hostile servers --------------------------------


class _Trickle:
    """Sends a valid reply one byte every ``gap_s`` seconds (headers included)."""

    def __init__(self, reply: bytes, gap_s: float = 0.5) -> None:
        self.reply, self.gap_s = reply, gap_s
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen()
        self.url = f"http://{HOST}:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            for byte in self.reply:  # bounded: the reply's length
                if self.stop.wait(self.gap_s):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def _contradicting(answer: str) -> dict[str, dict[str, Any]]:
    ok = _result(answer)
    span = {"start": 0, "end": 4, "text": answer[:4], "confidence": 0.9}
    scored_nothing = {**ok["coverage"], "answer_chars_scored": 0}
    return {
        "supported-but-over-threshold": {**ok, "score": 0.99},
        "supported-nothing-scored": {**ok, "coverage": scored_nothing},
        "span-outside-answer": {
            **ok,
            "status": "hallucinated",
            "detected": True,
            "score": 0.9,
            "spans": [{**span, "start": len(answer), "end": len(answer) + 5, "text": "xxxxx"}],
        },
        "span-text-mismatch": {
            **ok,
            "status": "hallucinated",
            "detected": True,
            "score": 0.9,
            "spans": [{**span, "text": "Eiff"}],
        },
        "hallucinated-under-threshold": {**ok, "status": "hallucinated", "detected": True},
    }


def test_slow_server_times_out_without_retrying(fake: Any) -> None:
    server = fake({"/healthz": [_healthz()], "/v1/detect": [(200, b"{}", 3.0)]})
    detector = load_detector(server.url, timeout_s=0.5, retries=2)
    started = time.perf_counter()
    with pytest.raises(core.ServiceTimeoutError, match=r"did not answer within 0\.5"):
        detect_eiffel(detector)
    assert time.perf_counter() - started < 2.5
    assert server.hits["/v1/detect"] == 1  # the server has the request: not sent again
    lenient = load_detector(server.url, timeout_s=0.5, on_error="unverifiable")
    assert detect_eiffel(lenient).status is core.DetectionStatus.UNVERIFIABLE

    async def run() -> core.DetectionResult:
        return await lenient.adetect(context=[EIFFEL_CONTEXT], question=None, answer=CLEAN)

    result = asyncio.run(run())
    assert result.status is core.DetectionStatus.UNVERIFIABLE and "0.5" in (result.error or "")


@pytest.mark.parametrize(
    "body",
    [
        b"<html>proxy error</html>",  # not JSON
        b'{"results": []}',  # wrong count
        json.dumps({"results": [_result("another answer")]}).encode(),  # not our answer
        json.dumps({"results": [{"status": "supported"}]}).encode(),  # not a result
    ],
    ids=["not-json", "wrong-count", "other-answer", "partial"],
)
def test_malformed_reply_is_never_supported(fake: Any, body: bytes) -> None:
    server = fake({"/healthz": [_healthz()], "/v1/detect": [(200, body, 0.0)]})
    with pytest.raises(core.ServiceError, match=r"malformed|not JSON|different answer"):
        detect_eiffel(load_detector(server.url))
    result = detect_eiffel(load_detector(server.url, on_error="unverifiable"))
    assert result.status is core.DetectionStatus.UNVERIFIABLE and not result.detected
    assert result.error
    engine = TruthLens.from_config({"service": {"url": server.url, "on_error": "unverifiable"}})
    # The classifier endpoint is garbage too: every prompt counts as factual.
    verdict = engine.guard(context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=CLEAN)
    assert verdict.unverified and not verdict.passed


def test_gateway_errors_are_retried_bugs_are_not(fake: Any) -> None:
    ok = json.dumps({"results": [_result(CLEAN)]}).encode()
    server = fake({"/healthz": [_healthz()], "/v1/detect": [(503, b"{}", 0.0), (200, ok, 0.0)]})
    assert (
        detect_eiffel(load_detector(server.url, retries=1), CLEAN).status
        is core.DetectionStatus.SUPPORTED
    )
    assert server.hits["/v1/detect"] == 2
    broken = fake({"/healthz": [_healthz()], "/v1/detect": [(500, b'{"message": "bug"}', 0.0)]})
    with pytest.raises(core.ServiceError, match="500: bug"):
        detect_eiffel(load_detector(broken.url, retries=3))
    assert broken.hits["/v1/detect"] == 1
    down = fake({"/healthz": [(503, b"{}", 0.0)]})
    with pytest.raises(core.ServiceError, match="unavailable"):
        detect_eiffel(load_detector(down.url, retries=2))
    assert down.hits["/healthz"] == 3


def test_refused_connection_and_bad_options() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(core.ServiceError, match="cannot reach"):
        detect_eiffel(load_detector(f"http://{HOST}:{port}", retries=1))
    with pytest.raises(core.InvalidInputError, match="do not apply to a service URL"):
        load_detector(f"http://{HOST}:{port}", device="cuda")
    with pytest.raises(core.InvalidInputError, match="on_error"):
        load_detector(f"http://{HOST}:{port}", on_error="pass")
    with pytest.raises(core.ConfigError):
        TruthLens.from_config({"service": {"url": "127.0.0.1:8000"}})


def test_timeout_bounds_the_whole_call_against_a_trickling_server() -> None:
    body = json.dumps({"status": "ok", "model_id": "fake", "config": {}}).encode()
    reply = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body
    server = _Trickle(reply)  # would take about 50 s to finish
    try:
        detector = load_detector(server.url, timeout_s=1, retries=2)
        started = time.perf_counter()
        with pytest.raises(core.ServiceTimeoutError, match="within 1 s"):
            detect_eiffel(detector)
        assert time.perf_counter() - started < 5
        lenient = load_detector(server.url, timeout_s=1, on_error="unverifiable")

        async def run() -> core.DetectionResult:
            return await lenient.adetect(context=[EIFFEL_CONTEXT], question=None, answer=CLEAN)

        started = time.perf_counter()
        result = asyncio.run(run())
        assert time.perf_counter() - started < 5
        assert result.status is core.DetectionStatus.UNVERIFIABLE
    finally:
        server.close()


@pytest.mark.parametrize("case", list(_contradicting(CLEAN)))
def test_self_contradicting_reply_is_malformed(fake: Any, case: str) -> None:
    body = json.dumps({"results": [_contradicting(CLEAN)[case]]}).encode()
    server = fake({"/healthz": [_healthz()], "/v1/detect": [(200, body, 0.0)]})
    with pytest.raises(core.ServiceError, match="malformed"):
        detect_eiffel(load_detector(server.url), CLEAN)
    result = detect_eiffel(load_detector(server.url, on_error="unverifiable"), CLEAN)
    assert result.status is core.DetectionStatus.UNVERIFIABLE and "malformed" in (
        result.error or ""
    )


def test_deeply_nested_reply_is_a_service_error(fake: Any) -> None:
    deep = b'{"results": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    server = fake({"/healthz": [_healthz()], "/v1/detect": [(200, deep, 0.0)]})
    with pytest.raises(core.ServiceError, match="not JSON"):
        detect_eiffel(load_detector(server.url), CLEAN)
    result = detect_eiffel(load_detector(server.url, on_error="unverifiable"), CLEAN)
    assert result.status is core.DetectionStatus.UNVERIFIABLE


def test_a_proxys_413_follows_on_error(fake: Any) -> None:
    page = b"<html><body>413 Request Entity Too Large</body></html>"
    server = fake({"/healthz": [_healthz()], "/v1/detect": [(413, page, 0.0)]})
    with pytest.raises(core.ServiceError, match="413"):
        detect_eiffel(load_detector(server.url), CLEAN)
    result = detect_eiffel(load_detector(server.url, on_error="unverifiable"), CLEAN)
    assert result.status is core.DetectionStatus.UNVERIFIABLE and "413" in (result.error or "")
    # The service's own refusal stays a typed input error (with its numbers).
    own = json.dumps(
        {"error": "InputTooLargeError", "message": "too long", "limit": 10, "size": 20}
    ).encode()
    service = fake({"/healthz": [_healthz()], "/v1/detect": [(413, own, 0.0)]})
    with pytest.raises(core.InputTooLargeError, match="too long") as info:
        detect_eiffel(load_detector(service.url), CLEAN)
    assert (info.value.limit, info.value.size) == (10, 20)
    bad = fake({"/healthz": [_healthz()], "/v1/detect": [(422, b'{"message": "x"}', 0.0)]})
    with pytest.raises(core.ServiceError, match="422"):  # not shaped like the service's refusal
        detect_eiffel(load_detector(bad.url), CLEAN)


def test_client_splits_batches_to_fit_the_services_totals(fake: Any) -> None:
    answers = [f"Answer number {n} is the right one, said the service." for n in range(3)]
    health = {
        "status": "ok",
        "model_id": "fake",
        "config": {"token_threshold": 0.5},
        "limits": {"max_request_answer_chars": 100},
    }
    server = fake(
        {
            "/healthz": [(200, json.dumps(health).encode(), 0.0)],
            "/v1/detect": [
                (200, json.dumps({"results": [_result(a)]}).encode(), 0.0) for a in answers
            ],
        }
    )
    inputs = [core.DetectionInput.create(context="x", question=None, answer=a) for a in answers]
    results = load_detector(server.url).detect_batch(inputs)
    # 3 answers of 53 characters, at most 100 per request: one request each.
    assert server.hits["/v1/detect"] == 3
    assert [r.answer for r in results] == answers


# -- issue 51: what an error quotes from the service and its URL -------------------------

_SECRET = "hunter2-secret"
_HOSTILE = "\x1b[2J\x1b]0;owned\x07\nERROR forged" + "A" * 1_000_000


@pytest.mark.parametrize(
    "replies",
    [
        {"/healthz": [(500, json.dumps({"message": _HOSTILE}).encode(), 0.0)]},
        {"/healthz": [(502, _HOSTILE.encode(), 0.0)] * 3},
        {"/healthz": [(200, _HOSTILE.encode(), 0.0)]},
        {"/healthz": [(200, json.dumps({"status": _HOSTILE}).encode(), 0.0)]},
        {"/healthz": [_healthz()], "/v1/detect": [(400, _HOSTILE.encode(), 0.0)]},
        {"/healthz": [_healthz()], "/v1/detect": [(200, json.dumps([_HOSTILE]).encode(), 0.0)]},
    ],
    ids=["500-message", "502-page", "not-json", "bad-health", "400-page", "bad-reply"],
)
def test_errors_quote_the_service_bounded_escaped_and_without_the_password(
    fake: Any, replies: dict[str, list[tuple[int, bytes, float]]]
) -> None:
    server = fake(replies)
    url = server.url.replace("http://", f"http://admin:{_SECRET}@")
    detector = load_detector(url, retries=0)
    assert _SECRET not in detector.model_id
    with pytest.raises(core.TruthLensError) as caught:
        detect_eiffel(detector)
    message = str(caught.value)
    assert _SECRET not in message and "***@" in message
    assert len(message) < 1000 and not any(ch in message for ch in "\x1b\x07\n"), message[:300]
