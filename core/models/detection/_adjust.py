"""Explicit checks that adjust token probabilities where a rule knows better than the model.

Two things the encoder reads badly and a rule reads well:

* **Numbers.** A small encoder sees "opened in 1932" and "opened in 1995" as near
  paraphrases. A number in the answer that occurs (by value: "2,400" = "2400") anywhere in
  the context is most likely copied, so its tokens are made less suspicious; one that does
  not occur while the context has a comparable one (both years, or the same unit word)
  most likely contradicts it, so its tokens are raised; one with nothing comparable is
  raised less (it may be computed, e.g. a duration).
* **Abstentions.** "The provided information does not mention who the CEO is." claims
  nothing about the world. A sentence that says the sources lack the answer, and whose
  other content words come from the question or the context (one other word allowed), is
  not flagged.

Both act on token probabilities before spans and scores are made, so spans, the response
score and the NLI stage stay consistent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..._quantities import QuantityVerdict, extract_quantities, judge_quantity
from ..._text import DIGITS, WORD, split_sentences
from ..._types import TokenScore

__all__ = ["abstentions", "adjust_tokens"]

# Odds multiplier for a number found in the context, and floors for numbers that are not.
_PRESENT_ODDS = 0.15
_CONFLICT_FLOOR = 0.85
_UNSEEN_FLOOR = 0.6
_ABSTENTION_CAP = 0.05

_ABSTAIN = re.compile(
    r"\b(?:(?:does|do|did|is|are|was|were)\s*n[o']t\s+(?:\w+\s+){0,2}?"
    r"(?:mention|mentioned|specify|specified|say|said|state|stated|provide|provided|include|"
    r"included|contain|contained|give|given|list|listed|indicate|indicated|available)|"
    r"no (?:information|mention|details?|data|indication)|"
    r"(?:cannot|can't|can not|unable to|could not|couldn't) (?:answer|determine|find|tell|say|"
    r"provide|be determined|be answered)|"
    r"not (?:enough|sufficient) information|insufficient information|"
    r"(?:i'm|i am) sorry|unable to answer)\b",
    re.IGNORECASE,
)
_ABSTAIN_WORDS = frozenset(
    """provided information context passage passages text document documents source sources
    mention mentioned mentions specify specified say says said state stated provide give given
    include included contain contained list listed indicate indicated available answer
    question determine find tell sorry unable enough sufficient insufficient details detail
    data indication based unfortunately however therefore regarding about any specific
    exact precise clear clearly explicitly directly name named who what when where which why
    how whom whose there this that these those it its they them their article above below
    cannot can could would should do does did doesn don didn isn aren wasn weren not no nor
    the a an and or but of to in on for with from by as at is are was were be been i i'm am
    so also only just m s t re ve ll d""".split()
)


def _number_verdicts(answer: str, context: Sequence[str]) -> list[tuple[int, int, QuantityVerdict]]:
    """``(start, end, verdict)`` of the digits of every number of the answer."""
    known = [q for passage in context for q in extract_quantities(passage)]
    out: list[tuple[int, int, QuantityVerdict]] = []
    for q in extract_quantities(answer):
        # The verdict is about the digits; the unit word after them is scored as it is.
        # A value found with another "unit" word still counts as copied: the word after a
        # number is often not a unit ("420 people" / "420 employees"), and treating it as a
        # conflict lowered held-out AP from 0.781 to 0.748 (benchmarks/results/heldout.md).
        digits = DIGITS.match(answer, q.start)
        out.append((q.start, digits.end() if digits else q.end, judge_quantity(q, known)))
    return out


def abstentions(answer: str, context: Sequence[str], question: str | None) -> list[tuple[int, int]]:
    """``(start, end)`` of the answer's sentences that only say the sources lack something."""
    candidates = [
        (start, end)
        for start, end in split_sentences(answer)
        if _ABSTAIN.search(answer[start:end]) and not any(ch.isdigit() for ch in answer[start:end])
    ]
    if not candidates:
        return []  # the common case: no pass over a long context
    known = {w.lower() for text in (*context, question or "") for w in WORD.findall(text)}
    out = []
    for start, end in candidates:
        words = [w.lower() for w in WORD.findall(answer[start:end])]
        # one unknown word is allowed ("the company", "the firm"); a name that answers the
        # question after all ("..., but it is John Smith") brings more
        if sum(1 for w in words if w not in _ABSTAIN_WORDS and w not in known) <= 1:
            out.append((start, end))
    return out


def adjust_tokens(
    tokens: list[TokenScore], answer: str, context: Sequence[str], question: str | None
) -> list[TokenScore]:
    """Token probabilities with the number and abstention rules applied (see the module)."""
    numbers = _number_verdicts(answer, context)
    quiet = abstentions(answer, context, question)
    if not numbers and not quiet:
        return tokens
    out = []
    for token in tokens:
        p = token.probability
        for start, end, verdict in numbers:
            if token.start < end and token.end > start:
                if verdict == "present":
                    odds = _PRESENT_ODDS * p / max(1.0 - p, 1e-9)
                    p = odds / (1.0 + odds)
                elif verdict == "conflict":
                    p = max(p, _CONFLICT_FLOOR)
                else:
                    p = max(p, _UNSEEN_FLOOR)
                break
        if any(token.start >= s and token.end <= e for s, e in quiet):
            p = min(p, _ABSTENTION_CAP)
        out.append(token if p == token.probability else token.model_copy(update={"probability": p}))
    return out
