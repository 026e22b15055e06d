"""Text helpers shared by the detectors, the engine and the loops: words, numbers, sentences.

One definition of each rule. The evidence detector's rules are the canonical ones: its
benchmark numbers are reported, so the word and sentence rules below are exactly the
ones it was measured with, and every other module reads text the same way. An answer's
sentences are split once per answer (:class:`AnswerText`) and read from there by every
rule that needs them.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "COMPOUND_WORD",
    "DIGITS",
    "FUNCTION_WORDS",
    "NUMBER",
    "SPAN_WORD",
    "STOP_WORDS",
    "WORD",
    "AnswerText",
    "content_words",
    "says_something",
    "select_premise",
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

#: Stop words that still change what a claim says: negations, quantifiers, modals and the
#: words of order and comparison ("not", "all", "may", "before", "than"). A span on one of
#: them marks a real difference; a span on "so" or "is" alone marks none a reader can use.
_CLAIM_WORDS = frozenset(
    """not no nor never cannot all any each other some both more most only own same
    can could should may might must will would over under after before between than""".split()
)
FUNCTION_WORDS: frozenset[str] = STOP_WORDS - _CLAIM_WORDS
"""Words that carry no claim of their own (articles, pronouns, auxiliaries, connectives)."""


def says_something(text: str) -> bool:
    """Whether ``text`` holds a word that is not a function word (a span worth showing).

    Punctuation and symbols alone (``","``, ``")"``, ``"$"``) say nothing either.
    """
    return any(m.group().lower() not in FUNCTION_WORDS for m in SPAN_WORD.finditer(text))


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


@dataclass(frozen=True)
class AnswerText:
    """An answer with its sentences, split once (:func:`split_sentences`).

    The rule layer reads one answer many times over: the evidence detector's units, the
    abstention, negation, hedge and unit rules, the response map's sentence signals, a
    route's re-scoring, the NLI premise of each span. Each takes the answer as
    ``str | AnswerText`` and reads its sentences from here; a stage that calls several of
    them builds the :class:`AnswerText` first and passes it down.

    :meth:`of` builds it once per answer text: stages the detector protocol keeps apart
    (the token rules, the response score, the engine's re-scoring and NLI) get the same
    object back from a small cache, as the rules' verdicts are cached
    (``_rules._rule_verdicts``).

    Attributes:
        text: The answer.
        sentences: Its sentences' character ranges, white space at the edges left out.
    """

    text: str
    sentences: tuple[tuple[int, int], ...]

    @staticmethod
    def of(answer: str | AnswerText) -> AnswerText:
        """``answer`` with its sentences (itself when it is one already)."""
        return answer if isinstance(answer, AnswerText) else _answer_text(answer)

    def sentences_or_whole(self) -> tuple[tuple[int, int], ...]:
        """The sentences, or the whole text as one range when it has none (only spaces)."""
        return self.sentences or ((0, len(self.text)),)

    def sentence_at(self, offset: int) -> str:
        """The sentence holding character ``offset`` (the whole text when none does)."""
        # Sentences are in order and do not overlap: the last one starting at or before
        # ``offset`` is the only one that can hold it (a scan made long answers quadratic).
        at = bisect_right(self.sentences, (offset, math.inf)) - 1
        if at >= 0:
            start, end = self.sentences[at]
            if start <= offset < end:
                return self.text[start:end]
        return self.text


# The answers of one guarded batch (and a mitigation loop's candidates) are split once
# each; their stages run one after the other.
_ANSWERS = 64


@lru_cache(maxsize=_ANSWERS)
def _answer_text(text: str) -> AnswerText:
    return AnswerText(text, tuple(split_sentences(text)))
