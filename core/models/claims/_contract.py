"""What a claim checker is given and what it returns, whichever model reads the claims.

A claim is one sentence of the answer, with the evidence selected for it from the
context. A checker returns one :class:`ClaimJudgement` per claim, in order: the
probability that the evidence supports the claim, the checker's label where it has one,
and the evidence it rests on. A claim the checker could not judge (a server error, a
refusal, an answer that does not parse, a claim over its limit) is *not checked*, with the
reason: it has no probability and never reads as supported.

Any object with ``name`` and ``check`` plugs in (:class:`ClaimChecker`); the async twin
:func:`acheck_claims` awaits a checker's own ``acheck`` where it has one and runs
``check`` in a worker thread where it has not, so a checker writes one implementation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..._errors import ModelLoadError

__all__ = [
    "Claim",
    "ClaimChecker",
    "ClaimJudgement",
    "ClaimLabel",
    "acheck_claims",
    "check_claims",
    "judged",
    "not_checked",
]

#: What a checker may call a claim it judged: supported, or not, and how.
ClaimLabel = Literal["supported", "neutral", "contradiction"]

#: Below this probability of support a claim is rejected.
SUPPORT_THRESHOLD = 0.5


class Claim(BaseModel):
    """One sentence of an answer and the evidence selected for it.

    Attributes:
        text: The sentence, as the answer has it.
        start: Its first character in the answer.
        end: One past its last character.
        evidence: The context text the checker reads it against.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(min_length=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    evidence: str

    @model_validator(mode="after")
    def _ordered(self) -> Claim:
        if self.end < self.start:
            raise ValueError(f"end {self.end} is before start {self.start}")
        return self


class ClaimJudgement(BaseModel):
    """A checker's reading of one claim.

    Attributes:
        claim: What was read.
        checker: The checker's name.
        checked: Whether the checker judged it; ``False`` carries ``reason`` and no
            probability.
        supported: The probability that the evidence supports the claim (``None``
            when not checked).
        label: The checker's label where it gives one (a yes/no checker gives
            ``supported`` or ``neutral``; an NLI model or a judge may say
            ``contradiction``); ``None`` when not checked.
        quote: The evidence the judgement rests on, where the checker names it.
        reason: Why the claim was not checked.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    claim: Claim
    checker: str
    checked: bool
    supported: float | None = Field(default=None, ge=0.0, le=1.0)
    label: ClaimLabel | None = None
    quote: str | None = None
    reason: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ClaimJudgement:
        # Not checked is never clean: no probability, no label, and a reason.
        if self.checked and (self.supported is None or self.label is None):
            raise ValueError("a checked claim needs a probability and a label")
        if not self.checked and (self.supported is not None or self.label is not None):
            raise ValueError("a claim not checked has no probability and no label")
        if not self.checked and not self.reason:
            raise ValueError("a claim not checked needs a reason")
        return self

    @property
    def rejected(self) -> bool:
        """Whether the checker judged the claim unsupported."""
        return self.checked and self.supported is not None and self.supported < SUPPORT_THRESHOLD


def judged(
    claim: Claim,
    checker: str,
    supported: float,
    *,
    label: ClaimLabel | None = None,
    quote: str | None = None,
) -> ClaimJudgement:
    """A checked claim; without a label, ``supported`` or ``neutral`` by the probability."""
    p = min(1.0, max(0.0, float(supported)))
    if label is None:
        label = "supported" if p >= SUPPORT_THRESHOLD else "neutral"
    return ClaimJudgement(
        claim=claim, checker=checker, checked=True, supported=p, label=label, quote=quote
    )


def not_checked(claim: Claim, checker: str, reason: str) -> ClaimJudgement:
    """A claim the checker could not judge, and why."""
    return ClaimJudgement(claim=claim, checker=checker, checked=False, reason=reason)


@runtime_checkable
class ClaimChecker(Protocol):
    """Reads claims against their evidence.

    Any object with these two members plugs in: the bundled entailment branch, a
    sequence classifier from a folder or the hub, an OpenAI-compatible endpoint, a GGUF
    model in process, or the application's own. An ``acheck`` coroutine method with
    the same signature is used by the async paths where the object has one.
    """

    name: str

    def check(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
        """One judgement per claim, in order; a claim it cannot judge is not checked."""
        ...


def check_claims(checker: ClaimChecker, claims: Sequence[Claim]) -> list[ClaimJudgement]:
    """``checker.check(claims)``, held to the contract.

    Raises:
        ModelLoadError: If the checker returns another number of judgements, or
            judgements of other claims: a broken checker, not a judgement.
    """
    if not claims:
        return []
    return _held(checker, claims, checker.check(list(claims)))


async def acheck_claims(checker: ClaimChecker, claims: Sequence[Claim]) -> list[ClaimJudgement]:
    """The async :func:`check_claims`: the checker's ``acheck``, else ``check`` in a thread."""
    if not claims:
        return []
    acheck = getattr(checker, "acheck", None)
    if acheck is not None and asyncio.iscoroutinefunction(acheck):
        found = await acheck(list(claims))
    else:
        found = await asyncio.to_thread(checker.check, list(claims))
    return _held(checker, claims, found)


def _held(checker: ClaimChecker, claims: Sequence[Claim], found: object) -> list[ClaimJudgement]:
    name = getattr(checker, "name", type(checker).__name__)
    if not isinstance(found, list) or len(found) != len(claims):
        size = len(found) if isinstance(found, list) else type(found).__name__
        raise ModelLoadError(
            f"claim checker {name!r} returned {size} judgements for {len(claims)} claims"
        )
    for i, (claim, judgement) in enumerate(zip(claims, found, strict=True)):
        if not isinstance(judgement, ClaimJudgement) or judgement.claim != claim:
            raise ModelLoadError(
                f"claim checker {name!r}: judgement {i} is not a ClaimJudgement of claim {i}"
            )
    return found
