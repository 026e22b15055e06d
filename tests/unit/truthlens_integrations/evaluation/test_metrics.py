"""Evaluation harness: metrics on hand-computed inputs, readers on hand-written fixtures,
the lexical reference detector, the runner, the report writers and the CLI glue."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import pytest

from truthlens_integrations.core import DetectionConfig, DetectionStatus, TokenScore
from truthlens_integrations.core.models import Detector
from truthlens_integrations.core.models.detection import LexicalDetector
from truthlens_integrations.core.models.detection._lexical import lexical_nli, normalize_word
from truthlens_integrations.evaluation import (
    EvalReport,
    average_precision,
    char_span_metrics,
    halueval_split,
    load_detection_dataset,
    render_markdown,
    run_evaluation,
    run_nli_evaluation,
    threshold_curve,
    write_report,
)
from truthlens_integrations.evaluation._metrics import (
    binary_metrics,
    latency_stats,
    multiclass_metrics,
    percentile,
    token_metrics,
)
from truthlens_integrations.evaluation._readers import (
    read_faithbench,
    read_halueval,
    read_ragtruth,
    read_snli,
    subsample,
)
from truthlens_integrations.evaluation._reports import write_plots

DATA = Path(__file__).parent / "data" / "eval" / "benchdata"
RAGTRUTH = DATA / "ragtruth_subsets" / "ragtruth_test_subset_with_context.jsonl"


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


# ----------------------------------------------------------------------------- readers


def test_read_ragtruth_rebuilds_context_per_task() -> None:
    examples = {e.task_type: e for e in read_ragtruth(RAGTRUTH)}
    qa, summary, d2t = examples["QA"], examples["Summary"], examples["Data2txt"]
    assert qa.question == "How tall is the Eiffel Tower?"
    assert qa.context == (
        "The Eiffel Tower is 330 meters tall.",
        "It was completed in 1889 in Paris.",
    )
    assert qa.prompt is not None and "following two passages" in qa.prompt
    assert qa.hallucinated
    span = qa.gold_spans[0]
    assert qa.answer[span.start : span.end] == "500 meters"
    assert span.label == "Evident Conflict"
    assert summary.question is None and not summary.hallucinated and summary.gold_spans == ()
    assert summary.context[0].startswith("The city council")
    assert d2t.question is not None and "objective overview" in d2t.question
    assert "'WiFi': 'no'" in d2t.context[0]  # the record as RAGTruth printed it
    assert d2t.answer[d2t.gold_spans[0].start : d2t.gold_spans[0].end] == "free WiFi"
    assert qa.to_input().context == qa.context


def test_halueval_split_is_last_ten_percent() -> None:
    items = list(range(10))
    assert halueval_split(items, "heldout") == [9]
    assert halueval_split(items, "train") == list(range(9))
    assert halueval_split(list(range(10_000)), "heldout")[0] == 9_000
    assert halueval_split(items, "all") == items


def test_halueval_split_matches_training() -> None:
    data = pytest.importorskip("lab.training.data")
    for total in (7, 10, 33, 10_000):
        heldout = set(halueval_split(list(range(total)), "heldout"))
        assert heldout == {i for i in range(total) if data.split_of(i, total) == "heldout"}


def test_read_halueval_pairs_right_and_hallucinated() -> None:
    qa = read_halueval(DATA / "halueval" / "dataset_halueval_qa.jsonl", "qa")
    assert [e.id for e in qa] == ["qa-9-right", "qa-9-hallucinated"]
    assert [e.hallucinated for e in qa] == [False, True]
    assert qa[0].context == ("Town 9 has 11 bridges over the river.",)
    assert qa[1].answer == "Town 9 has 21 bridges."
    assert not qa[0].has_span_labels
    train = read_halueval(DATA / "halueval" / "dataset_halueval_qa.jsonl", "qa", part="train")
    assert len(train) == 18
    summ = read_halueval(
        DATA / "halueval" / "dataset_halueval_summarization.jsonl", "summarization"
    )
    assert summ[0].question is None
    dia = read_halueval(DATA / "halueval" / "dataset_halueval_dialogue.jsonl", "dialogue")
    assert dia[0].question is not None and dia[0].question.startswith("[Human]")


def test_read_faithbench_labels_spans_and_baselines() -> None:
    examples = read_faithbench(DATA / "faithbench")
    assert [e.id for e in examples] == ["b1-0", "b1-1", "b1-2"]
    assert [e.hallucinated for e in examples] == [True, False, False]  # Benign is not
    # "pies" (28-32); "opens at 6 am" (38-51) merged with the overlapping "at 6" (44-48)
    assert [(s.start, s.end) for s in examples[0].gold_spans] == [(28, 32), (38, 51)]
    assert examples[1].gold_spans == ()
    assert examples[0].baselines["HHEM-2.1"] is True  # consistency 0.2 < 0.5
    assert examples[2].baselines["HHEM-2.1"] is True  # 0.3: a false alarm
    assert examples[2].baselines["GPT-4o"] is False  # vote 1 = consistent


def test_read_snli_skips_unlabelled() -> None:
    pairs = read_snli(DATA / "esnli")
    assert [p.label for p in pairs] == ["entailment", "neutral", "contradiction"]
    assert pairs[0].premise == "A dog runs in the park ."


def test_load_by_name_and_subsample() -> None:
    assert len(load_detection_dataset("halueval", DATA)) == 2 + 2 + 2
    assert len(load_detection_dataset("ragtruth", DATA, limit=2)) == 2
    assert subsample(list(range(10)), 3) == [0, 3, 6]
    with pytest.raises(Exception, match="unknown dataset"):
        load_detection_dataset("nope", DATA)


# ----------------------------------------------------------------------------- lexical


def test_normalize_word() -> None:
    assert normalize_word("2,400") == normalize_word("2400") == normalize_word("2400.0")
    assert normalize_word("Meters") == normalize_word("meter")
    assert normalize_word("two") == normalize_word("2")
    assert normalize_word("Paris's") == "paris"


def test_lexical_detector_flags_unsupported_numbers() -> None:
    detector = LexicalDetector()
    assert isinstance(detector, Detector)
    context = "The Eiffel Tower in Paris was built in 1889 and is roughly 330 meters tall."
    answer = "The Eiffel Tower was built in 1950 and is 500 meters tall."
    result = detector.detect(context=context, question="When was it built?", answer=answer)
    assert [s.text for s in result.spans] == ["1950", "500"]
    assert result.detected and result.score >= 0.9
    clean = detector.detect(
        context="About 2,400 people live in the village.",
        question=None,
        answer="Roughly 2400 people live in the village.",
    )
    assert [s.text for s in clean.spans] == ["Roughly"]  # a plain word, not the number
    supported = detector.detect(
        context=context, question=None, answer="The Eiffel Tower is 330 meters tall."
    )
    assert supported.spans == [] and not supported.detected
    missing = detector.detect(context=None, question=None, answer="It is 330 meters tall.")
    assert missing.status is DetectionStatus.UNVERIFIABLE


def test_lexical_threshold_counts_words() -> None:
    detector = LexicalDetector(config=DetectionConfig(threshold=0.7))
    one = detector.detect(context="a red car", question=None, answer="a blue car")
    two = detector.detect(context="a red car", question=None, answer="a blue fast car")
    assert not one.detected and two.detected  # 0.6 < 0.7 <= 1 - 0.4**2


def test_lexical_nli() -> None:
    pairs = [(p.premise, p.hypothesis) for p in read_snli(DATA / "esnli")]
    assert lexical_nli(pairs) == ["entailment", "neutral", "contradiction"]


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


# ----------------------------------------------------------------------------- reports


def test_write_report_json_markdown_plots(tmp_path: Path) -> None:
    report = run_evaluation(LexicalDetector(), read_ragtruth(RAGTRUTH), progress=False)
    written = write_report(report, tmp_path)
    names = {p.name for p in written}
    assert {"ragtruth_lexical.json", "ragtruth_lexical.md"} <= names
    loaded = EvalReport.model_validate(json.loads((tmp_path / "ragtruth_lexical.json").read_text()))
    assert loaded.overall == report.overall
    markdown = (tmp_path / "ragtruth_lexical.md").read_text()
    assert "| **overall** | 3 | 2 |" in markdown and "| QA | 1 | 1 |" in markdown
    if "matplotlib" in sys.modules or _has_matplotlib():
        for name in ("ragtruth_lexical_pr_curve.png", "ragtruth_lexical_f1_threshold.png"):
            assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_plots_skipped_without_matplotlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    report = run_evaluation(LexicalDetector(), read_ragtruth(RAGTRUTH), progress=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with caplog.at_level(logging.WARNING):
        assert write_plots(report, tmp_path, stem="x") == []
    assert "matplotlib is not installed" in caplog.text
    assert "| **overall** |" in render_markdown(report)


# ----------------------------------------------------------------------------- CLI


def _eval_args(*argv: str) -> argparse.Namespace:
    from truthlens_integrations._cli_eval import add_eval_parser

    parser = argparse.ArgumentParser()
    add_eval_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["eval", *argv])


def test_cli_eval_lexical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _eval_args(
        "--dataset", "ragtruth", "--model", "lexical", "--data-dir", str(DATA),
        "--out", str(tmp_path), "--no-progress", "--threshold", "0.9",
    )  # fmt: skip
    assert args.handler(args) == 0
    assert "| **overall** | 3 |" in capsys.readouterr().out
    data = json.loads((tmp_path / "ragtruth_lexical.json").read_text())
    assert data["config"]["threshold"] == 0.9
    # Data2txt has three flagged words (score 0.936), QA one number (0.9): both detected
    assert data["overall"]["example"]["tp"] == 2


@pytest.mark.parametrize(
    ("model", "expected"),
    [("lexical", ["Accuracy **1.0000**"]), ("bundled", ["bundled-nli", "Accuracy **"])],
)
def test_cli_eval_snli_from_the_env_data_dir(
    model: str,
    expected: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TRUTHLENS_BENCHDATA", str(DATA))
    args = _eval_args("--dataset", "snli", "--model", model, "--no-progress")
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    for text in expected:
        assert text in out


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


def test_wice_token_spans_merge_adjacent_flags() -> None:
    from truthlens_integrations.evaluation._readers import wice_token_spans

    claim = "Irene Hervey (born 1909) was an actress."
    tokens = ["Irene", "Hervey", "(", "born", "1909", ")", "was", "an", "actress", "."]
    flags = [False, False, False, True, True, False, False, False, False, False]
    spans = wice_token_spans(claim, tokens, flags)
    assert [claim[s.start : s.end] for s in spans] == ["born 1909"]
