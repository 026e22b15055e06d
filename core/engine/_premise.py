"""Build NLI pairs for flagged spans: premise from the context, hypothesis from the answer."""

from __future__ import annotations

from collections.abc import Sequence

from .._text import AnswerText, split_sentences, words

__all__ = ["answer_sentence", "select_premise", "split_sentences"]


def answer_sentence(answer: str, start: int, end: int) -> str:
    """The answer sentence(s) holding ``answer[start:end]``: the NLI hypothesis."""
    spans = AnswerText.of(answer).sentences  # split once per answer, shared with the rules
    pieces = [(s, e) for s, e in spans if s < max(end, start + 1) and e > start]
    if not pieces:
        return answer.strip()
    return answer[pieces[0][0] : pieces[-1][1]].strip()


def select_premise(context: Sequence[str], hypothesis: str, *, top_k: int = 2) -> str:
    """The context sentences sharing the most words with ``hypothesis``, in context order.

    Word overlap is cheap and needs no model; it keeps the premise inside the NLI
    model's window while keeping the sentences that talk about the same things.

    Args:
        context: Grounding passages.
        hypothesis: The span's answer sentence.
        top_k: Sentences to keep.

    Returns:
        The selected sentences joined by spaces; the whole first passage when no
        sentence shares a word (NLI then judges against some real context).
    """
    target = set(words(hypothesis))
    scored: list[tuple[int, int, str]] = []
    order = 0
    for passage in context:
        for s, e in split_sentences(passage):
            sentence = passage[s:e].strip()
            scored.append((len(target.intersection(words(sentence))), order, sentence))
            order += 1
    best = sorted((x for x in scored if x[0] > 0), key=lambda x: (-x[0], x[1]))[:top_k]
    if not best:
        return context[0].strip() if context else ""
    return " ".join(sentence for _, _, sentence in sorted(best, key=lambda x: x[1]))
