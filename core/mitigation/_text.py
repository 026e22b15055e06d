"""Small text utilities of the loops: sentences, words, similarity, token estimates."""

from __future__ import annotations

import re

__all__ = [
    "approx_tokens",
    "content_words",
    "is_near_duplicate",
    "jaccard",
    "normalise",
    "numbers",
    "sentences",
]

# A sentence ends at . ! ? followed by space and a capital/digit/quote, or at a newline.
_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])|\n+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_STOP = frozenset(
    "a an the of in on at to for by with and or but is are was were be been being it its "
    "this that these those as from than then there their they he she his her we you i "
    "not no do does did has have had will would can could should may might".split()
)


def sentences(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, sentence)`` for each non-blank sentence of ``text``."""
    out: list[tuple[int, int, str]] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        piece = text[start : match.start()]
        if piece.strip():
            out.append((start, match.start(), piece.strip()))
        start = match.end()
    if text[start:].strip():
        out.append((start, len(text), text[start:].strip()))
    return out


def normalise(text: str) -> str:
    """Lower case, words only, single spaces: for equality checks."""
    return " ".join(_WORD.findall(text.lower()))


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` without stop words."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def numbers(text: str) -> set[str]:
    """The numbers written in ``text`` (``1,000`` and ``1000`` differ)."""
    return set(_NUMBER.findall(text))


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the content-word sets (1.0 for two empty texts)."""
    x, y = content_words(a), content_words(b)
    if not x and not y:
        return 1.0
    return len(x & y) / len(x | y)


def approx_tokens(text: str) -> int:
    """A tokenizer-free token estimate (about 4 characters per token)."""
    return len(text) // 4 + 1


def is_near_duplicate(text: str, others: list[str], similarity: float) -> bool:
    """Whether ``text`` equals (after normalising) or nearly equals one of ``others``."""
    key = normalise(text)
    return any(normalise(o) == key or jaccard(text, o) >= similarity for o in others)
