"""Tests of ``core/_calibration/_claim.py``: the cascade's combined score and its fit."""

from __future__ import annotations

import random

import pytest

from truthlens_integrations.core import InvalidInputError
from truthlens_integrations.core._calibration._claim import (
    MAX_CLAIM_WEIGHT,
    combined_score,
    fit_claim_weight,
)
from truthlens_integrations.evaluation import auroc


def _answers(
    n: int, *, informative: bool, seed: int = 7
) -> tuple[list[float], list[float], list[bool]]:
    """Detector scores that barely separate; checker readings that do, or that are noise."""
    rng = random.Random(seed)
    scores, worst, labels = [], [], []
    for i in range(n):
        bad = i % 2 == 0
        scores.append(min(0.95, max(0.05, rng.gauss(0.55 if bad else 0.45, 0.15))))
        if informative:
            worst.append(min(0.99, max(0.01, rng.gauss(0.2 if bad else 0.8, 0.15))))
        else:
            worst.append(rng.uniform(0.01, 0.99))
        labels.append(bad)
    return scores, worst, labels


def test_a_checker_that_separates_gets_weight_and_lifts_the_ranking() -> None:
    scores, worst, labels = _answers(200, informative=True)
    fit = fit_claim_weight(scores, worst, labels)
    assert 0.5 < fit.weight <= MAX_CLAIM_WEIGHT
    assert (fit.answers, fit.unsupported) == (200, 100)
    combined = [
        combined_score(s, w, fit.weight, fit.bias) for s, w in zip(scores, worst, strict=True)
    ]
    assert auroc(labels, combined) > auroc(labels, scores) + 0.2


def test_a_checker_that_reads_noise_gets_almost_no_weight() -> None:
    scores, worst, labels = _answers(400, informative=False)
    assert fit_claim_weight(scores, worst, labels).weight < 0.2


def test_a_checker_that_reads_backwards_gets_none() -> None:
    scores, worst, labels = _answers(200, informative=True)
    flipped = [1.0 - w for w in worst]  # supported claims read as unsupported
    assert fit_claim_weight(scores, flipped, labels).weight == 0.0


def test_the_combined_score_never_falls_as_the_worst_claim_gets_worse() -> None:
    values = [combined_score(0.4, w / 10, 1.3, -0.2) for w in range(10, -1, -1)]
    assert values == sorted(values)
    # a checker that answers only yes or no moves the score by a bounded amount
    assert combined_score(0.4, 0.0, 1.0, 0.0) == combined_score(0.4, 0.001, 1.0, 0.0)


@pytest.mark.parametrize(
    ("scores", "worst", "labels", "words"),
    [
        ([0.5, 0.5], [0.5], [True, False], "2 scores, 1 claim readings and 2 labels"),
        ([0.5] * 3, [0.5] * 3, [True, False, False], "got 1 unsupported and 2 supported"),
    ],
)
def test_the_fit_refuses_what_it_cannot_fit(
    scores: list[float], worst: list[float], labels: list[bool], words: str
) -> None:
    with pytest.raises(InvalidInputError, match=words):
        fit_claim_weight(scores, worst, labels)
