"""Tests of ``truthlens_integrations/_cli_calibrate.py``: truthlens calibrate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._samples import rag_map_file
from truthlens_integrations._cli import main
from truthlens_integrations.core._calibration._file import read_calibration_file
from truthlens_integrations.core._calibration._map import ResponseCalibration

# -- ``truthlens calibrate`` end to end with the bundled detector on a small labelled file, ``truthlens eval --data``, the calibration file's strict reading, and the length-safe fit.


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


def test_eval_scores_with_a_calibration_file(
    labelled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_dir = tmp_path / "rag"
    code = main(
        [
            "eval", "--data", str(labelled), "--calibration", str(rag_map_file(tmp_path)),
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
    assert "calibration file rga: no such file" in capsys.readouterr().err


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


# -- Calibration files and the routes that read them, as an attacker would feed them. ------


# -- truthlens calibrate --------------------------------------------------------------------


def _eiffel_rows(n: int) -> list[dict[str, Any]]:
    context = "The Eiffel Tower in Paris was built from 1887 to 1889 and is 330 metres tall."
    good = [f"The tower was built from 1887 to 1889 ({i})." for i in range(n)]
    bad = [f"The tower was built in 19{50 + i} of granite." for i in range(n)]
    return [{"context": context, "answer": a, "label": 0} for a in good] + [
        {"context": context, "answer": a, "label": 1} for a in bad
    ]


def _calibrate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes | str, out: Path | None = None
) -> tuple[int, str]:
    path = tmp_path / "labelled.jsonl"
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    out = out if out is not None else tmp_path / "calib.json"
    code = main(["calibrate", "--model", "lexical", "--data", str(path), "--out", str(out),
                 "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def _lines(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_calibrate_refuses_bad_records_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _lines(_eiffel_rows(3))
    code, err = _calibrate(
        tmp_path, capsys, rows.encode() + '{"answer": "café"}\n'.encode("latin-1")
    )
    assert code == 2 and "labelled.jsonl:7: not UTF-8" in err
    code, err = _calibrate(tmp_path, capsys, rows + '{"answer": "a", "id": %s}\n' % ("9" * 5000))
    assert code == 2 and "labelled.jsonl:7: a number of 5000 digits is too long" in err
    unreadable = {"context": "a", "answer": "\u200b\u200b", "label": 0}
    code, err = _calibrate(tmp_path, capsys, rows + json.dumps(unreadable) + "\n")
    assert code == 2 and "labelled.jsonl:7: answer has no readable characters" in err
    long = {"context": "a", "answer": "It was built in 1889. " * 1820, "label": 0}
    code, err = _calibrate(tmp_path, capsys, rows + json.dumps(long) + "\n")
    # named by its line, as detect names it: ids need not be unique (issue 51)
    assert code == 2 and "labelled.jsonl:7: the answer of the record: 40,040 characters" in err
    assert "12,000" in err


def test_calibrate_refuses_an_out_that_cannot_be_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _lines(_eiffel_rows(3))
    code, err = _calibrate(tmp_path, capsys, rows, out=tmp_path)
    assert code == 2 and "is a folder" in err
    (tmp_path / "a_file").write_text("")
    code, err = _calibrate(tmp_path, capsys, rows, out=tmp_path / "a_file" / "calib.json")
    assert code == 2 and "is a file, not a folder" in err


def test_calibrate_warns_that_a_handful_of_labels_cannot_fit_a_map(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _calibrate(tmp_path, capsys, _lines(_eiffel_rows(3)))
    assert code == 0 and "fewer than 20 of each label" in err
    written = read_calibration_file(tmp_path / "calib.json")  # it loads, for the detector named
    assert written.model == "lexical" and written.metrics["partly_read"] == 0
    code, err = _calibrate(tmp_path, capsys, _lines(_eiffel_rows(20)))
    assert code == 0 and "warning" not in err


# -- a new user's stumbles (issue 51) -----------------------------------------------------


def test_an_over_long_record_is_named_by_its_line_not_its_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Ids need not be unique: "record a" named two records; the line names one.
    rows = [{**row, "id": "a"} for row in _eiffel_rows(3)]
    long = {"id": "a", "context": "a", "answer": "It was built in 1889. " * 1820, "label": 0}
    code, err = _calibrate(tmp_path, capsys, _lines([*rows, long]))
    assert code == 2 and "labelled.jsonl:7 (id 'a'): the answer of the record" in err


def test_when_no_answer_could_be_checked_it_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It said "got 0 with an unsupported claim and 0 without".
    rows = [{k: v for k, v in row.items() if k != "context"} for row in _eiffel_rows(3)]
    code, err = _calibrate(tmp_path, capsys, _lines(rows))
    assert code == 2
    assert (
        "of 6 labelled answers, 0 could be checked (6 had no context to check them against)" in err
    )
    one_checked = [*rows[:5], _eiffel_rows(3)[5]]
    code, err = _calibrate(tmp_path, capsys, _lines(one_checked))
    assert "1 could be checked (5 had no context" in err and "1 with label 1" in err


# -- truthlens calibrate / eval --config: the claim checker in the cascade ------------------

#: Right answers in other words and wrong ones by meaning only (a negation, swapped roles):
#: what the words of the context barely tell apart, and an entailment model reads.
MEANING = [
    ("Anna sold the house to Peter.", "Peter bought the house from Anna.",
     "Anna bought the house from Peter."),
    ("The drug is approved for adults only.", "Only adults may be given the drug.",
     "The drug is approved for children."),
    ("The train to Lyon leaves every hour.", "There is a train to Lyon each hour.",
     "There is no train to Lyon."),
    ("The library is free for students.", "Students do not pay at the library.",
     "Students must pay at the library."),
    ("Maria taught Tom to swim.", "Tom learned to swim from Maria.", "Tom taught Maria to swim."),
    ("The shop accepts cash and cards.", "You can pay by card at the shop.",
     "The shop does not accept cards."),
    ("The vaccine requires two doses.", "Two doses of the vaccine are needed.",
     "One dose of the vaccine is enough."),
    ("The hotel has a pool on the roof.", "There is a rooftop pool at the hotel.",
     "The hotel has no pool."),
]  # fmt: skip


@pytest.fixture(scope="module")
def meaning(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cascade")
    rows = []
    for i, (context, right, wrong) in enumerate(MEANING):
        rows.append({"id": f"r{i}", "context": context, "answer": right, "label": 0})
        rows.append({"id": f"w{i}", "context": context, "answer": wrong, "label": 1})
    (folder / "labelled.jsonl").write_text(_lines(rows), encoding="utf-8")
    (folder / "policy.yaml").write_text(
        "hallucination:\n  claim_check:\n    checker: bundled\n    when: always\n"
    )
    return folder


def test_calibrate_fits_the_checkers_weight_and_a_route_runs_with_it(
    meaning: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = meaning / "calib.json"
    args = ["calibrate", "--data", str(meaning / "labelled.jsonl"), "--out", str(out),
            "--config", str(meaning / "policy.yaml"), "--no-progress"]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "claim checker bundled: read 16 answers (16 judged)" in printed
    calib = read_calibration_file(out)
    block = calib.claim_check
    assert block is not None and block["checker"] == "bundled" and block["when"] == "always"
    # the bundled entailment model reads some of these: the fit gives it weight
    assert block["weight"] > 0
    assert calib.metrics["claim_check"]["sent"] == 16
    # the threshold is the cascade's; a route reads the file's weight with the policy's checker
    from truthlens_integrations.core.policy import load_policy

    policy = load_policy(
        {
            "hallucination": {"claim_check": {"checker": "bundled", "when": "always"}},
            "decisions": [
                {
                    "name": "mine",
                    "rules": {"conditions": [{"type": "fact_check", "name": "needs_fact_check"}]},
                    "plugins": [
                        {"type": "hallucination", "configuration": {"calibration": str(out)}}
                    ],
                }
            ],
        }
    )
    settings = policy.settings_for("mine")
    assert settings.threshold == calib.threshold
    assert settings.claim_check is not None and settings.claim_check.weight == block["weight"]


def test_eval_reports_the_checker_alone_and_in_the_cascade(
    meaning: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_dir = meaning / "report"
    args = ["eval", "--data", str(meaning / "labelled.jsonl"), "--config",
            str(meaning / "policy.yaml"), "--out", str(report_dir), "--no-progress"]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "| checker alone (bundled) |" in printed and "| lexical reference |" in printed
    report = json.loads(next(report_dir.glob("*.json")).read_text())
    comparison = report["claim_check"]
    assert comparison["sent"] == 16 and comparison["checker"] == "bundled"
    systems = {s["system"]: s for s in comparison["systems"]}
    assert set(systems) == {"detector", "lexical reference", "checker alone (bundled)", "cascade"}
    assert all(s["not_checked"] == 0 for s in systems.values())


def test_a_cascade_file_or_a_policy_without_a_checker_is_refused(
    meaning: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labelled = str(meaning / "labelled.jsonl")
    no_block = tmp_path / "plain.yaml"
    no_block.write_text("hallucination:\n  enabled: true\n")
    args = ["calibrate", "--data", labelled, "--out", str(tmp_path / "c.json"),
            "--config", str(no_block), "--no-progress"]  # fmt: skip
    assert main(args) == 2
    assert "has no hallucination.claim_check block" in capsys.readouterr().err
    fitted = meaning / "calib.json"
    if not fitted.exists():
        args = ["calibrate", "--data", labelled, "--out", str(fitted),
                "--config", str(meaning / "policy.yaml"), "--no-progress"]  # fmt: skip
        assert main(args) == 0
    capsys.readouterr()
    # scored without the checker, the cascade's threshold would decide wrong
    assert main(["eval", "--data", labelled, "--calibration", str(fitted), "--no-progress"]) == 2
    assert "pass --config with the policy that names it" in capsys.readouterr().err
