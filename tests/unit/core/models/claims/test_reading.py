"""Tests of ``core/models/claims/_reading.py``: an answer's claims read outside a request."""

from __future__ import annotations

from collections.abc import Sequence

from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models.claims import (
    Claim,
    ClaimJudgement,
    NLIChecker,
    judged,
    not_checked,
)
from truthlens_integrations.core.models.claims._reading import read_claims

CONTEXT = ["Anna sold the house to Peter in 2019. The house has four rooms."]


def _answer(text: str) -> DetectionInput:
    return DetectionInput.create(context=CONTEXT, question="Who sold the house?", answer=text)


class FailsOn:
    """A checker that raises on claims containing ``word`` and supports every other."""

    name = "fails-on"

    def __init__(self, word: str) -> None:
        self.word = word

    def check(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
        if any(self.word in c.text for c in claims):
            raise ConnectionError("server gone")
        return [judged(c, self.name, 0.9) for c in claims]


class HalfJudged:
    name = "half"

    def check(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
        return [
            judged(c, self.name, 0.2) if i == 0 else not_checked(c, self.name, "refused")
            for i, c in enumerate(claims)
        ]


def test_the_bundled_checker_reads_the_worst_claim_of_each_answer() -> None:
    right, wrong = read_claims(
        NLIChecker(),
        [_answer("Anna sold the house. It has four rooms."), _answer("Peter sold the house.")],
    )
    assert (right.claims, right.judged, wrong.claims, wrong.judged) == (2, 2, 1, 1)
    assert right.complete and wrong.complete
    assert right.worst is not None and wrong.worst is not None
    assert wrong.worst < right.worst  # swapped roles read as less supported


def test_a_checker_failing_on_one_answer_leaves_only_that_one_not_checked() -> None:
    good, bad = read_claims(
        FailsOn("rooms"),
        [_answer("Anna sold the house in 2019."), _answer("The house has four rooms.")],
    )
    assert (good.judged, good.worst, good.complete) == (1, 0.9, True)
    assert (bad.claims, bad.judged, bad.worst, bad.complete) == (1, 0, None, False)


def test_a_claim_not_judged_is_not_read_as_supported() -> None:
    answer = _answer("Anna sold the house in 2019. The house has four rooms.")
    [reading] = read_claims(HalfJudged(), [answer])
    assert (reading.claims, reading.judged, reading.worst, reading.complete) == (2, 1, 0.2, False)
