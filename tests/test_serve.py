"""The guard as a Ray Serve service, and the remote detector that calls it.

A real Ray Serve application on 127.0.0.1 serves the bundled models (started once for
the module); the client, the engine and the LangChain adapter go through it and must
agree with the same models in-process. Failure paths (server stopped, slow server,
malformed replies, gateway errors) use a tiny local HTTP server. Every socket is on
127.0.0.1 (pytest-socket ``allow_hosts``), every request loop is bounded.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests._scripts import run_python
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import (
    ConfigError,
    Decision,
    DetectionInput,
    DetectionResult,
    DetectionStatus,
    InvalidInputError,
    ServiceError,
    ServiceTimeoutError,
)
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import load_detector
from truthlens_integrations.core.models.detection._remote import RemoteDetector

pytest.importorskip("ray.serve", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="the serve extra is not installed")

import httpx

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])

HOST = "127.0.0.1"
CLEAN = "The Eiffel Tower was built between 1887 and 1889 and is 330 meters tall."
OTHER_CONTEXT = "The Statue of Liberty was dedicated in 1886 in New York Harbor."
OTHER = "The Statue of Liberty was dedicated in 1920 in Boston."
# Small limits so the 413 paths are cheap to reach.
SERVICE = {"max_request_bytes": 65536, "max_inputs": 8, "max_batch_size": 8}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _spans(result: DetectionResult) -> list[tuple[int, int, str]]:
    return [(s.start, s.end, s.text) for s in result.spans]


def _eiffel(answer: str = EIFFEL_ANSWER) -> DetectionInput:
    return DetectionInput.create(context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=answer)


@pytest.fixture(scope="module")
def service() -> Iterator[Any]:
    from truthlens_integrations.serve import start_local

    running = start_local(
        {"service": SERVICE}, host=HOST, port=_free_port(), num_cpus=2, metrics_port=_free_port()
    )
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def local_engine() -> TruthLens:
    """The same policy in-process: the models the service's replicas load."""
    return TruthLens.from_config({"service": SERVICE})


# -- the client through the real service -----------------------------------------------


def test_eiffel_same_spans_as_in_process(service: Any, local_engine: TruthLens) -> None:
    remote = load_detector(service.url)
    assert isinstance(remote, RemoteDetector)
    got = remote.detect(context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    want = local_engine.detector.detect_batch([_eiffel()])[0]
    assert want.spans, "the in-process detector flags the Eiffel answer"
    assert _spans(got) == _spans(want)
    assert [s.confidence for s in got.spans] == pytest.approx([s.confidence for s in want.spans])
    assert got.score == pytest.approx(want.score) and got.status is want.status
    assert remote.config == local_engine.detector.config
    assert remote.model_id.startswith(local_engine.detector.model_id)
    # Asking for the service's own thresholds is fine; other ones fail loudly.
    assert (
        load_detector(service.url, token_threshold=remote.config.token_threshold)
        .detect(context=[EIFFEL_CONTEXT], question=None, answer=EIFFEL_ANSWER)
        .spans
    )
    with pytest.raises(ConfigError, match="token_threshold"):
        load_detector(service.url, token_threshold=0.93).detect(
            context=[EIFFEL_CONTEXT], question=None, answer=EIFFEL_ANSWER
        )


def test_batch_order_unverifiable_and_chunks(service: Any, local_engine: TruthLens) -> None:
    inputs = [
        _eiffel(),
        DetectionInput.create(context=None, question="When?", answer="In 1950."),
        _eiffel(CLEAN),
        DetectionInput.create(context=OTHER_CONTEXT, question=None, answer=OTHER),
    ]
    # chunk_size=3: two requests, results still in input order.
    got = load_detector(service.url, chunk_size=3).detect_batch(inputs)
    want = local_engine.detector.detect_batch(inputs)
    assert [r.answer for r in got] == [i.answer for i in inputs]
    assert [_spans(r) for r in got] == [_spans(r) for r in want]
    assert [r.status for r in got] == [r.status for r in want]
    assert got[1].status is DetectionStatus.UNVERIFIABLE


def test_64_concurrent_requests_answered_correctly(service: Any, local_engine: TruthLens) -> None:
    inputs = [
        _eiffel(),
        _eiffel(CLEAN),
        DetectionInput.create(context=OTHER_CONTEXT, question=None, answer=OTHER),
        DetectionInput.create(context=OTHER_CONTEXT, question=None, answer=CLEAN),
    ]
    # Replies mixed up between concurrent requests would show: the inputs differ in spans.
    want = [_spans(r) for r in local_engine.detector.detect_batch(inputs)]
    assert len({tuple(w) for w in want}) >= 2
    remote = load_detector(service.url)
    items = [inputs[n % len(inputs)] for n in range(64)]

    async def all_at_once() -> list[DetectionResult]:
        calls = (
            remote.adetect(context=list(i.context), question=i.question, answer=i.answer)
            for i in items
        )
        return await asyncio.wait_for(asyncio.gather(*calls), timeout=180)

    results = asyncio.run(all_at_once())
    assert len(results) == 64
    assert [_spans(r) for r in results] == [want[n % len(inputs)] for n in range(64)]
    assert [r.answer for r in results] == [i.answer for i in items]


def test_engine_through_service_matches_in_process(service: Any, local_engine: TruthLens) -> None:
    from truthlens_integrations.core.models import RemoteNLIExplainer

    engine = TruthLens.from_config({"service": {**SERVICE, "url": service.url}})
    verdict = engine.guard(context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert isinstance(engine.detector, RemoteDetector)
    assert isinstance(engine.nli, RemoteNLIExplainer)
    want = local_engine.guard(
        context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
    )
    assert verdict.decision is Decision.MITIGATE
    assert [(s.text, s.nli_label, s.severity) for s in verdict.spans] == [
        (s.text, s.nli_label, s.severity) for s in want.spans
    ]
    assert verdict.score == pytest.approx(want.score)
    assert verdict.fact_check_needed == want.fact_check_needed


def test_langchain_adapter_through_service(service: Any, local_engine: TruthLens) -> None:
    pytest.importorskip("langchain_core")
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    guarded = TruthLensRunnable.from_config({"service": {**SERVICE, "url": service.url}})
    record = {"context": [EIFFEL_CONTEXT], "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}
    out = guarded.invoke(record)
    want = local_engine.guard(
        context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
    )
    assert isinstance(guarded.engine.detector, RemoteDetector)
    assert [s["text"] for s in out["truthlens"]["spans"]] == [s.text for s in want.spans]
    assert out["truthlens"]["decision"] == Decision.MITIGATE.value


def test_http_endpoints_headers_and_limits(service: Any) -> None:
    record = {"context": [EIFFEL_CONTEXT], "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}
    with httpx.Client(base_url=service.url, timeout=60) as http:
        health = http.get("/healthz").json()
        assert health["status"] == "ok" and health["batching"] is True
        guarded = http.post("/v1/guard", json=record)
        assert guarded.status_code == 200
        assert guarded.headers["x-vsr-hallucination-detected"] == "true"
        assert guarded.json()["decision"] == "MITIGATE"
        single = http.post("/v1/detect", json=record).json()
        assert single["status"] == "hallucinated" and single["spans"]
        assert http.post("/v1/detect", content=b"{not json").status_code == 400
        empty = http.post("/v1/detect", json={**record, "answer": "  "})
        assert empty.status_code == 422 and empty.json()["error"] == "InvalidInputError"
        assert http.post("/v1/detect", json={**record, "extra": 1}).status_code == 422
        big = http.post("/v1/detect", json={**record, "answer": "x" * 70000})
        assert big.status_code == 413
        many = http.post("/v1/detect", json={"inputs": [record] * 9})
        assert many.status_code == 413
        labels = http.post("/v1/nli", json={"pairs": [[EIFFEL_CONTEXT, "It was built in 1950."]]})
        assert labels.json()["labels"][0][0] in {"entailment", "neutral", "contradiction"}
    # The client turns the service's refusal (413 here) into a typed input error.
    with pytest.raises(InvalidInputError, match="over 65536 bytes"):
        _detect(load_detector(service.url), "x" * 70000)


def test_prometheus_metrics_count_requests(service: Any) -> None:
    """Ray exports the service's metrics on its Prometheus port (every few seconds)."""
    deadline = time.monotonic() + 45
    detected, text = 0.0, ""
    with httpx.Client(timeout=10) as http:
        while time.monotonic() < deadline:
            text = http.get(service.metrics_url).text
            detected = sum(
                float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith("ray_truthlens_serve_requests_total{")
                and 'endpoint="detect"' in line
                and 'status="200"' in line
            )
            if detected >= 64:  # at least the concurrency test's requests
                break
            time.sleep(2)
    assert detected >= 64
    assert any(line.startswith("ray_truthlens_serve_batch_size_") for line in text.splitlines())


def test_stopped_service_fails_closed(service: Any) -> None:
    raising = load_detector(service.url, retries=1, timeout_s=5)
    lenient = load_detector(service.url, retries=0, timeout_s=5, on_error="unverifiable")
    assert raising.detect(context=[EIFFEL_CONTEXT], question=None, answer=EIFFEL_ANSWER).spans
    assert lenient.detect(context=[EIFFEL_CONTEXT], question=None, answer=EIFFEL_ANSWER).spans
    engine = TruthLens.from_config(
        {"service": {"url": service.url, "on_error": "unverifiable", "retries": 0}}
    )
    service.stop()
    with pytest.raises(ServiceError):
        raising.detect(context=[EIFFEL_CONTEXT], question=None, answer=CLEAN)
    result = lenient.detect(context=[EIFFEL_CONTEXT], question=None, answer=CLEAN)
    assert result.status is DetectionStatus.UNVERIFIABLE and result.error
    verdict = engine.guard(context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=CLEAN)
    assert not verdict.passed and verdict.unverified


def test_cli_serve_answers_and_stops_on_sigterm() -> None:
    """`truthlens serve` as a user runs it; SIGTERM stops it and the next call fails."""
    port = _free_port()
    cmd = [sys.executable, "-m", "truthlens_integrations._cli", "serve", "--port", str(port)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [*cmd, "--num-cpus", "1", "--max-batch-size", "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        lines = _read_until(proc.stdout, "ready at", timeout_s=150)
        assert any(f"http://127.0.0.1:{port}" in line for line in lines), lines
        remote = load_detector(f"http://127.0.0.1:{port}", retries=0, timeout_s=30)
        assert remote.detect(context=[EIFFEL_CONTEXT], question=None, answer=EIFFEL_ANSWER).spans
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=90) == 0
        with pytest.raises(ServiceError):
            remote.detect(context=[EIFFEL_CONTEXT], question=None, answer=CLEAN)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def _read_until(stream: Any, marker: str, *, timeout_s: float) -> list[str]:
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        for line in stream:
            lines.append(line)
            if marker in line:
                found.set()
                return

    threading.Thread(target=read, daemon=True).start()
    assert found.wait(timeout_s), "".join(lines[-20:])
    return lines


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
        "coverage": {"answer_chars": len(answer), "answer_chars_scored": 0, "max_length": 512},
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


def _detect(detector: Any, answer: str = EIFFEL_ANSWER) -> DetectionResult:
    result: DetectionResult = detector.detect(
        context=[EIFFEL_CONTEXT], question=None, answer=answer
    )
    return result


def test_slow_server_times_out_without_retrying(fake: Any) -> None:
    server = fake({"/healthz": [_healthz()], "/v1/detect": [(200, b"{}", 3.0)]})
    detector = load_detector(server.url, timeout_s=0.5, retries=2)
    started = time.perf_counter()
    with pytest.raises(ServiceTimeoutError, match=r"did not answer within 0\.5"):
        _detect(detector)
    assert time.perf_counter() - started < 2.5
    assert server.hits["/v1/detect"] == 1  # the server has the request: not sent again
    lenient = load_detector(server.url, timeout_s=0.5, on_error="unverifiable")
    assert _detect(lenient).status is DetectionStatus.UNVERIFIABLE

    async def run() -> DetectionResult:
        return await lenient.adetect(context=[EIFFEL_CONTEXT], question=None, answer=CLEAN)

    result = asyncio.run(run())
    assert result.status is DetectionStatus.UNVERIFIABLE and "0.5" in (result.error or "")


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
    with pytest.raises(ServiceError, match=r"malformed|not JSON|different answer"):
        _detect(load_detector(server.url))
    result = _detect(load_detector(server.url, on_error="unverifiable"))
    assert result.status is DetectionStatus.UNVERIFIABLE and not result.detected
    assert result.error
    engine = TruthLens.from_config({"service": {"url": server.url, "on_error": "unverifiable"}})
    # The classifier endpoint is garbage too: every prompt counts as factual.
    verdict = engine.guard(context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=CLEAN)
    assert verdict.unverified and not verdict.passed


def test_gateway_errors_are_retried_bugs_are_not(fake: Any) -> None:
    ok = json.dumps({"results": [_result(CLEAN)]}).encode()
    server = fake({"/healthz": [_healthz()], "/v1/detect": [(503, b"{}", 0.0), (200, ok, 0.0)]})
    assert _detect(load_detector(server.url, retries=1), CLEAN).status is DetectionStatus.SUPPORTED
    assert server.hits["/v1/detect"] == 2
    broken = fake({"/healthz": [_healthz()], "/v1/detect": [(500, b'{"message": "bug"}', 0.0)]})
    with pytest.raises(ServiceError, match="500: bug"):
        _detect(load_detector(broken.url, retries=3))
    assert broken.hits["/v1/detect"] == 1
    down = fake({"/healthz": [(503, b"{}", 0.0)]})
    with pytest.raises(ServiceError, match="unavailable"):
        _detect(load_detector(down.url, retries=2))
    assert down.hits["/healthz"] == 3


def test_missing_serve_extra_names_the_install() -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "try:\n"
        "    from truthlens_integrations.serve import start_local\n"
        "    start_local()\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = run_python(code)
    assert "MissingDependencyError" in out.stdout
    assert "pip install 'truthlens-integrations[serve]'" in out.stdout


def test_refused_connection_and_bad_options() -> None:
    port = _free_port()  # nothing listens there
    with pytest.raises(ServiceError, match="cannot reach"):
        _detect(load_detector(f"http://{HOST}:{port}", retries=1))
    with pytest.raises(InvalidInputError, match="do not apply to a service URL"):
        load_detector(f"http://{HOST}:{port}", device="cuda")
    with pytest.raises(InvalidInputError, match="on_error"):
        load_detector(f"http://{HOST}:{port}", on_error="pass")
    with pytest.raises(ConfigError):
        TruthLens.from_config({"service": {"url": "127.0.0.1:8000"}})
