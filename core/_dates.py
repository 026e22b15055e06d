"""Years and dates in text: decades, centuries, eras, roman years and calendar dates.

The readers of :func:`core._quantities.extract_quantities` for what is a time in history
rather than an amount. Each returns :class:`~core._units.Quantity` objects: a year (with
the span of years it stands for), or a date of unit :data:`DATE`.

Dates are read with a regular expression and checked with :mod:`datetime`; dateparser
(1.5, BSD-3-Clause) reads more forms but takes 1 ms a date and 9 ms a sentence to
search, gives one reading of "04/03/1889" where two are meant, and finds "in 1887" a date.
"""

from __future__ import annotations

import datetime
import re

from ._units import YEAR_RANGE, Quantity, span_of_years

__all__ = [
    "DATE",
    "bc_years",
    "centuries",
    "dates",
    "decades",
    "roman_years",
]

#: The unit of a calendar date, read as ``year * 10000 + month * 100 + day``.
DATE = "date"

# A decade: a year ending in 0 with "s" or "'s" ("the 1950s", "1880's"). Unread, a wrong
# decade was only an absent word, and "built in the 1950s" passed where "in 1950" was
# caught (tests/unit/core/models/detection/test_rules.py). "1800s" is mostly said of a
# century: read as a hundred years, the wider reading never invents a conflict.
_DECADE = re.compile(r"(?<![\w.])(1\d{2}0|20[0-9]0)(?:['\u2019]?s)(?!\w)")


def decades(text: str) -> list[Quantity]:
    """Decades and centuries written as years with an "s" ("1950s", "1800s")."""
    out = []
    for match in _DECADE.finditer(text):
        year = match.group(1)
        years = 100 if year.endswith("00") else 10
        out.append(span_of_years(int(year), years, match.start(1), match.end()))
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


def centuries(text: str) -> list[Quantity]:
    """Centuries from the 11th to the 21st, each as the years it spans (``_CENTURY``)."""
    if "centur" not in text.lower():
        return []  # most passages: spares the regex a try at every word (8 ms on 20k words)
    out = []
    for match in _CENTURY.finditer(text):
        if match.group(1):
            number = int(match.group(1))
        else:  # "twenty-first" is the one ordinal not in the table
            number = _CENTURY_WORDS.get(match.group(2).lower(), 21)
        out.append(span_of_years(100 * (number - 1), 101, match.start(), match.end()))
    return out


# An era after a year: "1889 BC" is not 1889. A year before Christ is read as a negative
# year, so it conflicts with the same digits in the common era (and matches "1889 BCE").
_BEFORE_CHRIST = re.compile(r"\s*(?:BCE?\b|B\.\s?C\.(?:\s?E\.)?)", re.IGNORECASE)
_BC_YEAR = re.compile(r"(?<![\w.,])(\d{1,4})(?=\s*(?:BCE?\b|B\.\s?C\.))", re.IGNORECASE)
_BC_HINT = re.compile(r"\bB\.?\s?C", re.IGNORECASE)


def bc_years(text: str) -> list[Quantity]:
    """Years before Christ ("1889 BC", "500 B.C."), as negative years."""
    if not _BC_HINT.search(text):
        return []
    out = []
    for match in _BC_YEAR.finditer(text):
        era = _BEFORE_CHRIST.match(text, match.end())
        end = era.end() if era else match.end()
        year = -int(match.group(1))
        out.append(
            Quantity(float(year), None, match.start(1), end, is_year=True, number_end=match.end(1))
        )
    return out


# A year in roman numerals, only where a year is meant, in capitals, from 1000 to 2100:
# after a word that introduces a year ("in MCML", "c. MCML", "circa MCML") with at least
# three letters, or in brackets or after a dash with at least four ("(MCML)"; a
# three-letter "(MDC)" is more often a name's initials). Elsewhere capitals are initials
# or names ("MD", "MIX", "CIVIL", "MCML was the code"). Read only after the words, "(MCML)"
# and "c. MCML" passed a blocking route (tests/unit/core/test_numbers_as_written.py).
_ROMAN_TAIL = r"(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
# The numeral starts with its literal "M", so the engine skips to each capital M.
_ROMAN_NUMERAL = re.compile(rf"M(?<![^\W_]M)M?{_ROMAN_TAIL}\b")
_YEAR_CUE = re.compile(
    r"(?:\b(?:in|since|from|until|till|by|year|anno|circa|around|about|before|after|between"
    r"|and|to|c\.|ca\.)\s+|(?P<bracket>[(\[]|[\u2013\u2014-]\s?))\Z"
)
_CUE_REACH = 12  # "between" and a space, with room to spare
_ROMAN = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}


def _roman_value(numeral: str) -> int:
    total = 0
    for i, ch in enumerate(numeral):
        value = _ROMAN[ch]
        after = _ROMAN[numeral[i + 1]] if i + 1 < len(numeral) else 0
        total += -value if value < after else value
    return total


def roman_years(text: str) -> list[Quantity]:
    """Years in roman numerals where a year is meant ("built in MCML"; see ``_YEAR_CUE``)."""
    out = []
    for match in _ROMAN_NUMERAL.finditer(text):
        numeral = match.group(0)
        cue = _YEAR_CUE.search(text, max(0, match.start() - _CUE_REACH), match.start())
        if cue is None or len(numeral) < (4 if cue.group("bracket") else 3):
            continue
        year = _roman_value(numeral)
        if YEAR_RANGE[0] <= year <= YEAR_RANGE[1]:
            out.append(span_of_years(year, 1, match.start(), match.end()))
    return out


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
# A date written with its month in words ("31 March 1889", "March 31, 1889", "31-Mar-1889").
# Read apart, its day was a number absent from a context that writes it otherwise.
_WRITTEN_DATE = re.compile(
    rf"\b(?:(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:\s+(?:of\s+)?|[-/])(?P<month>{_MONTH})\.?"
    rf"(?:,?\s+|[-/])"
    rf"|(?P<month_first>{_MONTH})\.?(?:\s+|[-/])(?P<day_after>\d{{1,2}})(?:st|nd|rd|th)?"
    r"(?:,?\s+|[-/]))"
    r"(?P<year>\d{4})\b",
    re.IGNORECASE,
)
# A date in digits: ISO ("1889-03-31", "1889/03/31") or day and month first ("31/03/1889",
# "03/31/1889", "31.03.1889", "31/03/89"). Read apart, "31/03/1889" was the numbers 31, 3
# and 1889, and against a context's "31 March 1889" the 3 was absent: a right date was
# flagged (tests/unit/core/test_numbers_as_written.py). A two-digit year only after
# slashes: "3.10.12" is a version, "10-12-14" a range.
_ISO_DATE = re.compile(r"(?<![\w.\-/])(\d{4})([-/])(\d{1,2})\2(\d{1,2})(?![\w\-/]|\.\d)")
_NUMERIC_DATE = re.compile(
    r"(?<![\w.\-/,])(\d{1,2})(?:([.\-])(\d{1,2})\2(\d{4})|(/)(\d{1,2})/(\d{4}|\d{2}))"
    r"(?![\w\-/]|[.,]\d)"
)


def _date(year: int, month: int, day: int) -> float | None:
    try:
        datetime.date(year, month, day)
    except ValueError:
        return None
    return float(year * 10000 + month * 100 + day)


def _numeric_readings(first: int, second: int, year: str) -> list[float]:
    """The dates "first/second/year" may be: day or month first, a short year in two centuries."""
    years = [int(year)] if len(year) == 4 else [1900 + int(year), 2000 + int(year)]
    found = {
        value
        for y in years
        for day, month in ((first, second), (second, first))
        if (value := _date(y, month, day)) is not None
    }
    return sorted(found)


def dates(text: str) -> tuple[list[Quantity], list[Quantity]]:
    """``(dates, years)``: the calendar dates of ``text``, and the year of each one in digits.

    A date in words keeps its numbers (the context's "31 March 1889" still holds the year
    1889 for the number reader); a date in digits is one quantity, its year read apart
    (returned in ``years``) and its day and month not at all. A date in digits that reads
    both ways ("04/03/1889") holds both in :attr:`Quantity.readings`.
    """
    found: list[Quantity] = []
    years: list[Quantity] = []
    if "/" in text or "-" in text or "." in text:
        for match in _ISO_DATE.finditer(text):
            value = _date(int(match.group(1)), int(match.group(3)), int(match.group(4)))
            if value is not None:
                found.append(_date_quantity([value], match.start(), match.end()))
                years.append(span_of_years(int(match.group(1)), 1, *match.span(1)))
        for match in _NUMERIC_DATE.finditer(text):
            second, year = (3, 4) if match.group(2) else (6, 7)
            readings = _numeric_readings(
                int(match.group(1)), int(match.group(second)), match.group(year)
            )
            if readings:
                found.append(_date_quantity(readings, match.start(), match.end()))
                if len(match.group(year)) == 4:
                    years.append(span_of_years(int(match.group(year)), 1, *match.span(year)))
    found += _written_dates(text)
    return found, years


# A year, to find the written dates that end with it: scanning for a month name at every
# word cost 10 ms on 20,000 tokens, the years and a short window before each 1 ms.
_YEAR = re.compile(r"\d{4}(?<!\d\d\d\d\d)(?!\d)")
_DATE_REACH = 30  # "30th of September, " and more


def _written_dates(text: str) -> list[Quantity]:
    out = []
    for year in _YEAR.finditer(text):
        window = _WRITTEN_DATE.finditer(text, max(0, year.start() - _DATE_REACH), year.end())
        match = next((m for m in window if m.end() == year.end()), None)
        if match is None:
            continue
        month = _MONTHS[(match.group("month") or match.group("month_first")).lower()]
        day = int(match.group("day") or match.group("day_after"))
        value = _date(int(match.group("year")), month, day)
        if value is not None:
            out.append(_date_quantity([value], match.start(), match.end()))
    return out


def _date_quantity(readings: list[float], start: int, end: int) -> Quantity:
    return Quantity(
        readings[0],
        DATE,
        start,
        end,
        is_year=False,
        number_end=end,
        readings=tuple(readings[1:]),
    )
