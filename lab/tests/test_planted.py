"""The planted wrong answers' stored evidence is what the bundled detector reads now."""

from __future__ import annotations

import json

import pytest

from tests.conftest import needs_weights
from truthlens_integrations._lab_api import PLANTED, PLANTED_FILE


@needs_weights
def test_the_stored_evidence_is_the_bundled_detectors() -> None:
    from lab.training.planted import rows

    stored = json.loads(PLANTED_FILE.read_text(encoding="utf-8"))
    now = rows()
    assert [r["answer"] for r in stored] == [answer for _, answer in PLANTED]
    for old, new in zip(stored, now, strict=True):
        assert old["absent"] == new["absent"] and old["marks"] == new["marks"]
        assert [t[:2] for t in old["tokens"]] == [t[:2] for t in new["tokens"]]
        assert [t[2] for t in old["tokens"]] == pytest.approx(
            [t[2] for t in new["tokens"]], abs=1e-4
        )


def test_the_bundled_default_map_flags_every_planted_answer() -> None:
    # the shipped detector's own map must pass the check it imposes on files
    from truthlens_integrations._lab_api import (
        ResponseCalibration,
        calibrated_score,
        planted_answers,
    )
    from truthlens_integrations.core.models import bundled_detector_path

    config = json.loads((bundled_detector_path() / "config.json").read_text(encoding="utf-8"))
    response = ResponseCalibration.from_entry(config["truthlens"]["response_calibration"])
    for planted in planted_answers():
        score = calibrated_score(
            response, planted.answer, planted.tokens, planted.absent,
            token_threshold=0.5, conflicts=planted.marks,
        )  # fmt: skip
        assert score >= 0.5, planted.answer
