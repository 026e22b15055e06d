"""An answer's claims: its sentences that state something, each with its evidence."""

from __future__ import annotations

from collections.abc import Sequence

from ..._text import AnswerText, select_premise, stripped_range, words
from ._contract import Claim

__all__ = ["DEFAULT_EVIDENCE_SENTENCES", "MIN_CLAIM_WORDS", "answer_claims", "evidence_sentences"]

#: A sentence with fewer words states nothing to check (a greeting, a heading).
MIN_CLAIM_WORDS = 4
#: Context sentences read per claim by a checker that does not say how many it reads.
DEFAULT_EVIDENCE_SENTENCES = 8


def evidence_sentences(checker: object) -> int:
    """How many context sentences ``checker`` reads per claim (its ``evidence_sentences``).

    A model trained on short premises reads few; a judge with a long window reads more.
    """
    value = getattr(checker, "evidence_sentences", DEFAULT_EVIDENCE_SENTENCES)
    return value if isinstance(value, int) and value > 0 else DEFAULT_EVIDENCE_SENTENCES


def answer_claims(
    answer: str | AnswerText, context: Sequence[str], *, top_k: int = DEFAULT_EVIDENCE_SENTENCES
) -> list[Claim]:
    """Each sentence of ``answer`` that states something, with the context it is read against.

    Args:
        answer: The answer (split into sentences once, see :class:`AnswerText`).
        context: The grounding passages.
        top_k: Context sentences selected per claim (those sharing the most words with it,
            in context order; :func:`select_premise`).

    Returns:
        The claims in answer order; a sentence with no evidence at all is left out.
    """
    text = AnswerText.of(answer)
    out = []
    for sentence_start, sentence_end in text.sentences:
        start, end = stripped_range(text.text, sentence_start, sentence_end)
        sentence = text.text[start:end]
        if len(words(sentence)) < MIN_CLAIM_WORDS:
            continue
        evidence = select_premise(context, sentence, top_k=top_k)
        if evidence:
            out.append(Claim(text=sentence, start=start, end=end, evidence=evidence))
    return out
