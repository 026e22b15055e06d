"""A detector served by ``truthlens serve``.

:class:`RemoteDetector` mirrors the :class:`Detector` protocol over ``POST /v1/detect``.
It fails closed: with ``on_error="raise"`` (default) a failed call raises, with
``on_error="unverifiable"`` every answer of the call comes back ``unverifiable`` with the
reason in ``DetectionResult.error``. A failure is never reported as ``supported``, and
neither is a reply that contradicts itself (``supported`` with a score over the
threshold, ``supported`` with nothing scored, spans outside the answer): it is a
malformed reply, a :class:`ServiceError`. What the in-process detector may answer is
never read as a contradiction: ``hallucinated`` with part of the answer unread (what was
read flags it), and coverage counted over the normalised answer the model read
(``core/_normalize``), which can be shorter or longer than the caller's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from ..._decision import reaches
from ..._errors import ConfigError, InputTooLargeError, InvalidInputError, ServiceError
from ..._limits import answer_sentences, readable_chars
from ..._normalize import normalize
from ..._quoting import quoted, redacted_url
from ..._types import (
    Coverage,
    DetectionConfig,
    DetectionInput,
    DetectionResult,
    DetectionStatus,
)
from .._service import OnError, ServiceClient, base_url
from ._base import SingleAnswerCalls, covered, unverifiable_result

__all__ = ["RemoteDetector"]


class RemoteDetector(SingleAnswerCalls):
    """The :class:`Detector` protocol over a TruthLens service's ``POST /v1/detect``.

    Thresholds are the service's (set in the policy it was started with): the first
    call reads them from ``GET /healthz`` into :attr:`config`, and an explicitly
    requested value that differs raises :class:`ConfigError` instead of being ignored.

    Args:
        url: Base URL of the service.
        config: Expected detector settings; the fields set on it are checked against
            the service's.
        timeout_s: Seconds per HTTP call.
        retries: Extra attempts after a transient failure.
        on_error: ``"raise"``: a failed call raises :class:`ServiceError`;
            ``"unverifiable"``: it returns ``unverifiable`` results whose ``error``
            says why (also for answers the service refuses as too large, 413).
            Never ``supported``.
        chunk_size: Inputs per request; bigger batches are split.
        client: A ready client (shared pools); built from the other arguments if not given.

    Raises:
        InvalidInputError: For a bad URL or option.
        MissingDependencyError: If ``httpx`` is not installed.
    """

    def __init__(
        self,
        url: str,
        *,
        config: DetectionConfig | None = None,
        timeout_s: float = 30.0,
        retries: int = 2,
        on_error: OnError = "raise",
        chunk_size: int = 64,
        client: ServiceClient | None = None,
    ) -> None:
        if on_error not in ("raise", "unverifiable"):
            raise InvalidInputError(f"on_error must be 'raise' or 'unverifiable', not {on_error!r}")
        if chunk_size < 1:
            raise InvalidInputError(f"chunk_size must be at least 1, got {chunk_size}")
        if client is not None and client.url != base_url(url):
            raise InvalidInputError(
                f"client is for {redacted_url(client.url)}, not {redacted_url(url)}"
            )
        self.client = client or ServiceClient(url, timeout_s=timeout_s, retries=retries)
        self.url = self.client.url
        # What messages and the verdict's model id show: no credentials, escaped.
        self._shown_url = redacted_url(self.url)
        self.on_error: OnError = on_error
        self.chunk_size = chunk_size
        self.config = config or DetectionConfig()
        self._expected = {k: getattr(config, k) for k in config.model_fields_set} if config else {}
        self.model_id = f"truthlens-service@{self._shown_url}"
        self._info: dict[str, Any] | None = None

    # -- Detector protocol ----------------------------------------------------------------

    def detect_batch(self, inputs: Sequence[DetectionInput]) -> list[DetectionResult]:
        """Check many answers; results come back in input order.

        Raises:
            InvalidInputError: If the service rejects the input
                (:class:`InputTooLargeError` for its 413 unless ``on_error`` is
                ``"unverifiable"``).
            ServiceError: If the service fails and ``on_error`` is ``"raise"``.
            ConfigError: If the service's thresholds differ from the requested ones.
        """
        items = list(inputs)
        if not items:
            return []
        try:
            if self._info is None:
                self._accept_info(self.client.get("/healthz"))
            results: list[DetectionResult] = []
            for chunk in _chunks(items, self.chunk_size, self._limits()):
                reply = self.client.post("/v1/detect", _payload(chunk))
                results.extend(self._parse(reply, chunk))
        except (ServiceError, InputTooLargeError) as exc:
            return self._failed(items, exc)
        return results

    async def adetect_batch(self, inputs: Sequence[DetectionInput]) -> list[DetectionResult]:
        """Async :meth:`detect_batch`; chunks are sent concurrently."""
        items = list(inputs)
        if not items:
            return []
        try:
            if self._info is None:
                self._accept_info(await self.client.aget("/healthz"))
            chunks = _chunks(items, self.chunk_size, self._limits())
            replies = await asyncio.gather(
                *(self.client.apost("/v1/detect", _payload(c)) for c in chunks)
            )
        except (ServiceError, InputTooLargeError) as exc:
            return self._failed(items, exc)
        results: list[DetectionResult] = []
        for chunk, reply in zip(chunks, replies, strict=True):
            try:
                results.extend(self._parse(reply, chunk))
            except ServiceError as exc:
                return self._failed(items, exc)
        return results

    def close(self) -> None:
        """Close the client's sync connection pool."""
        self.client.close()

    # -- helpers --------------------------------------------------------------------------

    def _accept_info(self, info: Any) -> None:
        if not isinstance(info, dict) or info.get("status") != "ok":
            raise ServiceError(
                f"{self._shown_url}/healthz did not report a ready service: {quoted(repr(info))}"
            )
        try:
            config = DetectionConfig.model_validate(info.get("config"))
        except ValidationError as exc:
            raise ServiceError(
                f"{self._shown_url}/healthz sent an unreadable config: {quoted(exc)}"
            ) from None
        wrong = {k: v for k, v in self._expected.items() if getattr(config, k) != v}
        if wrong:
            their = ", ".join(f"{k}={getattr(config, k)!r} (asked {v!r})" for k, v in wrong.items())
            raise ConfigError(
                f"the service at {self._shown_url} runs with {their}; detector settings are the "
                "service's: start it with a policy that sets them"
            )
        self.config = config
        self.model_id = f"{quoted(info.get('model_id', 'unknown'), limit=120)}@{self._shown_url}"
        self._info = info

    def _parse(self, reply: Any, chunk: list[DetectionInput]) -> list[DetectionResult]:
        raw = reply.get("results") if isinstance(reply, dict) else None
        if not isinstance(raw, list) or len(raw) != len(chunk):
            raise ServiceError(
                f"malformed reply from {self._shown_url}/v1/detect: expected {len(chunk)} results"
            )
        try:
            results = [DetectionResult.model_validate(r) for r in raw]
        except ValidationError as exc:
            raise ServiceError(
                f"malformed reply from {self._shown_url}/v1/detect: {quoted(exc)}"
            ) from None
        for item, result in zip(chunk, results, strict=True):
            if result.answer != item.answer:
                raise ServiceError(f"{self._shown_url}/v1/detect answered for a different answer")
            problem = _contradiction(result, self.config, passages=len(item.context))
            if problem is not None:
                raise ServiceError(f"malformed reply from {self._shown_url}/v1/detect: {problem}")
        return results

    def _limits(self) -> dict[str, int]:
        """The service's request totals from ``/healthz`` (older services send none)."""
        limits = (self._info or {}).get("limits")
        if not isinstance(limits, dict):
            return {}
        return {
            key: value
            for key, value in limits.items()
            if isinstance(key, str) and type(value) is int and value > 0
        }

    def _failed(
        self, items: list[DetectionInput], exc: ServiceError | InputTooLargeError
    ) -> list[DetectionResult]:
        if self.on_error == "raise":
            raise exc
        return [_unverifiable(item, self, str(exc)) for item in items]


def _contradiction(
    result: DetectionResult, config: DetectionConfig, *, passages: int
) -> str | None:
    """What makes ``result`` contradict itself or the service's settings, if anything.

    A detector that works never sends these; a reply that does is not trusted, whatever
    it concludes. ``passages``: how many context passages were sent.
    """
    answer, coverage = result.answer, result.coverage
    if any(p.index >= passages for p in coverage.passages_not_read):
        return f"it names a passage not read beyond the {passages} sent"
    if result.unread_language is not None and result.status is not DetectionStatus.UNVERIFIABLE:
        return "a result not read for its language must be unverifiable"
    for span in result.spans:
        if not 0 <= span.start < span.end <= len(answer):
            return f"span {span.start}-{span.end} lies outside the {len(answer)}-character answer"
        if answer[span.start : span.end] != span.text:
            return f"span {span.start}-{span.end} does not hold the text it names"
    # A service that normalises may count the answer as the model read it.
    read = normalize(answer).text
    lengths = {len(answer), len(read)}
    if coverage.answer_chars not in lengths or coverage.answer_chars_scored > max(lengths):
        return "its coverage does not match the answer"
    if result.threshold != config.threshold:
        return f"threshold {result.threshold} differs from the service's {config.threshold}"
    if result.status is DetectionStatus.UNVERIFIABLE:
        if result.detected or result.spans:
            return "an unverifiable result cannot be detected or carry spans"
        return None
    if result.score is None or result.detected != reaches(result.score, result.threshold):
        return (
            f"detected={result.detected} with score {result.score} and threshold {result.threshold}"
        )
    if result.detected != (result.status is DetectionStatus.HALLUCINATED):
        return f"status {result.status.value} with detected={result.detected}"
    # Partial coverage only forbids clearing an answer (the in-process rule): what was
    # read can still flag it.
    if not result.detected and not (
        covered(answer, coverage, config.min_coverage)
        or covered(read, coverage, config.min_coverage)
    ):
        return (
            f"status {result.status.value} with {coverage.answer_chars_scored} of "
            f"{coverage.answer_chars} answer characters scored"
        )
    return None


def _chunks(
    items: list[DetectionInput], size: int, limits: dict[str, int]
) -> list[list[DetectionInput]]:
    """Consecutive inputs, at most ``size`` per request and within the service's totals.

    An input too large on its own still goes alone: the service's 413 names the limit.
    """
    most_answer = limits.get("max_request_answer_chars")
    most_context = limits.get("max_request_context_chars")
    # The service's token budget, met for sure by text of at most that many characters
    # (a token is at least one character); larger texts go alone and the 413 names it.
    most_tokens = limits.get("max_request_tokens")
    most_sentences = limits.get("max_request_answer_sentences")
    chunks: list[list[DetectionInput]] = []
    answers = contexts = sentences = 0
    for item in items:
        # counted as the service counts them: as the model reads the text
        answer = readable_chars(item.answer)
        context = sum(readable_chars(p) for p in item.context)
        context += readable_chars(item.question or "")
        count = answer_sentences(item.answer) if most_sentences is not None else 0
        full = not chunks or len(chunks[-1]) >= size
        full = full or (most_answer is not None and answers + answer > most_answer)
        full = full or (most_context is not None and contexts + context > most_context)
        full = full or (most_sentences is not None and sentences + count > most_sentences)
        total = answers + answer + contexts + context
        full = full or (most_tokens is not None and total > most_tokens)
        if full:
            chunks.append([])
            answers = contexts = sentences = 0
        chunks[-1].append(item)
        answers += answer
        contexts += context
        sentences += count
    return chunks


def _payload(items: list[DetectionInput]) -> dict[str, Any]:
    return {"inputs": [item.model_dump(mode="json") for item in items]}


def _unverifiable(item: DetectionInput, detector: RemoteDetector, error: str) -> DetectionResult:
    unscored = Coverage(
        answer_chars=len(item.answer), answer_chars_scored=0, context_windows=0, max_length=0
    )
    return unverifiable_result(
        item,
        coverage=unscored,
        threshold=detector.config.threshold,
        model_id=detector.model_id,
        latency_ms=0.0,
        error=error,
    )
