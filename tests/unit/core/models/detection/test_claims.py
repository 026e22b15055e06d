"""The claim check's plumbing: which sentences it reads, and how its term moves the map.

The model itself is tested on real cases in ``test_claims_model.py``; here a fake
entailment model stands in, so each rule of the plumbing can fail on its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from truthlens_integrations.core._calibration._file import read_calibration_file
from truthlens_integrations.core._calibration._map import ResponseCalibration, calibrated_score
from truthlens_integrations.core._calibration._signals import ResponseSignals
from truthlens_integrations.core.models.detection._claims import (
    MIN_CLAIM_WORDS,
    claim_logits,
    claim_pairs,
)

CONTEXT = [
    "The Eiffel Tower was built from 1887 to 1889. It is 330 metres tall.",
    "Shipping fees are not refundable. Returns are accepted within 30 days.",
]


class _Fixed:
    """A fake entailment model: each hypothesis's not-entailed probability by its text."""

    def __init__(self, by_hypothesis: dict[str, float]) -> None:
        self.by_hypothesis = by_hypothesis
        self.calls: list[list[tuple[str, str]]] = []

    def not_entailed(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        self.calls.append(list(pairs))
        return [self.by_hypothesis.get(h, 0.5) for _, h in pairs]


def test_claim_pairs_read_each_stating_sentence_against_the_sentences_sharing_its_words() -> None:
    answer = "Sure. Shipping fees are refunded too. The tower was finished in 1889."
    pairs = claim_pairs(answer, CONTEXT)
    assert [h for _, _, h in pairs] == [
        "Shipping fees are refunded too.",
        "The tower was finished in 1889.",
    ]
    assert all(len(h.split()) >= MIN_CLAIM_WORDS for _, _, h in pairs)
    starts = [s for s, _, _ in pairs]
    assert [answer[s : s + 8] for s in starts] == ["Shipping", "The towe"]
    assert "not refundable" in pairs[0][1]
    assert "1887 to 1889" in pairs[1][1]


def test_claim_logits_are_one_batch_in_sentence_order() -> None:
    answer = "Shipping fees are refunded too. The tower was finished in 1889."
    check = _Fixed({"Shipping fees are refunded too.": 0.9, "The tower was finished in 1889.": 0.1})
    logits = claim_logits(check, answer, CONTEXT)
    assert len(check.calls) == 1
    assert [round(v, 3) for _, v in logits] == [round(math.log(9), 3), round(-math.log(9), 3)]
    assert claim_logits(check, "Yes.", CONTEXT) == []
    assert len(check.calls) == 1  # nothing to check, no model call


def _map(claim: float) -> ResponseCalibration:
    return ResponseCalibration.of(
        {"max_logit": 1.0, "log_sentences": 0.0, "bias": -1.0, "claim": claim}
    )


def test_the_claim_term_raises_the_score_of_an_answer_whose_sentence_is_not_entailed() -> None:
    response = _map(1.5)
    assert response.reads_claims and not _map(0.0).reads_claims
    low = response.score(ResponseSignals(max_probability=0.2, sentences=2, claim=-3.0))
    high = response.score(ResponseSignals(max_probability=0.2, sentences=2, claim=3.0))
    assert low < 0.5 < high
    assert response.length_safe


def test_the_answer_reads_its_least_supported_sentence() -> None:
    answer = "Shipping fees are refunded too. The tower was finished in 1889."
    both = calibrated_score(
        _map(1.0), answer, [], [], token_threshold=0.5, claims=[(0, 2.0), (32, -4.0)]
    )
    one = calibrated_score(_map(1.0), answer, [], [], token_threshold=0.5, claims=[(0, 2.0)])
    assert both == pytest.approx(one)  # an entailed sentence beside it cannot lower it


def test_the_claim_coefficient_is_written_only_when_set_and_read_back() -> None:
    assert "claim" not in _map(0.0).to_config("x")
    entry = _map(0.8).to_config("x")
    assert entry["claim"] == 0.8
    assert ResponseCalibration.from_entry(entry)["claim"] == 0.8
    with pytest.raises(Exception, match="'claim' must be a number"):
        ResponseCalibration.from_entry({**entry, "claim": "high"})


def test_a_calibration_file_cannot_carry_the_claim_term(tmp_path) -> None:  # type: ignore[no-untyped-def]
    file = tmp_path / "cal.json"
    file.write_text(
        '{"format": "truthlens-calibration/1", "model": "bundled", "threshold": 0.5,'
        ' "token_threshold": 0.5, "response_calibration": {"max_logit": 1.0,'
        ' "log_sentences": 0.0, "bias": -1.0, "claim": 1.0}}'
    )
    with pytest.raises(Exception, match="belongs to a detector folder's own map"):
        read_calibration_file(file)
