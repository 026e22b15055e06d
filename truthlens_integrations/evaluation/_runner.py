"""Run a detector, an NLI model or a prompt classifier over a benchmark and score it."""

from __future__ import annotations

import datetime as dt
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ..core import DetectionConfig, DetectionResult, InvalidInputError, NLILabel
from ..core.models import Detector
from ._metrics import (
    BinaryMetrics,
    CurvePoint,
    LatencyStats,
    MultiClassMetrics,
    ReliabilityBin,
    SpanMetrics,
    auroc,
    average_precision,
    binary_metrics,
    char_span_metrics,
    expected_calibration_error,
    latency_stats,
    multiclass_metrics,
    reliability_bins,
    threshold_curve,
    token_metrics,
)
from ._records import EvalExample, NLIExample

__all__ = [
    "ClassifierReport",
    "EvalReport",
    "ExamplePrediction",
    "GroupMetrics",
    "NLIPredictor",
    "NLIReport",
    "machine_info",
    "run_classifier_evaluation",
    "run_evaluation",
    "run_nli_evaluation",
]

NLI_LABELS: tuple[NLILabel, ...] = ("entailment", "neutral", "contradiction")

T = TypeVar("T")
R = TypeVar("R")


class _Report(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExamplePrediction(_Report):
    """What the detector said about one example, beside its gold label."""

    id: str
    task_type: str
    gold: bool
    score: float | None = Field(description="The detector's score; null when it could not check.")
    detected: bool
    spans: list[tuple[int, int]]
    gold_spans: list[tuple[int, int]]


class GroupMetrics(_Report):
    """All detection metrics of one group of examples (a task type, or all of them).

    ``token`` and ``char`` are ``None`` when no example of the group has span labels
    (HaluEval) or, for ``token``, when the detector reports no tokens.
    """

    n: int
    positives: int
    example: BinaryMetrics
    token: BinaryMetrics | None
    char: SpanMetrics | None
    average_precision: float
    auroc: float | None = Field(default=None, description="None when a class is absent.")


class SystemScores(_Report):
    """One system's figures on the answers of a report, at the route's threshold."""

    system: str
    auroc: float | None = Field(description="Over the answers it checked; null with one label.")
    caught: float | None = Field(description="Share of the unsupported answers it flags.")
    flagged: float | None = Field(description="Share of the supported answers it flags.")
    not_checked: int = Field(description="Answers it could not check (left out of the figures).")


class CascadeComparison(_Report):
    """A claim checker alone and in the policy's cascade, beside the detector (``--config``)."""

    checker: str
    settings: dict[str, Any] = Field(description="The claim_check block the cascade ran with.")
    threshold: float
    sent: int = Field(description="Answers the cascade sent to the checker.")
    checker_seconds: float = Field(description="Wall seconds the checker took over all answers.")
    systems: list[SystemScores]


class EvalReport(_Report):
    """The result of :func:`run_evaluation`: metrics overall and per task type."""

    kind: str = "detection"
    dataset: str
    model_id: str
    backend: str | None = Field(
        default=None,
        description="What ran the model (torch, onnx-fp32, onnx-int8); None for a model "
        "without one (the lexical reference, a service).",
    )
    config: DetectionConfig
    n_examples: int
    overall: GroupMetrics
    per_task: dict[str, GroupMetrics]
    latency: LatencyStats
    examples_per_second: float
    batch_size: int
    curve: list[CurvePoint] = Field(description="Example-level P/R/F1 per score threshold.")
    oracle_best: CurvePoint | None = Field(
        default=None,
        description="Best-F1 point of the curve: tuned on this very data, for reference only.",
    )
    baselines: dict[str, BinaryMetrics] = Field(
        default_factory=dict, description="Predictions of other systems stored in the data."
    )
    reliability: list[ReliabilityBin] = Field(
        default_factory=list, description="Score bins: mean score against positive rate."
    )
    calibration_error: float | None = Field(
        default=None, description="Expected calibration error of the response score."
    )
    unverifiable: int = Field(
        default=0, description="Examples the detector could not check (counted as not flagged)."
    )
    machine: dict[str, str]
    command: str | None = None
    created_at: str
    predictions: list[ExamplePrediction] = Field(default_factory=list)
    claim_check: CascadeComparison | None = None


class _ModelReport(_Report):
    """What a report on a model's labels over a data set holds (each kind its metrics)."""

    kind: str
    dataset: str
    model_id: str
    backend: str | None = Field(
        default=None, description="What ran the model (torch, onnx-fp32, onnx-int8)."
    )
    n_examples: int
    metrics: Any
    latency: LatencyStats
    examples_per_second: float
    batch_size: int
    machine: dict[str, str]
    command: str | None = None
    created_at: str


class NLIReport(_ModelReport):
    """The result of :func:`run_nli_evaluation`."""

    kind: str = "nli"
    metrics: MultiClassMetrics


class ClassifierReport(_ModelReport):
    """The result of :func:`run_classifier_evaluation` (positive = needs fact checking)."""

    kind: str = "classifier"
    metrics: BinaryMetrics


def machine_info() -> dict[str, str]:
    """Platform, CPU, Python and (when already imported) torch details for reports."""
    info = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or "unknown",
        "cpu_count": str(os.cpu_count()),
        "python": platform.python_version(),
    }
    try:
        from truthlens_integrations import __version__

        info["truthlens_integrations"] = __version__
    except ImportError:  # pragma: no cover - the package is always importable here
        pass
    torch = sys.modules.get("torch")
    if torch is not None:
        info["torch"] = str(getattr(torch, "__version__", "unknown"))
        info["torch_threads"] = str(torch.get_num_threads())
    return info


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _batches(n: int, batch_size: int, progress: bool, desc: str) -> Iterable[int]:
    if batch_size < 1:
        raise InvalidInputError(f"batch_size must be at least 1, got {batch_size}")
    starts = range(0, n, batch_size)
    if not progress:
        return starts
    from tqdm.auto import tqdm

    bar: Iterable[int] = tqdm(starts, desc=desc, total=len(starts), unit="batch")
    return bar


@dataclass(frozen=True)
class _Timed(Generic[R]):
    """Outputs of a batched run, with per-item latency and total wall time."""

    outputs: list[R]
    latencies: list[float]
    total_s: float

    def throughput(self) -> float:
        """Items per second over the whole run."""
        return len(self.outputs) / self.total_s if self.total_s > 0 else 0.0


def _run_batched(
    items: Sequence[T],
    predict: Callable[[Sequence[T]], Sequence[R]],
    *,
    batch_size: int,
    progress: bool,
    desc: str,
    what: str,
) -> _Timed[R]:
    """Call ``predict`` batch by batch; each item's latency is its batch's time share.

    Raises:
        InvalidInputError: If ``predict`` returns a different count than it was given.
    """
    outputs: list[R] = []
    latencies: list[float] = []
    started = time.perf_counter()
    for start in _batches(len(items), batch_size, progress, desc):
        batch = items[start : start + batch_size]
        t0 = time.perf_counter()
        out = list(predict(batch))
        per_item = (time.perf_counter() - t0) * 1000.0 / len(batch)
        if len(out) != len(batch):
            raise InvalidInputError(f"{what} returned {len(out)} results for {len(batch)}")
        outputs.extend(out)
        latencies.extend([per_item] * len(batch))
    return _Timed(outputs, latencies, time.perf_counter() - started)


def _spans(result: DetectionResult) -> list[tuple[int, int]]:
    return [(s.start, s.end) for s in result.spans]


def _group_metrics(
    examples: Sequence[EvalExample], results: Sequence[DetectionResult], token_threshold: float
) -> GroupMetrics:
    gold = [e.hallucinated for e in examples]
    spanned = [(e, r) for e, r in zip(examples, results, strict=True) if e.has_span_labels]
    gold_spans = [[(s.start, s.end) for s in e.gold_spans] for e, _ in spanned]
    char = char_span_metrics(gold_spans, [_spans(r) for _, r in spanned]) if spanned else None
    with_tokens = any(r.tokens for _, r in spanned)
    token = (
        token_metrics([r.tokens for _, r in spanned], gold_spans, token_threshold=token_threshold)
        if with_tokens
        else None
    )
    return GroupMetrics(
        n=len(examples),
        positives=sum(gold),
        example=binary_metrics(gold, [r.detected for r in results]),
        token=token,
        char=char,
        average_precision=average_precision(threshold_curve(gold, _ranked(results))),
        auroc=_finite(auroc(gold, _ranked(results))),
    )


def _ranked(results: Sequence[DetectionResult]) -> list[float]:
    """The scores the ranking metrics read.

    An answer the detector could not check has none and ranks as not flagged (0), as
    the report says (``unverifiable``).
    """
    return [0.0 if r.score is None else r.score for r in results]


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def _baselines(examples: Sequence[EvalExample]) -> dict[str, BinaryMetrics]:
    names = sorted({name for e in examples for name in e.baselines})
    out: dict[str, BinaryMetrics] = {}
    for name in names:
        having = [e for e in examples if name in e.baselines]
        out[name] = binary_metrics([e.hallucinated for e in having],
                                   [e.baselines[name] for e in having])  # fmt: skip
    return out


def run_evaluation(
    detector: Detector,
    dataset: Sequence[EvalExample],
    batch_size: int = 16,
    progress: bool = True,
    *,
    command: str | None = None,
) -> EvalReport:
    """Run ``detector`` over ``dataset`` in batches and compute every detection metric.

    The detector is called through :meth:`Detector.detect_batch`, so any backend that
    implements the protocol can be measured. Per-example latency is the wall time of
    its batch divided by the batch size (use ``batch_size=1`` for single-call latency).
    See :mod:`._metrics` for the metric definitions.

    Args:
        detector: The detector to measure; its current ``config`` sets the thresholds.
        dataset: Labelled examples, e.g. from :func:`load_detection_dataset`.
        batch_size: Examples per ``detect_batch`` call.
        progress: Show a tqdm progress bar on stderr.
        command: The command line that produced the run, recorded in the report.

    Returns:
        Metrics overall and per task type, the threshold curve, latency, the stored
        baselines and per-example predictions.

    Raises:
        InvalidInputError: If the data set is empty or ``batch_size`` is below 1.
    """
    if not dataset:
        raise InvalidInputError("the data set is empty: nothing to evaluate")
    run = _run_batched(
        dataset,
        lambda batch: detector.detect_batch([e.to_input() for e in batch]),
        batch_size=batch_size,
        progress=progress,
        desc=f"eval {detector.model_id}",
        what="detector",
    )
    results = run.outputs
    gold, scores = [e.hallucinated for e in dataset], _ranked(results)
    curve = threshold_curve(gold, scores)
    bins = reliability_bins(gold, scores)
    return EvalReport(
        dataset=dataset[0].dataset,
        model_id=detector.model_id,
        backend=getattr(detector, "backend", None),
        config=detector.config,
        n_examples=len(dataset),
        overall=_group_metrics(dataset, results, detector.config.token_threshold),
        per_task=_per_task(dataset, results, detector.config.token_threshold),
        curve=curve,
        oracle_best=max(curve, key=lambda p: p.f1, default=None),
        baselines=_baselines(dataset),
        reliability=bins,
        calibration_error=expected_calibration_error(bins),
        unverifiable=sum(1 for r in results if not r.grounded),
        predictions=[_prediction(e, r) for e, r in zip(dataset, results, strict=True)],
        **_run_fields(run, batch_size, command),
    )


def _per_task(
    dataset: Sequence[EvalExample], results: Sequence[DetectionResult], token_threshold: float
) -> dict[str, GroupMetrics]:
    by_task: dict[str, list[int]] = {}
    for i, example in enumerate(dataset):
        by_task.setdefault(example.task_type, []).append(i)
    return {
        task: _group_metrics([dataset[i] for i in idx], [results[i] for i in idx], token_threshold)
        for task, idx in sorted(by_task.items())
    }


def _prediction(example: EvalExample, result: DetectionResult) -> ExamplePrediction:
    return ExamplePrediction(
        id=example.id,
        task_type=example.task_type,
        gold=example.hallucinated,
        gold_spans=[(s.start, s.end) for s in example.gold_spans],
        score=result.score,
        detected=result.detected,
        spans=_spans(result),
    )


def _run_fields(run: _Timed[Any], batch_size: int, command: str | None) -> dict[str, Any]:
    """The fields every report shares: latency, throughput, machine, command, time."""
    return {
        "latency": latency_stats(run.latencies),
        "examples_per_second": run.throughput(),
        "batch_size": batch_size,
        "machine": machine_info(),
        "command": command,
        "created_at": _now(),
    }


NLIPredictor = Callable[[Sequence[tuple[str, str]]], Sequence[str]]
"""Maps ``(premise, hypothesis)`` pairs to NLI labels, in order."""


def run_nli_evaluation(
    predict: NLIPredictor,
    dataset: Sequence[NLIExample],
    batch_size: int = 32,
    progress: bool = True,
    *,
    model_id: str,
    dataset_name: str = "snli",
    command: str | None = None,
    backend: str | None = None,
) -> NLIReport:
    """Measure an NLI model: accuracy, per-class scores, confusion matrix and latency.

    Args:
        predict: Labels ``(premise, hypothesis)`` pairs with ``entailment``, ``neutral``
            or ``contradiction``.
        dataset: Gold pairs, e.g. from :func:`read_snli`.
        batch_size: Pairs per ``predict`` call.
        progress: Show a tqdm progress bar.
        model_id: Name of the model, for the report.
        dataset_name: Name of the data set, for the report.
        command: The command line, recorded in the report.
        backend: What runs the model, recorded in the report.

    Returns:
        The report.

    Raises:
        InvalidInputError: If the data set is empty or ``predict`` returns a wrong count.
    """
    if not dataset:
        raise InvalidInputError("the data set is empty: nothing to evaluate")
    run = _run_batched(
        [(e.premise, e.hypothesis) for e in dataset],
        predict,
        batch_size=batch_size,
        progress=progress,
        desc=f"nli {model_id}",
        what="NLI model",
    )
    return NLIReport(
        dataset=dataset_name,
        model_id=model_id,
        backend=backend,
        n_examples=len(dataset),
        metrics=multiclass_metrics([e.label for e in dataset], run.outputs, labels=NLI_LABELS),
        **_run_fields(run, batch_size, command),
    )


def run_classifier_evaluation(
    predict: Callable[[Sequence[str]], Sequence[bool]],
    prompts: Sequence[str],
    labels: Sequence[bool],
    batch_size: int = 32,
    progress: bool = True,
    *,
    model_id: str,
    dataset_name: str,
    command: str | None = None,
) -> ClassifierReport:
    """Measure a prompt classifier ("needs fact checking?"): accuracy, P/R/F1, latency.

    Args:
        predict: Maps prompts to ``True`` (needs fact checking) or ``False``.
        prompts: The prompts.
        labels: Gold labels, same order.
        batch_size: Prompts per ``predict`` call (1 for single-call latency).
        progress: Whether a tqdm bar shows the progress.
        model_id: The classifier's name in the report.
        dataset_name: The prompt set's name in the report.
        command: The command line the report records.

    Returns:
        The classifier's report.

    Raises:
        InvalidInputError: If inputs are empty, differ in length, or ``predict`` returns
            a wrong count.
    """
    if not prompts or len(prompts) != len(labels):
        raise InvalidInputError(
            f"need as many labels as prompts (got {len(prompts)} prompts, {len(labels)} labels)"
        )
    run = _run_batched(
        prompts,
        lambda batch: [bool(v) for v in predict(batch)],
        desc=f"classify {model_id}",
        what="classifier",
        batch_size=batch_size,
        progress=progress,
    )
    return ClassifierReport(
        metrics=binary_metrics(list(labels), run.outputs),
        dataset=dataset_name,
        model_id=model_id,
        n_examples=len(prompts),
        **_run_fields(run, batch_size, command),
    )
