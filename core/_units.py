"""A quantity read from a text, and the measurement units it may carry.

Shared by the readers of ``core/_quantities.py``, ``core/_dates.py`` and
``core/_number_words.py``, which find the quantities, and by the judge there, which
compares them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "NOT_UNITS",
    "OFFSETS",
    "SCALE",
    "UNITS",
    "YEAR_RANGE",
    "Quantity",
    "decimals_of",
    "is_amount_unit",
    "measure",
    "span_of_years",
    "unit_word",
]


@dataclass(frozen=True)
class Quantity:
    """A number in a text, with its unit word when one follows it."""

    value: float
    unit: str | None
    start: int
    end: int
    is_year: bool
    decimals: int = 0
    """Place of the last significant digit: 2 for "2.65", 0 for "7", -1 for "540"."""
    number_end: int = -1
    """End of the number itself ("4.2" of "4.2 km", "twenty-five" of "twenty-five people")."""
    years: int = 1
    """How many years a year stands for: 10 for a decade ("1950s"), 100 for "1800s", 101
    for a century (the "19th century" is 1800 to 1900)."""
    readings: tuple[float, ...] = ()
    """Other values the same writing can mean: "04/03/1889" is 4 March or 3 April."""


YEAR_RANGE = (1000, 2100)
"""The numbers read as years when nothing else is said of them."""

# Measurement units by dimension, each with its size in the dimension's base unit. Only
# words that are surely units: the word after a number is often a noun ("420 people"),
# and a noun must not turn a copied number into a conflict. Scale words ("million") form
# a dimension of their own, so "4.2 billion" against "4.2 million" is a conflict too.
# pint (0.25, BSD) knows more units but reads "in", "at", "a" and "s" as units, and costs
# 0.6 s to load.
_LENGTH = {"km": 1e3, "kilometer": 1e3, "kilometre": 1e3, "m": 1.0, "meter": 1.0,
           "metre": 1.0, "cm": 1e-2, "centimeter": 1e-2, "centimetre": 1e-2, "mm": 1e-3,
           "millimeter": 1e-3, "millimetre": 1e-3, "mile": 1609.344, "mi": 1609.344,
           "ft": 0.3048, "foot": 0.3048, "feet": 0.3048, "yard": 0.9144, "yd": 0.9144,
           "inch": 0.0254, "inche": 0.0254}  # fmt: skip
_MASS = {"kg": 1.0, "kilogram": 1.0, "g": 1e-3, "gram": 1e-3, "mg": 1e-6, "milligram": 1e-6,
         "lb": 0.45359237, "lbs": 0.45359237, "pound": 0.45359237, "oz": 0.028349523,
         "ounce": 0.028349523, "tonne": 1e3}  # fmt: skip
_VOLUME = {"l": 1.0, "liter": 1.0, "litre": 1.0, "ml": 1e-3, "milliliter": 1e-3,
           "millilitre": 1e-3, "gallon": 3.785411784}  # fmt: skip
_DURATION = {"second": 1.0, "sec": 1.0, "minute": 60.0, "min": 60.0, "hour": 3600.0,
             "hr": 3600.0, "hrs": 3600.0, "day": 86400.0, "week": 604800.0,
             "month": 2629800.0, "year": 31557600.0}  # fmt: skip
_AREA = {"acre": 4046.8564224, "hectare": 1e4, "ha": 1e4}
SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
"""Words of scale, each with its size."""
# Temperatures in degrees Celsius; Fahrenheit also has an offset (see ``measure``).
_TEMPERATURE_UNITS = {"°c": 1.0, "°f": 5 / 9}
OFFSETS = {"°f": -32.0}
"""What to add to a value in the unit before its size applies (Fahrenheit)."""
UNITS: dict[str, tuple[str, float]] = {
    unit: (dimension, size)
    for dimension, table in (
        ("length", _LENGTH),
        ("mass", _MASS),
        ("volume", _VOLUME),
        ("duration", _DURATION),
        ("area", _AREA),
        ("scale", SCALE),
        ("temperature", _TEMPERATURE_UNITS),
    )
    for unit, size in table.items()
}
"""Every unit word, singular and lower-case, with ``(dimension, size in its base unit)``."""

NOT_UNITS = frozenset(
    "and or to in on at of the a an is was are were by for from with as than but "
    "when while after before since until ad bc bce ce".split()
)
"""Words after a number that are not its unit."""


def unit_word(word: str | None) -> str | None:
    """The unit a word after a number names (lower case, singular), or None."""
    if word is None:
        return None
    word = word.lower()
    if word in NOT_UNITS:
        return None
    # "meters" and "meter" name the same unit.
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def is_amount_unit(word: str) -> bool:
    """Whether ``word`` after a number makes it an amount: "%" or a measurement unit."""
    return word == "%" or unit_word(word) in UNITS


def measure(quantity: Quantity) -> tuple[str, float] | None:
    """``(dimension, amount in the base unit)`` of a quantity with a known unit, else None."""
    known = UNITS.get(quantity.unit or "")
    if known is None:
        return None
    return known[0], (quantity.value + OFFSETS.get(quantity.unit or "", 0.0)) * known[1]


def decimals_of(digits: str, fraction: str | None) -> int:
    """The place of a number's last significant digit: 2 for "2.65", -1 for "540"."""
    return len(fraction) - 1 if fraction else -(len(digits) - len(digits.rstrip("0")))


def span_of_years(first: int, years: int, start: int, end: int) -> Quantity:
    """A year standing for ``years`` years from ``first``, written from ``start`` to ``end``."""
    return Quantity(
        float(first),
        None,
        start,
        end,
        is_year=True,
        decimals=decimals_of(str(first), None),
        number_end=end,
        years=years,
    )
