from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations._cli import main


def test_detect_json_from_flags(
    keyword_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "detect",
            "--model",
            str(keyword_model_dir),
            "--context",
            EIFFEL_CONTEXT,
            "--question",
            EIFFEL_QUESTION,
            "--answer",
            EIFFEL_ANSWER,
            "--json",
        ]
    )
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    spans = [(s["start"], s["end"], s["text"]) for s in payload["spans"]]
    assert spans == [(30, 34, "1950"), (42, 52, "500 meters")]
    assert payload["detected"] is True
    assert {"score", "coverage", "model_id", "latency_ms"} <= payload.keys()


def test_detect_table_marks_spans(
    keyword_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(
        [
            "detect",
            "--model",
            str(keyword_model_dir),
            "--context",
            EIFFEL_CONTEXT,
            "--question",
            EIFFEL_QUESTION,
            "--answer",
            EIFFEL_ANSWER,
        ]
    )
    out = capsys.readouterr().out
    assert "built in [[1950]] and is [[500 meters]] tall." in out
    assert "HALLUCINATED" in out


def test_detect_jsonl_many(
    keyword_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"context": [EIFFEL_CONTEXT], "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER},
        {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION, "answer": "It is in Paris."},
        {"context": [], "question": EIFFEL_QUESTION, "answer": "It is in Paris."},
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    assert main(["detect", "--model", str(keyword_model_dir), "--input", str(path), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["status"] for x in lines] == ["hallucinated", "supported", "unverifiable"]


def test_bad_input_is_a_clean_error(
    keyword_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["detect", "--model", str(keyword_model_dir), "--answer", ""]) == 2
    assert "answer is empty" in capsys.readouterr().err
    assert main(["detect", "--model", "/nonexistent/model", "--answer", "x"]) == 2
