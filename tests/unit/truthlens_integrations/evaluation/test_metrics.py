"""Tests of ``truthlens_integrations/evaluation/_metrics.py``: the evaluation metrics on hand-
computed inputs.
"""

from __future__ import annotations

import pytest

from truthlens_integrations.core import TokenScore
from truthlens_integrations.evaluation import average_precision, char_span_metrics, threshold_curve
from truthlens_integrations.evaluation._metrics import (
    binary_metrics,
    latency_stats,
    multiclass_metrics,
    percentile,
    token_metrics,
)

# ----------------------------------------------------------------------------- metrics


def test_binary_metrics_hand_computed() -> None:
    m = binary_metrics([True, True, True, False, False], [True, False, True, True, False])
    assert (m.tp, m.fn, m.fp, m.tn) == (2, 1, 1, 1)
    assert m.precision == pytest.approx(2 / 3)
    assert m.recall == pytest.approx(2 / 3)
    assert m.f1 == pytest.approx(2 / 3)
    assert m.accuracy == pytest.approx(3 / 5)
    assert m.balanced_accuracy == pytest.approx((2 / 3 + 1 / 2) / 2)


def test_binary_metrics_zero_division_and_single_class() -> None:
    m = binary_metrics([False, False], [False, False])
    assert (m.precision, m.recall, m.f1) == (0.0, 0.0, 0.0)
    # Only negatives present: balanced accuracy is the recall of that class alone.
    assert m.balanced_accuracy == 1.0
    with pytest.raises(Exception, match="2 gold values but 1"):
        binary_metrics([True, False], [True])


def test_char_span_f1_partial_overlaps() -> None:
    gold = [[(0, 10)], [(0, 4), (10, 14)], []]
    pred = [[(5, 15)], [(2, 12)], [(0, 3)]]
    m = char_span_metrics(gold, pred)
    # overlaps 5 + (2 + 2) + 0; predicted 10 + 10 + 3; gold 10 + 8 + 0
    assert (m.overlap_chars, m.predicted_chars, m.gold_chars) == (9, 23, 18)
    assert m.precision == pytest.approx(9 / 23)
    assert m.recall == pytest.approx(9 / 18)
    assert m.f1 == pytest.approx(18 / 41)  # 2 * overlap / (predicted + gold)


def test_char_span_overlapping_predictions_count_once() -> None:
    m = char_span_metrics([[(0, 8)]], [[(0, 5), (3, 8)]])
    assert (m.overlap_chars, m.predicted_chars) == (8, 8)
    assert m.precision == 1.0


def test_token_f1_hand_computed() -> None:
    words = [("The", 0.0), ("tower", 0.1), ("is", 0.0), ("500", 0.9), ("meters", 0.4),
             ("tall", 0.7)]  # fmt: skip
    tokens, pos = [], 0
    for word, p in words:
        tokens.append(TokenScore(start=pos, end=pos + len(word), text=word, probability=p))
        pos += len(word) + 1
    # gold span "500 meters" = (13, 23): tokens 500 and meters are gold-positive
    m = token_metrics([tokens], [[(13, 23)]], token_threshold=0.5)
    assert (m.tp, m.fp, m.fn, m.tn) == (1, 1, 1, 3)
    assert m.f1 == pytest.approx(0.5)


def test_threshold_curve_and_average_precision() -> None:
    curve = threshold_curve([True, False, True, False], [0.9, 0.8, 0.8, 0.1])
    assert [p.threshold for p in curve] == [0.9, 0.8, 0.1]
    assert [p.predicted_positive for p in curve] == [1, 3, 4]
    assert curve[0].f1 == pytest.approx(2 / 3)
    assert (curve[1].precision, curve[1].recall) == (pytest.approx(2 / 3), 1.0)
    assert curve[1].f1 == pytest.approx(0.8)
    assert average_precision(curve) == pytest.approx(0.5 * 1.0 + 0.5 * 2 / 3)


def test_latency_percentiles() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == pytest.approx(2.5)
    assert percentile([1.0, 2.0, 3.0, 4.0], 99) == pytest.approx(3.97)
    stats = latency_stats([1.0, 2.0, 3.0, 4.0])
    assert (stats.mean_ms, stats.p50_ms, stats.max_ms) == (2.5, 2.5, 4.0)


def test_multiclass_accuracy_and_confusion() -> None:
    gold = ["entailment", "neutral", "contradiction", "neutral"]
    pred = ["entailment", "entailment", "contradiction", "neutral"]
    m = multiclass_metrics(gold, pred, labels=["entailment", "neutral", "contradiction"])
    assert m.accuracy == 0.75
    assert m.confusion["neutral"] == {"entailment": 1, "neutral": 1, "contradiction": 0}
    assert m.per_class["entailment"].precision == 0.5
    assert m.per_class["neutral"].recall == 0.5


def test_auroc_counts_ties_as_half_and_needs_both_classes() -> None:
    from truthlens_integrations.evaluation import auroc

    assert auroc([True, False], [0.9, 0.1]) == 1.0
    assert auroc([True, False], [0.1, 0.9]) == 0.0
    assert auroc([True, False, True, False], [0.5, 0.5, 0.8, 0.2]) == pytest.approx(0.875)
    assert auroc([True, True], [0.1, 0.2]) != auroc([True, True], [0.1, 0.2])  # nan


def test_reliability_bins_and_calibration_error() -> None:
    from truthlens_integrations.evaluation import expected_calibration_error
    from truthlens_integrations.evaluation._metrics import reliability_bins

    gold = [True, False, False, False, True, True, True, False]
    scores = [0.05, 0.05, 0.05, 0.05, 0.95, 0.95, 0.95, 1.0]
    bins = reliability_bins(gold, scores)
    assert [(b.lower, b.count) for b in bins] == [(0.0, 4), (0.9, 4)]
    assert bins[0].positive_rate == 0.25 and bins[1].mean_score == pytest.approx(0.9625)
    # |0.05 - 0.25| and |0.9625 - 0.75|, each half of the examples
    assert expected_calibration_error(bins) == pytest.approx(0.5 * 0.2 + 0.5 * 0.2125)
