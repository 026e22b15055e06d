"""Evaluation harness: benchmark readers, metrics, the lexical reference detector and reports.

Run any :class:`~truthlens_integrations.core.detection._base.Detector` over RAGTruth,
HaluEval or FaithBench with :func:`run_evaluation`, an NLI model over SNLI with
:func:`run_nli_evaluation`, and write the result with :func:`write_report`. The metric
definitions are in :mod:`truthlens_integrations.core.evaluation._metrics`.

HaluEval is training data: training must use ``halueval_split(items, "train")`` and
evaluation reads the ``"heldout"`` part (the last 10% of each file by index).
"""

from __future__ import annotations

from ._lexical import STOPWORDS, LexicalDetector, lexical_nli, normalize_word
from ._metrics import (
    BinaryMetrics,
    ClassMetrics,
    CurvePoint,
    LatencyStats,
    MultiClassMetrics,
    SpanMetrics,
    average_precision,
    binary_metrics,
    char_span_metrics,
    latency_stats,
    multiclass_metrics,
    percentile,
    threshold_curve,
    token_metrics,
)
from ._readers import (
    DETECTION_DATASETS,
    HALUEVAL_HELDOUT_FRACTION,
    HALUEVAL_TASKS,
    DetectionDataset,
    HaluEvalPart,
    HaluEvalTask,
    default_data_dir,
    halueval_split,
    load_detection_dataset,
    ragtruth_prompt,
    read_faithbench,
    read_halueval,
    read_ragtruth,
    read_snli,
    subsample,
)
from ._records import EvalExample, GoldSpan, NLIExample
from ._reports import (
    AnyReport,
    render_markdown,
    write_json,
    write_markdown,
    write_plots,
    write_report,
)
from ._runner import (
    ClassifierReport,
    EvalReport,
    ExamplePrediction,
    GroupMetrics,
    NLIPredictor,
    NLIReport,
    machine_info,
    run_classifier_evaluation,
    run_evaluation,
    run_nli_evaluation,
)

__all__ = [
    "DETECTION_DATASETS",
    "HALUEVAL_HELDOUT_FRACTION",
    "HALUEVAL_TASKS",
    "STOPWORDS",
    "AnyReport",
    "BinaryMetrics",
    "ClassMetrics",
    "ClassifierReport",
    "CurvePoint",
    "DetectionDataset",
    "EvalExample",
    "EvalReport",
    "ExamplePrediction",
    "GoldSpan",
    "GroupMetrics",
    "HaluEvalPart",
    "HaluEvalTask",
    "LatencyStats",
    "LexicalDetector",
    "MultiClassMetrics",
    "NLIExample",
    "NLIPredictor",
    "NLIReport",
    "SpanMetrics",
    "average_precision",
    "binary_metrics",
    "char_span_metrics",
    "default_data_dir",
    "halueval_split",
    "latency_stats",
    "lexical_nli",
    "load_detection_dataset",
    "machine_info",
    "multiclass_metrics",
    "normalize_word",
    "percentile",
    "ragtruth_prompt",
    "read_faithbench",
    "read_halueval",
    "read_ragtruth",
    "read_snli",
    "render_markdown",
    "run_classifier_evaluation",
    "run_evaluation",
    "run_nli_evaluation",
    "subsample",
    "threshold_curve",
    "token_metrics",
    "write_json",
    "write_markdown",
    "write_plots",
    "write_report",
]
