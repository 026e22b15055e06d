"""Text helpers shared by the detectors, the engine and the loops: words, numbers, sentences.

One definition of each rule. The evidence detector's rules are the canonical ones: its
benchmark numbers are reported, so the word and sentence rules below are exactly the
ones it was measured with, and every other module reads text the same way.
"""

from __future__ import annotations

import re

__all__ = [
    "COMPOUND_WORD",
    "DIGITS",
    "NUMBER",
    "SPAN_WORD",
    "STOP_WORDS",
    "WORD",
    "content_words",
    "split_sentences",
    "stripped_range",
    "words",
]

WORD = re.compile(r"[^\W_]+")
"""A word: letters and digits only (an underscore separates words, as a space does)."""

COMPOUND_WORD = re.compile(r"[^\W_]+(?:[.,'’][^\W_]+)*")
"""A word that keeps "2,400", "3.5" and "don't" in one piece: the lexical detector's unit."""

# Scripts written without spaces (Chinese, Japanese kana, Thai, Lao, Myanmar, Khmer) have
# no word boundary to find, so each of their characters stands alone in a SPAN_WORD: a
# wrong "1950" inside a Chinese sentence stays a word of its own.
_UNSPACED = (
    r"\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
)
_SPAN_LETTER = rf"[^\W_{_UNSPACED}]"
SPAN_WORD = re.compile(rf"{_SPAN_LETTER}+(?:['\u2019]{_SPAN_LETTER}+)*")
"""A word as spans and the response map read it: letters and digits with inner apostrophes
("wasn't"); a character of a script written without spaces stands alone."""

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
"""A number as written (``1,000`` and ``1000`` differ): for comparing the numbers of texts."""

DIGITS = re.compile(r"\d[\d,]*(?:\.\d+)?")
"""The digits of a quantity, thousands separators and one decimal part included."""

STOP_WORDS: frozenset[str] = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been being
    it its this that these those there their they them he she his her we you your our i me my
    not no do does did done has have had having will would can could should may might must
    so than then too very also just about into over under after before between which who whom
    what when where why how all any each other some such only own same both more most""".split()
)
"""Words too common to say what a text is about (lower case)."""

# A sentence ends at . ! ? (with closing quotes or brackets) followed by white space, or
# at a line break. Decimal points and "1887-1889." inside a token never match. The match
# starts at the end mark (a literal first character lets the regex engine skip ahead; a
# look-behind made it try every position) and the sentence keeps the mark.
_SENTENCE_END = re.compile(r"[.!?][\"'’”)\]]*\s+|\n+")


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``, in order."""
    return WORD.findall(text.lower())


def content_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` that are not stop words."""
    return {w for w in words(text) if w not in STOP_WORDS}


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character ranges of the sentences of ``text`` (white space at the edges left out)."""
    ranges = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.start()
        ranges.append((start, end if text[end] == "\n" else end + 1))
        start = match.end()
    ranges.append((start, len(text)))
    trimmed = (stripped_range(text, first, last) for first, last in ranges)
    return [(a, b) for a, b in trimmed if b > a]


def stripped_range(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` without the white space at its edges (empty: ``start == end``)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
