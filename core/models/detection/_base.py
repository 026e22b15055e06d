"""The detector protocol and the shared logic that turns token scores into results."""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..._decision import reaches
from ..._errors import InvalidInputError
from ..._language import LanguageReading, read_languages
from ..._normalize import normalize_input, restore_result
from ..._scoring import merge_spans, response_score
from ..._text import says_something
from ..._types import (
    Coverage,
    DetectionConfig,
    DetectionInput,
    DetectionResult,
    DetectionStatus,
    HallucinationSpan,
    TokenScore,
    UnreadPassage,
)

__all__ = [
    "BaseDetector",
    "Detector",
    "SingleAnswerCalls",
    "TokenScoring",
    "covered",
    "unverifiable_result",
]


@runtime_checkable
class Detector(Protocol):
    """Anything that finds unsupported spans in answers.

    Implemented by :class:`TransformerDetector`, the bundled model and the lexical
    reference detector; a remote backend only needs these members.
    """

    model_id: str
    config: DetectionConfig

    def detect(
        self, *, context: str | Sequence[str] | None, question: str | None, answer: str
    ) -> DetectionResult:
        """Check one answer against its context."""
        ...

    def detect_batch(self, inputs: Sequence[DetectionInput]) -> list[DetectionResult]:
        """Check many answers; results are in input order."""
        ...

    async def adetect(
        self, *, context: str | Sequence[str] | None, question: str | None, answer: str
    ) -> DetectionResult:
        """Async :meth:`detect` that does not block the event loop."""
        ...

    async def adetect_batch(self, inputs: Sequence[DetectionInput]) -> list[DetectionResult]:
        """Async :meth:`detect_batch` that does not block the event loop."""
        ...


TokenScoring = tuple[list[TokenScore], Coverage]
"""Per-token probabilities of one answer, in answer order, and what was scored."""


class SingleAnswerCalls:
    """``detect`` / ``adetect`` for one answer, over a detector's batch methods.

    Shared by every backend, so one answer is checked exactly like a batch of one.
    """

    def detect_batch(self, inputs: Sequence[DetectionInput]) -> list[DetectionResult]:
        """Check many answers at once; results come back in input order."""
        raise NotImplementedError

    async def adetect_batch(self, inputs: Sequence[DetectionInput]) -> list[DetectionResult]:
        """Async :meth:`detect_batch`."""
        raise NotImplementedError

    def detect(
        self, *, context: str | Sequence[str] | None, question: str | None, answer: str
    ) -> DetectionResult:
        """Check one answer against its context.

        Args:
            context: Grounding passages (a string or a list of strings). Empty or
                missing context gives an ``unverifiable`` result, never a clean one.
            question: The question the answer responds to, if any.
            answer: The answer to check.

        Returns:
            The spans, scores and coverage of the answer.

        Raises:
            InvalidInputError: If the answer is empty or an item is not a string.
        """
        item = DetectionInput.create(context=context, question=question, answer=answer)
        return self.detect_batch([item])[0]

    async def adetect(
        self, *, context: str | Sequence[str] | None, question: str | None, answer: str
    ) -> DetectionResult:
        """Async :meth:`detect`."""
        item = DetectionInput.create(context=context, question=question, answer=answer)
        return (await self.adetect_batch([item]))[0]


class BaseDetector(SingleAnswerCalls, ABC):
    """Implements the :class:`Detector` protocol on top of :meth:`_score_tokens`.

    Subclasses only produce token probabilities for grounded inputs; span merging,
    response scoring, the unverifiable path, timing and async wrapping live here so
    every backend behaves the same.
    """

    model_id: str
    config: DetectionConfig

    def __init__(self, *, model_id: str, config: DetectionConfig | None = None) -> None:
        self.model_id = model_id
        self.config = config or DetectionConfig()
        if self.config.aggregation == "calibrated" and not self._calibrates_responses():
            raise InvalidInputError(
                f"aggregation 'calibrated' needs a model folder with a response calibration; "
                f"{model_id!r} has none: use 'max', 'noisy_or' or 'span_max'"
            )

    def _calibrates_responses(self) -> bool:
        """Whether this detector has a response calibration (``aggregation='calibrated'``)."""
        return False

    @abstractmethod
    def _score_tokens(self, inputs: Sequence[DetectionInput]) -> list[TokenScoring]:
        """Token probabilities for each input; every input here has context."""

    @abstractmethod
    def _max_length(self) -> int:
        """The model window in tokens, for coverage reports."""

    def detect_batch(self, inputs: Sequence[DetectionInput]) -> list[DetectionResult]:
        """Check many answers at once; results come back in input order.

        Each input is read normalised (``core/_normalize``: the same text ``guard()``
        reads) and spans and token offsets point into the caller's answer.
        """
        prepared = [normalize_input(item) for item in inputs]
        results = self._detect_normalized([checked for checked, _ in prepared])
        return [
            result if source is None else restore_result(result, source)
            for result, (_, source) in zip(results, prepared, strict=True)
        ]

    def _detect_normalized(self, inputs: Sequence[DetectionInput]) -> list[DetectionResult]:
        started = time.perf_counter()
        # What the model reads: an answer or a context in a language it does not read is
        # never scored as if it were read (core/_language.py).
        cfg = self.config
        readings = [read_languages(item.answer, item.context, cfg.languages) for item in inputs]
        readable = [
            _read_part(item, reading) for item, reading in zip(inputs, readings, strict=True)
        ]
        grounded = [
            i
            for i, (item, reading) in enumerate(zip(readable, readings, strict=True))
            if item.grounded and reading.unread is None
        ]
        scored = self._score_tokens([readable[i] for i in grounded]) if grounded else []
        by_index = dict(zip(grounded, scored, strict=True))
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        # Batched work has no per-item clock; each item reports the batch's mean.
        per_item_ms = elapsed_ms / max(len(inputs), 1)
        return [
            self._result_read(item, readable[i], readings[i], by_index.get(i), per_item_ms)
            for i, item in enumerate(inputs)
        ]

    def _result_read(
        self,
        item: DetectionInput,
        part: DetectionInput,
        reading: LanguageReading,
        scoring: TokenScoring | None,
        latency_ms: float,
    ) -> DetectionResult:
        """The result of ``item`` from the scoring of ``part``, what it reads of ``item``.

        ``part`` is ``item`` without its passages in other languages, and with its
        sentences in other languages blanked: they are neither scored nor read, so they
        can flag the answer no more than clear it; they count as not read (the
        ``min_coverage`` rule: what was read can flag the answer, never clear it).
        """
        unread = [UnreadPassage(index=i, language=code) for i, code in reading.passages]
        if reading.unread is not None:
            coverage = Coverage(
                answer_chars=len(item.answer),
                answer_chars_scored=0,
                context_windows=0,
                max_length=self._max_length(),
                passages_not_read=unread,
            )
            return self._not_read(item, coverage, latency_ms, reading, reading.unread)
        result = self._result(part, scoring, latency_ms)
        language = reading.sentences_language
        coverage = result.coverage.model_copy(
            update={"passages_not_read": unread, "answer_language_not_read": language}
        )
        result = result.model_copy(update={"answer": item.answer, "coverage": coverage})
        if language is None or scoring is None or result.detected:
            return result  # nothing left unread, no context, or what was read flags it
        if result.grounded and covered(item.answer, coverage, self.config.min_coverage):
            return result
        # Too much of it is in another language, and what was read does not flag it.
        return self._not_read(item, coverage, latency_ms, reading, language)

    def _not_read(
        self,
        item: DetectionInput,
        coverage: Coverage,
        latency_ms: float,
        reading: LanguageReading,
        language: str,
    ) -> DetectionResult:
        """The result of an answer not checked because too much of it is in ``language``."""
        reason = reading.reason(self.config.languages)
        return self._unverifiable(
            item, coverage, latency_ms, error=reason, unread_language=language
        )

    async def adetect_batch(self, inputs: Sequence[DetectionInput]) -> list[DetectionResult]:
        """Async :meth:`detect_batch`; the model runs in a worker thread."""
        return await asyncio.to_thread(self.detect_batch, list(inputs))

    def _result(
        self, item: DetectionInput, scoring: TokenScoring | None, latency_ms: float
    ) -> DetectionResult:
        cfg = self.config
        if scoring is None:
            no_context = Coverage(
                answer_chars=len(item.answer),
                answer_chars_scored=0,
                context_windows=0,
                max_length=self._max_length(),
            )
            return self._unverifiable(item, no_context, latency_ms)
        tokens, coverage = scoring
        spans = merge_spans(
            item.answer,
            tokens,
            token_threshold=cfg.token_threshold,
            min_chars=cfg.min_span_chars,
            min_confidence=cfg.min_span_confidence,
        )
        score = self._response_score(item, tokens, spans)
        # Scored as marked; shown only where a span says something: a span on "so",
        # "is" or a comma alone points a reader at nothing (on ragtruth_dev select answers
        # character span F1 went from 0.2995 to 0.3004 without them).
        spans = [span for span in spans if says_something(span.text)]
        detected = reaches(score, cfg.threshold)
        # Too little of the answer was read to clear it; what was read can still flag
        # it (a wrong sentence followed by a paragraph in a script the model cannot
        # read is hallucinated, not unverifiable).
        if not covered(item.answer, coverage, cfg.min_coverage) and not detected:
            return self._unverifiable(item, coverage, latency_ms)
        return DetectionResult(
            answer=item.answer,
            spans=spans,
            score=score,
            threshold=cfg.threshold,
            detected=detected,
            status=DetectionStatus.HALLUCINATED if detected else DetectionStatus.SUPPORTED,
            tokens=tokens,
            coverage=coverage,
            model_id=self.model_id,
            latency_ms=latency_ms,
        )

    def _response_score(
        self,
        item: DetectionInput,  # noqa: ARG002 - subclasses read the answer
        tokens: Sequence[TokenScore],
        spans: Sequence[HallucinationSpan],
    ) -> float:
        """The response score by the configured aggregation (``calibrated`` needs a model)."""
        return response_score(
            [t.probability for t in tokens],
            spans,
            aggregation=self.config.aggregation,
            token_threshold=self.config.token_threshold,
        )

    def _unverifiable(
        self,
        item: DetectionInput,
        coverage: Coverage,
        latency_ms: float,
        *,
        error: str | None = None,
        unread_language: str | None = None,
    ) -> DetectionResult:
        return unverifiable_result(
            item,
            coverage=coverage,
            threshold=self.config.threshold,
            model_id=self.model_id,
            latency_ms=latency_ms,
            error=error,
            unread_language=unread_language,
        )


def unverifiable_result(
    item: DetectionInput,
    *,
    coverage: Coverage,
    threshold: float,
    model_id: str,
    latency_ms: float,
    error: str | None = None,
    unread_language: str | None = None,
) -> DetectionResult:
    """An UNVERIFIABLE result: nothing flagged, and the reason kept in ``error`` when given.

    ``unread_language``: the language of an input the detector does not read, when that
    is why (``error`` then says so too).
    """
    return DetectionResult(
        answer=item.answer,
        spans=[],
        score=None,
        threshold=threshold,
        detected=False,
        status=DetectionStatus.UNVERIFIABLE,
        coverage=coverage,
        model_id=model_id,
        latency_ms=latency_ms,
        error=error,
        unread_language=unread_language,
    )


def _read_part(item: DetectionInput, reading: LanguageReading) -> DetectionInput:
    """What the detector reads of ``item``: its passages and sentences in a language it reads.

    Passages in other languages are left out; sentences of the answer in other languages
    are blanked (spaces: every offset stays where it was).
    """
    update: dict[str, object] = {}
    if reading.passages:
        update["context"] = reading.kept(item.context)
    if reading.sentences:
        answer = list(item.answer)
        for start, end, _ in reading.sentences:
            answer[start:end] = " " * (end - start)
        update["answer"] = "".join(answer)
    return item.model_copy(update=update) if update else item


def covered(answer: str, coverage: Coverage, min_coverage: float) -> bool:
    """Whether enough of the answer was scored to call it supported or not."""
    readable = sum(1 for ch in answer if not ch.isspace())
    if readable == 0:
        return False
    return coverage.answer_chars_scored >= min_coverage * readable
