"""Candidate 27c's temperature on the default map (lab/training/temperature.py)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from lab.training.temperature import fit_temperature, rescore, tempered, write_map
from tests.conftest import BUNDLED, needs_weights
from truthlens_integrations._lab_api import ResponseCalibration, ResponseSignals

SHIPPED_T = 0.5622
# The default map before candidate 27c (commit 6452de1's config.json).
BEFORE = {"max_logit": 0.658872, "log_sentences": -0.435377, "absent_words": 0.377239}
BEFORE_BIAS = -0.812388


def _map() -> ResponseCalibration:
    return ResponseCalibration.of({**BEFORE, "bias": BEFORE_BIAS, "rule_sentence_floor": 1.0})


def _signals(rng: random.Random) -> ResponseSignals:
    return ResponseSignals(
        max_probability=rng.uniform(0.01, 0.99),
        sentences=rng.randint(1, 30),
        absent_words=rng.randint(0, 60),
    )


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def test_a_temperature_keeps_every_verdict_and_ranking() -> None:
    rng = random.Random(0)
    signals = [_signals(rng) for _ in range(500)]
    before, after = _map(), tempered(_map(), SHIPPED_T)
    old = [before.score(s) for s in signals]
    new = [after.score(s) for s in signals]
    assert [o >= 0.5 for o in old] == [n >= 0.5 for n in new]
    assert np.argsort(old, kind="stable").tolist() == np.argsort(new, kind="stable").tolist()
    for o, n in zip(old, new, strict=True):
        assert _logit(n) == pytest.approx(_logit(o) / SHIPPED_T, rel=1e-9, abs=1e-9)
    assert after.rule_sentence_floor == 1.0  # a switch, not a coefficient


def test_the_fit_finds_the_temperature_that_made_the_labels() -> None:
    rng = np.random.default_rng(0)
    z = rng.normal(0, 2, 20_000)
    p = 1 / (1 + np.exp(-z))
    y = (rng.random(z.size) < rescore(p, 0.5)).astype(float)
    assert fit_temperature(p, y) == pytest.approx(0.5, rel=0.05)
    # equal weights give the unweighted fit
    assert fit_temperature(p, y, np.ones_like(p)) == pytest.approx(fit_temperature(p, y))


def test_write_map_stores_the_tempered_coefficients(tmp_path: Path) -> None:
    config = {"truthlens": {"response_calibration": {**BEFORE, "bias": BEFORE_BIAS}}}
    config["truthlens"]["response_calibration"]["fitted_on"] = "train-role answers"
    (tmp_path / "config.json").write_text(json.dumps(config))
    write_map(tmp_path, tempered(_map(), SHIPPED_T), SHIPPED_T, "27c")
    stored = json.loads((tmp_path / "config.json").read_text())["truthlens"]
    entry = stored["response_calibration"]
    for key, value in {**BEFORE, "bias": BEFORE_BIAS}.items():
        assert entry[key] == pytest.approx(value / SHIPPED_T, abs=1e-6)
    assert "temperature 0.5622" in entry["fitted_on"]
    assert entry["fitted_on"].startswith("train-role answers")


@needs_weights
def test_the_bundled_map_is_the_tempered_one() -> None:
    assert BUNDLED is not None
    config = json.loads((BUNDLED / "config.json").read_text())
    stored = config["truthlens"]["response_calibration"]
    # every coefficient divided by one temperature, the one candidate27c.json reports
    ratios = [value / stored[key] for key, value in {**BEFORE, "bias": BEFORE_BIAS}.items()]
    assert max(ratios) - min(ratios) < 1e-5
    assert ratios[0] == pytest.approx(SHIPPED_T, abs=1e-4)
    assert stored["rule_sentence_floor"] == 1
