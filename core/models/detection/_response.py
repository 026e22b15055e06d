"""Response calibration: the answer's score as a probability at any length.

The largest token probability of a calibrated token classifier is a probability for
answers as long as those it was calibrated on (one or two sentences). A long answer has
many more tokens, and the largest of many near-misses climbs: before this calibration the
bundled detector flagged 83% of clean multi-part answers on held-out train-role data.
This logistic map reads the token model together with the answer's length in sentences
and the number of its content words that occur nowhere in the grounding::

    score = sigmoid(max_logit * logit(max token probability)
                    + sentence_peak * max over sentences of (logit(the sentence's max
                                      token probability) + log(1 + its absent words))
                    + log_sentences * log(sentences)
                    + absent_words * log(1 + absent content words)
                    + absent_numbers * log(1 + absent numbers)
                    + flagged_tokens * log(1 + tokens at or above the token threshold)
                    + number_conflicts * log(1 + numbers the unit rule finds in conflict)
                    + negation_conflicts * log(1 + sentences the negation rule finds
                                               in conflict)
                    + claim * max over checked sentences of logit(P(not entailed))
                    + bias)

and, with ``rule_floor`` set, at least ``rule_floor`` for an answer either rule finds in
conflict with the context (``_adjust.rule_conflicts``). With ``rule_sentence_floor`` set
(1), a sentence in which either rule finds a conflict scores the answer at least what the
map gives that sentence read alone (:func:`sentence_signals`): supported sentences added
around it cannot lower it (:func:`calibrated_score`). With ``long_answers`` set, answers
of at least its ``from_sentences`` sentences are scored by that second map (its own
coefficients, the same signals), and the floors stay this map's: one map could not be
calibrated for one-sentence answers and RAG paragraphs at once.

The absent-word count is the lexical reference's signal
(:class:`~truthlens_integrations.core.models.detection.LexicalDetector`): on real LLM
answers that add facts of their own it ranks better than the token model, which was
trained mostly on short answers; the fit weighs the two. The sentence peak asks for both
signals in the same sentence: in a long clean answer a lone suspicious token and a few
new words elsewhere are common, an invented sentence tends to have both (the bundled
model's map gives it no weight: measured, it did not improve the map). Its numbers are
fitted on held-out train-role data, single answers and multi-part answers alike, and
stored in the model folder's
``config.json`` as ``truthlens.response_calibration``. Token probabilities and spans are
not changed: only the response score is.

The ``claim`` term is the claim check (``_claims``): an entailment model reads each answer
sentence against the context sentences sharing the most words with it, and the least
supported sentence's logit of *not entailed* enters the map. It reads meaning where the
other terms read words (a flipped negation, swapped roles, a restated number).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..._calibration import RESPONSE_COEFFICIENTS, CalibrationFile, check_response_map
from ..._decision import reaches
from ..._errors import ConfigError
from ..._scoring import word_means
from ..._text import AnswerText
from ..._types import DetectionInput, DetectionResult, DetectionStatus, TokenScore
from ._adjust import conflict_marks, count_conflicts, uncounted_spans
from ._lexical import absent_words

__all__ = [
    "ResponseCalibration",
    "ResponseSignals",
    "RouteCalibration",
    "answer_evidence",
    "calibrated_score",
    "read_response_calibration",
    "rescore",
    "response_signals",
    "sentence_count",
    "sentence_peak",
    "sentence_signals",
]

_KEY = "response_calibration"
_EPSILON = 1e-6
# The coefficient keys of a stored map (its rules: ``core/_calibration.py``).
_COEFFICIENTS = RESPONSE_COEFFICIENTS
# Terms written only when set, so folders written before them stay byte-identical.
_WRITTEN_IF_SET = (
    "absent_numbers",
    "flagged_tokens",
    "number_conflicts",
    "negation_conflicts",
    "claim",
)


@dataclass(frozen=True)
class ResponseSignals:
    """What the response map reads of one answer (all but ``peak`` are counts or a maximum).

    Every field is a maximum or a count over the answer's sentences, so none of them
    drops when a sentence is added: with non-negative coefficients the score of an answer
    never falls because supported sentences were added to it.
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
    """The largest logit of *not entailed* over the checked sentences (``_claims``); 0
    when the map does not read the claim check or no sentence was checked."""


@dataclass(frozen=True)
class ResponseCalibration:
    """The coefficients of the response score's logistic map.

    ``absent_words`` is 0 for a calibration fitted without the absent-word count (the
    map then reads only the token model and the length), ``sentence_peak`` 0 for one
    fitted without the sentence peak (a folder written before it). ``rule_sentence_floor``
    is 1 when a sentence the rules find in conflict floors the answer's score with its own
    (:func:`calibrated_score`), else 0. ``rule_floor`` is the
    least score of an answer the unit or negation rule finds in conflict (0: no floor).

    ``long_answers``, when set, is a second map for answers of at least ``long_from``
    sentences: one map cannot be calibrated for one-sentence answers and RAG paragraphs
    at once. Its floors are
    this map's: the rule sentence floor reads a sentence alone, with this map.
    """

    max_logit: float
    log_sentences: float
    bias: float
    absent_words: float = 0.0
    sentence_peak: float = 0.0
    absent_numbers: float = 0.0
    flagged_tokens: float = 0.0
    number_conflicts: float = 0.0
    negation_conflicts: float = 0.0
    claim: float = 0.0
    rule_floor: float = 0.0
    rule_sentence_floor: float = 0.0
    long_answers: ResponseCalibration | None = None
    long_from: int = 0

    def __post_init__(self) -> None:
        if self.long_answers is None:
            if self.long_from != 0:
                raise ConfigError("long_from is set without a long_answers map")
            return
        if isinstance(self.long_from, bool) or not isinstance(self.long_from, int):
            raise ConfigError(f"long_from must be an int, got {self.long_from!r}")
        if self.long_from < 2:
            raise ConfigError(f"long_from must be at least 2 sentences, got {self.long_from}")
        inner = self.long_answers
        if inner.long_answers is not None or inner.rule_floor or inner.rule_sentence_floor:
            raise ConfigError("the long_answers map cannot hold floors or a map of its own")

    def _maps(self) -> tuple[ResponseCalibration, ...]:
        return (self,) if self.long_answers is None else (self, self.long_answers)

    @property
    def reads_absent_words(self) -> bool:
        """Whether the map needs where the answer's absent words are."""
        return any(
            m.absent_words != 0.0 or m.sentence_peak != 0.0 or m.absent_numbers != 0.0
            for m in self._maps()
        )

    @property
    def reads_claims(self) -> bool:
        """Whether the map needs the claim check's reading of each sentence (``_claims``)."""
        return any(m.claim != 0.0 for m in self._maps())

    @property
    def reads_rules(self) -> bool:
        """Whether the map needs the unit and negation rules' conflict counts."""
        return (
            any(m.number_conflicts != 0.0 or m.negation_conflicts != 0.0 for m in self._maps())
            or self.rule_floor > 0
            or self.rule_sentence_floor > 0
        )

    @property
    def length_safe(self) -> bool:
        """Whether adding sentences can never lower the score (no negative coefficient).

        Every signal is a maximum or a count over sentences, so this holds exactly when
        no coefficient but the bias is negative, and there is no long-answer map (the
        switch to it at ``long_from`` sentences may lower the score).
        """
        return self.long_answers is None and all(
            getattr(self, k) >= 0.0 for k in _COEFFICIENTS if k != "bias"
        )

    def score(self, signals: ResponseSignals) -> float:
        """The calibrated response score of an answer's :class:`ResponseSignals`."""
        chosen = self
        if self.long_answers is not None and signals.sentences >= self.long_from:
            chosen = self.long_answers
        score = chosen._linear_score(signals)
        if signals.number_conflicts > 0 or signals.negation_conflicts > 0:
            return max(score, self.rule_floor)
        return score

    def _linear_score(self, signals: ResponseSignals) -> float:
        z = (
            self.max_logit * _logit(signals.max_probability)
            + self.sentence_peak * signals.peak
            + self.log_sentences * math.log(max(signals.sentences, 1))
            + self.absent_words * math.log1p(max(signals.absent_words, 0))
            + self.absent_numbers * math.log1p(max(signals.absent_numbers, 0))
            + self.flagged_tokens * math.log1p(max(signals.flagged_tokens, 0))
            + self.number_conflicts * math.log1p(max(signals.number_conflicts, 0))
            + self.negation_conflicts * math.log1p(max(signals.negation_conflicts, 0))
            + self.claim * signals.claim
            + self.bias
        )
        return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))

    def probability(
        self,
        max_probability: float,
        sentences: int,
        absent_words: int = 0,
        peak: float = 0.0,
    ) -> float:
        """The calibrated response score of an answer.

        Args:
            max_probability: The largest token probability of the answer.
            sentences: The answer's sentence count (at least 1 is used).
            absent_words: How many of the answer's content words occur nowhere in the
                context or question (:func:`absent_word_count`).
            peak: The answer's :func:`sentence_peak`.
        """
        return self.score(ResponseSignals(max_probability, sentences, absent_words, peak))

    def to_config(self, fitted_on: str) -> dict[str, Any]:
        """The ``truthlens.response_calibration`` entry of a model folder's config."""
        entry: dict[str, Any] = {k: round(getattr(self, k), 6) for k in _COEFFICIENTS}
        for key in (*_WRITTEN_IF_SET, "rule_floor", "rule_sentence_floor"):
            if entry[key] == 0.0:
                del entry[key]  # folders written before these terms stay byte-identical
        if self.long_answers is not None:
            long_entry = self.long_answers.to_config(fitted_on)
            del long_entry["fitted_on"]
            entry["long_answers"] = {"from_sentences": self.long_from, **long_entry}
        entry["fitted_on"] = fitted_on
        return entry

    @classmethod
    def from_entry(cls, entry: Any, *, where: str = "response calibration") -> ResponseCalibration:
        """Read a stored map (a model folder's ``response_calibration`` entry or a file's).

        Checked by the one set of rules every map is read by
        (``core/_calibration.py``: :func:`check_response_map`).

        Raises:
            ConfigError: On an unknown key, a missing coefficient, or a value that is
                not a finite number (``true`` is not a coefficient).
        """
        check_response_map(entry, where=where, in_file=False)
        values: dict[str, Any] = {k: float(entry[k]) for k in _COEFFICIENTS if k in entry}
        long_entry = entry.get("long_answers")
        if long_entry is not None:
            inner: dict[str, Any] = {
                k: float(long_entry[k]) for k in _COEFFICIENTS if k in long_entry
            }
            values.update(long_answers=cls(**inner), long_from=long_entry["from_sentences"])
        return cls(**values)


def _logit(probability: float) -> float:
    p = min(max(probability, _EPSILON), 1.0 - _EPSILON)
    return math.log(p / (1.0 - p))


def sentence_peak(
    answer: str | AnswerText, tokens: Sequence[TokenScore], absent_starts: Sequence[int]
) -> float:
    """The largest ``logit(max token probability) + log(1 + absent words)`` of a sentence.

    Args:
        answer: The answer.
        tokens: Its scored tokens.
        absent_starts: Where its absent words start (:func:`absent_word_starts`).
    """
    peak = -math.inf
    for start, end in AnswerText.of(answer).sentences_or_whole():
        largest = max((t.probability for t in tokens if start <= t.start < end), default=0.0)
        absent = sum(1 for a in absent_starts if start <= a < end)
        peak = max(peak, _logit(largest) + math.log1p(absent))
    return peak


def read_response_calibration(config: Any) -> ResponseCalibration | None:
    """The response calibration stored in a model's config, or ``None`` without one."""
    extra = getattr(config, "truthlens", None)
    entry = extra.get(_KEY) if isinstance(extra, dict) else None
    if not isinstance(entry, dict):
        return None
    return ResponseCalibration.from_entry(entry, where=f"the model's truthlens.{_KEY}")


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
        absent_starts: Where its absent content words start (:func:`absent_word_starts`).
        absent_numbers: How many of those are numbers.
        token_threshold: A token at or above this probability counts as flagged.
        rule_conflicts: The unit and negation rules' conflict counts
            (``_adjust.rule_conflicts``).
        claims: The claim check's ``(sentence start, logit of not entailed)`` per checked
            sentence (``_claims.claim_logits``); the largest is the answer's.
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
        claim=max((logit for _, logit in claims), default=0.0),
    )


def _by_word(answer: str, tokens: Sequence[TokenScore]) -> Sequence[TokenScore]:
    """The tokens as the map reads them: each with its word's probability.

    A word's pieces share one meaning, and spans mark whole words by the mean of their
    pieces; the map reads the same, so one piece of a supported name
    cannot set an answer's score where no span is drawn.
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
            is a number (``_lexical.absent_words``).
        token_threshold: A token at or above this probability counts as flagged.
        conflicts: Where the unit and negation rules find a conflict
            (``_adjust.conflict_marks``).
        claims: The claim check's reading per checked sentence (``_claims.claim_logits``).
    """
    numbers, negations = conflicts
    text = AnswerText.of(answer)
    tokens = _by_word(text.text, tokens)
    out = []
    for start, end in text.sentences_or_whole():
        inside = [t.probability for t in tokens if start <= t.start < end]
        words = [key for at, key in absent if start <= at < end]
        largest = max(inside, default=0.0)
        signals = ResponseSignals(
            max_probability=largest,
            sentences=1,
            absent_words=len(words),
            peak=_logit(largest) + math.log1p(len(words)),
            absent_numbers=sum(1 for key in words if key.startswith("#")),
            flagged_tokens=sum(1 for p in inside if p >= token_threshold),
            number_conflicts=sum(1 for at in numbers if start <= at < end),
            negation_conflicts=int(any(start <= at < end for at in negations)),
            claim=max((logit for at, logit in claims if start <= at < end), default=0.0),
        )
        out.append(((start, end), signals))
    return out


def calibrated_score(
    response: ResponseCalibration,
    answer: str | AnswerText,
    tokens: Sequence[TokenScore],
    absent: Sequence[tuple[int, str]],
    *,
    token_threshold: float,
    conflicts: tuple[Sequence[int], Sequence[int]] = ((), ()),
    claims: Sequence[tuple[int, float]] = (),
) -> float:
    """The map's score of an answer, with its sentence floor when the map has one.

    Args:
        response: The map.
        answer: The answer.
        tokens: Its scored tokens.
        absent: Its absent content words as ``(start, key)`` (``_lexical.absent_words``).
        token_threshold: A token at or above this probability counts as flagged.
        conflicts: Where the unit and negation rules find a conflict
            (``_adjust.conflict_marks``; empty for a map that does not read the rules).
        claims: The claim check's reading per checked sentence (``_claims.claim_logits``;
            empty for a map that does not read it).
    """
    text = AnswerText.of(answer)  # its sentences, split once for every signal below
    signals = response_signals(
        text,
        tokens,
        [start for start, _ in absent],
        absent_numbers=sum(1 for _, key in absent if key.startswith("#")),
        token_threshold=token_threshold,
        rule_conflicts=count_conflicts(text, conflicts),
        claims=claims,
    )
    score = response.score(signals)
    if response.rule_sentence_floor > 0 and any(conflicts):
        for _, alone in sentence_signals(
            text,
            tokens,
            absent,
            token_threshold=token_threshold,
            conflicts=conflicts,
            claims=claims,
        ):
            if alone.number_conflicts > 0 or alone.negation_conflicts > 0:
                score = max(score, response.score(alone))
    return score


# -- a route's calibration ----------------------------------------------------------------


def answer_evidence(
    item: DetectionInput, *, rules: bool = True
) -> tuple[list[tuple[int, str]], tuple[list[int], list[int]]]:
    """What a response map reads of an answer besides its tokens, as the bundled detector reads it.

    Returns:
        The answer's absent content words as ``(start, key)`` (what
        ``_adjust.uncounted_spans`` names left out), and with
        ``rules`` where the unit and negation rules find a conflict
        (``_adjust.conflict_marks``; a pass over the context, no model), else no marks.
    """
    text = AnswerText.of(item.answer)
    skip = uncounted_spans(text, item.context, item.question)
    marks = conflict_marks(text, item.context) if rules else ([], [])
    return absent_words(item, skip), marks


@dataclass(frozen=True)
class RouteCalibration:
    """A route's calibration file, read into its map once, and the one rescoring with it.

    Built once per route's file (the engine builds one per decision that names a
    calibration when it is created; ``truthlens eval --calibration`` one per run), so a
    request never re-reads or re-checks the map: :meth:`rescore` is all it runs.

    Attributes:
        response: The file's map.
        token_threshold: The token probability that counted a token as flagged in the fit.
        threshold: The file's threshold (a route's own ``response_threshold`` wins).
    """

    response: ResponseCalibration
    token_threshold: float
    threshold: float

    @classmethod
    def of(cls, calibration: CalibrationFile) -> RouteCalibration:
        """The map of a calibration file (already checked when it was read)."""
        return cls(
            ResponseCalibration.from_entry(calibration.response_calibration),
            token_threshold=calibration.token_threshold,
            threshold=calibration.threshold,
        )

    def rescore(
        self, item: DetectionInput, result: DetectionResult, threshold: float
    ) -> DetectionResult:
        """``result`` scored by the map and decided at ``threshold``: its ``detected`` stands.

        The token probabilities and spans do not change, only the score, the threshold,
        ``detected`` and the status. A result that was not checked (unverifiable) comes
        back unchanged: a calibration never turns "not checked" into a verdict.
        """
        if not result.grounded:
            return result
        absent, marks = answer_evidence(item, rules=self.response.reads_rules)
        score = calibrated_score(
            self.response,
            AnswerText.of(item.answer),
            result.tokens,
            absent,
            token_threshold=self.token_threshold,
            conflicts=marks,
        )
        detected = reaches(score, threshold)
        status = DetectionStatus.HALLUCINATED if detected else DetectionStatus.SUPPORTED
        update = {"score": score, "threshold": threshold, "detected": detected, "status": status}
        return result.model_copy(update=update)


def rescore(
    item: DetectionInput,
    result: DetectionResult,
    calibration: CalibrationFile | RouteCalibration,
    threshold: float,
) -> DetectionResult:
    """``result`` re-scored by a calibration's map and decided at ``threshold``.

    :meth:`RouteCalibration.rescore`; a :class:`CalibrationFile` is read into its map
    first (callers that rescore many answers build the :class:`RouteCalibration` once).
    """
    route = (
        calibration
        if isinstance(calibration, RouteCalibration)
        else RouteCalibration.of(calibration)
    )
    return route.rescore(item, result, threshold)
