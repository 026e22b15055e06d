"""Tests of ``truthlens_integrations/evaluation/_runner.py``: running an evaluation."""

from __future__ import annotations

import pytest

from tests._paths import BENCHDATA as DATA
from tests._paths import RAGTRUTH
from truthlens_integrations.core.models.detection import LexicalDetector
from truthlens_integrations.core.models.detection._lexical import lexical_nli
from truthlens_integrations.evaluation import (
    load_detection_dataset,
    run_evaluation,
    run_nli_evaluation,
)
from truthlens_integrations.evaluation._readers import read_faithbench, read_ragtruth, read_snli

# ----------------------------------------------------------------------------- runner


def test_run_evaluation_on_ragtruth_fixture() -> None:
    report = run_evaluation(
        LexicalDetector(), read_ragtruth(RAGTRUTH), batch_size=2, progress=False
    )
    assert report.n_examples == 3 and set(report.per_task) == {"QA", "Summary", "Data2txt"}
    assert report.overall.example.f1 == 1.0
    # QA flags "500" (3 chars) in gold "500 meters" (10); Data2txt flags "place",
    # "free", "rating" (15 chars) against gold "free WiFi" (9), overlap "free" (4).
    char = report.overall.char
    assert char is not None
    assert (char.overlap_chars, char.predicted_chars, char.gold_chars) == (7, 18, 19)
    assert char.f1 == pytest.approx(14 / 37)
    assert report.per_task["QA"].char is not None
    assert report.per_task["QA"].char.precision == 1.0
    assert report.latency.n == 3 and report.latency.p50_ms >= 0.0
    assert [p.id for p in report.predictions] == ["q1", "s1", "d1"]


def test_run_evaluation_halueval_has_no_span_metrics() -> None:
    report = run_evaluation(
        LexicalDetector(), load_detection_dataset("halueval", DATA), progress=False
    )
    assert report.overall.char is None and report.overall.token is None
    assert report.overall.positives == 3


def test_run_evaluation_reports_faithbench_baselines() -> None:
    report = run_evaluation(LexicalDetector(), read_faithbench(DATA / "faithbench"), progress=False)
    hhem = report.baselines["HHEM-2.1"]
    assert (hhem.precision, hhem.recall, hhem.balanced_accuracy) == (0.5, 1.0, 0.75)
    assert report.baselines["GPT-4o"].balanced_accuracy == 1.0


def test_run_nli_evaluation() -> None:
    report = run_nli_evaluation(
        lexical_nli, read_snli(DATA / "esnli"), progress=False, model_id="lexical-nli"
    )
    assert report.metrics.accuracy == 1.0 and report.n_examples == 3
