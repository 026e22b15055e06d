"""One answer's claims read by a checker, outside a request: what calibrate and eval need.

The engine folds judgements into a verdict (``engine._claim_stage``); ``truthlens
calibrate`` and ``truthlens eval`` need only each answer's least supported claim, read the
same way: the same claims, the same evidence, the same contract. One call per answer, so
a checker that keeps the document's prefix in a cache reuses it across the answer's
claims, and a checker that fails on one answer leaves only that answer not checked.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ..._types import DetectionInput
from ._contract import ClaimChecker, check_claims
from ._extract import answer_claims, evidence_sentences

__all__ = ["ClaimReading", "read_claims"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimReading:
    """What a checker said of one answer's claims.

    Attributes:
        claims: The answer's claims (sentences that state something).
        judged: How many of them the checker judged.
        worst: The least supported judged claim's probability of support (``None`` when
            none was judged).
    """

    claims: int
    judged: int
    worst: float | None

    @property
    def complete(self) -> bool:
        """Whether every claim was judged (an answer with no claims is complete)."""
        return self.judged == self.claims


def read_claims(checker: ClaimChecker, answers: Sequence[DetectionInput]) -> list[ClaimReading]:
    """Each answer's claims, read by ``checker`` against their evidence.

    Args:
        checker: Any claim checker.
        answers: The answers, each with its context.

    Returns:
        One reading per answer, in order. A checker that raises on an answer judges none
        of its claims (logged): not checked, never supported.
    """
    top_k = evidence_sentences(checker)
    return [_read(checker, answer, top_k) for answer in answers]


def _read(checker: ClaimChecker, answer: DetectionInput, top_k: int) -> ClaimReading:
    claims = answer_claims(answer.answer, answer.context, top_k=top_k)
    try:
        judgements = check_claims(checker, claims)
    except Exception as exc:  # noqa: BLE001 - a broken checker judges nothing
        logger.warning("the claim checker failed on an answer: %s: %s", type(exc).__name__, exc)
        return ClaimReading(claims=len(claims), judged=0, worst=None)
    supported = [j.supported for j in judgements if j.checked and j.supported is not None]
    return ClaimReading(
        claims=len(claims), judged=len(supported), worst=min(supported, default=None)
    )
