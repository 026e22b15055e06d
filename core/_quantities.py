"""Numbers in text, with the unit word that follows them (shared by detector and engine)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Quantity", "QuantityVerdict", "extract_quantities", "judge_quantity"]

QuantityVerdict = Literal["present", "conflict", "unseen"]

# A number with optional thousands separators and decimals, not glued to letters
# (so "A320" or "3rd" are not read as quantities), and the word right after it.
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w])(?:\s*(%|[A-Za-z]+))?")
_YEAR_RANGE = (1000, 2100)
# Words after a number that are not its unit.
_NOT_UNITS = frozenset(
    "and or to in on at of the a an is was are were by for from with as than but "
    "when while after before since until ad bc bce ce".split()
)


@dataclass(frozen=True)
class Quantity:
    """A number in a text, with its unit word when one follows it."""

    value: float
    unit: str | None
    start: int
    end: int
    is_year: bool


def _unit(word: str | None) -> str | None:
    if word is None:
        return None
    word = word.lower()
    if word in _NOT_UNITS:
        return None
    # "meters" and "meter" name the same unit.
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def extract_quantities(text: str) -> list[Quantity]:
    """Every number of ``text`` with its unit word (``None`` when none follows)."""
    found = []
    for match in _NUMBER.finditer(text):
        digits = match.group(1).replace(",", "")
        value = float(digits + (match.group(2) or ""))
        unit = _unit(match.group(3))
        is_year = (
            unit is None
            and match.group(2) is None
            and "," not in match.group(1)
            and len(digits) == 4
            and _YEAR_RANGE[0] <= value <= _YEAR_RANGE[1]
        )
        found.append(Quantity(value, unit, match.start(1), match.end(), is_year))
    return found


def _comparable(a: Quantity, b: Quantity) -> bool:
    if a.is_year or b.is_year:
        return a.is_year and b.is_year
    return a.unit is not None and a.unit == b.unit


def judge_quantity(quantity: Quantity, known: Sequence[Quantity]) -> QuantityVerdict:
    """A number of an answer against the context's numbers.

    Returns:
        ``"present"`` when its value occurs among ``known``; ``"conflict"`` when it does
        not while a comparable number (both years, or the same unit word) does;
        ``"unseen"`` when nothing comparable occurs.
    """
    if any(k.value == quantity.value for k in known):
        return "present"
    if any(_comparable(k, quantity) for k in known):
        return "conflict"
    return "unseen"
