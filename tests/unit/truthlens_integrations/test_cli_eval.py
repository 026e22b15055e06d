"""Tests of ``truthlens_integrations/_cli_eval.py``: truthlens eval."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tests._paths import BENCHDATA
from tests._samples import rag_map_file
from tests.conftest import needs_weights
from truthlens_integrations._cli import main
from truthlens_integrations.core.models._onnx import onnx_available


@pytest.mark.parametrize(
    ("option", "message"),
    [
        # a map means something only for the detector it was fitted on
        (["--calibration", "RAG_FILE"], "fitted for the bundled detector"),
        # the lexical reference has no weights: an ignored --precision would report its
        # figures under an int8 command line
        (["--precision", "int8"], "--precision applies to model detectors"),
    ],
)
def test_eval_refuses_an_option_the_lexical_reference_cannot_take(
    option: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"context": "a b", "answer": "a b", "label": 0}) + "\n")
    option = [str(rag_map_file(tmp_path)) if o == "RAG_FILE" else o for o in option]
    code = main(["eval", "--model", "lexical", *option, "--data", str(data), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "'lexical'" in err
    assert "Traceback" not in err


# -- Evaluation harness: metrics on hand-computed inputs, readers on hand-written fixtures,


DATA = BENCHDATA


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
    [("lexical", ["Accuracy **1.0000**"]), ("bundled", ["bundled-nli", "Accuracy **", "run by "])],
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


@needs_weights
@pytest.mark.skipif(not onnx_available(), reason="the fast extra is missing")
@pytest.mark.parametrize(
    ("precision", "backend"), [("float32", "onnx-fp32"), ("int8", "onnx-int8")]
)
def test_eval_reports_what_ran_the_model(
    precision: str, backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _eval_args(
        "--dataset", "ragtruth", "--data-dir", str(DATA), "--device", "cpu",
        "--precision", precision, "--out", str(tmp_path), "--no-progress",
    )  # fmt: skip
    assert args.handler(args) == 0
    assert f"run by {backend}" in capsys.readouterr().out
    (report,) = tmp_path.glob("ragtruth_*.json")
    assert json.loads(report.read_text())["backend"] == backend
