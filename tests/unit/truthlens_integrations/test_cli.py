"""Tests of ``truthlens_integrations/_cli.py``: the truthlens command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations._cli import main
from truthlens_integrations.core.engine._verdict import VERDICT_FIELDS


def eiffel_detect(model: Path) -> list[str]:
    """``detect`` on the Eiffel example, by flags."""
    return [
        "detect",
        "--model",
        str(model),
        "--context",
        EIFFEL_CONTEXT,
        "--question",
        EIFFEL_QUESTION,
        "--answer",
        EIFFEL_ANSWER,
    ]


def test_detect_json_from_flags(
    keyword_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*eiffel_detect(keyword_model_dir), "--json"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    spans = [(s["start"], s["end"], s["text"]) for s in payload["spans"]]
    assert spans == [(30, 34, "1950"), (42, 52, "500 meters")]
    assert payload["detected"] is True and payload["decision"] == "MITIGATE"
    # the engine's verdict, as every adapter hands it out (one vocabulary, one shape)
    assert set(payload) == set(VERDICT_FIELDS) - {"detection"}


def test_detect_table_marks_spans(
    keyword_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(eiffel_detect(keyword_model_dir))
    out = capsys.readouterr().out
    assert "built in [[1950]] and is [[500 meters]] tall." in out
    assert "verdict:  MITIGATE  flagged  score=" in out  # the engine's words
    assert "HALLUCINATED" not in out and "SUPPORTED" not in out


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
    assert [outcome(x) for x in lines] == ["flagged", "not flagged", "not checked"]


def test_bad_input_is_a_clean_error(
    keyword_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["detect", "--model", str(keyword_model_dir), "--answer", ""]) == 2
    assert "answer is empty" in capsys.readouterr().err
    assert main(["detect", "--model", "/nonexistent/model", "--answer", "x"]) == 2


# -- batches from a file (issue 13, item 11) -------------------------------------------

GOOD = {"context": [EIFFEL_CONTEXT], "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}


def write_lines(path: Path, lines: list[str | bytes]) -> Path:
    raw = [line if isinstance(line, bytes) else line.encode() for line in lines]
    path.write_bytes(b"\n".join(raw) + b"\n")
    return path


def run_detect(model: Path, path: Path, *extra: str) -> int:
    return main(["detect", "--model", str(model), "--input", str(path), *extra])


def outcome(line: dict[str, object]) -> str:
    """What a JSON line says of its record, in the verdict's own fields."""
    if line.get("status") == "skipped":
        return "skipped"
    if not line["checked"]:
        assert line["score"] is None  # never a clean-looking 0.0
        return "not checked"
    return "flagged" if line["detected"] else "not flagged"


def test_malformed_jsonl_line_names_file_and_line(
    keyword_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "in.jsonl", [json.dumps(GOOD), "", '{"answer": "x",'])
    assert run_detect(keyword_model_dir, path, "--json") == 2
    captured = capsys.readouterr()
    assert f"{path}:3: not valid JSON" in captured.err
    assert "--on-error skip" in captured.err
    assert captured.out == ""  # stopped before checking anything


def test_bad_record_stops_naming_its_line_and_id(
    keyword_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{**GOOD, "id": "r1"}, {**GOOD, "id": "r2"}, {**GOOD, "id": "r3", "answer": ""}]
    path = write_lines(tmp_path / "in.jsonl", [json.dumps(r) for r in rows])
    assert run_detect(keyword_model_dir, path) == 2
    err = capsys.readouterr().err
    assert f"{path}:3 (id 'r3'): answer is empty" in err


def test_on_error_skip_reports_each_bad_record_and_checks_the_rest(
    keyword_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines: list[str | bytes] = [
        json.dumps({**GOOD, "id": "a"}),
        "{not json",
        json.dumps({**GOOD, "id": 7, "answer": "\u200b\u200b"}),  # nothing readable
        b'{"answer": "caf\xe9"}',  # Latin-1, not UTF-8
        json.dumps(["a list"]),
        json.dumps({"id": "b", "context": EIFFEL_CONTEXT, "answer": "It is in Paris."}),
    ]
    path = write_lines(tmp_path / "in.jsonl", lines)
    assert run_detect(keyword_model_dir, path, "--json", "--on-error", "skip") == 1
    captured = capsys.readouterr()
    out = [json.loads(x) for x in captured.out.splitlines()]
    assert [x.get("id") for x in out] == ["a", None, 7, None, None, "b"]
    assert [outcome(x) for x in out] == [
        "flagged",
        "skipped",
        "skipped",
        "skipped",
        "skipped",
        "not flagged",
    ]
    skipped = {x["source"]: x["error"] for x in out if x["status"] == "skipped"}
    assert "not valid JSON" in skipped[f"{path}:2"]
    assert "no readable characters" in skipped[f"{path}:3"]
    assert "not UTF-8" in skipped[f"{path}:4"]
    assert "JSON object" in skipped[f"{path}:5"]
    assert f"skipped {path}:3 (id 7)" in captured.err
    assert "4 of 6 record(s) skipped" in captured.err


def test_ids_are_echoed_in_table_output(
    keyword_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{**GOOD, "id": "q-17"}, {**GOOD, "answer": "It is in Paris."}]
    path = write_lines(tmp_path / "in.jsonl", [json.dumps(r) for r in rows])
    assert run_detect(keyword_model_dir, path) == 0
    out = capsys.readouterr().out
    assert f"record:   {path}:1 (id 'q-17')" in out
    assert f"record:   {path}:2\n" in out


def test_each_record_reports_its_own_latency(
    keyword_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_context = [EIFFEL_CONTEXT] + ["alice visited rome and the old bridge."] * 60
    rows = [
        {**GOOD, "id": 1},
        {"id": 2, "context": long_context, "question": "when?", "answer": EIFFEL_ANSWER},
        {"id": 3, "context": "paris.", "answer": "It is in Paris."},
    ]
    path = write_lines(tmp_path / "in.jsonl", [json.dumps(r) for r in rows])
    assert run_detect(keyword_model_dir, path, "--json") == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    latencies = [x["latency_ms"]["total"] for x in out]
    assert [x["id"] for x in out] == [1, 2, 3]
    # Measured per record, not one batch's mean copied to every record.
    assert len(set(latencies)) == 3 and all(ms > 0 for ms in latencies)


def test_malformed_json_file_names_the_line(
    keyword_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.json"
    path.write_text('[\n  {"answer": "x"},\n  {"answer": }\n]\n', encoding="utf-8")
    assert run_detect(keyword_model_dir, path) == 2
    assert f"{path}:3: not valid JSON" in capsys.readouterr().err


# -- bad records and bad runs (issue 29) -------------------------------------------------


@pytest.mark.parametrize(
    ("key", "hint"), [("anwser", "did you mean 'answer'"), ("contxt", "did you mean 'context'")]
)
def test_misspelt_key_is_an_error_with_a_suggestion(
    keyword_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, hint: str
) -> None:
    record = {**GOOD, key: GOOD["answer"] if key == "anwser" else EIFFEL_CONTEXT}
    if key == "contxt":
        record.pop("context")
    path = write_lines(tmp_path / "in.jsonl", [json.dumps(record)])
    assert run_detect(keyword_model_dir, path, "--json") == 2
    captured = capsys.readouterr()
    assert f"{path}:1: unknown key '{key}' ({hint}?)" in captured.err
    assert captured.out == ""  # not checked as if the field were absent


def test_utf8_byte_order_mark_is_accepted(
    keyword_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bom = "\ufeff".encode()
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_bytes(bom + json.dumps(GOOD).encode() + b"\n")
    single = tmp_path / "in.json"
    single.write_bytes(bom + json.dumps(GOOD).encode())
    for path in (jsonl, single):
        assert run_detect(keyword_model_dir, path, "--json") == 0
        assert outcome(json.loads(capsys.readouterr().out)) == "flagged"


@pytest.mark.parametrize(
    ("name", "content"), [("in.jsonl", b""), ("in.jsonl", b"\n  \n"), ("in.json", b"[]")]
)
def test_empty_input_is_an_error_not_a_clean_run(
    keyword_model_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: bytes,
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert run_detect(keyword_model_dir, path) == 2
    assert "holds no records: nothing was checked" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": ' + "7" * 5000 + ', "answer": "x"}', "5000 digits is too long"),
        ('{"answer": "a", "answer": "b"}', "the key 'answer' appears twice"),
        ('{"answer": "x", "id": NaN}', "NaN is not a JSON number"),
        ('{"answer": "It was built in \\ud800."}', "lone surrogate"),
    ],
    ids=["5000-digit-id", "duplicate-key", "nan", "surrogate"],
)
def test_malformed_values_are_bad_records_not_tracebacks(
    keyword_model_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    line: str,
    message: str,
) -> None:
    path = write_lines(tmp_path / "in.jsonl", [json.dumps(GOOD), line])
    assert run_detect(keyword_model_dir, path, "--json", "--on-error", "skip") == 1
    captured = capsys.readouterr()
    out = [json.loads(x) for x in captured.out.splitlines()]
    assert [outcome(x) for x in out] == ["flagged", "skipped"]
    assert message in out[1]["error"] and "Traceback" not in captured.err


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--threshold", "2"),
        ("--threshold", "nan"),
        ("--token-threshold", "-0.1"),
        ("--threshold", "high"),
        ("--batch-size", "0"),
    ],
)
def test_out_of_range_options_exit_2_with_a_message(
    keyword_model_dir: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    with pytest.raises(SystemExit) as info:
        main([*eiffel_detect(keyword_model_dir), flag, value])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and value in err and "Traceback" not in err


def test_record_over_the_service_limits_is_refused_before_the_model_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from truthlens_integrations.core._limits import MAX_ANSWER_CHARS, MAX_CONTEXT_CHARS

    huge = "The tower was built in 1950. " * 36000  # about 1 MB
    path = write_lines(tmp_path / "in.jsonl", [json.dumps({**GOOD, "answer": huge})])
    # No model folder exists at this path: the record is refused before any load.
    assert run_detect(tmp_path / "no-model", path) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: the answer of the record: {len(huge):,} characters" in err
    assert f"the limit is {MAX_ANSWER_CHARS:,}" in err
    long_context = json.dumps({**GOOD, "context": ["x" * (MAX_CONTEXT_CHARS + 1)]})
    path = write_lines(tmp_path / "ctx.jsonl", [long_context])
    assert run_detect(tmp_path / "no-model", path) == 2
    assert "the context and question of the record" in capsys.readouterr().err
    assert main(["detect", "--model", "lexical", "--answer", huge]) == 2
    assert "the answer of --answer" in capsys.readouterr().err


def test_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`truthlens detect --input big.jsonl --json | head -n 1`: no traceback."""

    row = json.dumps({"context": EIFFEL_CONTEXT, "answer": "It is in Paris."})
    path = write_lines(tmp_path / "in.jsonl", [row] * 3000)
    cmd = [sys.executable, "-m", "truthlens_integrations._cli", "detect", "--model", "lexical"]
    proc = subprocess.Popen(
        [*cmd, "--input", str(path), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert outcome(json.loads(proc.stdout.readline())) == "not flagged"
    proc.stdout.close()  # what `head -n 1` does after its line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_table_says_what_evidence_selection_read() -> None:
    # Issue 28: evidence selection reads chosen sentences, not "1 context window of 512".
    from truthlens_integrations._cli import _coverage_line
    from truthlens_integrations.core import Coverage

    evidence = Coverage(
        answer_chars=40,
        answer_chars_scored=40,
        answer_pieces=2,
        max_length=512,
        evidence_sentences=3,
        context_sentences=12,
    )
    line = _coverage_line(evidence)
    assert "evidence selection read 3 of 12 context sentence(s) for 2 answer unit(s)" in line
    assert "window" not in line
    windows = Coverage(answer_chars=40, answer_chars_scored=38, context_windows=2, max_length=512)
    assert "2 context window(s)" in _coverage_line(windows)
    assert "38/40 answer chars scored" in _coverage_line(windows)


@pytest.mark.parametrize("flag", [["--backend", "onnx"], ["--precision", "int8"]])
def test_detect_refuses_a_model_option_for_the_lexical_reference(
    flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # It runs no model: the option would be silently ignored.
    argv = ["detect", "--model", "lexical", *flag, "--context", "a b", "--answer", "a b"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{flag[0]} applies to model detectors" in err
    assert "Traceback" not in err


def test_detect_passes_the_precision_to_the_model(
    keyword_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from truthlens_integrations.core.models import detection

    seen: dict[str, object] = {}
    real = detection.load_detector

    def load_detector(model: object, **options: object) -> object:
        seen.update(options)
        return real(model, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(detection, "load_detector", load_detector)
    assert main([*eiffel_detect(keyword_model_dir), "--precision", "float32", "--json"]) == 0
    assert seen["dtype"] == "float32"


# -- a new user's stumbles (issue 51) -----------------------------------------------------


def test_detect_reads_the_labelled_file_calibrate_and_eval_read(
    keyword_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It refused it: "unknown keys 'label', 'spans'". One format, one reader.
    rows = [
        {**GOOD, "id": "b1", "label": 1, "spans": [[30, 34]], "task_type": "qa"},
        {**GOOD, "id": "g1", "answer": "It is in Paris.", "label": 0},
    ]
    path = write_lines(tmp_path / "labelled.jsonl", [json.dumps(r) for r in rows])
    assert run_detect(keyword_model_dir, path, "--json") == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(x["id"], outcome(x)) for x in out] == [("b1", "flagged"), ("g1", "not flagged")]


def test_a_mistyped_label_is_named_with_what_the_values_mean(
    keyword_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "in.jsonl", [json.dumps({**GOOD, "label": "bad"})])
    assert run_detect(keyword_model_dir, path) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: 'label' must be 1 (an unsupported claim) or 0 (supported)" in err


def test_an_answer_without_context_reads_as_not_checked_never_clean(
    keyword_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It printed "score": 0.0 and "status": "unverifiable" beside "detected": false.
    argv = ["detect", "--model", str(keyword_model_dir), "--question", EIFFEL_QUESTION,
            "--answer", EIFFEL_ANSWER]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["score"] is None and payload["checked"] is False
    assert payload["status"] == "not_checked" and payload["not_checked_reason"] == "no_grounding"
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "NOT CHECKED: there was no context to check it against (no_grounding)" in out
    assert "score=n/a" in out and "[[" not in out  # as x-truthlens-score says it


def test_marks_under_the_threshold_are_listed_apart_never_marked(
    keyword_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It printed "[[cannot]]" marked on the answer, then SUPPORTED.
    answer = "The Eiffel Tower was built in 1950."  # the answer scores 0.995, under 1.0
    argv = ["detect", "--model", str(keyword_model_dir), "--context", EIFFEL_CONTEXT,
            "--answer", answer, "--threshold", "1.0"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"answer:   {answer}\n" in out and "[[" not in out
    assert "verdict:  PASS  not flagged" in out
    assert 'below the threshold (not flagged): "1950" (0.99)' in out
    assert main([*argv, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["spans"] == [] and payload["below_threshold_spans"][0]["text"] == "1950"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from truthlens_integrations import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"truthlens {__version__}\n"
