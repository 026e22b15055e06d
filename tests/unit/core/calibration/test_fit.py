"""Tests of ``core/_calibration/_fit.py``: fitting a response map and its threshold."""

from __future__ import annotations

import pytest

from truthlens_integrations.core import InvalidInputError
from truthlens_integrations.core._calibration._fit import fit_response_map, threshold_for
from truthlens_integrations.core._calibration._signals import ResponseSignals


def _long_answers_mostly_clean() -> tuple[list[ResponseSignals], list[bool]]:
    signals, labels = [], []
    for n in range(40):
        bad = n % 2 == 0
        sentences = 1 + (n % 7) * (1 if bad else 3)
        signals.append(ResponseSignals(0.9 if bad else 0.2 + 0.01 * n % 5, sentences, 3 * bad))
        labels.append(bad)
    return signals, labels


def test_the_fit_keeps_coefficients_non_negative_and_padding_cannot_lower_a_score() -> None:
    # Long answers are mostly clean here, so a free fit would give length a negative
    # weight; the fitted map may not.
    signals, labels = _long_answers_mostly_clean()
    calibration = fit_response_map(signals, labels)
    assert calibration.length_safe and calibration["max_logit"] > 0
    wrong = ResponseSignals(0.85, 1, 2, peak=2.0, absent_numbers=2, flagged_tokens=3)
    before = calibration.score(wrong)
    for extra in range(1, 30):
        padded = ResponseSignals(0.85, 1 + extra, 2, peak=2.0, absent_numbers=2, flagged_tokens=3)
        assert calibration.score(padded) >= before


def test_a_free_column_may_go_negative_and_the_others_stay_bounded() -> None:
    # The same data: long answers mostly clean. Freed, the length term goes negative
    # (the map is then not length safe); the bounded columns stay >= 0.
    signals, labels = _long_answers_mostly_clean()
    free = fit_response_map(signals, labels, free=("log_sentences",))
    assert free["log_sentences"] < 0 and not free.length_safe
    assert all(free[c] >= 0 for c in ("max_logit", "sentence_peak", "absent_words"))
    with pytest.raises(InvalidInputError, match="free columns"):
        fit_response_map(signals, labels, columns=("max_logit",), free=("log_sentences",))


def test_threshold_for_targets() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
    labels = [True, True, False, True, False, True, False, False]
    assert threshold_for(scores, labels) == 0.5
    assert threshold_for(scores, labels, target_precision=0.75) == 0.6
    assert threshold_for(scores, labels, max_false_alarm_rate=0.25) == 0.6
    assert threshold_for(scores, labels, max_false_alarm_rate=0.5) == 0.3
    with pytest.raises(InvalidInputError):
        threshold_for(scores, labels, target_precision=0.99, max_false_alarm_rate=0.1)
    with pytest.raises(InvalidInputError, match="no threshold"):
        threshold_for([0.9, 0.1], [False, True], target_precision=0.9)
