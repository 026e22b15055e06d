"""Calibration files and the routes that read them, as an attacker would feed them.

A file is part of the policy: its map's direction and range, the detector it names and
the file itself (a regular file, read once) are checked when it loads, and ``truthlens
calibrate`` refuses what it cannot fit on with a clean message.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EIFFEL_CONTEXT, EIFFEL_QUESTION
from tests.test_engine import make
from truthlens_integrations._cli import main
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core import _calibration as core_calibration
from truthlens_integrations.core._calibration import (
    MAX_CALIBRATION_BYTES,
    read_calibration_file,
)
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import Detector, LexicalDetector
from truthlens_integrations.core.policy import load_policy

FORMAT = "truthlens-response-calibration/1"


def _content(response: dict[str, Any], model: str = "bundled") -> dict[str, Any]:
    return {"format": FORMAT, "model": model, "response_calibration": response, "threshold": 0.5}


def _write(path: Path, content: dict[str, Any] | str) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _policy(calibration: Path | str) -> dict[str, object]:
    configuration = {"calibration": str(calibration)}
    return {
        "decisions": [
            {
                "name": "calibrated",
                "rules": {"conditions": [{"type": "fact_check", "name": "needs_fact_check"}]},
                "plugins": [{"type": "hallucination", "configuration": configuration}],
            }
        ]
    }


# -- a map's direction and range ------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "field"),
    [
        # all negative: a wrong answer scored 0.0 and the right one 0.98
        ({"max_logit": -1.5, "log_sentences": -0.2, "absent_words": -2.0, "bias": 1.0}, "max_logit"),
        ({"max_logit": 1.0, "log_sentences": 0.0, "number_conflicts": -3.0, "bias": 0.0},
         "number_conflicts"),
        # finite extremes decided by overflow
        ({"max_logit": 1e308, "log_sentences": 0.0, "bias": -1e308}, "max_logit"),
        ({"max_logit": 1.0, "log_sentences": 0.0, "bias": -1e308}, "bias"),
        # a map that does not read the detector at all
        ({"max_logit": 0.0, "log_sentences": 0.3, "absent_words": 1.0, "bias": -1.0},
         "'max_logit' or 'sentence_peak'"),
        ({"max_logit": 1.0, "log_sentences": 0.0, "bias": 0.0,
          "long_answers": {"from_sentences": 3, "max_logit": -1.0, "log_sentences": 0.0,
                           "bias": 0.0}}, "long_answers"),
    ],
)  # fmt: skip
def test_a_map_must_rise_with_the_evidence_and_stay_in_range(
    tmp_path: Path, response: dict[str, Any], field: str
) -> None:
    path = _write(tmp_path / "calib.json", _content(response))
    with pytest.raises(ConfigError) as caught:
        read_calibration_file(path)
    message = str(caught.value)
    assert field in message
    assert message.count(str(path)) == 1  # the file, named once
    with pytest.raises(ConfigError) as in_policy:
        load_policy(_policy(path))
    assert field in str(in_policy.value) and str(in_policy.value).count(str(path)) == 1


def test_a_sane_map_loads(tmp_path: Path) -> None:
    response = {"max_logit": 0.0, "sentence_peak": 0.4, "log_sentences": 0.0, "bias": -99.0}
    assert read_calibration_file(_write(tmp_path / "ok.json", _content(response))).model == (
        "bundled"
    )


# -- the file itself ------------------------------------------------------------------------


def test_only_a_regular_file_of_bounded_size_is_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        read_calibration_file("/dev/zero")  # was read until memory ran out
    fifo = tmp_path / "calib.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        read_calibration_file(fifo)  # was a hang: nobody writes to it
    with pytest.raises(ConfigError, match="not a regular file"):
        load_policy(_policy(tmp_path))  # a folder
    big = _content({"max_logit": 1.0, "log_sentences": 0.0, "bias": 0.0})
    big["metrics"] = {"note": "x" * MAX_CALIBRATION_BYTES}
    with pytest.raises(ConfigError, match="larger than"):
        read_calibration_file(_write(tmp_path / "big.json", big))


def test_a_key_given_twice_is_refused_and_bad_bytes_are_clean_errors(tmp_path: Path) -> None:
    twice = (
        '{"format": "' + FORMAT + '", "model": "bundled", "threshold": 0.5, '
        '"response_calibration": {"max_logit": 1.0, "log_sentences": 0.0, "bias": -4.0, '
        '"bias": 4.0}}'
    )
    path = _write(tmp_path / "twice.json", twice)
    with pytest.raises(ConfigError, match="'bias' appears twice") as caught:
        read_calibration_file(path)
    assert str(caught.value).count(str(path)) == 1
    latin = tmp_path / "latin.json"
    latin.write_bytes(json.dumps(_content({"max_logit": 1.0})).encode() + b"\xe9")
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_calibration_file(latin)


# -- one policy, one reading ----------------------------------------------------------------


def test_derive_keeps_the_map_the_policy_read(detector: Detector, tmp_path: Path) -> None:
    response = {"max_logit": 1.0, "log_sentences": 0.0, "bias": -30.0}
    path = _write(tmp_path / "calib.json", _content(response, model=detector.model_id))
    engine = make(detector, _policy(path))
    kwargs = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION}
    answer = "The Eiffel Tower was built in 1950."
    before = engine.guard(answer=answer, **kwargs)  # type: ignore[arg-type]
    # the file changes after the policy loaded: to another map, then to garbage
    _write(path, _content({**response, "bias": 30.0}, model=detector.model_id))
    derived = engine.derive(action="block")
    after = derived.guard(answer=answer, **kwargs)  # type: ignore[arg-type]
    assert after.score == pytest.approx(before.score) and not after.detected
    _write(path, "not json")
    again = derived.derive(threshold=0.6, on_block="message")
    route = again.policy.decision("calibrated").plugin
    assert route.calibration_file == engine.policy.decision("calibrated").plugin.calibration_file
    # a policy that loads the file afresh reads what is there now
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_policy(_policy(path))


# -- the detector a map was fitted for ------------------------------------------------------


def test_a_map_is_refused_on_a_detector_it_was_not_fitted_for(
    detector: Detector, tmp_path: Path
) -> None:
    response = {"max_logit": 1.0, "log_sentences": 0.0, "bias": -1.0}
    hub = _write(tmp_path / "hub.json", _content(response, model="someorg/other-detector"))
    # the default engine uses the bundled detector (checked without loading it)
    with pytest.raises(ConfigError, match="fitted for the detector 'someorg/other-detector'"):
        TruthLens.from_config(_policy(hub))
    with pytest.raises(ConfigError, match="cannot score the bundled detector"):
        TruthLens.from_config(_policy(hub))
    # the bundled `rag` map on another detector, given to the engine or named by the policy
    with pytest.raises(ConfigError, match=r"fitted for the bundled detector.*'lexical'"):
        TruthLens.from_config(_policy("rag"), detector=LexicalDetector())
    with pytest.raises(ConfigError, match="fitted for the bundled detector"):
        make(detector, _policy("rag"))
    with pytest.raises(ConfigError, match="fitted for the detector 'someorg/other-detector'"):
        load_policy({**_policy(hub), "hallucination": {"model_id": "another/model"}})
    # a derived engine with another detector is checked as well
    own = _write(tmp_path / "own.json", _content(response, model=detector.model_id))
    engine = make(detector, _policy(own))
    with pytest.raises(ConfigError, match="cannot score the detector 'lexical'"):
        engine.derive(detector=LexicalDetector())
    # the bundled name matches the bundled detector, however it is named
    assert TruthLens.from_config(_policy("rag")).policy.decision("calibrated")
    rag = read_calibration_file("rag")
    folder = Path(core_calibration.__file__).parent / "_bundled" / "detector"
    for name in ("truthlens-bundled-detector", str(folder), "truthlens-bundled-detector@x"):
        core_calibration.check_calibration_detector(rag, name)


def test_eval_refuses_a_calibration_for_another_detector(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"context": "a b", "answer": "a b", "label": 0}) + "\n")
    code = main(["eval", "--model", "lexical", "--calibration", "rag", "--data", str(data),
                 "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "fitted for the bundled detector" in err and "'lexical'" in err
    assert "Traceback" not in err


# -- truthlens calibrate --------------------------------------------------------------------


def _rows(n: int) -> list[dict[str, Any]]:
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
    rows = _lines(_rows(3))
    code, err = _calibrate(
        tmp_path, capsys, rows.encode() + '{"answer": "café"}\n'.encode("latin-1")
    )
    assert code == 2 and "labelled.jsonl:7 is not UTF-8" in err
    code, err = _calibrate(tmp_path, capsys, rows + '{"answer": "a", "id": %s}\n' % ("9" * 5000))
    assert code == 2 and "labelled.jsonl:7 holds a number too long" in err
    unreadable = {"context": "a", "answer": "\u200b\u200b", "label": 0}
    code, err = _calibrate(tmp_path, capsys, rows + json.dumps(unreadable) + "\n")
    assert code == 2 and "labelled.jsonl:7: answer has no readable characters" in err
    long = {"context": "a", "answer": "It was built in 1889. " * 1820, "label": 0}
    code, err = _calibrate(tmp_path, capsys, rows + json.dumps(long) + "\n")
    assert code == 2 and "record 7 has 40,040 characters" in err and "12,000" in err


def test_calibrate_refuses_an_out_that_cannot_be_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _lines(_rows(3))
    code, err = _calibrate(tmp_path, capsys, rows, out=tmp_path)
    assert code == 2 and "is a folder" in err
    (tmp_path / "a_file").write_text("")
    code, err = _calibrate(tmp_path, capsys, rows, out=tmp_path / "a_file" / "calib.json")
    assert code == 2 and "is a file, not a folder" in err


def test_calibrate_warns_that_a_handful_of_labels_cannot_fit_a_map(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _calibrate(tmp_path, capsys, _lines(_rows(3)))
    assert code == 0 and "fewer than 20 of each label" in err
    written = read_calibration_file(tmp_path / "calib.json")  # it loads, for the detector named
    assert written.model == "lexical" and written.metrics["partly_read"] == 0
    code, err = _calibrate(tmp_path, capsys, _lines(_rows(20)))
    assert code == 0 and "warning" not in err


# -- partly read answers --------------------------------------------------------------------


def test_a_partly_read_answer_under_a_high_threshold_is_not_a_clean_pass() -> None:
    from tests.conftest import BUNDLED
    from truthlens_integrations.core.models.detection import load_detector

    if BUNDLED is None:
        pytest.skip("bundled weights are not here")
    detector = load_detector()
    # 49 of the 110 characters are readable; the model has no tokens for the rest
    answer = "The tower was completed in 1889 and painted red every year. " + "🗼" * 50
    raw = detector.detect(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=answer)
    read = raw.coverage.answer_chars_scored
    # what was read scores above the detector's 0.5 (so it says "hallucinated", not
    # "unverifiable") but below the README's 0.7 for fewer false alarms
    assert read < 0.8 * len(answer.replace(" ", "")) and 0.5 <= raw.score < 0.7, (read, raw.score)
    engine = TruthLens.from_config(threshold=0.7, detector=detector)
    verdict = engine.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=answer)
    assert verdict.not_checked_reason == "unverifiable" and verdict.unverified
    assert verdict.mitigation.status == "not_checked"  # it was "not_needed"
    assert verdict.action == "header"  # the route's unverified action, as for unread input
    assert verdict.detection is not None and f"only {read} of" in (verdict.detection.error or "")
    # read in full, the same first sentence is judged at 0.7 as before
    whole = engine.guard(
        context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=answer[: answer.index(" 🗼")]
    )
    assert whole.not_checked_reason is None


def test_a_partly_read_answer_cleared_by_nli_is_not_a_clean_pass(detector: Detector) -> None:
    # The keyword model flags "meters"; NLI finds "330 meters" entailed by the context and
    # drops the span. Read in full the answer then passes; with 40 characters the model's
    # vocabulary cannot read after it, the unread part was never checked.
    engine = make(detector)
    sentence = "The Eiffel Tower is 330 meters tall."
    whole = engine.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=sentence)
    assert whole.dropped_spans and not whole.detected and whole.not_checked_reason is None
    partly = sentence + " " + "🗼" * 40
    verdict = engine.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=partly)
    assert verdict.dropped_spans and not verdict.detected  # NLI cleared what was read
    assert verdict.not_checked_reason == "unverifiable" and verdict.unverified
    assert verdict.action == "header" and verdict.mitigation.status == "not_checked"
