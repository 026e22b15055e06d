"""A policy route that points to a calibration file (``truthlens calibrate``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from tests.test_engine import make
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.core.policy import load_policy


def _calibration(tmp_path: Path, bias: float, threshold: float = 0.7) -> Path:
    path = tmp_path / f"calib{bias}.json"
    content = {
        "format": "truthlens-response-calibration/1",
        "model": "keyword",
        "response_calibration": {"max_logit": 0.0, "log_sentences": 0.0, "bias": bias},
        "threshold": threshold,
    }
    path.write_text(json.dumps(content))
    return path


def _policy(calibration: Path | str, **plugin: object) -> dict[str, object]:
    configuration = {"enabled": True, "calibration": str(calibration), **plugin}
    return {
        "decisions": [
            {
                "name": "calibrated",
                "rules": {"conditions": [{"type": "fact_check", "name": "needs_fact_check"}]},
                "plugins": [{"type": "hallucination", "configuration": configuration}],
            }
        ]
    }


def test_the_route_scores_with_its_file_and_threshold(detector: Detector, tmp_path: Path) -> None:
    # A map that reads nothing but its bias scores every checked answer sigmoid(bias).
    low = make(detector, _policy(_calibration(tmp_path, -3.0)))
    verdict = low.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert verdict.route == "calibrated" and verdict.threshold == 0.7
    assert verdict.score == pytest.approx(1 / (1 + 2.718281828**3), rel=1e-4)
    assert not verdict.detected  # 0.047 < 0.7, although the keyword model marks 1950
    high = make(detector, _policy(_calibration(tmp_path, 3.0)))
    flagged = high.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert flagged.detected and flagged.score == pytest.approx(0.9526, abs=1e-4)
    # the route's own threshold wins over the file's
    own = make(detector, _policy(_calibration(tmp_path, 3.0), threshold=0.99))
    assert (
        own.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER).threshold
        == 0.99
    )


def test_a_bad_calibration_path_or_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="calibration"):
        load_policy(_policy(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "truthlens-response-calibration/1", "threshold": 0.5}))
    with pytest.raises(ConfigError, match="calibration"):
        load_policy(_policy(bad))
    typed = _policy("x")
    typed["decisions"][0]["plugins"][0]["configuration"]["calibration"] = True  # type: ignore[index]
    with pytest.raises(ConfigError, match="calibration"):
        load_policy(typed)  # a boolean is not a path
