"""The response map: an answer's score as a probability at any length, and a route's map.

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
conflict with the context (``models.detection._rules``). With ``rule_sentence_floor`` set
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

The ``claim`` term is the claim check (``models.detection._claims``): an entailment model
reads each answer sentence against the context sentences sharing the most words with it,
and the least supported sentence's logit of *not entailed* enters the map. It reads
meaning where the other terms read words (a flipped negation, swapped roles, a restated
number).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigError
from .._text import AnswerText
from .._types import TokenScore
from ._file import check_response_map
from ._signals import (
    COEFFICIENTS,
    TERMS,
    ResponseSignals,
    count_conflicts,
    response_signals,
    sentence_signals,
)

__all__ = [
    "ResponseCalibration",
    "calibrated_score",
    "read_response_calibration",
]

_KEY = "response_calibration"


@dataclass(frozen=True)
class ResponseCalibration:
    """The coefficients of the response score's logistic map.

    Build one with :meth:`of` (coefficients by name) or :meth:`from_entry` (a stored
    map); read a coefficient with ``calibration["max_logit"]``. A term left out weighs 0:
    ``absent_words`` is 0 for a map fitted without the absent-word count (it then reads
    only the token model and the length), ``sentence_peak`` 0 for one fitted without the
    sentence peak.

    Attributes:
        weights: One coefficient per row of the term table (``_signals.TERMS``), in its
            order.
        bias: The map's intercept.
        rule_floor: The least score of an answer the unit or negation rule finds in
            conflict (0: no floor).
        rule_sentence_floor: 1 when a sentence the rules find in conflict floors the
            answer's score with its own (:func:`calibrated_score`), else 0.
        long_answers: A second map for answers of at least ``long_from`` sentences: one
            map cannot be calibrated for one-sentence answers and RAG paragraphs at once.
            Its floors are this map's: the rule sentence floor reads a sentence alone,
            with this map.
        long_from: Where the second map starts, in sentences.
    """

    weights: tuple[float, ...]
    bias: float
    rule_floor: float = 0.0
    rule_sentence_floor: float = 0.0
    long_answers: ResponseCalibration | None = None
    long_from: int = 0

    def __post_init__(self) -> None:
        if len(self.weights) != len(TERMS):
            raise ConfigError(f"a map has {len(TERMS)} term weights, got {len(self.weights)}")
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

    @classmethod
    def of(
        cls,
        coefficients: Mapping[str, float],
        *,
        long_answers: ResponseCalibration | None = None,
        long_from: int = 0,
    ) -> ResponseCalibration:
        """A map from its coefficients by stored name (``bias`` required, a term left out 0).

        Raises:
            ConfigError: For a name that is no coefficient of a map, or no ``bias``.
        """
        unknown = set(coefficients) - set(COEFFICIENTS)
        if unknown or "bias" not in coefficients:
            raise ConfigError(
                f"a response map takes the coefficients {list(COEFFICIENTS)} (bias required); "
                f"got {sorted(coefficients)}"
            )
        return cls(
            tuple(float(coefficients.get(t.name, 0.0)) for t in TERMS),
            float(coefficients["bias"]),
            rule_floor=float(coefficients.get("rule_floor", 0.0)),
            rule_sentence_floor=float(coefficients.get("rule_sentence_floor", 0.0)),
            long_answers=long_answers,
            long_from=long_from,
        )

    def __getitem__(self, name: str) -> float:
        """A coefficient by its stored name (a term, ``bias`` or a floor)."""
        if name in _TERM_INDEX:
            return self.weights[_TERM_INDEX[name]]
        if name in ("bias", "rule_floor", "rule_sentence_floor"):
            value: float = getattr(self, name)
            return value
        raise KeyError(name)

    def _maps(self) -> tuple[ResponseCalibration, ...]:
        return (self,) if self.long_answers is None else (self, self.long_answers)

    def _weighs(self, *names: str) -> bool:
        return any(m[name] != 0.0 for m in self._maps() for name in names)

    @property
    def reads_absent_words(self) -> bool:
        """Whether the map needs where the answer's absent words are."""
        return self._weighs("absent_words", "sentence_peak", "absent_numbers")

    @property
    def reads_claims(self) -> bool:
        """Whether the map needs the claim check's reading of each sentence."""
        return self._weighs("claim")

    @property
    def reads_rules(self) -> bool:
        """Whether the map needs the unit and negation rules' conflict counts."""
        return (
            self._weighs("number_conflicts", "negation_conflicts")
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
            self[k] >= 0.0 for k in COEFFICIENTS if k != "bias"
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
        z = 0.0
        for term, weight in zip(TERMS, self.weights, strict=True):
            z += weight * term.read(signals)
        z += self.bias
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
                context or question.
            peak: The answer's sentence peak (``_signals.sentence_peak``).
        """
        return self.score(ResponseSignals(max_probability, sentences, absent_words, peak))

    def to_config(self, fitted_on: str) -> dict[str, Any]:
        """The ``truthlens.response_calibration`` entry of a model folder's config."""
        entry: dict[str, Any] = {k: round(self[k], 6) for k in COEFFICIENTS}
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

        Checked by the one set of rules every map is read by (``_file.check_response_map``).

        Raises:
            ConfigError: On an unknown key, a missing coefficient, or a value that is
                not a finite number (``true`` is not a coefficient).
        """
        check_response_map(entry, where=where, in_file=False)
        values = {k: float(entry[k]) for k in COEFFICIENTS if k in entry}
        long_entry = entry.get("long_answers")
        if long_entry is None:
            return cls.of(values)
        inner = cls.of({k: float(long_entry[k]) for k in COEFFICIENTS if k in long_entry})
        return cls.of(values, long_answers=inner, long_from=long_entry["from_sentences"])


_TERM_INDEX: Mapping[str, int] = {t.name: i for i, t in enumerate(TERMS)}
# Terms written only when set, so folders written before them stay byte-identical.
_WRITTEN_IF_SET = tuple(t.name for t in TERMS if t.written_if_set)


def read_response_calibration(config: Any) -> ResponseCalibration | None:
    """The response calibration stored in a model's config, or ``None`` without one."""
    extra = getattr(config, "truthlens", None)
    entry = extra.get(_KEY) if isinstance(extra, dict) else None
    if not isinstance(entry, dict):
        return None
    return ResponseCalibration.from_entry(entry, where=f"the model's truthlens.{_KEY}")


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
        absent: Its absent content words as ``(start, key)`` (``_signals.answer_evidence``).
        token_threshold: A token at or above this probability counts as flagged.
        conflicts: Where the unit and negation rules find a conflict
            (empty for a map that does not read the rules).
        claims: The claim check's reading per checked sentence (empty for a map that
            does not read it).
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
