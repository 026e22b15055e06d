"""Tests of ``core/_scoring.py``: span and response scores, merged spans, the decision
threshold.
"""

from __future__ import annotations

import math

import pytest

from truthlens_integrations.core import (
    HallucinationSpan,
    InvalidInputError,
    TokenScore,
    noisy_or,
    optimal_threshold,
)
from truthlens_integrations.core._scoring import merge_spans, response_score, span_score


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


def _pieces(answer: str, pieces: list[tuple[str, float]]) -> list[TokenScore]:
    """Word pieces in answer order, each found after the previous one."""
    out, pos = [], 0
    for text, p in pieces:
        start = answer.index(text, pos)
        out.append(TokenScore(text=text, start=start, end=start + len(text), probability=p))
        pos = start + len(text)
    return out


def test_a_word_is_marked_by_the_mean_of_its_pieces() -> None:
    # "Eiffel" came back as "E" "iff" "el"; one piece above the cut no longer marks "iff".
    answer = "The Eiffel Tower is never open"
    pieces = [("The", 0.1), ("E", 0.45), ("iff", 0.51), ("el", 0.49), ("Tower", 0.3)]
    pieces += [("is", 0.2), ("never", 0.7), ("open", 0.6)]
    spans = merge_spans(answer, _pieces(answer, pieces), token_threshold=0.5)
    assert [s.text for s in spans] == ["never open"]


def test_a_marked_word_is_marked_whole() -> None:
    answer = "designed by Corbusier"
    pieces = [("designed", 0.1), ("by", 0.2), ("Co", 0.9), ("rb", 0.4), ("usier", 0.6)]
    spans = merge_spans(answer, _pieces(answer, pieces), token_threshold=0.5)
    assert [(s.text, s.confidence) for s in spans] == [("Corbusier", 0.9)]
    assert answer[spans[0].start : spans[0].end] == "Corbusier"


def test_unspaced_scripts_and_punctuation_count_alone() -> None:
    # Chinese has no spaces: each character stands alone, so the year keeps its own mark
    # instead of being averaged with the sentence around it.
    answer = "埃菲尔铁塔建于1950年。"
    pieces = [(c, 0.1) for c in "埃菲尔铁塔建于"] + [("1950", 0.9), ("年", 0.2), ("。", 0.1)]
    spans = merge_spans(answer, _pieces(answer, pieces), token_threshold=0.5)
    assert [s.text for s in spans] == ["1950"]
    answer = "It costs $5, not $9!"
    pieces = [("It", 0.1), ("costs", 0.1), ("$", 0.2), ("5", 0.1), (",", 0.9)]
    pieces += [("not", 0.2), ("$", 0.8), ("9", 0.9), ("!", 0.1)]
    spans = merge_spans(answer, _pieces(answer, pieces), token_threshold=0.5)
    assert [s.text for s in spans] == [",", "$9"]


def test_contractions_are_one_word() -> None:
    answer = "It wasn't open"
    pieces = [("It", 0.1), ("wasn", 0.3), ("'", 0.9), ("t", 0.6), ("open", 0.1)]
    spans = merge_spans(answer, _pieces(answer, pieces), token_threshold=0.5)
    assert [s.text for s in spans] == ["wasn't"]
