"""Numbers in text, with the unit word that follows them (shared by detector and engine)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from ._text import AnswerText, content_words

__all__ = [
    "DATE",
    "TIME_OF_DAY",
    "ContextQuantities",
    "Quantity",
    "QuantityVerdict",
    "citation_numbers",
    "citations",
    "clock_time_spans",
    "extract_quantities",
    "judge_quantity",
    "measure",
]

QuantityVerdict = Literal["present", "conflict", "unseen"]

# A number with optional thousands separators and decimals, not glued to letters
# (so "A320" or "3rd" are not read as quantities), and the word right after it.
# A decimal glued to letters ("3.5GHz") is read whole or not at all, never as its whole
# part "3" (tests/unit/core/test_quantities.py).
_NUMBER = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?!\w|\.\d+[^\W\d_])"
    r"(?:(?:\s*|-)(%|[A-Za-z]+))?"
)
# Numbers written as words ("a three-year warranty" against "3-year"); "one" is left out,
# it is far more often a pronoun ("one of the", "the one") than a count.
_SMALL = "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
_SMALL += " sixteen seventeen eighteen nineteen"
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety"
_WORD_VALUES = {w: i + 2 for i, w in enumerate(_SMALL.split())} | {
    w: 20 + 10 * i for i, w in enumerate(_TENS.split())
}
_DIGIT_WORDS = {
    w: i + 1 for i, w in enumerate("one two three four five six seven eight nine".split())
}
# The look-ahead names the first letters of the number words: it changes no match, and
# spares the engine trying 26 alternatives at every word boundary (3x faster on long
# contexts, which are read once per checked answer).
_NUMBER_WORD = re.compile(
    rf"\b(?=[tfsen])({'|'.join(_WORD_VALUES)})(?:[\s-]({'|'.join(_DIGIT_WORDS)}))?\b"
    r"(?:(?:\s+|-)([A-Za-z]+))?",
    re.IGNORECASE,
)
#: The unit of a clock time, read as minutes after midnight ("9 PM" is 1260).
TIME_OF_DAY = "time of day"
# A clock time: an hour with "am"/"pm" ("9 PM", "11:30 a.m."), or an hour with minutes
# ("21:00", a record's "11:0-21:0"). Read apart, "9 PM" was the number 9 against a
# record's "21:0", and "11:00 AM" the numbers 11 and 0 (tests/unit/core/test_quantities.py).
_TIME = re.compile(
    r"(?<![\w.:])(\d{1,2})(?::(\d{1,2}))?\s?([ap])(?:\.\s?m\.|\s?m\b)"
    r"|(?<![\w.:])(\d{1,2}):(\d{1,2})(?![\w:])",
    re.IGNORECASE,
)
_YEAR_RANGE = (1000, 2100)
# A half written in words is one amount with its unit: "half an hour" (0.5 hour), "five and half
# years" and "two hours and a half" (N + 0.5), "an hour and a half" (1.5). Read apart, "five and
# half years" was the number 5 and "half an hour" nothing, so an answer's "every 5.5 years" or "30
# minutes" conflicted (tests/unit/core/models/detection/test_rules.py).
_HALF_OF = rf"\d{{1,3}}|{'|'.join(_WORD_VALUES)}|{'|'.join(_DIGIT_WORDS)}|an?"
_HALF = re.compile(
    r"\bhalf\s+(?:of\s+)?an?\s+(?P<unit>[A-Za-z]+)"
    rf"|\b(?P<whole>{_HALF_OF})\s+and\s+(?:a\s+)?half\s+(?P<unit_after>[A-Za-z]+)"
    rf"|\b(?P<count>{_HALF_OF})\s+(?P<unit_before>[A-Za-z]+)\s+and\s+a\s+half\b",
    re.IGNORECASE,
)
_HALF_WORD = re.compile(r"\bhalf\b", re.IGNORECASE)
# How far a match of _HALF reaches from its "half": the longest form, "seventeen
# millimetres and a half", holds 28 characters before it.
_HALF_REACH = 60
_SPACE = re.compile(r"\s")
# The same half written as a fraction: "6 1/2 months", "6-1/2", "6½" (6.5 months), "1/2 mile"
# (0.5 mile). Read apart, "6 1/2 months" was 6, 1 and "2 months"
# (tests/unit/core/test_quantities.py).
_HALF_FRACTION = re.compile(
    r"(?<![\w./])(?:(?P<whole>\d{1,3})(?:\s+|-)?)?(?:(?<![\d/])1/2|\u00bd)(?![\w/])"
    r"\s*(?P<unit>[A-Za-z]+)"
)
# A number that cites a source ("(Passages 1, 2, and 3)", "[2]", a context's "passage 1:"
# label) states no amount. Current models cite the passages they answer from; read as
# quantities, citations were "unseen" numbers in good answers (tests/unit/core/test_quantities.py).
_CITATION = re.compile(
    r"\b(?=[pdscPDSC])(?:passages?|documents?|docs?|sources?|contexts?|snippets?|excerpts?)"
    r"\s*#?\s*\d{1,2}(?:\s*(?:,\s*and|,\s*or|,|and|or|&|-|\u2013|to)\s*\d{1,2})*\b"
    r"|\[\d{1,2}(?:\s*[,\u2013-]\s*\d{1,2})*\]",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
# The word after a citation-shaped number: with a measurement unit it was an amount all
# along ("[50] metres", "Passage 5 km"), not a citation (tests/unit/core/test_quantities.py).
_WORD_AFTER = re.compile(r"\s*(%|[A-Za-z]+)")
_BRACKETED = re.compile(r"\[(\d{1,4})(\.\d+)?\]\s*(%|[A-Za-z]+)")
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
    decimals: int = 0
    """Place of the last significant digit: 2 for "2.65", 0 for "7", -1 for "540"."""
    number_end: int = -1
    """End of the number itself ("4.2" of "4.2 km", "twenty-five" of "twenty-five people")."""
    years: int = 1
    """How many years a year stands for: 10 for a decade ("1950s"), 100 for "1800s", 101
    for a century (the "19th century" is 1800 to 1900)."""


# Measurement units by dimension, each with its size in the dimension's base unit. Only
# words that are surely units: the word after a number is often a noun ("420 people"),
# and a noun must not turn a copied number into a conflict. Scale words ("million") form
# a dimension of their own, so "4.2 billion" against "4.2 million" is a conflict too.
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
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
# Temperatures in degrees Celsius; Fahrenheit also has an offset (see ``measure``).
_TEMPERATURE_UNITS = {"°c": 1.0, "°f": 5 / 9}
_OFFSETS = {"°f": -32.0}
_UNITS: dict[str, tuple[str, float]] = {
    unit: (dimension, size)
    for dimension, table in (
        ("length", _LENGTH),
        ("mass", _MASS),
        ("volume", _VOLUME),
        ("duration", _DURATION),
        ("area", _AREA),
        ("scale", _SCALE),
        ("temperature", _TEMPERATURE_UNITS),
    )
    for unit, size in table.items()
}


def _unit(word: str | None) -> str | None:
    if word is None:
        return None
    word = word.lower()
    if word in _NOT_UNITS:
        return None
    # "meters" and "meter" name the same unit.
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _clock_times(text: str) -> list[Quantity]:
    """The clock times of ``text`` as quantities of :data:`TIME_OF_DAY` (see ``_TIME``)."""
    out = []
    for match in _TIME.finditer(text):
        if match.group(3):  # with am / pm
            hour, minute = int(match.group(1)), int(match.group(2) or 0)
            if not 1 <= hour <= 12:
                continue
            hour = hour % 12 + (12 if match.group(3).lower() == "p" else 0)
        else:
            hour, minute = int(match.group(4)), int(match.group(5))
            if hour > 24:
                continue
        if minute >= 60:
            continue
        value = float(hour * 60 + minute)
        start, end = match.start(), match.end()
        out.append(Quantity(value, TIME_OF_DAY, start, end, is_year=False, number_end=end))
    return out


def clock_time_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the clock times of ``text`` ("9 PM", "21:00"; see ``_TIME``)."""
    return [(q.start, q.end) for q in _clock_times(text)]


def _halves(text: str) -> list[Quantity]:
    """The halves written in words of ``text`` with a measurement unit (see ``_HALF``)."""
    out = []
    for match in _near_the_word_half(text):
        unit = _unit(match.group("unit") or match.group("unit_after") or match.group("unit_before"))
        if unit not in _UNITS:
            continue  # "half a dozen", "two and a half people": no amount the rule compares
        whole = (match.group("whole") or match.group("count") or "").lower()
        if match.group("unit"):
            value = 0.5
        elif whole.isdigit():
            value = int(whole) + 0.5
        else:
            value = _WORD_VALUES.get(whole, _DIGIT_WORDS.get(whole, 1)) + 0.5
        start, end = match.start(), match.end()
        out.append(Quantity(value, unit, start, end, is_year=False, decimals=1, number_end=end))
    return out


def _near_the_word_half(text: str) -> list[re.Match[str]]:
    """``_HALF``'s matches in ``text``, searched only around the word "half".

    ``_HALF`` tried at every word of a long context cost 30 ms at 20,000 words; every
    match holds the word "half", at most ``_HALF_REACH`` characters from either end.
    """
    found: dict[int, re.Match[str]] = {}
    for hit in _HALF_WORD.finditer(text):
        space = _SPACE.search(text, hit.end() + _HALF_REACH)
        end = space.start() if space else len(text)
        for match in _HALF.finditer(text, max(0, hit.start() - _HALF_REACH), end):
            # A window that ends inside another window's match may cut it short.
            if match.start() not in found or match.end() > found[match.start()].end():
                found[match.start()] = match
    return [found[start] for start in sorted(found)]


def _fraction_halves(text: str) -> list[Quantity]:
    """The halves written as fractions of ``text`` with a measurement unit (``_HALF_FRACTION``)."""
    if "1/2" not in text and "\u00bd" not in text:
        return []  # the common case: no pass of the pattern over a long context
    out = []
    for match in _HALF_FRACTION.finditer(text):
        unit = _unit(match.group("unit"))
        if unit not in _UNITS:
            continue
        value = int(match.group("whole") or 0) + 0.5
        start, end = match.start(), match.end()
        out.append(Quantity(value, unit, start, end, is_year=False, decimals=1, number_end=end))
    return out


def _is_amount_unit(word: str) -> bool:
    return word == "%" or _unit(word) in _UNITS


def citations(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the citations of ``text``: "Passage 3", "(Passages 1 and 2)", "[1]".

    The source noun and its numbers (see ``_CITATION``). A citation-shaped number with a
    measurement unit after it is an amount, not a citation ("[50] metres").
    """
    out = []
    for match in _CITATION.finditer(text):
        after = _WORD_AFTER.match(text, match.end())
        if after is not None and _is_amount_unit(after.group(1)):
            continue
        out.append(match.span())
    return out


def citation_numbers(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the numbers of ``text`` that cite a source (:func:`citations`)."""
    return [
        digits.span()
        for start, end in citations(text)
        for digits in _DIGITS.finditer(text, start, end)
    ]


# A number with its unit glued on ("500m", "20kg", "1.5L", "£9.8m"): read apart, "500m" was no
# number at all and "9.8m" the number 9 (tests/unit/core/test_quantities.py). Case counts: "5G" and
# "4K" are no amounts, and "2nd" is not read ("1950s" is a decade: ``_decades``). Any other unit of
# two to four letters is read as its spaced twin: "16GB" is 16 "gb", as "16 GB" is, and "3.5GHz" is
# 3.5, not 3 (tests/unit/core/test_quantities.py).
_GLUED = re.compile(
    r"(?<![\w.])([$\u00a3\u20ac\u00a5]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?([A-Za-z]{1,4})(?!\w)"
)
# Glued letters that are no unit: ordinals, and the clock's "am"/"pm" (read as times).
_NOT_GLUED_UNITS = frozenset("st nd rd th am pm".split())
_GLUED_UNITS = frozenset(
    "km m cm mm mi ft yd kg g mg lb lbs oz l L ml mL ha hr hrs min sec".split()
)
_GLUED_SCALE = {"M": "million", "mn": "million", "B": "billion", "bn": "billion",
                "tn": "trillion"}  # fmt: skip
# After a currency sign a lower-case "m" or "b" is a magnitude, not metres ("$2m"), and so
# is "k" ("$50k"; alone, "4K" is a screen).
_MONEY_SCALE = {"m": "million", "b": "billion", "k": "thousand", "K": "thousand"}


def _glued_word(suffix: str) -> str | None:
    """The unit word of a glued suffix outside the known units ("GB" of "16GB"), if any."""
    if len(suffix) < 2 or suffix.lower() in _NOT_GLUED_UNITS:
        return None  # "5G", "4K", "2nd", "10am"
    return _unit(suffix)


def _glued_amounts(text: str) -> list[Quantity]:
    """Numbers with a unit or a magnitude glued to them (see ``_GLUED``)."""
    out = []
    for match in _GLUED.finditer(text):
        suffix = match.group(4)
        unit = (_MONEY_SCALE.get(suffix) if match.group(1) else None) or _GLUED_SCALE.get(suffix)
        if unit is None and suffix in _GLUED_UNITS:
            unit = _unit(suffix)
        if unit is None:
            unit = _glued_word(suffix)
        if unit is None:
            continue
        digits = match.group(2).replace(",", "")
        out.append(
            Quantity(
                float(digits + (match.group(3) or "")),
                unit,
                match.start(2),
                match.end(),
                is_year=False,
                decimals=_decimals(digits, match.group(3)),
                number_end=match.end(3) if match.group(3) else match.end(2),
            )
        )
    return out


# A decade: a year ending in 0 with "s" or "'s" ("the 1950s", "1880's"). Unread, a wrong
# decade was only an absent word, and "built in the 1950s" passed where "in 1950" was
# caught (tests/unit/core/models/detection/test_rules.py). "1800s" is mostly said of a
# century: read as a hundred years, the wider reading never invents a conflict.
_DECADE = re.compile(r"(?<![\w.])(1\d{2}0|20[0-9]0)(?:['\u2019]?s)(?!\w)")


def _span_of_years(first: int, years: int, start: int, end: int) -> Quantity:
    """A year standing for ``years`` years from ``first``, written from ``start`` to ``end``."""
    return Quantity(
        float(first),
        None,
        start,
        end,
        is_year=True,
        decimals=_decimals(str(first), None),
        number_end=end,
        years=years,
    )


def _decades(text: str) -> list[Quantity]:
    """Decades and centuries written as years with an "s" ("1950s", "1800s")."""
    out = []
    for match in _DECADE.finditer(text):
        year = match.group(1)
        years = 100 if year.endswith("00") else 10
        out.append(_span_of_years(int(year), years, match.start(1), match.end()))
    return out


# A century, in digits or in words ("the 19th century", "nineteenth-century"), from the 11th to the
# 21st: the years it spans, by either count (the 19th century is 1801-1900 by the calendar,
# 1800-1899 as most say it), so 1800-1900. Unread, "19th" was an absent word, and a right century
# was flagged as readily as a wrong one (tests/unit/core/models/detection/test_rules.py).
_CENTURY_WORDS = {
    w: 11 + i
    for i, w in enumerate(
        "eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth "
        "nineteenth twentieth".split()
    )
}
_CENTURY = re.compile(
    r"\b(?:(1[1-9]|2[01])(?:st|nd|rd|th)|"
    rf"({'|'.join(_CENTURY_WORDS)}|twenty[\s-]first))[\s-]+centur(?:y|ies)\b"
    r"(?!\s*(?:BCE?\b|B\.C\.))",
    re.IGNORECASE,
)


def _centuries(text: str) -> list[Quantity]:
    """Centuries from the 11th to the 21st, each as the years it spans (``_CENTURY``)."""
    if "centur" not in text.lower():
        return []  # most passages: spares the regex a try at every word (8 ms on 20k words)
    out = []
    for match in _CENTURY.finditer(text):
        if match.group(1):
            number = int(match.group(1))
        else:  # "twenty-first" is the one ordinal not in the table
            number = _CENTURY_WORDS.get(match.group(2).lower(), 21)
        out.append(_span_of_years(100 * (number - 1), 101, match.start(), match.end()))
    return out


def _bracketed_amounts(text: str) -> list[Quantity]:
    """Numbers in brackets with a measurement unit after them ("[50] metres")."""
    out = []
    for match in _BRACKETED.finditer(text):
        if not _is_amount_unit(match.group(3)):
            continue
        value = float(match.group(1) + (match.group(2) or ""))
        decimals = _decimals(match.group(1), match.group(2))
        number_end = match.end(2) if match.group(2) else match.end(1)
        unit = _unit(match.group(3))
        out.append(
            Quantity(
                value,
                unit,
                match.start(1),
                match.end(),
                is_year=False,
                decimals=decimals,
                number_end=number_end,
            )
        )
    return out


# An era after a year: "1889 BC" is not 1889. A year before Christ is read as a negative
# year, so it conflicts with the same digits in the common era (and matches "1889 BCE").
_BEFORE_CHRIST = re.compile(r"\s*(?:BCE?\b|B\.\s?C\.(?:\s?E\.)?)", re.IGNORECASE)
_BC_YEAR = re.compile(r"(?<![\w.,])(\d{1,4})(?=\s*(?:BCE?\b|B\.\s?C\.))", re.IGNORECASE)


def _bc_years(text: str) -> list[Quantity]:
    """Years before Christ ("1889 BC", "500 B.C."), as negative years."""
    if not _BC_HINT.search(text):
        return []
    out = []
    for match in _BC_YEAR.finditer(text):
        era = _BEFORE_CHRIST.match(text, match.end())
        end = era.end() if era else match.end()
        out.append(
            Quantity(
                float(-int(match.group(1))),
                None,
                match.start(1),
                end,
                is_year=True,
                number_end=match.end(1),
            )
        )
    return out


_BC_HINT = re.compile(r"\bB\.?\s?C", re.IGNORECASE)

# A year in roman numerals, only where a year is meant: after "in", "since", "from",
# "until", "by" or "year", in capitals, at least three letters, from 1000 to 2100 ("in
# MCML"). Elsewhere capitals are initials or names ("MD", "MIX", "CIVIL").
_ROMAN_YEAR = re.compile(
    r"\b(?:in|since|from|until|till|by|year|anno)\s+(M{1,2}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})"
    r"(?:IX|IV|V?I{0,3}))\b"
)
_ROMAN = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}


def _roman_value(numeral: str) -> int:
    total = 0
    for i, ch in enumerate(numeral):
        value = _ROMAN[ch]
        after = _ROMAN[numeral[i + 1]] if i + 1 < len(numeral) else 0
        total += -value if value < after else value
    return total


def _roman_years(text: str) -> list[Quantity]:
    """Years in roman numerals where a year is meant ("built in MCML"; see ``_ROMAN_YEAR``)."""
    if "M" not in text:
        return []
    out = []
    for match in _ROMAN_YEAR.finditer(text):
        numeral = match.group(1)
        year = _roman_value(numeral)
        if len(numeral) >= 3 and _YEAR_RANGE[0] <= year <= _YEAR_RANGE[1]:
            out.append(_span_of_years(year, 1, match.start(1), match.end(1)))
    return out


#: The unit of a calendar date, read as ``year * 10000 + month * 100 + day``.
DATE = "date"
_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        )
    )
    for name in names.split()
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
# A date written with its month in words ("31 March 1889", "March 31, 1889") or in ISO
# form ("1889-03-31"). Read apart, "1889-03-31" was the numbers 1889, 3 and 31, and the
# 3 was absent from a context that writes "31 March 1889" (tests/unit/core/test_quantities.py).
_WRITTEN_DATE = re.compile(
    rf"\b(?:(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{_MONTH})\.?,?\s+"
    rf"|(?P<month_first>{_MONTH})\.?\s+(?P<day_after>\d{{1,2}})(?:st|nd|rd|th)?,?\s+)"
    r"(?P<year>\d{4})\b",
    re.IGNORECASE,
)
_ISO_DATE = re.compile(r"(?<![\w.\-])(\d{4})-(\d{2})-(\d{2})(?![\w\-]|\.\d)")


def _date(year: int, month: int, day: int, start: int, end: int) -> Quantity | None:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    value = float(year * 10000 + month * 100 + day)
    return Quantity(value, DATE, start, end, is_year=False, number_end=end)


def _dates(text: str) -> tuple[list[Quantity], list[Quantity]]:
    """``(dates, iso_years)``: the calendar dates of ``text``, and the year of each ISO one.

    A written date's numbers are read as well (the context's "31 March 1889" still holds
    the year 1889); an ISO date's are not, save its year.
    """
    dates: list[Quantity] = []
    years: list[Quantity] = []
    for match in _ISO_DATE.finditer(text):
        year, month, day = (int(g) for g in match.groups())
        date = _date(year, month, day, match.start(), match.end())
        if date is not None:
            dates.append(date)
            years.append(_span_of_years(year, 1, match.start(1), match.end(1)))
    if not _MONTH_HINT.search(text):
        return dates, years
    for match in _WRITTEN_DATE.finditer(text):
        month = _MONTHS[(match.group("month") or match.group("month_first")).lower()]
        day = int(match.group("day") or match.group("day_after"))
        date = _date(int(match.group("year")), month, day, match.start(), match.end())
        if date is not None:
            dates.append(date)
    return dates, years


_MONTH_HINT = re.compile(rf"\b(?:{_MONTH})\b", re.IGNORECASE)

# A temperature: "212 °F", "100°C", "100 degrees Celsius", "-40 ºF". NFKC reads "℃" as
# "°C" (core/_normalize). Read as a number with no unit, "212 °F" was absent from a
# context that says "100 °C" (tests/unit/core/test_quantities.py).
_TEMPERATURE = re.compile(
    r"(?<![\w.])(-?\d+)(\.\d+)?\s*(?:[°º]\s*|degrees?\s+)"
    r"(c|f|celsius|centigrade|fahrenheit)\b",
    re.IGNORECASE,
)


def _temperatures(text: str) -> list[Quantity]:
    """The temperatures of ``text``, in their unit ``°c`` or ``°f`` (see ``_TEMPERATURE``)."""
    if "°" not in text and "º" not in text and "degree" not in text.lower():
        return []
    out = []
    for match in _TEMPERATURE.finditer(text):
        unit = "°f" if match.group(3).lower().startswith("f") else "°c"
        digits = match.group(1).lstrip("-")
        out.append(
            Quantity(
                float(match.group(1) + (match.group(2) or "")),
                unit,
                match.start(1),
                match.end(),
                is_year=False,
                decimals=max(_decimals(digits, match.group(2)), 0),
                number_end=match.end(2) if match.group(2) else match.end(1),
            )
        )
    return out


def _decimals(digits: str, fraction: str | None) -> int:
    """The place of a number's last significant digit: 2 for "2.65", -1 for "540"."""
    return len(fraction) - 1 if fraction else -(len(digits) - len(digits.rstrip("0")))


def extract_quantities(text: str) -> list[Quantity]:
    """Every number of ``text``, in digits or in words, with its unit word (or ``None``).

    A clock time is one quantity of unit :data:`TIME_OF_DAY`; its digits are not read
    apart, nor are the words of a half in words or the digits of a half as a fraction
    ("five and half years" and "5 1/2 years" are 5.5 years). A decade ("1950s") is a year
    standing for ten years (:attr:`Quantity.years`), a century ("19th century") for the
    years it spans. A year before Christ ("500 BC") is a negative year, a roman year where
    a year is meant ("in MCML") a year, a calendar date ("31 March 1889", "1889-03-31") one
    quantity of unit :data:`DATE`, a temperature one of unit ``°c`` or ``°f``. Numbers
    that cite a source
    (:func:`citation_numbers`) are left out.
    """
    dates, iso_years = _dates(text)
    found = _clock_times(text) + _halves(text) + _fraction_halves(text) + _bracketed_amounts(text)
    found += _glued_amounts(text) + _decades(text) + _centuries(text) + _temperatures(text)
    found += _bc_years(text) + _roman_years(text) + iso_years
    inside = [(q.start, q.end) for q in found] + citation_numbers(text)
    inside += [(q.start, q.end) for q in dates if q.end - q.start == 10]  # ISO dates
    found = dates + found  # a date first: its verdict marks the whole date
    found += _digit_numbers(text, inside) + _word_numbers(text, inside)
    return sorted(found, key=lambda q: q.start)


def _digit_numbers(text: str, inside: list[tuple[int, int]]) -> list[Quantity]:
    """The numbers written in digits, outside the ``inside`` ranges already read."""
    found: list[Quantity] = []
    for match in _NUMBER.finditer(text):
        if any(a <= match.start(1) < b for a, b in inside):
            continue
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
        decimals = _decimals(digits, match.group(2))
        number_end = match.end(2) if match.group(2) else match.end(1)
        found.append(
            Quantity(
                value, unit, match.start(1), match.end(), is_year, decimals, number_end=number_end
            )
        )
    return found


def _word_numbers(text: str, inside: list[tuple[int, int]]) -> list[Quantity]:
    """The numbers written in words, outside the ``inside`` ranges already read."""
    found: list[Quantity] = []
    for match in _NUMBER_WORD.finditer(text):
        if any(a <= match.start(1) < b for a, b in inside):
            continue
        tens = _WORD_VALUES[match.group(1).lower()]
        ones = _DIGIT_WORDS[match.group(2).lower()] if match.group(2) and tens >= 20 else 0
        unit = _unit(match.group(3) if match.group(2) is None or ones else None)
        number_end = match.end(2) if ones else match.end(1)
        end = match.end() if unit else number_end
        found.append(
            Quantity(
                float(tens + ones), unit, match.start(1), end, is_year=False, number_end=number_end
            )
        )
    return found


def _comparable(a: Quantity, b: Quantity) -> bool:
    if a.is_year or b.is_year:
        return a.is_year and b.is_year
    return a.unit is not None and a.unit == b.unit


def measure(quantity: Quantity) -> tuple[str, float] | None:
    """``(dimension, amount in the base unit)`` of a quantity with a known unit, else None."""
    known = _UNITS.get(quantity.unit or "")
    if known is None:
        return None
    return known[0], (quantity.value + _OFFSETS.get(quantity.unit or "", 0.0)) * known[1]


def _same_amount(quantity: Quantity, other: Quantity) -> bool:
    """Whether ``other`` states ``quantity``'s amount in another unit of its dimension.

    The answer's number is read as written: "2.6 miles" stands for 2.55 to 2.65 miles and
    "540 kg" for 535 to 545 kg, so a correct conversion of "4.2 km" (2.61 miles) matches
    and "4.2 miles" does not. Rounding is allowed up to 10% ("3 miles" is not a rounding
    of 2.61 miles); in the same unit only the same value matches.
    """
    mine, theirs = measure(quantity), measure(other)
    if mine is None or theirs is None or mine[0] != theirs[0]:
        return False
    if quantity.unit == other.unit:
        return quantity.value == other.value
    size = _UNITS[quantity.unit or ""][1]  # the answer's unit in the base unit
    slack = min(0.5 * 10.0**-quantity.decimals * size, 0.1 * abs(theirs[1])) * 1.01
    return abs(mine[1] - theirs[1]) <= slack


def judge_quantity(quantity: Quantity, known: Sequence[Quantity]) -> QuantityVerdict:
    """A number of an answer against the context's numbers.

    A number with a measurement unit ("4.2 km", "3 million") is judged by amount: it is
    present when the context states the same amount in any unit of that dimension, and a
    conflict when the context states only other amounts of that dimension, so "4.2 miles"
    against "4.2 km" conflicts. Any other number is judged by value.

    Returns:
        ``"present"`` when it occurs among ``known``; ``"conflict"`` when it does not
        while a comparable number (both years, the same unit word, or the same
        dimension) does; ``"unseen"`` when nothing comparable occurs.
    """
    # A time of day is compared with times of day only, and a number never with one.
    clock = quantity.unit == TIME_OF_DAY
    known = [k for k in known if (k.unit == TIME_OF_DAY) == clock]
    if quantity.is_year:
        verdict = _judge_years(quantity, [k for k in known if k.is_year])
        if verdict is not None:
            return verdict
    dimension = measure(quantity)
    if dimension is not None:
        if any(_same_amount(quantity, k) for k in known):
            return "present"
        if any((m := measure(k)) is not None and m[0] == dimension[0] for k in known):
            return "conflict"
    if quantity.unit == DATE:
        return _judge_date(quantity, known)
    if any(k.value == quantity.value or _same_plain_amount(quantity, k) for k in known):
        return "present"
    if any(_comparable(k, quantity) for k in known):
        return "conflict"
    return "unseen"


def _judge_date(date: Quantity, known: Sequence[Quantity]) -> QuantityVerdict:
    """A date against the context's dates; ``"unseen"`` where it has none (its parts decide)."""
    dates = [k for k in known if k.unit == DATE]
    if not dates:
        return "unseen"
    return "present" if any(k.value == date.value for k in dates) else "conflict"


def _plain(quantity: Quantity) -> tuple[float, float] | None:
    """``(amount, slack)`` of a count: a number with a scale word ("1.2 thousand") or none.

    "1.2 thousand" stands for 1,150 to 1,250 (it is read as written, like a measurement);
    a number followed by no unit ("1,200 inhabitants") for itself. None for a year, a
    clock time or a measurement.
    """
    if quantity.is_year or quantity.unit in (TIME_OF_DAY, DATE):
        return None
    scale = _SCALE.get(quantity.unit or "")
    if scale is not None:
        return quantity.value * scale, 0.5 * 10.0**-quantity.decimals * scale
    if quantity.unit in _UNITS:
        return None
    return quantity.value, 0.0


def _same_plain_amount(quantity: Quantity, other: Quantity) -> bool:
    """Whether one of two counts says the other in words of scale ("1.2 thousand" and 1,200)."""
    if (quantity.unit in _SCALE) == (other.unit in _SCALE):
        return False  # both counts or both scaled: compared by value and unit
    mine, theirs = _plain(quantity), _plain(other)
    if mine is None or theirs is None:
        return False
    return abs(mine[0] - theirs[0]) <= max(mine[1], theirs[1]) * 1.01


def _judge_years(year: Quantity, known: Sequence[Quantity]) -> QuantityVerdict | None:
    """A year of an answer against the context's years, where either side holds a span.

    Each year is the span of years it stands for (a decade, a century): the answer's year
    is present when a context year lies inside it ("the 1880s" against 1887). When the
    context holds only spans, one that overlaps it makes it unseen ("1955" against "the
    1950s" says more than the source, it does not contradict it); with single years there,
    a span about something else must not hide a wrong year ("built in 1950" against 1887
    and an "early twentieth century" of the radio masts), so it is judged by them
    (tests/unit/core/models/detection/test_rules.py). Otherwise a conflict when the context
    holds years. ``None`` where the single years decide, or no span is involved: compared by
    value, as before.
    """
    if year.years == 1 and all(k.years == 1 for k in known):
        return None
    start, end = year.value, year.value + year.years
    if any(start <= k.value and k.value + k.years <= end for k in known):
        return "present"
    singles = any(k.years == 1 for k in known)
    if not singles and any(k.value < end and start < k.value + k.years for k in known):
        return "unseen"
    if year.years == 1:
        return None  # judged by value against the context's single years
    return "conflict" if known else None


def _topic(sentence: str) -> frozenset[str]:
    """What a sentence is about: its content words, numbers and units left out."""
    return frozenset(w for w in content_words(sentence) if _is_topic_word(w))


@lru_cache(maxsize=1 << 16)
def _is_topic_word(word: str) -> bool:
    # Passages repeat their words: a long context costs one test per distinct word.
    return (
        not any(c.isdigit() for c in word)
        and _unit(word) not in _UNITS
        and word not in _WORD_VALUES
    )


class ContextQuantities:
    """The numbers of a context, each with what its passage is about.

    A number in an answer is supported by a context statement about the same thing,
    not by the same digits anywhere: a retrieved passage "In 1950 a 500 meters long
    bridge was built in Lyon" does not support "The Eiffel Tower was built in 1950 and
    is 500 meters tall" while another passage dates and measures the tower. So an
    answer's number is judged against the passages holding a comparable number that
    share the most content words with the answer's sentence (and those sharing at least
    half as many); when no such passage shares a word, against every number of the
    context, as before. Passages, not sentences, are the unit: a summary combines
    sentences of one document whose pronouns hide the subject ("They married in
    2001"); judged by sentence, 25 clean held-out answers got a false conflict, by
    passage none (``test_numbers_are_judged_against_statements_about_the_same_thing``).
    """

    def __init__(self, context: Sequence[str]) -> None:
        self._statements: list[tuple[str, list[Quantity]]] = []
        for passage in context:
            found = extract_quantities(passage)
            if found:
                self._statements.append((passage, found))
        self.all: list[Quantity] = [q for _, found in self._statements for q in found]
        # A passage's topic is read only when it holds a number related to one of the
        # answer's, so most passages of a long context are never analysed.
        self._topics: dict[int, frozenset[str]] = {}

    def _topic_of(self, statement: int) -> frozenset[str]:
        topic = self._topics.get(statement)
        if topic is None:
            topic = self._topics[statement] = _topic(self._statements[statement][0])
        return topic

    def judge(self, quantity: Quantity, answer: str | AnswerText) -> QuantityVerdict:
        """``quantity`` (found in ``answer``) against the statements about the same thing."""
        return judge_quantity(quantity, self.relevant(quantity, answer))

    def relevant(self, quantity: Quantity, answer: str | AnswerText) -> list[Quantity]:
        """The context numbers ``quantity`` is compared with (see the class docstring).

        ``answer``'s sentences are read from its :class:`AnswerText` (split once per answer).
        """
        topic = _topic(AnswerText.of(answer).sentence_at(quantity.start))
        scored = [
            (len(topic & self._topic_of(i)), found)
            for i, (_, found) in enumerate(self._statements)
            if any(_related(k, quantity) for k in found)
        ]
        best = max((overlap for overlap, _ in scored), default=0)
        if best == 0:
            return self.all
        return [q for overlap, found in scored if 2 * overlap >= best for q in found]


def _related(known: Quantity, quantity: Quantity) -> bool:
    """Whether ``known`` can support or contradict ``quantity``."""
    if known.value == quantity.value or _comparable(known, quantity):
        return True
    mine, theirs = measure(quantity), measure(known)
    return mine is not None and theirs is not None and mine[0] == theirs[0]
