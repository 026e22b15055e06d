"""Explicit alignment of numbers, years and units in a flagged span against the context.

A small NLI model reads "built in 1950" against "built: 1887-1889" as a near paraphrase:
the sentences share every word but one number. Numbers are exactly where grounded
answers go wrong most often, and checking them needs no model: a quantity in the
answer either occurs in the context, conflicts with a comparable quantity there (same
unit, or both years), or has nothing in the context to compare with.

The result overrides the NLI model's label for spans that hold a number; spans
without one are left to the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from .._quantities import ContextQuantities, Quantity, extract_quantities
from .._types import NLILabel

__all__ = ["Quantity", "align_quantities", "extract_quantities"]

# One answer's spans are judged one after another against the same answer and context:
# each is read once (reading the whole answer again per span made an answer of 800 short
# wrong claims spend 3 s here).
_READ_AT_ONCE = 8


@lru_cache(maxsize=_READ_AT_ONCE)
def _quantities_of(answer: str) -> tuple[Quantity, ...]:
    return tuple(extract_quantities(answer))


@lru_cache(maxsize=_READ_AT_ONCE)
def _context_quantities(context: tuple[str, ...]) -> ContextQuantities:
    return ContextQuantities(context)


def align_quantities(
    context: Sequence[str], answer: str, start: int, end: int
) -> tuple[NLILabel, float] | None:
    """Judge the numbers inside ``answer[start:end]`` against the context.

    Args:
        context: The grounding passages.
        answer: The full answer (the unit of a number may lie just outside the span).
        start: Start offset of the span in ``answer``.
        end: End offset of the span in ``answer``.

    Returns:
        ``("contradiction", 1.0)`` when a number of the span differs from every
        comparable number of the context statements about the same thing (see
        :class:`ContextQuantities`) while at least one exists; ``("neutral",
        1.0)`` when the context holds no comparable number at all; ``None`` when the
        span holds no number or all its numbers occur in the context, leaving the
        decision to the NLI model.
    """
    inside = [q for q in _quantities_of(answer) if q.start < end and q.end > start]
    if not inside:
        return None
    known = _context_quantities(tuple(context))
    labels: list[NLILabel] = []
    for quantity in inside:
        verdict = known.judge(quantity, answer)
        if verdict != "present":
            labels.append("contradiction" if verdict == "conflict" else "neutral")
    if not labels:
        return None
    return ("contradiction" if "contradiction" in labels else "neutral"), 1.0
