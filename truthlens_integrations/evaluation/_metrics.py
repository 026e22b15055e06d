"""Evaluation metrics, with exact definitions.

All metrics treat *hallucinated* as the positive class. A ratio whose denominator is
zero is reported as 0.0 (as scikit-learn's ``zero_division=0``).

* **Example level**: one binary decision per example; the prediction is the
  detector's ``detected`` flag (response score >= threshold; with the default
  ``noisy_or`` aggregation and ``threshold <= token_threshold`` this is exactly
  LettuceDetect's rule "at least one token above the token threshold"). Precision,
  recall and F1 of the positive class, accuracy, and balanced accuracy
  ``(TPR + TNR) / 2`` (the mean recall of the classes present).
* **Token level**: every answer token the detector scored is one decision, pooled
  over the data set (micro). A token is gold-positive when its character range
  overlaps a gold span (``start < gold.end and end > gold.start``) and predicted
  positive when its probability exceeds the token threshold. Tokens are the
  detector's own, so token F1 compares detectors only when they share a tokenizer.
* **Character level (span F1)**: per example the gold and predicted spans become sets
  of answer character positions; ``overlap = |pred ∩ gold|``. Sums over the data set
  (micro): ``precision = Σoverlap / Σ|pred|``, ``recall = Σoverlap / Σ|gold|``. For
  non-overlapping spans this equals LettuceDetect's ``evaluate_detector_char_level``.
* **Threshold curve**: for each distinct response score ``t`` (descending), the
  example-level precision / recall / F1 of ``score >= t``. Average precision is
  ``Σ (R_k - R_{k-1}) P_k`` over those points (scikit-learn's definition).
* **Latency**: percentiles by linear interpolation between order statistics (NumPy's
  default); ``p50`` is the median.
* **NLI / classifier accuracy**: share of exact label matches; per-class precision,
  recall and F1 and the macro F1 beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from ..core import InvalidInputError, TokenScore

__all__ = [
    "BinaryMetrics",
    "ClassMetrics",
    "CurvePoint",
    "LatencyStats",
    "MultiClassMetrics",
    "ReliabilityBin",
    "SpanMetrics",
    "auroc",
    "average_precision",
    "binary_metrics",
    "char_span_metrics",
    "expected_calibration_error",
    "latency_stats",
    "multiclass_metrics",
    "percentile",
    "reliability_bins",
    "threshold_curve",
    "token_metrics",
]

Interval = tuple[int, int]


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0


def _f1(precision: float, recall: float) -> float:
    return _ratio(2 * precision * recall, precision + recall)


class BinaryMetrics(_Result):
    """Confusion counts and scores of a binary decision (positive = hallucinated)."""

    n: int = Field(ge=0)
    tp: int = Field(ge=0)
    fp: int = Field(ge=0)
    fn: int = Field(ge=0)
    tn: int = Field(ge=0)
    precision: float
    recall: float
    f1: float
    accuracy: float
    balanced_accuracy: float


class SpanMetrics(_Result):
    """Character-overlap precision, recall and F1, with the character counts behind them."""

    overlap_chars: int = Field(ge=0)
    predicted_chars: int = Field(ge=0)
    gold_chars: int = Field(ge=0)
    precision: float
    recall: float
    f1: float


class CurvePoint(_Result):
    """Example-level scores when the response threshold is ``threshold``."""

    threshold: float
    precision: float
    recall: float
    f1: float
    predicted_positive: int = Field(ge=0)


class LatencyStats(_Result):
    """Per-example latency in milliseconds."""

    n: int = Field(ge=0)
    mean_ms: float
    p50_ms: float
    p99_ms: float
    max_ms: float


class ClassMetrics(_Result):
    """One class of a multi-class problem."""

    precision: float
    recall: float
    f1: float
    support: int = Field(ge=0)


class MultiClassMetrics(_Result):
    """Accuracy, per-class scores and the confusion matrix ``confusion[gold][predicted]``."""

    n: int = Field(ge=0)
    accuracy: float
    macro_f1: float
    per_class: dict[str, ClassMetrics]
    confusion: dict[str, dict[str, int]]


def _check_lengths(a: Sequence[object], b: Sequence[object], what: str) -> None:
    if len(a) != len(b):
        raise InvalidInputError(f"{what}: {len(a)} gold values but {len(b)} predictions")


def binary_metrics(gold: Sequence[bool], predicted: Sequence[bool]) -> BinaryMetrics:
    """Precision, recall, F1, accuracy and balanced accuracy of binary predictions.

    Args:
        gold: Gold labels, ``True`` = hallucinated.
        predicted: Predictions in the same order.

    Returns:
        The metrics; empty inputs give all zeros.

    Raises:
        InvalidInputError: If the two sequences differ in length.
    """
    _check_lengths(gold, predicted, "binary_metrics")
    tp = sum(1 for g, p in zip(gold, predicted, strict=True) if g and p)
    fp = sum(1 for g, p in zip(gold, predicted, strict=True) if not g and p)
    fn = sum(1 for g, p in zip(gold, predicted, strict=True) if g and not p)
    tn = len(gold) - tp - fp - fn
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    class_recalls = [r for r, support in ((recall, tp + fn), (_ratio(tn, tn + fp), tn + fp))
                     if support > 0]  # fmt: skip
    return BinaryMetrics(
        n=len(gold),
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        precision=precision,
        recall=recall,
        f1=_f1(precision, recall),
        accuracy=_ratio(tp + tn, len(gold)),
        balanced_accuracy=_ratio(sum(class_recalls), len(class_recalls)),
    )


def _positions(spans: Sequence[Interval]) -> set[int]:
    chars: set[int] = set()
    for start, end in spans:
        chars.update(range(start, end))
    return chars


def char_span_metrics(
    gold: Sequence[Sequence[Interval]], predicted: Sequence[Sequence[Interval]]
) -> SpanMetrics:
    """Micro character-overlap precision / recall / F1 over a data set.

    Args:
        gold: Per example, the gold ``(start, end)`` character spans of the answer.
        predicted: Per example, the predicted spans, same order.

    Returns:
        The pooled metrics.

    Raises:
        InvalidInputError: If the two sequences differ in length.
    """
    _check_lengths(gold, predicted, "char_span_metrics")
    overlap = predicted_chars = gold_chars = 0
    for gold_spans, pred_spans in zip(gold, predicted, strict=True):
        gold_set, pred_set = _positions(gold_spans), _positions(pred_spans)
        overlap += len(gold_set & pred_set)
        predicted_chars += len(pred_set)
        gold_chars += len(gold_set)
    precision, recall = _ratio(overlap, predicted_chars), _ratio(overlap, gold_chars)
    return SpanMetrics(
        overlap_chars=overlap,
        predicted_chars=predicted_chars,
        gold_chars=gold_chars,
        precision=precision,
        recall=recall,
        f1=_f1(precision, recall),
    )


def token_metrics(
    tokens: Sequence[Sequence[TokenScore]],
    gold: Sequence[Sequence[Interval]],
    *,
    token_threshold: float,
) -> BinaryMetrics:
    """Micro token-level metrics over the answer tokens the detector scored.

    Args:
        tokens: Per example, the detector's answer tokens with probabilities.
        gold: Per example, the gold character spans.
        token_threshold: A token is predicted hallucinated when its probability exceeds it.

    Returns:
        Binary metrics over all tokens.

    Raises:
        InvalidInputError: If the two sequences differ in length.
    """
    _check_lengths(gold, tokens, "token_metrics")
    gold_labels: list[bool] = []
    predicted: list[bool] = []
    for example_tokens, spans in zip(tokens, gold, strict=True):
        for token in example_tokens:
            gold_labels.append(any(token.start < e and token.end > s for s, e in spans))
            predicted.append(token.probability > token_threshold)
    return binary_metrics(gold_labels, predicted)


def threshold_curve(gold: Sequence[bool], scores: Sequence[float]) -> list[CurvePoint]:
    """Example-level precision / recall / F1 at every distinct score as threshold.

    Args:
        gold: Gold labels, ``True`` = hallucinated.
        scores: Response scores in the same order.

    Returns:
        One point per distinct score, thresholds descending (recall non-decreasing).

    Raises:
        InvalidInputError: If the two sequences differ in length.
    """
    _check_lengths(gold, scores, "threshold_curve")
    positives = sum(1 for g in gold if g)
    order = sorted(zip(scores, gold, strict=True), key=lambda pair: -pair[0])
    points: list[CurvePoint] = []
    tp = fp = 0
    for i, (score, label) in enumerate(order):
        tp += int(label)
        fp += int(not label)
        # Emit once all examples tied at this score are counted.
        if i + 1 < len(order) and order[i + 1][0] == score:
            continue
        precision, recall = _ratio(tp, tp + fp), _ratio(tp, positives)
        points.append(
            CurvePoint(
                threshold=score,
                precision=precision,
                recall=recall,
                f1=_f1(precision, recall),
                predicted_positive=tp + fp,
            )
        )
    return points


def average_precision(curve: Sequence[CurvePoint]) -> float:
    """Area under the precision-recall step curve: ``Σ (R_k - R_{k-1}) P_k``."""
    total, previous_recall = 0.0, 0.0
    for point in curve:
        total += (point.recall - previous_recall) * point.precision
        previous_recall = point.recall
    return total


def auroc(gold: Sequence[bool], scores: Sequence[float]) -> float:
    """Area under the ROC curve: the chance a random positive outscores a random negative.

    Ties count one half. ``nan`` when either class is absent.
    """
    _check_lengths(gold, scores, "auroc")
    pos = [s for s, g in zip(scores, gold, strict=True) if g]
    neg = [s for s, g in zip(scores, gold, strict=True) if not g]
    if not pos or not neg:
        return float("nan")
    # Rank-sum (Mann-Whitney U) with average ranks for ties.
    ordered = sorted(scores)
    rank: dict[float, float] = {}
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[i]:
            j += 1
        rank[ordered[i]] = (i + j) / 2.0 + 1.0
        i = j + 1
    u = sum(rank[s] for s in pos) - len(pos) * (len(pos) + 1) / 2.0
    return u / (len(pos) * len(neg))


class ReliabilityBin(_Result):
    """Examples whose score fell in ``[lower, upper)``: mean score against positive rate."""

    lower: float
    upper: float
    count: int
    mean_score: float
    positive_rate: float


def reliability_bins(
    gold: Sequence[bool], scores: Sequence[float], n_bins: int = 10
) -> list[ReliabilityBin]:
    """Equal-width score bins for a reliability diagram (empty bins left out)."""
    _check_lengths(gold, scores, "reliability_bins")
    if n_bins < 1:
        raise InvalidInputError(f"n_bins must be at least 1, got {n_bins}")
    members: list[list[tuple[float, bool]]] = [[] for _ in range(n_bins)]
    for score, label in zip(scores, gold, strict=True):
        members[min(int(score * n_bins), n_bins - 1)].append((score, label))
    return [
        ReliabilityBin(
            lower=k / n_bins,
            upper=(k + 1) / n_bins,
            count=len(items),
            mean_score=sum(s for s, _ in items) / len(items),
            positive_rate=sum(1 for _, g in items if g) / len(items),
        )
        for k, items in enumerate(members)
        if items
    ]


def expected_calibration_error(bins: Sequence[ReliabilityBin]) -> float:
    """``Σ n_b / N · |mean score_b - positive rate_b|`` over the bins."""
    total = sum(b.count for b in bins)
    if total == 0:
        return 0.0
    return sum(b.count / total * abs(b.mean_score - b.positive_rate) for b in bins)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    if not 0.0 <= q <= 100.0:
        raise InvalidInputError(f"percentile must be within [0, 100], got {q}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_stats(values_ms: Sequence[float]) -> LatencyStats:
    """Mean, median, 99th percentile and maximum of per-example latencies."""
    return LatencyStats(
        n=len(values_ms),
        mean_ms=_ratio(sum(values_ms), len(values_ms)),
        p50_ms=percentile(values_ms, 50.0),
        p99_ms=percentile(values_ms, 99.0),
        max_ms=max(values_ms, default=0.0),
    )


def multiclass_metrics(
    gold: Sequence[str], predicted: Sequence[str], *, labels: Sequence[str] | None = None
) -> MultiClassMetrics:
    """Accuracy, per-class precision / recall / F1, macro F1 and the confusion matrix.

    Args:
        gold: Gold labels.
        predicted: Predicted labels, same order.
        labels: Class names to report (default: every label seen, sorted).

    Returns:
        The metrics.

    Raises:
        InvalidInputError: If the two sequences differ in length.
    """
    _check_lengths(gold, predicted, "multiclass_metrics")
    classes = list(labels) if labels is not None else sorted(set(gold) | set(predicted))
    confusion = {g: dict.fromkeys(classes, 0) for g in classes}
    for g, p in zip(gold, predicted, strict=True):
        confusion.setdefault(g, dict.fromkeys(classes, 0))
        confusion[g][p] = confusion[g].get(p, 0) + 1
    per_class: dict[str, ClassMetrics] = {}
    for c in classes:
        tp = confusion[c].get(c, 0)
        support = sum(confusion[c].values())
        predicted_c = sum(row.get(c, 0) for row in confusion.values())
        precision, recall = _ratio(tp, predicted_c), _ratio(tp, support)
        per_class[c] = ClassMetrics(
            precision=precision, recall=recall, f1=_f1(precision, recall), support=support
        )
    correct = sum(1 for g, p in zip(gold, predicted, strict=True) if g == p)
    return MultiClassMetrics(
        n=len(gold),
        accuracy=_ratio(correct, len(gold)),
        macro_f1=_ratio(sum(m.f1 for m in per_class.values()), len(per_class)),
        per_class=per_class,
        confusion=confusion,
    )
