"""The claim check: each answer sentence against its best evidence, read for meaning.

The token model marks which characters the grounding lacks, but it reads words: a
negation flipped, two roles swapped or a fact restated in other words look alike to it.
The claim check reads each sentence of the answer (the hypothesis) against the context
sentences sharing the most words with it (the premise, :func:`select_premise`) with an
entailment model, and gives the response map one more signal: how likely the least
supported sentence is *not* entailed, as a logit (:func:`claim_logits`). The token model
keeps locating the characters; the claim check moves the answer's score.

Only sentences that state something are checked (at least :data:`MIN_CLAIM_WORDS`
words): a greeting or a heading has nothing to entail.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..._calibration._signals import logit as _logit
from ..._text import AnswerText
from ..claims._extract import MIN_CLAIM_WORDS, answer_claims

__all__ = [
    "MIN_CLAIM_WORDS",
    "PREMISE_SENTENCES",
    "ClaimCheck",
    "claim_logits",
    "claim_pairs",
]

#: Context sentences read per answer sentence (the premise), as in training.
PREMISE_SENTENCES = 3


class ClaimCheck(Protocol):
    """An entailment model: how likely each premise does *not* entail its hypothesis."""

    def not_entailed(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """``1 - P(entailment)`` of each ``(premise, hypothesis)`` pair, in order."""
        ...


def claim_pairs(answer: str | AnswerText, context: Sequence[str]) -> list[tuple[int, str, str]]:
    """``(sentence start, premise, sentence)`` for each sentence of the answer to check."""
    claims = answer_claims(answer, context, top_k=PREMISE_SENTENCES)
    return [(c.start, c.evidence, c.text) for c in claims]


def claim_logits(
    check: ClaimCheck, answer: str | AnswerText, context: Sequence[str]
) -> list[tuple[int, float]]:
    """``(sentence start, logit of not entailed)`` for each checked sentence of the answer."""
    pairs = claim_pairs(answer, context)
    if not pairs:
        return []
    probabilities = check.not_entailed([(premise, sentence) for _, premise, sentence in pairs])
    return [(start, _logit(p)) for (start, _, _), p in zip(pairs, probabilities, strict=True)]
