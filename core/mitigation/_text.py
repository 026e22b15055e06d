"""Small text utilities of the loops: sentences, words, similarity, token estimates."""

from __future__ import annotations

from .._text import NUMBER, content_words, split_sentences, words

__all__ = [
    "approx_tokens",
    "content_words",
    "is_near_duplicate",
    "jaccard",
    "normalise",
    "numbers",
    "sentences",
]


def sentences(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, sentence)`` for each sentence of ``text`` (see :func:`split_sentences`)."""
    return [(start, end, text[start:end]) for start, end in split_sentences(text)]


def normalise(text: str) -> str:
    """Lower case, words only, single spaces: for equality checks."""
    return " ".join(words(text))


def numbers(text: str) -> set[str]:
    """The numbers written in ``text`` (``1,000`` and ``1000`` differ)."""
    return set(NUMBER.findall(text))


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
