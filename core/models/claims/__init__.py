"""Claim checkers: each sentence of an answer read against its evidence, for meaning.

The detector marks which characters the grounding lacks; a claim checker reads whole
claims, so it sees a negation flipped, two roles swapped or a fact restated in other
words. The guard runs one in a cascade (the policy's ``claim_check``): on the answers
whose detector score is uncertain, on the flagged ones, or on every answer.

:class:`SequenceClassifierChecker` runs a Hugging Face sequence classifier (MiniCheck,
FactCG, an NLI cross-encoder, a T5 classifier) from a local folder or a hub id.
"""

from __future__ import annotations

from ._contract import (
    Claim,
    ClaimChecker,
    ClaimJudgement,
    ClaimLabel,
    judged,
    not_checked,
)
from ._endpoint import EndpointChecker
from ._nli_checker import NLIChecker
from ._registry import load_checker
from ._sequence_checker import SequenceClassifierChecker

__all__ = [
    "Claim",
    "ClaimChecker",
    "ClaimJudgement",
    "ClaimLabel",
    "EndpointChecker",
    "NLIChecker",
    "SequenceClassifierChecker",
    "judged",
    "load_checker",
    "not_checked",
]
