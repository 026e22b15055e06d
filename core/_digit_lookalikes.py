"""Characters that look like digits, from Unicode's confusables table.

A wrong year written "195О" with a Cyrillic or Greek capital O, or "19З0" with a Cyrillic
Ze, shows a number and held none for the number check, so it passed a blocking route. A
digit of another script inside a number can show as another digit than it is worth: the
Bengali four "৪" shows as an 8, so "18৪9" shows 1889 and is worth 1849.

Which characters look like which digit is Unicode's confusables data (UTS #39), as the
``confusable-homoglyphs`` package ships it (3.x, MIT). It is loaded on first use (about
50 ms, once per process), only for a text where a character outside ASCII sits in a word
with digits, and asked once per such character.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache, lru_cache

__all__ = ["misread_digits", "read_lookalikes"]

# The characters whose look-alikes read as digits: the digits, and the letters the
# normalisation already reads as digits inside a number (core/_normalize.py).
_TARGETS = {**{d: d for d in "0123456789"}, "O": "0", "o": "0", "l": "1", "I": "1"}
# A word, in any script; those holding a digit are read ("195О", "19З0", "18৪9"). A
# pattern asking for the digit itself tried every start of a long word without one: 2.6 s
# for 8,000 letters.
_WORD = re.compile(r"[^\W_]+")


@cache
def _listed() -> dict[str, str]:
    """The characters the confusables data lists beside a digit or a digit-like letter."""
    from confusable_homoglyphs import confusables  # 1 MB of JSON: loaded on first use

    table: dict[str, str] = {}
    for target, digit in _TARGETS.items():
        for found in confusables.is_confusable(target, greedy=True, preferred_aliases=[]) or []:
            for glyph in found["homoglyphs"]:
                char = glyph["c"].strip("\u200e")  # right-to-left ones come wrapped in marks
                if len(char) == 1 and not char.isascii():
                    table.setdefault(char, digit)
    return table


@lru_cache(maxsize=4096)
def _shows_as(char: str) -> str | None:
    """The ASCII digit ``char`` (not ASCII) shows, by Unicode's confusables, or None."""
    from confusable_homoglyphs import confusables

    shown = _listed().get(char)
    if shown is not None:
        return shown
    for found in confusables.is_confusable(char, greedy=True, preferred_aliases=[]) or []:
        for glyph in found["homoglyphs"]:
            shown = _TARGETS.get(glyph["c"])
            if shown is not None:
                return shown
    return None


def read_lookalikes(text: str) -> str:
    """``text`` with look-alike characters read as the digits they show, inside numbers.

    Only in a word of at least two ASCII digits whose every other character is an ASCII
    "l", "I", "o" or "O" (read by the normalisation's own rule) or looks like a digit
    ("195О" reads "1950"); a word of another script that holds digits stays as it is. The
    length of ``text`` is kept.
    """
    if text.isascii():
        return text

    def fold(match: re.Match[str]) -> str:
        word = match.group(0)
        if word.isascii() or sum(c in "0123456789" for c in word) < 2:
            return word  # no number, or ASCII (the normalisation's own rule reads it)
        if not all(c in _TARGETS or _is_lookalike_letter(c) for c in word):
            return word
        return "".join(c if c in _TARGETS else _shows_as(c) or c for c in word)

    return _WORD.sub(fold, text)


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def _is_lookalike_letter(char: str) -> bool:
    """Whether ``char``, no digit, shows as a digit (a Cyrillic O; not a Bengali four)."""
    return unicodedata.category(char) != "Nd" and _shows_as(char) is not None


def misread_digits(text: str) -> bool:
    """Whether a number of ``text`` mixes scripts with a digit that shows as another.

    "18৪9" (a Bengali four, which shows as an 8) is worth 1849 and shows 1889: what a
    person reads is not what the checks read. A number written in one script ("১৮৮৯") is
    read by whoever reads that script, and is not counted.
    """
    if text.isascii():
        return False
    for match in _WORD.finditer(text):
        word = match.group(0)
        if word.isascii() or not any(c.isascii() for c in word) or not _has_digit(word):
            continue
        for char in word:
            if char.isascii() or unicodedata.category(char) != "Nd":
                continue
            shown = _shows_as(char)
            if shown is not None and shown != str(unicodedata.decimal(char)):
                return True
    return False
