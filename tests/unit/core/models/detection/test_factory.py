"""Tests of ``core/models/detection/_factory.py``: load_detector: folders, hub ids, options,
model files.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
from transformers import AutoModelForTokenClassification, AutoTokenizer

from tests.conftest import EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import (
    InvalidArgumentError,
    ModelLoadError,
    ModelNotAvailableError,
    UnknownArgumentError,
)
from truthlens_integrations.core.models.detection import load_detector


@pytest.mark.usefixtures("hub_offline")
def test_unreachable_hub_id_says_how_to_pass_a_local_path() -> None:
    with pytest.raises(ModelNotAvailableError) as info:
        load_detector("KRLabsOrg/lettucedect-base-modernbert-en-v1", local_files_only=True)
    assert "local path" in str(info.value) or "pass its path" in str(info.value)
    assert "lettucedect-base-modernbert-en-v1" in str(info.value)


@pytest.mark.usefixtures("hub_unreachable")
def test_hub_download_attempt_fails_cleanly_without_network() -> None:
    with pytest.raises(ModelNotAvailableError, match="pass its path"):
        load_detector("KRLabsOrg/lettucedect-large-modernbert-en-v1")


def test_missing_folder_and_non_model_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelNotAvailableError):
        load_detector(tmp_path / "does-not-exist" / "x" / "y")
    with pytest.raises(ModelLoadError, match=r"config\.json"):
        load_detector(tmp_path)


def test_wrong_label_count_is_rejected(tiny_bert_dir: Path, tmp_path: Path) -> None:
    model = AutoModelForTokenClassification.from_pretrained(
        tiny_bert_dir, num_labels=3, ignore_mismatched_sizes=True
    )
    model.save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="3 labels"):
        load_detector(tmp_path)


def test_unknown_option_is_rejected(tiny_bert_dir: Path) -> None:
    with pytest.raises(UnknownArgumentError, match=r"'thresh' \(did you mean 'threshold'\?\)"):
        load_detector(tiny_bert_dir, thresh=0.3)


def test_options_reach_the_config(tiny_bert_dir: Path) -> None:
    detector = load_detector(tiny_bert_dir, token_threshold=0.8, threshold=0.3)
    assert detector.config.token_threshold == 0.8
    assert detector.config.threshold == 0.3


# -- Issue 29, core side: text that evades the checks, model folders, options, policy, mitigation.


FACT = "The Eiffel Tower was built in 1950 and is 500 meters tall."


# -- model folders and loader options ---------------------------------------------------------


def _folder_with(source: Path, target: Path, truthlens: dict[str, object]) -> Path:
    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    config["truthlens"] = truthlens
    (target / "config.json").write_text(json.dumps(config))  # NaN is written as NaN
    return target


BAD_NUMBERS = {
    "NaN calibration scale": ({"calibration": {"scale": math.nan, "shift": 0.0}}, "scale"),
    "infinite shift": ({"calibration": {"scale": 1.0, "shift": math.inf}}, "shift"),
    "zero scale": ({"calibration": {"scale": 0.0}}, "above 0"),
    "scale as text": ({"calibration": {"scale": "0.3"}}, "expected a number"),
    "NaN response map": (
        {"response_calibration": {"max_logit": 0.6, "log_sentences": 0.1, "bias": math.nan}},
        "bias",
    ),
    "missing response weight": (
        {"response_calibration": {"max_logit": 0.6, "bias": 0.0}},
        # a folder's map is read by the one set of rules every map is (core/_calibration.py)
        "truthlens.response_calibration: missing 'log_sentences'",
    ),
    "negative token weight": (
        {"response_calibration": {"max_logit": -0.1, "log_sentences": 0.0, "bias": 0.0}},
        "truthlens.response_calibration: 'max_logit' is -0.1; it must be >= 0",
    ),
}


BAD_OPTIONS = {
    "bool threshold": ({"threshold": True}, InvalidArgumentError, "threshold=True"),
    "NaN token threshold": (
        {"token_threshold": math.nan},
        InvalidArgumentError,
        "token_threshold=nan: Input should be a finite number",
    ),
    "unknown aggregation": ({"aggregation": "mean"}, InvalidArgumentError, "aggregation='mean'"),
    "text threshold": ({"threshold": "0.3"}, InvalidArgumentError, "threshold='0.3'"),
    "misspelt option": (
        {"token_treshold": 0.3},
        UnknownArgumentError,
        "did you mean 'token_threshold'",
    ),
}


@pytest.mark.parametrize(("truthlens", "message"), BAD_NUMBERS.values(), ids=BAD_NUMBERS.keys())
def test_a_model_folder_with_an_impossible_number_is_refused(
    keyword_model_dir: Path, tmp_path: Path, truthlens: dict[str, object], message: str
) -> None:
    folder = _folder_with(keyword_model_dir, tmp_path / "model", truthlens)
    with pytest.raises(ModelLoadError, match=r"config\.json") as caught:
        load_detector(folder)
    assert message in str(caught.value) and "truthlens." in str(caught.value)


def test_a_model_folder_with_sound_numbers_still_loads(
    keyword_model_dir: Path, tmp_path: Path
) -> None:
    truthlens = {"calibration": {"scale": 1.0, "shift": 0.0, "method": "platt"}}
    detector = load_detector(_folder_with(keyword_model_dir, tmp_path / "model", truthlens))
    result = detector.detect(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=FACT)
    assert result.detected


def test_a_response_map_with_a_zero_token_weight_loads_and_is_read(
    keyword_model_dir: Path, tmp_path: Path
) -> None:
    # A length-safe map fitted on RAG answers may put the largest token's weight at 0
    # (it reads the tokens through the sentence peak): valid, unlike a negative weight.
    truthlens = {"response_calibration": {"max_logit": 0.0, "log_sentences": 0.0, "bias": -1.0}}
    folder = _folder_with(keyword_model_dir, tmp_path / "model", truthlens)
    detector = load_detector(folder, aggregation="calibrated")
    result = detector.detect(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=FACT)
    assert result.score == pytest.approx(1.0 / (1.0 + math.exp(1.0)))
    assert not result.detected


@pytest.mark.parametrize(
    ("options", "error", "message"), BAD_OPTIONS.values(), ids=BAD_OPTIONS.keys()
)
def test_load_detector_checks_options_as_strictly_as_the_engine(
    keyword_model_dir: Path, options: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        load_detector(keyword_model_dir, **options)
    with pytest.raises(error, match=re.escape(message)):
        load_detector("lexical", **options)
    with pytest.raises(InvalidArgumentError, match="DetectionConfig"):
        load_detector("lexical", config={"threshold": 0.5})  # type: ignore[arg-type]
