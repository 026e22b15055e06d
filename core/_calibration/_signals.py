"""What a response map reads of an answer: its signals, and the one table of its terms.

Every term of the map is a row of :data:`TERMS`: its coefficient's name and how it reads an
answer's :class:`ResponseSignals`. The map's score (``_map``), the fit's columns (``_fit``)
and the file's checks (``_file``) all read that table, so a new signal is one field here
and one row there.

Every signal is a maximum or a count over the answer's sentences, so none of them drops
when a sentence is added: with non-negative coefficients the score of an answer never
falls because supported sentences were added to it.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from .._scoring import word_means
from .._text import AnswerText
from .._types import TokenScore

__all__ = [
    "COEFFICIENTS",
    "FITTED_TERMS",
    "TERMS",
    "ResponseSignals",
    "Term",
    "count_conflicts",
    "logit",
    "response_signals",
    "sentence_count",
    "sentence_peak",
    "sentence_signals",
]

_EPSILON = 1e-6
_V = TypeVar("_V")


def logit(probability: float) -> float:
    """The log-odds of a probability, clipped away from 0 and 1."""
    p = min(max(probability, _EPSILON), 1.0 - _EPSILON)
    return math.log(p / (1.0 - p))


@dataclass(frozen=True)
class ResponseSignals:
    """What the response map reads of one answer (all but ``peak`` are counts or a maximum).

    Attributes:
        max_probability: The largest token probability (each token read as its word).
        sentences: The sentence count (at least 1).
        absent_words: Content words that occur nowhere in the grounding.
        peak: The largest ``logit(max token probability) + log(1 + absent words)`` of a
            sentence (:func:`sentence_peak`).
        absent_numbers: How many of the absent words are numbers.
        flagged_tokens: Tokens at or above the token threshold.
        number_conflicts: Numbers the unit rule finds in conflict with the grounding.
        negation_conflicts: Sentences the negation rule finds in conflict.
        claim: The largest logit of *not entailed* over the checked sentences (the claim
            check, ``models.detection._claims``); 0 when no sentence was checked.
    """

    max_probability: float
    sentences: int
    absent_words: int = 0
    peak: float = 0.0
    absent_numbers: int = 0
    flagged_tokens: int = 0
    number_conflicts: int = 0
    negation_conflicts: int = 0
    claim: float = 0.0


def _count(value: int) -> float:
    return math.log1p(max(value, 0))


@dataclass(frozen=True)
class Term:
    """One term of the response map: its coefficient's name and the value it weighs.

    Attributes:
        name: The coefficient's key in a stored map.
        read: The term's value for an answer's signals.
        fitted: Whether ``truthlens calibrate`` fits it (the claim term is a detector
            folder's own: a calibration file re-scores a result that has no claim check).
        written_if_set: Whether a stored map leaves it out at 0 (terms added after the
            first folders were written, which then stay byte-identical).
    """

    name: str
    read: Callable[[ResponseSignals], float]
    fitted: bool = True
    written_if_set: bool = False


#: The map's terms, in the order the score adds them and the fit reads its columns.
TERMS: tuple[Term, ...] = (
    Term("max_logit", lambda s: logit(s.max_probability)),
    Term("sentence_peak", lambda s: s.peak),
    Term("log_sentences", lambda s: math.log(max(s.sentences, 1))),
    Term("absent_words", lambda s: _count(s.absent_words)),
    Term("absent_numbers", lambda s: _count(s.absent_numbers), written_if_set=True),
    Term("flagged_tokens", lambda s: _count(s.flagged_tokens), written_if_set=True),
    Term("number_conflicts", lambda s: _count(s.number_conflicts), written_if_set=True),
    Term("negation_conflicts", lambda s: _count(s.negation_conflicts), written_if_set=True),
    Term("claim", lambda s: s.claim, fitted=False, written_if_set=True),
)

#: The terms a fit reads, in its columns' order.
FITTED_TERMS: tuple[Term, ...] = tuple(t for t in TERMS if t.fitted)

#: Every coefficient key of a stored map: the terms, the two floors, the bias.
COEFFICIENTS: tuple[str, ...] = (
    *(t.name for t in TERMS),
    "rule_floor",
    "rule_sentence_floor",
    "bias",
)


def _by_word(answer: str, tokens: Sequence[TokenScore]) -> Sequence[TokenScore]:
    """The tokens as the map reads them: each with its word's probability.

    A word's pieces share one meaning, and spans mark whole words by the mean of their
    pieces; the map reads the same, so one piece of a supported name cannot set an
    answer's score where no span is drawn.
    """
    means = word_means(answer, tokens)
    return [
        TokenScore.model_construct(
            start=t.start, end=t.end, text=answer[t.start : t.end], probability=p
        )
        for t, p in zip(tokens, means, strict=True)
    ]


def sentence_count(answer: str | AnswerText) -> int:
    """How many sentences the answer has, by the package's one sentence rule (at least 1)."""
    return max(len(AnswerText.of(answer).sentences), 1)


def sentence_peak(
    answer: str | AnswerText, tokens: Sequence[TokenScore], absent_starts: Sequence[int]
) -> float:
    """The largest ``logit(max token probability) + log(1 + absent words)`` of a sentence.

    Args:
        answer: The answer.
        tokens: Its scored tokens.
        absent_starts: Where its absent words start.
    """
    # Each sentence reads only its own tokens and absent words (found by bisection): a
    # scan of every token per sentence made an answer of 800 short claims quadratic
    # (1.0 s of its 3.1 s).
    tokens_at = _Starts([(t.start, t.probability) for t in tokens])
    absent_at = _Starts([(at, 0) for at in absent_starts])
    peak = -math.inf
    for start, end in AnswerText.of(answer).sentences_or_whole():
        largest = max(tokens_at.within(start, end), default=0.0)
        absent = len(absent_at.within(start, end))
        peak = max(peak, logit(largest) + math.log1p(absent))
    return peak


def response_signals(
    answer: str | AnswerText,
    tokens: Sequence[TokenScore],
    absent_starts: Sequence[int],
    *,
    absent_numbers: int = 0,
    token_threshold: float = 0.5,
    rule_conflicts: tuple[int, int] = (0, 0),
    claims: Sequence[tuple[int, float]] = (),
) -> ResponseSignals:
    """The :class:`ResponseSignals` of an answer from its scored tokens and absent words.

    Args:
        answer: The answer.
        tokens: Its scored tokens.
        absent_starts: Where its absent content words start.
        absent_numbers: How many of those are numbers.
        token_threshold: A token at or above this probability counts as flagged.
        rule_conflicts: The unit and negation rules' conflict counts
            (``models.detection._rules.count_conflicts``).
        claims: The claim check's ``(sentence start, logit of not entailed)`` per checked
            sentence; the largest is the answer's.
    """
    text = AnswerText.of(answer)
    tokens = _by_word(text.text, tokens)
    return ResponseSignals(
        max_probability=max((t.probability for t in tokens), default=0.0),
        sentences=sentence_count(text),
        absent_words=len(absent_starts),
        peak=sentence_peak(text, tokens, absent_starts),
        absent_numbers=absent_numbers,
        flagged_tokens=sum(1 for t in tokens if t.probability >= token_threshold),
        number_conflicts=rule_conflicts[0],
        negation_conflicts=rule_conflicts[1],
        claim=max((value for _, value in claims), default=0.0),
    )


def sentence_signals(
    answer: str | AnswerText,
    tokens: Sequence[TokenScore],
    absent: Sequence[tuple[int, str]],
    *,
    token_threshold: float = 0.5,
    conflicts: tuple[Sequence[int], Sequence[int]] = ((), ()),
    claims: Sequence[tuple[int, float]] = (),
) -> list[tuple[tuple[int, int], ResponseSignals]]:
    """Each sentence of the answer with its :class:`ResponseSignals` read as if it were alone.

    A sentence's signals are those of a one-sentence answer: the tokens inside it, the
    absent words (and numbers) that start in it, its peak, and the rules' conflicts inside
    it. What the token model read around the sentence still shaped its tokens.

    Args:
        answer: The answer.
        tokens: Its scored tokens.
        absent: Its absent content words as ``(start, key)``; a key starting with ``#``
            is a number (``models.detection._lexical.absent_words``).
        token_threshold: A token at or above this probability counts as flagged.
        conflicts: Where the unit and negation rules find a conflict
            (``models.detection._rules.conflict_marks``).
        claims: The claim check's reading per checked sentence.
    """
    text = AnswerText.of(answer)
    # What starts inside each sentence, found by bisection over sorted offsets: scanning
    # every token, word and conflict per sentence made an answer of 2,000 short
    # sentences quadratic (3 s).
    tokens_at = _Starts([(t.start, t.probability) for t in _by_word(text.text, tokens)])
    absent_at = _Starts(list(absent))
    numbers_at = _Starts([(at, 0) for at in conflicts[0]])
    negations_at = _Starts([(at, 0) for at in conflicts[1]])
    claims_at = _Starts(list(claims))
    out = []
    for start, end in text.sentences_or_whole():
        inside = tokens_at.within(start, end)
        words = absent_at.within(start, end)
        largest = max(inside, default=0.0)
        signals = ResponseSignals(
            max_probability=largest,
            sentences=1,
            absent_words=len(words),
            peak=logit(largest) + math.log1p(len(words)),
            absent_numbers=sum(1 for key in words if key.startswith("#")),
            flagged_tokens=sum(1 for p in inside if p >= token_threshold),
            number_conflicts=len(numbers_at.within(start, end)),
            negation_conflicts=int(bool(negations_at.within(start, end))),
            claim=max(claims_at.within(start, end), default=0.0),
        )
        out.append(((start, end), signals))
    return out


class _Starts(Generic[_V]):
    """Values by the offset where they start, for the values starting inside a range."""

    def __init__(self, items: Sequence[tuple[int, _V]]) -> None:
        ordered = sorted(items, key=lambda item: item[0])
        self._starts = [at for at, _ in ordered]
        self._values = [value for _, value in ordered]

    def within(self, start: int, end: int) -> list[_V]:
        """The values that start at ``start`` or later and before ``end``, in offset order."""
        return self._values[bisect_left(self._starts, start) : bisect_left(self._starts, end)]


def count_conflicts(
    answer: str | AnswerText, marks: tuple[Sequence[int], Sequence[int]]
) -> tuple[int, int]:
    """The unit and negation rules' two counts from where they find conflicts.

    Args:
        answer: The answer.
        marks: Where the unit rule finds a conflicting number, and where the negation rule
            finds a conflicting negation (``models.detection._rules.conflict_marks``).

    Returns:
        The conflicting numbers, and the sentences holding a conflicting negation.
    """
    numbers, negations = marks
    if not negations:
        return len(numbers), 0
    spans = AnswerText.of(answer).sentences
    sentences = sum(1 for a, b in spans if any(a <= m < b for m in negations))
    return len(numbers), sentences
