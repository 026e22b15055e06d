"""Tests of ``core/models/detection/_rescore.py``: rescoring with a calibration file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests._samples import valid_calibration_file
from truthlens_integrations.core import ConfigError, DetectionInput
from truthlens_integrations.core._calibration._file import read_calibration_file
from truthlens_integrations.core.models.detection._rescore import rescore


def test_rescore_leaves_unverifiable_results_alone(tmp_path: Path) -> None:
    from truthlens_integrations.core.models.detection import LexicalDetector

    path = tmp_path / "c.json"
    path.write_text(json.dumps(valid_calibration_file()))
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
        content = valid_calibration_file()
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
        json.dumps({**valid_calibration_file(), "response_calibration": {**entry, "rule_floor": 2}})
    )
    with pytest.raises(ConfigError, match="rule_floor"):
        read_calibration_file(path)
