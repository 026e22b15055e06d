"""Tests of ``core/models/claims/_contract.py`` and ``_extract.py``: what a checker is
given and returns, and that not checked never reads as supported."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest
from pydantic import ValidationError

from truthlens_integrations.core import ModelLoadError
from truthlens_integrations.core.models.claims import (
    Claim,
    ClaimJudgement,
    judged,
    not_checked,
)
from truthlens_integrations.core.models.claims._contract import acheck_claims, check_claims
from truthlens_integrations.core.models.claims._extract import answer_claims

CLAIM = Claim(text="It is 330 meters tall.", start=0, end=22, evidence="It is 330 m tall.")


def test_a_judgement_without_a_label_reads_its_probability() -> None:
    assert judged(CLAIM, "c", 0.7).label == "supported"
    assert judged(CLAIM, "c", 0.3).label == "neutral"
    assert judged(CLAIM, "c", 0.3).rejected
    assert judged(CLAIM, "c", 0.3, label="contradiction").label == "contradiction"


def test_not_checked_has_a_reason_and_no_probability() -> None:
    j = not_checked(CLAIM, "c", "server down")
    assert (j.checked, j.supported, j.label, j.rejected) == (False, None, None, False)
    with pytest.raises(ValidationError, match="reason"):
        ClaimJudgement(claim=CLAIM, checker="c", checked=False)
    with pytest.raises(ValidationError, match="no probability"):
        ClaimJudgement(claim=CLAIM, checker="c", checked=False, supported=0.9, reason="x")
    with pytest.raises(ValidationError, match="needs a probability"):
        ClaimJudgement(claim=CLAIM, checker="c", checked=True)


def test_a_claim_ends_after_it_starts() -> None:
    with pytest.raises(ValidationError, match="before start"):
        Claim(text="x", start=5, end=2, evidence="")


class Echo:
    name = "echo"

    def __init__(self) -> None:
        self.threads: list[str] = []

    def check(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
        self.threads.append(threading.current_thread().name)
        return [judged(c, self.name, 0.9) for c in claims]


def test_the_async_call_runs_a_sync_checker_in_a_worker_thread() -> None:
    checker = Echo()
    found = asyncio.run(acheck_claims(checker, [CLAIM]))
    assert [j.supported for j in found] == [0.9]
    assert checker.threads != [threading.main_thread().name]


def test_the_async_call_awaits_a_checkers_own_acheck() -> None:
    class Both(Echo):
        async def acheck(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
            return [judged(c, "async", 0.1) for c in claims]

    found = asyncio.run(acheck_claims(Both(), [CLAIM]))
    assert [j.checker for j in found] == ["async"]


def test_a_checker_that_breaks_the_contract_is_an_error_not_a_judgement() -> None:
    class Short(Echo):
        def check(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
            return []

    class Other(Echo):
        def check(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
            other = CLAIM.model_copy(update={"text": "Something else entirely."})
            return [judged(other, "o", 0.9) for _ in claims]

    with pytest.raises(ModelLoadError, match="0 judgements for 1 claims"):
        check_claims(Short(), [CLAIM])
    with pytest.raises(ModelLoadError, match="not a ClaimJudgement of claim 0"):
        check_claims(Other(), [CLAIM])


def test_claims_are_the_sentences_that_state_something_with_offsets() -> None:
    answer = "Sure!  The tower is 330 meters tall.\nIt opened in 1889 in Paris. Thanks."
    context = ["The tower is 330 meters tall. It opened in 1889.", "Paris is in France."]
    claims = answer_claims(answer, context, top_k=1)
    assert [c.text for c in claims] == [
        "The tower is 330 meters tall.",
        "It opened in 1889 in Paris.",
    ]
    for c in claims:
        assert answer[c.start : c.end] == c.text
    assert claims[0].evidence == "The tower is 330 meters tall."
