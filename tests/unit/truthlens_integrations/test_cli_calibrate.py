"""``truthlens calibrate`` end to end with the bundled detector on a small labelled file,
``truthlens eval --data``, the calibration file's strict reading, and the length-safe fit."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from truthlens_integrations._cli import main
from truthlens_integrations.core import ConfigError, DetectionInput, InvalidInputError
from truthlens_integrations.core.models.detection._calibration_file import (
    read_calibration_file,
    rescore,
)
from truthlens_integrations.core.models.detection._response import (
    ResponseCalibration,
    ResponseSignals,
)
from truthlens_integrations.core.models.detection._response_fit import (
    fit_response_map,
    threshold_for,
)

CITIES = [
    ("Lyon", "the Rhone", 1843, 12),
    ("Porto", "the Douro", 1886, 7),
    ("Basel", "the Rhine", 1905, 9),
    ("Seville", "the Guadalquivir", 1929, 4),
    ("Krakow", "the Vistula", 1911, 6),
    ("Turin", "the Po", 1872, 3),
    ("Ghent", "the Scheldt", 1898, 5),
    ("Dresden", "the Elbe", 1877, 8),
]


def _rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for n, (city, river, year, bridges) in enumerate(CITIES):
        context = [
            f"{city} lies on {river}. Its oldest stone bridge opened in {year}.",
            f"The city has {bridges} bridges over {river}.",
        ]
        question = f"When did the oldest stone bridge of {city} open?"
        good = f"The oldest stone bridge in {city} opened in {year}."
        bad = f"The oldest stone bridge in {city} opened in {year + 61}, and it is made of glass."
        rows.append(
            {"id": f"g{n}", "context": context, "question": question, "answer": good, "label": 0}
        )
        spans = [[bad.index(str(year + 61)), bad.index(str(year + 61)) + 4]]
        rows.append(
            {
                "id": f"b{n}",
                "context": context,
                "question": question,
                "answer": bad,
                "label": 1,
                "spans": spans,
            }
        )
    return rows


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("calib") / "labelled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    return path


def test_calibrate_then_eval_with_the_bundled_detector(labelled: Path, tmp_path: Path) -> None:
    out = tmp_path / "calib.json"
    code = main(
        ["calibrate", "--data", str(labelled), "--out", str(out), "--max-false-alarm-rate", "0.25"]
    )
    assert code == 0
    calib = read_calibration_file(out)
    assert calib.model == "bundled" and calib.target == {"false_alarm_rate": 0.25}
    assert ResponseCalibration.from_entry(calib.response_calibration).length_safe
    assert calib.metrics["checked"] == 16 and calib.metrics["false_alarm_rate"] <= 0.25
    # the made-up year and material are easy: the fitted map separates the two labels
    assert calib.metrics["auroc_in_sample"] >= 0.9
    report_dir = tmp_path / "report"
    code = main(
        [
            "eval", "--data", str(labelled), "--calibration", str(out),
            "--out", str(report_dir), "--no-progress",
        ]
    )  # fmt: skip
    assert code == 0
    report = json.loads(next(report_dir.glob("*.json")).read_text())
    assert report["n_examples"] == 16 and report["dataset"] == "labelled"
    assert report["config"]["threshold"] == pytest.approx(calib.threshold)
    assert report["overall"]["char"] is not None  # the spans were read
    example = report["overall"]["example"]
    assert example["fp"] <= 0.25 * (example["fp"] + example["tn"])  # the cap holds


def test_eval_reads_the_bundled_rag_calibration_by_name(
    labelled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_dir = tmp_path / "rag"
    code = main(
        [
            "eval", "--data", str(labelled), "--calibration", "rag",
            "--out", str(report_dir), "--no-progress",
        ]
    )  # fmt: skip
    assert code == 0
    report = json.loads(next(report_dir.glob("*.json")).read_text())
    assert report["model_id"].endswith("+rag") and report["config"]["threshold"] == 0.5
    # its unit rule reads the made-up years against the context's: every one is caught
    assert report["overall"]["example"]["fn"] == 0
    capsys.readouterr()
    code = main(["eval", "--data", str(labelled), "--calibration", "rga", "--no-progress"])
    assert code == 2
    assert "neither a bundled calibration (rag) nor an existing file" in capsys.readouterr().err


def test_calibrate_rejects_bad_targets_and_files(labelled: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "c.json")
    assert (
        main(["calibrate", "--data", str(labelled), "--out", out, "--target-precision", "1.5"]) == 2
    )
    with pytest.raises(SystemExit):  # argparse: the two targets exclude each other
        main(
            [
                "calibrate", "--data", str(labelled), "--out", out,
                "--target-precision", "0.8", "--max-false-alarm-rate", "0.1",
            ]
        )  # fmt: skip
    one_label = tmp_path / "one.jsonl"
    one_label.write_text(json.dumps(_rows()[0]) + "\n")
    assert main(["calibrate", "--data", str(one_label), "--out", out]) == 2


def _valid_file() -> dict[str, object]:
    return {
        "format": "truthlens-response-calibration/1",
        "model": "bundled",
        "response_calibration": {"max_logit": 0.5, "log_sentences": 0.1, "bias": -1.0},
        "threshold": 0.4,
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"extra": 1}, "extra"),
        ({"threshold": True}, "threshold"),
        ({"threshold": "0.4"}, "threshold"),
        ({"threshold": 1.5}, "threshold"),
        ({"format": "v0"}, "format"),
        ({"response_calibration": {"max_logit": 0.5, "bias": 0.0}}, "log_sentences"),
        ({"response_calibration": {"max_logit": True, "log_sentences": 0, "bias": 0}}, "number"),
        (
            {"response_calibration": {"max_logit": 1, "log_sentences": 0, "bias": 0, "x": 1}},
            "unknown",
        ),
        ({"target": {"recall": 0.5}}, "target"),
        (
            {
                "response_calibration": {
                    "max_logit": 1,
                    "log_sentences": 0,
                    "bias": 0,
                    "long_answers": {"max_logit": 1, "log_sentences": 0, "bias": 0},
                }
            },
            "from_sentences",
        ),
        (
            {
                "response_calibration": {
                    "max_logit": 1,
                    "log_sentences": 0,
                    "bias": 0,
                    "long_answers": {
                        "from_sentences": 4,
                        "max_logit": 1,
                        "log_sentences": 0,
                        "bias": 0,
                        "rule_floor": 0.5,
                    },
                }
            },
            "unknown",
        ),
    ],
)
def test_calibration_files_are_read_strictly(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**_valid_file(), **change}))
    with pytest.raises(ConfigError, match=message):
        read_calibration_file(path)


def test_nan_and_missing_files_are_config_errors(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_valid_file()).replace("0.4", "NaN"))
    with pytest.raises(ConfigError, match="NaN"):
        read_calibration_file(path)
    with pytest.raises(ConfigError, match="nor an existing file"):
        read_calibration_file(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="is not a regular file"):
        read_calibration_file(tmp_path)  # a folder exists but is no file
    path.write_text(json.dumps(_valid_file()))
    assert read_calibration_file(path).threshold == 0.4


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
    assert calibration.length_safe and calibration.max_logit > 0
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
    assert free.log_sentences < 0 and not free.length_safe
    assert all(getattr(free, c) >= 0 for c in ("max_logit", "sentence_peak", "absent_words"))
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


def test_rescore_leaves_unverifiable_results_alone(tmp_path: Path) -> None:
    from truthlens_integrations.core.models.detection import LexicalDetector

    path = tmp_path / "c.json"
    path.write_text(json.dumps(_valid_file()))
    calib = read_calibration_file(path)
    item = DetectionInput.create(context=None, question=None, answer="It opened in 1950.")
    result = LexicalDetector().detect_batch([item])[0]
    assert rescore(item, result, calib, 0.4) is result
    grounded = DetectionInput.create(
        context=["It opened in 1887."], question=None, answer="It opened in 1950."
    )
    scored = rescore(grounded, LexicalDetector().detect_batch([grounded])[0], calib, 0.4)
    assert scored.threshold == 0.4 and not math.isnan(scored.score)


def test_a_file_whose_map_reads_the_rules_is_rescored_with_them(tmp_path: Path) -> None:
    from truthlens_integrations.core.models.detection import LexicalDetector

    item = DetectionInput.create(
        context=["It opened in 1887 and is 330 meters tall."],
        question=None,
        answer="It opened in 1950 and is 330 meters tall.",
    )
    result = LexicalDetector().detect_batch([item])[0]
    scores = {}
    for name, extra in [("plain", {}), ("counts", {"number_conflicts": 3.0}), ("floor", {})]:
        content = _valid_file()
        entry = {**content["response_calibration"], **extra}  # type: ignore[dict-item]
        if name == "floor":
            entry["rule_floor"] = 0.9
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({**content, "response_calibration": entry}))
        scores[name] = rescore(item, result, read_calibration_file(path), 0.5).score
    # one conflicting number ("1950" against "1887"): log(2) * 3 more in the logit
    z = math.log(scores["plain"] / (1 - scores["plain"])) + 3.0 * math.log(2)
    assert scores["counts"] == pytest.approx(1 / (1 + math.exp(-z)))
    assert scores["floor"] == pytest.approx(max(scores["plain"], 0.9))
    path.write_text(
        json.dumps({**_valid_file(), "response_calibration": {**entry, "rule_floor": 2}})
    )
    with pytest.raises(ConfigError, match="rule_floor"):
        read_calibration_file(path)
