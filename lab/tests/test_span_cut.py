"""Candidate 8's token scale (lab/training/span_cut.py) and candidate 9's padding check."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.training.length_safe_map import padding_never_falls
from lab.training.span_cut import apply_cut, choose, span_f1
from tests.conftest import BUNDLED, EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION, needs_weights
from truthlens_integrations._lab_api import ResponseCalibration, ResponseSignals
from truthlens_integrations.core import DetectionConfig, ModelLoadError
from truthlens_integrations.core.models.detection import EvidenceDetector, TransformerDetector


def _config(**response: float) -> dict:
    entry = {"max_logit": 0.66, "log_sentences": -0.4, "absent_words": 0.4, "bias": -0.25}
    entry.update(response)
    return {
        "truthlens": {
            "calibration": {"method": "platt", "scale": 0.32, "shift": -0.53},
            "response_calibration": entry,
        }
    }


def _probability(calibration: dict, margin: float) -> float:
    """The runtime's token probability: Platt, then (after the rules) the span shift."""
    z = calibration["scale"] * margin + calibration["shift"] + calibration.get("span_shift", 0.0)
    return 1 / (1 + math.exp(-z))


@pytest.mark.parametrize("peak", [0.0, 0.3])
def test_the_cut_becomes_one_half_and_the_response_score_does_not_move(peak: float) -> None:
    before = _config(sentence_peak=peak)
    after = apply_cut(before, 0.3, "note")
    old, new = before["truthlens"]["calibration"], after["truthlens"]["calibration"]
    # the margin whose old probability was 0.3 is now at 0.5; the order of tokens is kept
    margin = (math.log(0.3 / 0.7) - old["shift"]) / old["scale"]
    assert _probability(old, margin) == pytest.approx(0.3, abs=1e-5)
    assert _probability(new, margin) == pytest.approx(0.5, abs=1e-5)
    assert _probability(new, margin + 1) > _probability(new, margin)
    old_map = ResponseCalibration.from_entry(before["truthlens"]["response_calibration"])
    new_map = ResponseCalibration.from_entry(after["truthlens"]["response_calibration"])
    for m, sentences, absent in ((-3.0, 1, 0), (0.5, 4, 2), (6.0, 12, 9)):
        p_old, p_new = _probability(old, m), _probability(new, m)
        # the sentence peak is a token logit plus a count: it moves with the shift too
        peak_old = math.log(p_old / (1 - p_old)) + math.log1p(absent)
        peak_new = math.log(p_new / (1 - p_new)) + math.log1p(absent)
        s_old = ResponseSignals(p_old, sentences, absent, peak=peak_old)
        s_new = ResponseSignals(p_new, sentences, absent, peak=peak_new)
        assert new_map.score(s_new) == pytest.approx(old_map.score(s_old), abs=1e-5)
    assert new["shift"] == old["shift"] == -0.53  # the rules still see the Platt scale
    assert "span_shift" not in old  # the input is not changed


def test_the_choice_is_the_best_f1_and_ties_go_to_the_higher_cut() -> None:
    table = [
        {"cut": 0.5, "f1": 0.03},
        {"cut": 0.3, "f1": 0.296},
        {"cut": 0.28, "f1": 0.300},
        {"cut": 0.2, "f1": 0.2},
    ]
    assert choose(table)["cut"] == 0.3
    assert choose([{"cut": 0.5, "f1": 0.1}, {"cut": 0.3, "f1": 0.2}])["cut"] == 0.3


def test_span_f1_reads_the_spans_the_runtime_makes() -> None:
    answer = "It was built in 1950 by them."
    example = SimpleNamespace(
        id="a",
        answer=answer,
        hallucinated=True,
        gold_spans=[SimpleNamespace(start=16, end=20)],  # "1950"
    )
    clean = SimpleNamespace(id="b", answer="Fine.", hallucinated=False, gold_spans=[])
    rows = [
        {
            "id": "a",
            "label": 1,
            "tokens": [[0, 2, 0.1], [16, 20, 0.4], [21, 23, 0.1], [24, 28, 0.35]],
        },
        {"id": "b", "label": 0, "tokens": [[0, 4, 0.33]]},
    ]
    high = span_f1([example, clean], rows, 0.38)  # only "1950"
    assert (high["precision"], high["recall"], high["clean_answers_with_a_span"]) == (1, 1, 0)
    low = span_f1([example, clean], rows, 0.3)  # "1950", "them" and the clean "Fine"
    assert low["recall"] == 1 and low["precision"] == pytest.approx(4 / 12, abs=1e-4)
    assert low["clean_answers_with_a_span"] == 1


def test_padding_check_fails_a_score_that_falls() -> None:
    assert padding_never_falls({"0": 0.8, "10": 0.8, "20": 0.9})
    assert not padding_never_falls({"0": 0.8, "10": 0.56, "20": 0.49})
    assert not padding_never_falls({"10": 0.7, "0": 0.8, "20": 0.9})  # read in padding order


# -- the runtime: the span shift comes after the rules ------------------------------------


def _with_span_shift(source: Path, folder: Path, span_shift: object) -> Path:
    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text())
    config.setdefault("truthlens", {}).setdefault("calibration", {"scale": 1.0, "shift": 0.0})
    config["truthlens"]["calibration"]["span_shift"] = span_shift
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


@pytest.mark.parametrize("kind", [TransformerDetector, EvidenceDetector])
def test_the_span_shift_moves_every_token_logit_by_it(
    tiny_bert_dir: Path, tmp_path: Path, kind: type
) -> None:
    shifted_folder = _with_span_shift(tiny_bert_dir, tmp_path / "shifted", 1.2)
    kwargs = {"context": [EIFFEL_CONTEXT], "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}
    config = DetectionConfig(aggregation="max", early_exit=False)
    before = kind(tiny_bert_dir, config=config).detect(**kwargs)
    after = kind(shifted_folder, config=config).detect(**kwargs)
    assert [t.start for t in after.tokens] == [t.start for t in before.tokens]
    for old, new in zip(before.tokens, after.tokens, strict=True):
        assert _logit(new.probability) == pytest.approx(_logit(old.probability) + 1.2, abs=1e-4)


@pytest.mark.parametrize("value", [True, "0.8", float("nan")])
def test_a_span_shift_that_is_not_a_number_is_refused(
    tiny_bert_dir: Path, tmp_path: Path, value: object
) -> None:
    folder = _with_span_shift(tiny_bert_dir, tmp_path / "bad", value)
    with pytest.raises(ModelLoadError, match="span_shift"):
        TransformerDetector(folder)


@needs_weights
def test_bundled_rules_keep_their_probabilities_under_the_span_shift(tmp_path: Path) -> None:
    # "1950" conflicts with the context's years: the number rule floors it at 0.85 on the
    # Platt scale, and the span shift then moves it like every other token.
    assert BUNDLED is not None
    folder = tmp_path / "unshifted"
    shutil.copytree(BUNDLED, folder)
    config = json.loads((folder / "config.json").read_text())
    span_shift = config["truthlens"]["calibration"].pop("span_shift")
    assert span_shift > 0
    (folder / "config.json").write_text(json.dumps(config))
    kwargs = {"context": [EIFFEL_CONTEXT], "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}
    settings = DetectionConfig(aggregation="max", early_exit=False)
    plain = EvidenceDetector(folder, config=settings).detect(**kwargs)
    shipped = EvidenceDetector(BUNDLED, config=settings).detect(**kwargs)
    year = next(t for t in plain.tokens if t.text == "1950")
    assert year.probability == pytest.approx(0.85, abs=1e-6)
    moved = next(t for t in shipped.tokens if t.text == "1950")
    assert _logit(moved.probability) == pytest.approx(_logit(0.85) + span_shift, abs=1e-4)
    # the default map absorbs the shift: the response score is the same either way (a
    # second folder: a loaded model is shared per folder, with the config it was read with)
    absorbed = tmp_path / "absorbed"
    shutil.copytree(folder, absorbed)
    response = config["truthlens"]["response_calibration"]
    response["bias"] += span_shift * response["max_logit"]
    (absorbed / "config.json").write_text(json.dumps(config))
    calibrated = DetectionConfig(aggregation="calibrated", early_exit=False)
    assert EvidenceDetector(absorbed, config=calibrated).detect(**kwargs).score == pytest.approx(
        EvidenceDetector(BUNDLED, config=calibrated).detect(**kwargs).score, abs=1e-4
    )
