"""Scoring as the design defines it: token, span and response scores.

For an answer with token hallucination probabilities ``p_i``:

* span score: ``max(p_i)`` over the tokens of the span;
* response score, ``noisy_or``: ``1 - prod(1 - p_i)`` over tokens with ``p_i > tau_token``;
* response score, ``span_max``: the largest span score;
* response score, ``max``: the largest token probability (spans or not).

Whether an answer is flagged is decided in ``core/_decision.py``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence

from ._errors import InvalidInputError
from ._text import SPAN_WORD
from ._types import Aggregation, HallucinationSpan, TokenScore

__all__ = [
    "merge_spans",
    "noisy_or",
    "optimal_threshold",
    "response_score",
    "span_score",
]


def span_score(probabilities: Sequence[float]) -> float:
    """Score of a span: the largest token probability in it (0 for no tokens)."""
    return max(probabilities, default=0.0)


def noisy_or(probabilities: Sequence[float], token_threshold: float) -> float:
    """Noisy-OR over the tokens whose probability exceeds ``token_threshold``.

    ``1 - prod(1 - p_i)`` for ``p_i > token_threshold``. Computed in log space so long
    answers do not underflow.
    """
    log_clean = 0.0
    for p in probabilities:
        if p > token_threshold:
            if p >= 1.0:
                return 1.0
            log_clean += math.log1p(-p)
    return 0.0 if log_clean == 0.0 else -math.expm1(log_clean)


def response_score(
    probabilities: Sequence[float],
    spans: Sequence[HallucinationSpan],
    *,
    aggregation: Aggregation,
    token_threshold: float,
) -> float:
    """Response-level score by the configured aggregation."""
    if aggregation == "noisy_or":
        return noisy_or(probabilities, token_threshold)
    if aggregation == "max":
        return max(probabilities, default=0.0)
    if aggregation == "span_max":
        return max((s.confidence for s in spans), default=0.0)
    raise InvalidInputError(
        f"aggregation {aggregation!r} is computed by a detector with a response calibration"
    )


def optimal_threshold(cost_ratio: float, prior: float) -> float:
    """Bayes-optimal detection threshold from a cost ratio and a prior.

    ``tau* = 1 / (1 + lambda * (1 - pi) / pi)`` with ``lambda = C_FN / C_FP``.

    Args:
        cost_ratio: ``lambda``, the cost of a missed hallucination over a false alarm.
        prior: ``pi``, the prior probability that an answer hallucinates, in (0, 1).

    Returns:
        The threshold in (0, 1).

    Raises:
        InvalidInputError: If ``cost_ratio <= 0`` or ``prior`` is outside (0, 1).
    """
    if cost_ratio <= 0:
        raise InvalidInputError(f"cost_ratio must be positive, got {cost_ratio}")
    if not 0.0 < prior < 1.0:
        raise InvalidInputError(f"prior must be strictly between 0 and 1, got {prior}")
    return 1.0 / (1.0 + cost_ratio * (1.0 - prior) / prior)


def merge_spans(
    answer: str,
    tokens: Sequence[TokenScore],
    *,
    token_threshold: float,
    min_chars: int = 1,
    min_confidence: float = 0.0,
) -> list[HallucinationSpan]:
    """Merge runs of consecutive flagged tokens into character spans of ``answer``.

    Tokens must be in answer order. A word is flagged as a whole, when the mean
    probability of its pieces is above the threshold, so no span starts or ends inside a
    word (a token outside any word, such as punctuation, counts alone). A run breaks at
    the first token not flagged. A span runs from the first token's start to the last
    token's end, so the whitespace between its tokens is part of it; its confidence is
    its span score. Spans with fewer than ``min_chars`` non-space characters, or below
    ``min_confidence``, are dropped.
    """
    spans = []
    for run in _runs(_word_votes(answer, tokens, token_threshold)):
        start, end = run[0].start, run[-1].end
        text = answer[start:end]
        confidence = span_score([t.probability for t in run])
        if len(text.strip()) >= min_chars and confidence >= min_confidence:
            spans.append(HallucinationSpan(start=start, end=end, text=text, confidence=confidence))
    return spans


def _runs(marked: Sequence[tuple[TokenScore, bool]]) -> list[list[TokenScore]]:
    """The runs of consecutive marked tokens."""
    runs: list[list[TokenScore]] = []
    run: list[TokenScore] = []
    for token, flagged in marked:
        if flagged:
            run.append(token)
        elif run:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    return runs


def _word_of(answer: str) -> Callable[[int], tuple[int, int] | None]:
    """A lookup from a character offset to the word of ``answer`` around it, if any."""
    words = [(m.start(), m.end()) for m in SPAN_WORD.finditer(answer)]
    starts = [w[0] for w in words]

    def find(offset: int) -> tuple[int, int] | None:
        i = bisect.bisect_right(starts, offset) - 1
        if i >= 0 and words[i][0] <= offset < words[i][1]:
            return words[i]
        return None

    return find


def word_means(answer: str, tokens: Sequence[TokenScore]) -> list[float]:
    """Each token's word probability: the mean of the pieces of the word it starts in.

    Words are ``_text.SPAN_WORD``s.

    A token outside any word (punctuation, a character of a script written without
    spaces) keeps its own probability.
    """
    find = _word_of(answer)
    groups: dict[tuple[int, int], list[float]] = {}
    keys = []
    for t in tokens:
        key = find(t.start) or (t.start, t.end)
        groups.setdefault(key, []).append(t.probability)
        keys.append(key)
    return [sum(groups[k]) / len(groups[k]) for k in keys]


def _word_votes(
    answer: str, tokens: Sequence[TokenScore], threshold: float
) -> list[tuple[TokenScore, bool]]:
    """Each token marked by its word's probability (:func:`word_means`)."""
    means = word_means(answer, tokens)
    return [(t, p > threshold) for t, p in zip(tokens, means, strict=True)]
