"""Tests of ``truthlens_integrations/serve/_runner.py``: the guard as a local Ray Serve
service, end to end.

A real Ray Serve application on 127.0.0.1 serves the bundled models (started once for
the module); the client, the engine and the LangChain adapter go through it and must
agree with the same models in-process. Failure paths (server stopped, slow server,
malformed replies, gateway errors) use a tiny local HTTP server. Every socket is on
127.0.0.1 (pytest-socket ``allow_hosts``), every request loop is bounded.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests._scripts import run_python
from tests._serve_support import (
    CLEAN,
    HOST,
    SERVICE,
    SERVICE_MARKS,
    detect_eiffel,
    free_port,
    skip_without_the_serve_extra,
)
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import (
    ConfigError,
    Decision,
    DetectionInput,
    DetectionResult,
    DetectionStatus,
    InputTooLargeError,
    InvalidInputError,
    ServiceError,
)
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import load_detector
from truthlens_integrations.core.models.detection._remote import RemoteDetector

skip_without_the_serve_extra("ray.serve", "httpx")

import httpx  # noqa: E402 - after the skip

pytestmark = SERVICE_MARKS

OTHER_CONTEXT = "The Statue of Liberty was dedicated in 1886 in New York Harbor."
OTHER = "The Statue of Liberty was dedicated in 1920 in Boston."


def _spans(result: DetectionResult) -> list[tuple[int, int, str]]:
    return [(s.start, s.end, s.text) for s in result.spans]


def _eiffel(answer: str = EIFFEL_ANSWER) -> DetectionInput:
    return DetectionInput.create(context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=answer)


@pytest.fixture(scope="module")
def service() -> Iterator[Any]:
    from truthlens_integrations.serve import start_local

    running = start_local(
        {"service": SERVICE}, host=HOST, port=free_port(), num_cpus=2, metrics_port=free_port()
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
    from truthlens_integrations.core.models.nli import RemoteNLIExplainer

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
        detect_eiffel(load_detector(service.url), "x" * 70000)


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


# -- issue 29: the service under attack (bodies, sizes, binding, start-up) ---------------

RECORD = {"context": [EIFFEL_CONTEXT], "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}
ENDPOINTS = ("/v1/detect", "/v1/guard", "/v1/nli", "/v1/classify")


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 20000 + b"]" * 20000,  # nested far deeper than any request
        b'{"answer": "caf\xe9"}',  # Latin-1, not UTF-8
        b'{"answer": ' + b"9" * 5000 + b"}",  # Python refuses to read it as an int
        b'{"answer": "a", "answer": "b"}',  # duplicate key: which one was checked?
        b'{"answer": NaN}',
    ],
    ids=["deep", "not-utf8", "5000-digits", "duplicate-key", "nan"],
)
def test_bad_json_is_400_on_every_endpoint(service: Any, body: bytes) -> None:
    with httpx.Client(base_url=service.url, timeout=60) as http:
        for path in ENDPOINTS:
            reply = http.post(path, content=body, headers={"content-type": "application/json"})
            assert reply.status_code == 400, (path, reply.text[:200])
            assert reply.json()["error"] == "JSONFormatError"


def test_lone_surrogates_are_refused_by_every_endpoint(service: Any) -> None:
    bodies = {
        "/v1/detect": b'{"context": "x", "answer": "It was built in \\ud800."}',
        "/v1/guard": b'{"context": "x", "answer": "It was built in \\udc00."}',
        "/v1/nli": b'{"pairs": [["The tower is tall.", "It is \\ud800 tall."]]}',
        "/v1/classify": b'{"prompts": ["When was it \\udfff built?"]}',
    }
    with httpx.Client(base_url=service.url, timeout=60) as http:
        for path, body in bodies.items():
            reply = http.post(path, content=body, headers={"content-type": "application/json"})
            assert reply.status_code == 400, (path, reply.text[:200])
            assert "surrogate" in reply.json()["message"]


def test_text_over_the_character_limits_is_413_naming_limit_and_size(service: Any) -> None:
    long_answer = "The tower was built in 1950. " * 160  # 4,640 characters
    cases = [
        ("/v1/detect", {**RECORD, "answer": long_answer}, "the answer of input: 4,640", 4000),
        ("/v1/guard", {**RECORD, "answer": long_answer}, "the answer of input: 4,640", 4000),
        (
            "/v1/detect",
            {"inputs": [{**RECORD, "answer": long_answer[:3000]}] * 3},
            "the answers of this request: 9,000",
            8000,
        ),
        (
            "/v1/detect",
            {**RECORD, "context": ["x" * 21000]},
            "the context and question of input",
            20000,
        ),
        (
            "/v1/nli",
            {"pairs": [["x" * 21000, "It was built in 1950."]]},
            "premise of pair 1",
            20000,
        ),
        ("/v1/classify", {"prompts": ["When? " * 4000]}, "prompt 1: 24,000", 20000),
    ]
    with httpx.Client(base_url=service.url, timeout=60) as http:
        for path, body, message, limit in cases:
            reply = http.post(path, json=body)
            assert reply.status_code == 413, (path, reply.text[:200])
            got = reply.json()
            assert message in got["message"] and f"the limit is {limit:,}" in got["message"]
            assert got["limit"] == limit and got["size"] > limit
    # The client: a typed error with the numbers, or an unverifiable answer if asked.
    with pytest.raises(InputTooLargeError, match="4,000") as info:
        detect_eiffel(load_detector(service.url), long_answer)
    assert info.value.limit == 4000 and info.value.size == len(long_answer)
    lenient = detect_eiffel(load_detector(service.url, on_error="unverifiable"), long_answer)
    assert lenient.status is DetectionStatus.UNVERIFIABLE and "4,000" in (lenient.error or "")


def test_limits_count_what_the_model_reads_through_the_service(service: Any) -> None:
    # 300 U+FDFA are 300 characters to a person and 5,400 to the model: over the 4,000
    # of one answer. The handlers' budget logic is tested without Ray in test_service_budget.
    with httpx.Client(base_url=service.url, timeout=60) as http:
        limits = http.get("/healthz").json()["limits"]
        assert limits["max_request_tokens"] >= 1
        reply = http.post("/v1/detect", json={**RECORD, "answer": "\ufdfa" * 300})
    assert reply.status_code == 413
    got = reply.json()
    assert got["size"] == 5400 and got["limit"] == 4000
    assert "as the model reads them" in got["message"]


def test_large_request_is_split_into_chunks_in_order(service: Any, local_engine: TruthLens) -> None:
    # Two answers of 3,000 characters: over the 4,000-character chunk, so two batches;
    # results still come back in input order and equal the in-process ones.
    inputs = [
        _eiffel(EIFFEL_ANSWER + " " + "It is in Paris. " * 185),
        _eiffel(CLEAN + " " + "It is in Paris. " * 185),
    ]
    got = load_detector(service.url).detect_batch(inputs)
    want = local_engine.detector.detect_batch(inputs)
    assert [r.answer for r in got] == [i.answer for i in inputs]
    assert [_spans(r) for r in got] == [_spans(r) for r in want]


def test_guard_redact_option_withholds_span_texts(service: Any) -> None:
    with httpx.Client(base_url=service.url, timeout=60) as http:
        plain = http.post("/v1/guard", json=RECORD).json()
        assert any(s["text"] == "1950" for s in plain["spans"])
        hidden = http.post("/v1/guard", json={**RECORD, "redact": True})
        assert hidden.status_code == 200
        body = hidden.json()
        assert body["redacted"] is True and body["spans"]
        # The answer is shown (header action), so it stays; the span texts go.
        assert [s["text"] for s in body["spans"]] == ["[redacted]"] * len(plain["spans"])
        assert not any("1950" in v for v in hidden.headers.values())
        batch = http.post("/v1/guard", json={"inputs": [RECORD], "redact": True})
        assert batch.status_code == 200
        assert {s["text"] for s in batch.json()["verdicts"][0]["spans"]} == {"[redacted]"}
        # A mistyped or misplaced option is refused, never ignored.
        assert http.post("/v1/guard", json={**RECORD, "redact": "yes"}).status_code == 422
        assert http.post("/v1/detect", json={**RECORD, "redact": True}).status_code == 422


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
    port = free_port()
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
        # Told 127.0.0.1, nothing it started listens on all interfaces (issue 29: the
        # Serve replica's own gRPC server did, on [::]).
        assert _wildcard_listeners(proc.pid) == []
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


def _wildcard_listeners(pid: int) -> list[tuple[str, str, int]]:
    """Sockets listening on all interfaces, of ``pid`` and every process it started."""
    import psutil

    root = psutil.Process(pid)
    found = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            conns, name = proc.net_connections(kind="inet"), proc.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        found += [
            (name, c.laddr.ip, c.laddr.port)
            for c in conns
            if c.status == psutil.CONN_LISTEN and c.laddr.ip in {"0.0.0.0", "::"}
        ]
    return found


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


# -- issue 29: start-up and what the service sends ---------------------------------------


def _says_1950(text: str) -> bool:
    # the year, not the digits inside a timing ("0.0191079961950") that a dump also holds
    return re.search(r"(?<![\d.])1950(?!\d)", text) is not None


def test_withheld_verdict_of_a_blocked_answer(detector: Any) -> None:
    from tests._fakes import QuestionWordClassifier, RuleNLI
    from truthlens_integrations.serve._app import _withheld

    engine = TruthLens.from_config(
        {"hallucination": {"hallucination_action": "block"}},
        detector=detector,
        nli=RuleNLI(),
        fact_checker=QuestionWordClassifier(),
    )
    verdict = engine.guard(context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    # The engine withholds the blocked text itself; its full verdict is the explicit channel.
    assert verdict.blocked and not _says_1950(verdict.model_dump_json())
    full = verdict.full()
    assert _says_1950(full.model_dump_json())
    shown = _withheld(full, redact=False)
    dumped = shown.model_dump_json()
    assert shown.blocked and shown.redacted and shown.spans
    assert not _says_1950(dumped) and "500 meters" not in dumped and EIFFEL_ANSWER not in dumped
    assert _withheld(shown, redact=True) is shown  # idempotent
    passed = engine.guard(context=[EIFFEL_CONTEXT], question=None, answer=CLEAN)
    assert _withheld(passed, redact=False) is passed  # nothing to withhold


def test_port_in_use_is_an_error_before_ray_starts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from truthlens_integrations._cli import main
    from truthlens_integrations.serve import _runner

    started: list[str] = []
    monkeypatch.setattr(_runner, "_init_local_ray", lambda *a, **k: started.append("ray"))
    with socket.socket() as other:
        other.bind((HOST, 0))
        other.listen()
        port = other.getsockname()[1]
        assert main(["serve", "--host", HOST, "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"port {port} on {HOST} is already in use" in err and "Traceback" not in err
    assert started == []


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--replicas", "0"], "service.replicas"),
        (["--port", "70000"], "service.port"),
        (["--port", "0"], "service.port"),
        (["--max-batch-size", "0"], "service.max_batch_size"),
    ],
)
def test_bad_start_options_fail_before_ray_starts(
    flags: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tempfile

    from truthlens_integrations._cli import main
    from truthlens_integrations.serve import _runner

    made: list[str] = []
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: made.append("dir") or "/nonexistent")
    monkeypatch.setattr(_runner, "_init_local_ray", lambda *a, **k: made.append("ray"))
    assert main(["serve", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert made == []


def test_a_bad_option_on_a_policy_file_names_the_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 51: the error named "<dict>" (the policy as re-read with the options).
    from tests._paths import REPO
    from truthlens_integrations._cli import main
    from truthlens_integrations.serve import _runner

    monkeypatch.setattr(_runner, "_init_local_ray", lambda *a, **k: pytest.fail("Ray started"))
    policy = REPO / "cookbook" / "policies" / "truthlens_global.yaml"
    assert main(["serve", "--config", str(policy), "--replicas", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{policy} with the service options replicas=0: service.replicas:" in err
    assert "<dict>" not in err


def test_failed_start_stops_ray_and_removes_its_folder(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    from truthlens_integrations.serve import _runner

    folder = tmp_path / "tlray-x"
    folder.mkdir()
    calls: list[str] = []
    monkeypatch.setattr(_runner.tempfile, "mkdtemp", lambda *a, **k: str(folder))
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    monkeypatch.setattr(_runner, "_init_local_ray", lambda *a, **k: calls.append("init"))

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("serve.run failed")

    monkeypatch.setattr(_runner, "_run", broken)
    with pytest.raises(RuntimeError, match=r"serve\.run failed"):
        _runner.start_local(None, host=HOST, port=free_port())
    assert calls == ["init", "shutdown"] and not folder.exists()


def test_service_limits_and_redact_in_the_policy_are_strict() -> None:
    from truthlens_integrations.core.policy import load_policy

    service = load_policy({"service": {"max_answer_chars": 100, "redact": True}}).service
    assert service.input_limits().max_answer_chars == 100 and service.redact is True
    for bad in ({"redact": "yes"}, {"max_answer_chars": 0}, {"max_context_chars": -1}):
        with pytest.raises(ConfigError):
            load_policy({"service": bad})
