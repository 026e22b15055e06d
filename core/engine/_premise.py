"""Build NLI pairs for flagged spans: premise from the context, hypothesis from the answer."""

from __future__ import annotations

from .._text import select_premise, split_sentences

__all__ = ["answer_sentence", "select_premise", "split_sentences"]


def answer_sentence(answer: str, start: int, end: int) -> str:
    """The answer sentence(s) holding ``answer[start:end]``: the NLI hypothesis."""
    pieces = [(s, e) for s, e in split_sentences(answer) if s < max(end, start + 1) and e > start]
    if not pieces:
        return answer.strip()
    return answer[pieces[0][0] : pieces[-1][1]].strip()
