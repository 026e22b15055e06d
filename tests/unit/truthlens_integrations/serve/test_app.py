"""Tests of ``truthlens_integrations/serve/_app.py``: the service's limits count what the
models read and bound one request's work.

The replica runs in this process without Ray or HTTP: the deployment class as written
(Serve's ASGI wrapper left out), with the bundled models on torch, its handlers called
directly. Starting Ray costs a minute; what is checked here is the handlers' own logic.
``serve/test_runner.py`` checks the same limits once through a real service.
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests._serve_support import skip_without_the_serve_extra
from tests.conftest import EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import DetectionInput, DetectionStatus, InputTooLargeError
from truthlens_integrations.core._limits import (
    InputLimits,
    at_most_one_token_per_char,
    check_input_sizes,
    check_request_tokens,
    readable_chars,
)
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection._remote import RemoteDetector

# -- The service's limits count what the models read, and bound one request's work in tokens.


skip_without_the_serve_extra("ray.serve", "fastapi")

from starlette.requests import Request  # noqa: E402 - after the skip

# One U+FDFA is one character to a person and 18 to the model (NFKC).
WIDE = "\ufdfa"
URL = "http://replica.test"
POLICY: dict[str, Any] = {
    "hallucination": {"backend": "torch"},
    # batching needs a Serve replica context; one request at a time runs the same models
    "service": {"max_batch_size": 1},
}


# -- counting -----------------------------------------------------------------------------


def test_character_limits_count_what_the_model_reads() -> None:
    assert readable_chars(WIDE) == 18
    assert readable_chars("plain text") == len("plain text")
    # 2,000 of them are 36,000 characters to the model: over the 12,000 of one answer
    item = DetectionInput.create(
        context=["The tower is in Paris."], question=None, answer=WIDE * 2000
    )
    with pytest.raises(InputTooLargeError, match="36,000 characters") as info:
        check_input_sizes([item], InputLimits())
    assert (info.value.limit, info.value.size) == (12_000, 36_000)
    # the context too
    wide_context = DetectionInput.create(
        context=[WIDE * 12_000], question=None, answer="It is in Paris."
    )
    with pytest.raises(InputTooLargeError, match="context"):
        check_input_sizes([wide_context], InputLimits())


def test_the_token_budget_counts_normalised_text_and_stops_at_the_budget() -> None:
    seen: list[str] = []

    def count(text: str) -> int:
        seen.append(text)
        return at_most_one_token_per_char(text)

    assert check_request_tokens(["ab cd", WIDE], 100, count) == 4 + 15
    assert seen[1] != WIDE  # the normalised text was counted, not the one code point
    seen.clear()
    with pytest.raises(InputTooLargeError, match=r"max_request_tokens") as info:
        check_request_tokens(["word " * 20] * 1000, 250, count)
    assert info.value.limit == 250 and info.value.size > 250
    assert len(seen) == 4  # refusing a huge request does not count all of it


# -- the replica's handlers -----------------------------------------------------------------


@pytest.fixture(scope="module")
def replica() -> Any:
    from ray.serve._private.http_util import ASGIAppReplicaWrapper

    from truthlens_integrations.serve._app import TruthLensService

    wrapped = TruthLensService.func_or_class
    plain = next(c for c in wrapped.__mro__[1:] if c.__name__ == "TruthLensService")
    assert not issubclass(plain, ASGIAppReplicaWrapper)
    made = object.__new__(plain)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gc, "freeze", lambda: None)  # the test process is not a replica
        plain.__init__(made, POLICY)
    return made


def _request(body: bytes) -> Request:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    headers = [(b"content-length", str(len(body)).encode())]
    return Request({"type": "http", "method": "POST", "headers": headers}, receive)


def _post(replica: Any, endpoint: str, payload: Any) -> tuple[int, Any]:
    """One request through the replica's own handler: status and JSON body."""
    work = getattr(replica, f"_{endpoint}")
    body = json.dumps(payload).encode()
    response = asyncio.run(replica._handle(endpoint, _request(body), work))
    if isinstance(response, dict):
        return 200, response
    return response.status_code, json.loads(response.body)


def _never(name: str) -> Callable[..., Any]:
    def fail(*args: object, **kwargs: object) -> Any:
        raise AssertionError(f"{name} ran on a request over the budget")

    return fail


def test_nli_has_a_total_per_request(replica: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # 256 premises of 15,000 characters: each within the per-premise limit, 36 s of work
    # before; the budget refuses it before the model runs.
    monkeypatch.setattr(replica.explainer, "explain", _never("the NLI model"))
    premise = "The tower was finished in 1889 in Paris. " * 366
    status, body = _post(replica, "nli", {"pairs": [[premise, "It was built in 1950."]] * 256})
    assert status == 413
    assert body["error"] == "InputTooLargeError" and "max_request_tokens" in body["message"]
    assert body["limit"] == replica.limits.max_request_tokens < body["size"]


def test_guard_at_every_character_limit_is_over_the_budget(
    replica: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    limits = replica.limits
    answer = ("The tower was built in 1950. " * 500)[: limits.max_answer_chars]
    context = ("The tower was finished in 1889 in Paris. " * 5000)[: limits.max_context_chars]
    item = {"context": context, "question": None, "answer": answer}
    n = limits.max_request_answer_chars // limits.max_answer_chars
    # within every character limit ...
    check_input_sizes([DetectionInput.create(**item)] * n, limits)
    # ... and refused by the budget, before any model runs (113 s of work before)
    monkeypatch.setattr(replica.engine, "guard_batch", _never("the guard"))
    status, body = _post(replica, "guard", {"inputs": [item] * n})
    assert status == 413 and "max_request_tokens" in body["message"]


def test_wide_characters_are_refused_on_every_endpoint(replica: Any) -> None:
    cases = [
        ("detect", {"context": "The tower is in Paris.", "answer": WIDE * 2000}),
        ("guard", {"context": "The tower is in Paris.", "answer": WIDE * 2000}),
        ("nli", {"pairs": [["The tower is in Paris.", WIDE * 2000]]}),
        ("classify", {"prompts": [WIDE * 12_000]}),
    ]
    for endpoint, payload in cases:
        status, body = _post(replica, endpoint, payload)
        assert status == 413, (endpoint, body)
        assert "as the model reads them" in body["message"] and body["size"] >= 36_000


def test_a_small_request_is_answered(replica: Any) -> None:
    item = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION, "answer": "It is in Paris."}
    status, body = _post(replica, "detect", item)
    assert status == 200 and body["status"] in {"supported", "hallucinated", "unverifiable"}


# -- the client accepts what the in-process detector answers --------------------------------


class _InProcess:
    """The replica's handlers behind the client's interface (JSON in and out, no HTTP)."""

    def __init__(self, replica: Any) -> None:
        self.replica = replica
        self.url = URL

    def get(self, path: str) -> Any:
        assert path == "/healthz"
        return json.loads(json.dumps(asyncio.run(self.replica.healthz())))

    def post(self, path: str, payload: Any) -> Any:
        assert path == "/v1/detect"
        status, body = _post(self.replica, "detect", json.loads(json.dumps(payload)))
        assert status == 200, body
        return body

    def close(self) -> None:
        pass


# Part of each answer is in characters the detector's vocabulary cannot read: what it read
# flags the wrong year, so the in-process detector answers `hallucinated` with 23 of 89
# characters scored. The client read that as a self-contradiction and raised.
PARTLY_READ = [
    "The tower was built in 1950. " + "\U0001f5fc" * 60,
    "The tower was built in 1950. " + "\u2800" * 60,
    "The tower was built in \uff11\uff19\uff15\uff10. " + "\u00ad".join("ꙮ" * 60),
]


def test_the_client_accepts_what_the_in_process_detector_answers(replica: Any) -> None:
    remote = RemoteDetector(URL, client=_InProcess(replica))  # type: ignore[arg-type]
    inputs = [
        DetectionInput.create(context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=a)
        for a in PARTLY_READ
    ]
    local = replica.detector.detect_batch(inputs)
    assert DetectionStatus.HALLUCINATED in {r.status for r in local}
    got = remote.detect_batch(inputs)
    assert [(r.status, r.score, r.spans) for r in got] == [
        (r.status, r.score, r.spans) for r in local
    ]


def test_guard_through_the_client_matches_in_process(replica: Any) -> None:
    engine = TruthLens.from_config(POLICY)
    remote = TruthLens.from_config(
        POLICY,
        detector=RemoteDetector(URL, client=_InProcess(replica)),  # type: ignore[arg-type]
    )
    for answer in PARTLY_READ:
        item = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION, "answer": answer}
        want, got = engine.guard(**item), remote.guard(**item)
        assert (got.action, got.status, got.spans) == (want.action, want.status, want.spans)


def test_large_requests_take_turns_and_small_ones_do_not_wait(
    replica: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    spans: dict[str, tuple[float, float]] = {}

    async def detect_many(inputs: list[DetectionInput]) -> list[Any]:
        name = inputs[0].answer
        started = time.perf_counter()
        await asyncio.sleep(0.3)  # the model's work, as time
        spans[name] = (started, time.perf_counter())
        return [
            replica.detector.detect_batch(
                [DetectionInput.create(context=["x"], question=None, answer=name)]
            )[0]
        ]

    monkeypatch.setattr(replica, "_detect_many", detect_many)
    # 20,000 tokens of context: over a quarter of the budget, a large request
    large = "The tower was finished in 1889 in Paris. " * 2400
    assert replica.count_tokens(large) > replica.limits.max_request_tokens * 0.25

    async def run() -> None:
        first = asyncio.create_task(replica._detect({"context": large, "answer": "large one"}))
        second = asyncio.create_task(replica._detect({"context": large, "answer": "large two"}))
        await asyncio.sleep(0.1)
        await replica._detect({"context": "The tower is in Paris.", "answer": "small"})
        await asyncio.gather(first, second)

    asyncio.run(run())
    first, second = sorted([spans["large one"], spans["large two"]])
    assert second[0] >= first[1]  # one large request at a time
    assert spans["small"][0] < first[1]  # the small one did not wait for the large lane
