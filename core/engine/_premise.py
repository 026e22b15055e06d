"""Build NLI pairs for flagged spans: premise from the context, hypothesis from the answer."""

from __future__ import annotations

from .._text import AnswerText, select_premise, split_sentences

__all__ = ["answer_sentence", "select_premise", "split_sentences"]


def answer_sentence(answer: str, start: int, end: int) -> str:
    """The answer sentence(s) holding ``answer[start:end]``: the NLI hypothesis."""
    spans = AnswerText.of(answer).sentences  # split once per answer, shared with the rules
    pieces = [(s, e) for s, e in spans if s < max(end, start + 1) and e > start]
    if not pieces:
        return answer.strip()
    return answer[pieces[0][0] : pieces[-1][1]].strip()
