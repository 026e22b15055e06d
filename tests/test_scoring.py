from __future__ import annotations

import math

import pytest

from truthlens_integrations.core import (
    Decision,
    HallucinationSpan,
    InvalidInputError,
    TokenScore,
    decide,
    merge_spans,
    noisy_or,
    optimal_threshold,
    response_score,
    span_score,
)


def test_span_score_is_the_max() -> None:
    assert span_score([0.2, 0.9, 0.4]) == 0.9
    assert span_score([]) == 0.0


def test_noisy_or_only_counts_tokens_above_tau() -> None:
    # 1 - (1 - 0.9)(1 - 0.6) = 1 - 0.1 * 0.4 = 0.96; 0.2 and 0.5 are not above 0.5
    assert noisy_or([0.9, 0.6, 0.2, 0.5], 0.5) == pytest.approx(0.96)
    assert noisy_or([0.1, 0.2], 0.5) == 0.0
    assert noisy_or([0.99, 1.0], 0.5) == 1.0


def test_noisy_or_is_monotone_and_stable_for_long_answers() -> None:
    many = [0.51] * 2000
    assert noisy_or(many, 0.5) == pytest.approx(1.0)
    assert noisy_or([0.7, 0.8], 0.5) >= noisy_or([0.7], 0.5)


def test_response_score_span_max() -> None:
    spans = [
        HallucinationSpan(start=0, end=3, text="abc", confidence=0.7),
        HallucinationSpan(start=5, end=6, text="d", confidence=0.85),
    ]
    assert response_score([0.7, 0.85], spans, aggregation="span_max", token_threshold=0.5) == 0.85
    assert response_score([0.7, 0.85], [], aggregation="span_max", token_threshold=0.5) == 0.0


def test_decide_is_inclusive_at_the_threshold() -> None:
    assert decide(0.6, 0.6) is Decision.MITIGATE
    assert decide(0.59, 0.6) is Decision.PASS


def test_optimal_threshold_matches_the_formula() -> None:
    # lambda = 10, pi = 0.2: 1 / (1 + 10 * 0.8 / 0.2) = 1 / 41
    assert optimal_threshold(10, 0.2) == pytest.approx(1 / 41)
    # equal costs and a 50% prior give 0.5
    assert optimal_threshold(1, 0.5) == pytest.approx(0.5)
    assert math.isclose(optimal_threshold(0.25, 0.5), 0.8)
    with pytest.raises(InvalidInputError):
        optimal_threshold(0, 0.5)
    with pytest.raises(InvalidInputError):
        optimal_threshold(1, 1.0)


def _tokens(answer: str, probs: list[float]) -> list[TokenScore]:
    out, pos = [], 0
    for word, p in zip(answer.split(" "), probs, strict=True):
        start = answer.index(word, pos)
        out.append(TokenScore(start=start, end=start + len(word), text=word, probability=p))
        pos = start + len(word)
    return out


def test_merge_spans_joins_consecutive_tokens_with_their_gap() -> None:
    answer = "built in 1950 and 500 meters tall"
    tokens = _tokens(answer, [0.1, 0.2, 0.9, 0.3, 0.8, 0.95, 0.4])
    spans = merge_spans(answer, tokens, token_threshold=0.5)
    assert [(s.start, s.end, s.text) for s in spans] == [(9, 13, "1950"), (18, 28, "500 meters")]
    assert [s.confidence for s in spans] == [0.9, 0.95]
    for s in spans:
        assert answer[s.start : s.end] == s.text


def test_merge_spans_filters_by_length_and_confidence() -> None:
    answer = "a bb ccc"
    tokens = _tokens(answer, [0.9, 0.1, 0.7])
    assert [s.text for s in merge_spans(answer, tokens, token_threshold=0.5, min_chars=2)] == [
        "ccc"
    ]
    kept = merge_spans(answer, tokens, token_threshold=0.5, min_confidence=0.8)
    assert [s.text for s in kept] == ["a"]
