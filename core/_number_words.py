"""Numbers written in words ("five hundred meters", "eighteen eighty-nine", "six and a half").

The readers of :func:`core._quantities.extract_quantities` for numbers in English words.
A run of number words is found here; what it is worth is text2num's (3.x, MIT: a compiled
parser, about 2 microseconds a run), which reads every well-formed English number ("three
hundred and thirty", "two point five", "twelve hundred fifty"). The hand table it replaced
read only two to ninety-nine, so "five hundred meters" was no number at all and a right
"three hundred thirty meters" an absent word.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ._units import (
    SCALE,
    UNITS,
    YEAR_RANGE,
    Quantity,
    decimals_of,
    unit_word,
)

__all__ = [
    "NUMBER_WORDS",
    "fraction_halves",
    "halves",
    "word_numbers",
]

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ["hundred", *SCALE]
NUMBER_WORDS: frozenset[str] = frozenset(_ONES + _TENS + _SCALES)
"""The words numbers are written with (lower case)."""

_WORD = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
_FIRST = "|".join(sorted(set(_ONES + _TENS) - {"one"}, key=len, reverse=True))
_SCALE_WORD = "|".join(_SCALES)
# A run of number words, joined by spaces, hyphens, "and" ("three hundred and thirty") or
# "point" ("two point five"). It starts with a number word other than "one" (a pronoun
# more often than a count) or with "a", "an" or "one" before a scale word or "point" ("a
# hundred meters", "one point five"). The look-aheads name the first letters: they change
# no match, and spare the engine trying every alternative at every word of a long context
# (a third of the time on 20,000 tokens).
_RUN = re.compile(
    rf"\b(?:(?=[tTfFsSeEnNzZ])(?:{_FIRST})"
    rf"|(?=[aAoO])(?:an?|one)\s+(?:{_SCALE_WORD}|point\s+(?:{_WORD})))"
    rf"(?:(?:\s+|-)(?:(?:and|point)\s+)?(?:{_WORD}))*\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"[A-Za-z]+")
# The most words one number takes ("one million two hundred and thirty four thousand five
# hundred and sixty" is 13): a run is cut into numbers of at most this many, so a long run
# ("twenty two twenty two ...") costs linear time, not the 38 s of 2,000 words unbounded.
_LONGEST = 16
_UNIT_AFTER = re.compile(r"(?:\s+|-)([A-Za-z]+)")
_AT = re.compile(r"\bat\s+\Z", re.IGNORECASE)


class _Piece(NamedTuple):
    """One number of a run: its value, where it is, and whether it ends in a scale word."""

    value: float
    start: int
    end: int
    scale: str | None
    words: int


def _parse(phrase: str) -> float | None:
    """What ``phrase`` is worth as one English number (text2num), or None."""
    from text_to_num import alpha2digit, text2num  # compiled, 4 ms to import: on first use

    try:
        return float(text2num(phrase, "en"))
    except ValueError:
        pass
    if " point " not in phrase:
        return None
    digits = alpha2digit(phrase, "en")  # the decimals: "two point five" is "2.5"
    return float(digits) if re.fullmatch(r"\d+\.\d+", digits) else None


def _pieces(text: str, start: int, end: int) -> list[_Piece]:
    """The numbers of the run ``text[start:end]``, each as long as it can be read.

    Each starts where the last one ended: "nineteen fifty" is two, 19 and 50.
    """
    tokens = [(m.group(0).lower(), m.start(), m.end()) for m in _TOKEN.finditer(text, start, end)]
    out: list[_Piece] = []
    i = 0
    while i < len(tokens):
        piece = _longest_at(tokens, i)
        if piece is None:
            i += 1
            continue
        out.append(piece)
        i += piece.words
    return out


def _longest_at(tokens: list[tuple[str, int, int]], i: int) -> _Piece | None:
    """The longest number that starts at ``tokens[i]``, or None."""
    first = tokens[i][0]
    if first in ("and", "point") or (first in _SCALES and first != "hundred"):
        return None  # a joiner, or a scale word after digits ("40 million")
    for j in range(min(len(tokens), i + _LONGEST), i, -1):
        words = [w for w, _, _ in tokens[i:j]]
        if words[-1] in ("and", "point", "a", "an") or words == ["one"]:
            continue  # "one" alone is more often a pronoun ("one of the") than a count
        if words[0] in ("a", "an"):
            words[0] = "one"
        value = _parse(" ".join(words))
        if value is None:
            continue
        scale = words[-1] if len(words) > 1 and words[-1] in SCALE else None
        if scale is not None:
            value /= SCALE[scale]  # "five million" reads as "5 million" does
        return _Piece(value, tokens[i][1], tokens[j - 1][2], scale, j - i)
    return None


def _spoken_years(pieces: list[_Piece], text: str) -> list[_Piece]:
    """Two numbers said as a year ("nineteen fifty", "eighteen eighty-nine") made one.

    Not after "at": "at twelve fifteen" is a time.
    """
    out: list[_Piece] = []
    for piece in pieces:
        last = out[-1] if out else None
        if (
            last is not None
            and last.words == 1
            and 11 <= last.value <= 20
            and not _AT.search(text, max(0, last.start - 8), last.start)
            and piece.scale is None
            and 10 <= piece.value <= 99
            and piece.value.is_integer()
            and text[last.end : piece.start].strip(" -") == ""
        ):
            year = 100 * last.value + piece.value
            out[-1] = _Piece(year, last.start, piece.end, None, last.words + piece.words)
        else:
            out.append(piece)
    return out


def word_numbers(text: str, inside: list[tuple[int, int]]) -> list[Quantity]:
    """The numbers written in words, outside the ``inside`` ranges already read."""
    found: list[Quantity] = []
    for run in _RUN.finditer(text):
        if any(a <= run.start() < b for a, b in inside):
            continue
        pieces = _spoken_years(_pieces(text, run.start(), run.end()), text)
        for k, piece in enumerate(pieces):
            after = _UNIT_AFTER.match(text, piece.end) if k == len(pieces) - 1 else None
            found.append(_quantity(piece, after))
    return found


def _quantity(piece: _Piece, after: re.Match[str] | None) -> Quantity:
    """A number in words, with the unit word ``after`` it.

    A number ending in a scale word is read as its digits are ("five million people" is
    5 "million"), save before a measurement unit: "two thousand meters" is 2,000 meters.
    """
    value, unit, end = piece.value, unit_word(after.group(1)) if after else None, piece.end
    if piece.scale is not None and (unit not in UNITS or unit in SCALE):
        unit = piece.scale
    elif unit is not None and after is not None:
        value *= SCALE.get(piece.scale or "", 1.0)
        end = after.end()
    whole, _, fraction = f"{value:.6f}".rstrip("0").rstrip(".").partition(".")
    is_year = unit is None and value.is_integer() and YEAR_RANGE[0] <= value <= YEAR_RANGE[1]
    return Quantity(
        value,
        unit,
        piece.start,
        end,
        is_year=is_year,
        decimals=decimals_of(whole, "." + fraction if fraction else None),
        number_end=piece.end,
    )


# A half written in words is one amount with its unit: "half an hour" (0.5 hour), "five and half
# years" and "two hours and a half" (N + 0.5), "an hour and a half" (1.5). Read apart, "five and
# half years" was the number 5 and "half an hour" nothing, so an answer's "every 5.5 years" or "30
# minutes" conflicted (tests/unit/core/models/detection/test_rules.py).
_HALF_OF = rf"\d{{1,3}}|{'|'.join(w for w in _ONES + _TENS if w != 'zero')}|an?"
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


def halves(text: str) -> list[Quantity]:
    """The halves written in words of ``text`` with a measurement unit (see ``_HALF``)."""
    out = []
    for match in _near_the_word_half(text):
        unit = unit_word(
            match.group("unit") or match.group("unit_after") or match.group("unit_before")
        )
        if unit not in UNITS:
            continue  # "half a dozen", "two and a half people": no amount the rule compares
        whole = (match.group("whole") or match.group("count") or "").lower()
        if match.group("unit"):
            value = 0.5
        elif whole.isdigit():
            value = int(whole) + 0.5
        else:  # "an hour and a half" is one and a half hours
            value = (1.0 if whole in ("a", "an") else _parse(whole) or 1.0) + 0.5
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


def fraction_halves(text: str) -> list[Quantity]:
    """The halves written as fractions of ``text`` with a measurement unit (``_HALF_FRACTION``)."""
    if "1/2" not in text and "\u00bd" not in text:
        return []  # the common case: no pass of the pattern over a long context
    out = []
    for match in _HALF_FRACTION.finditer(text):
        unit = unit_word(match.group("unit"))
        if unit not in UNITS:
            continue
        value = int(match.group("whole") or 0) + 0.5
        start, end = match.start(), match.end()
        out.append(Quantity(value, unit, start, end, is_year=False, decimals=1, number_end=end))
    return out
