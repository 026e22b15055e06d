"""Evaluation harness: benchmark readers, metrics and reports.

Run any :class:`~truthlens_integrations.core.models.Detector` over RAGTruth,
HaluEval or FaithBench with :func:`run_evaluation`, an NLI model over SNLI with
:func:`run_nli_evaluation`, and write the result with :func:`write_report`. The metric
definitions are in :mod:`truthlens_integrations.evaluation._metrics`.

HaluEval is training data: training must use ``halueval_split(items, "train")`` and
evaluation reads the ``"heldout"`` part (the last 10% of each file by index).

Public: what a user runs (the runners, the dataset loader, the reports) and the headline
metrics; each benchmark's reader and the other metrics are in the private modules.
"""

from __future__ import annotations

from ._answer_file import read_labelled_answers
from ._metrics import (
    auroc,
    average_precision,
    char_span_metrics,
    expected_calibration_error,
    threshold_curve,
)
from ._readers import DETECTION_DATASETS, halueval_split, load_detection_dataset
from ._records import EvalExample
from ._reports import render_markdown, write_report
from ._runner import (
    ClassifierReport,
    EvalReport,
    NLIReport,
    run_classifier_evaluation,
    run_evaluation,
    run_nli_evaluation,
)

__all__ = [
    "DETECTION_DATASETS",
    "ClassifierReport",
    "EvalExample",
    "EvalReport",
    "NLIReport",
    "auroc",
    "average_precision",
    "char_span_metrics",
    "expected_calibration_error",
    "halueval_split",
    "load_detection_dataset",
    "read_labelled_answers",
    "render_markdown",
    "run_classifier_evaluation",
    "run_evaluation",
    "run_nli_evaluation",
    "threshold_curve",
    "write_report",
]
