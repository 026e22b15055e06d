"""The lexical reference detector: answer words that never occur in the context.

It needs no model and runs anywhere, so it is the floor every learned detector must
beat, and it exercises the harness exactly like a model does (it implements the
:class:`~truthlens_integrations.core.models.Detector` protocol through
:class:`BaseDetector`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from ..._text import COMPOUND_WORD, DIGITS, STOP_WORDS
from ..._types import Coverage, DetectionConfig, DetectionInput, NLILabel, TokenScore
from ._base import BaseDetector, TokenScoring

__all__ = [
    "STOPWORDS",
    "LexicalDetector",
    "absent_word_count",
    "absent_word_starts",
    "absent_words",
    "lexical_nli",
    "normalize_word",
]

# A whole word that is a number ("2,400", "3.5").
_NUMBER = re.compile(rf"^{DIGITS.pattern}$")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "thousand": 1000,
}  # fmt: skip

STOPWORDS: frozenset[str] = STOP_WORDS | frozenset(
    """above again against am because below down during further here hers him it's mine nor
    off once onto ours out s shall t theirs through until up us while whose yet yours""".split()
)
"""Function words that are never flagged: their absence says nothing about support."""


def _stem(word: str) -> str:
    # Plural folding only: enough to match "meters" with "meter" without a stemmer.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def normalize_word(word: str) -> str:
    """Canonical form used to compare an answer word with the context.

    Lower-case, drop a possessive ``'s`` and inner apostrophes, numbers by value
    (``"2,400"`` and ``"2400.0"`` both become ``"#2400"``; number words up to twelve and
    round tens map the same way), and fold plurals.
    """
    text = word.lower().replace("’", "'")
    if text.endswith("'s"):
        text = text[:-2]
    if _NUMBER.match(text):
        try:
            return f"#{float(text.replace(',', '')):.12g}"
        except ValueError:
            return text
    if text in _NUMBER_WORDS:
        return f"#{_NUMBER_WORDS[text]}"
    return _stem(text.replace("'", "").replace(".", "").replace(",", ""))


@lru_cache(maxsize=65536)
def _normalized(word: str) -> str:
    # Contexts repeat their words: a long one costs one normalisation per distinct word.
    return normalize_word(word)


def _vocabulary(texts: Iterable[str]) -> set[str]:
    distinct: set[str] = set()
    for text in texts:
        distinct.update(COMPOUND_WORD.findall(text))
    vocab: set[str] = set()
    for word in distinct:
        vocab.add(_normalized(word))
        if word.isalpha() and (word.islower() or word.istitle() or word.isupper()):
            continue  # its only part is itself
        # Structured records glue words together ("OutdoorSeating"); index the parts.
        vocab.update(_normalized(part) for part in _CAMEL.findall(word))
    return vocab


class LexicalDetector(BaseDetector):
    """Flags answer words that do not occur in the context or question.

    Every answer word becomes a token. A stopword, or a word whose normalised form
    (:func:`normalize_word`) occurs in the context or the question, gets probability
    0. An absent number gets ``number_probability`` (0.9 by default) and any other
    absent word ``word_probability`` (0.6), so the ``noisy_or`` response score grows
    with the number of unsupported words and weighs numbers most. Spans come from the
    shared merging of runs of flagged words.

    With the default config (token threshold 0.5, threshold 0.5) a single unsupported
    word makes an answer ``detected``; raise ``threshold`` to ask for more (a threshold
    just above 0.6 needs two plain words or one number, just above 0.84 three words).
    """

    def __init__(
        self,
        *,
        config: DetectionConfig | None = None,
        number_probability: float = 0.9,
        word_probability: float = 0.6,
        model_id: str = "lexical",
    ) -> None:
        """Create the detector.

        Args:
            config: Thresholds; the default :class:`DetectionConfig` when ``None``.
            number_probability: Probability given to an absent number.
            word_probability: Probability given to any other absent word.
            model_id: Name reported in results.
        """
        super().__init__(model_id=model_id, config=config)
        self.number_probability = number_probability
        self.word_probability = word_probability

    def _max_length(self) -> int:
        # No model window: 0 stands for "unlimited" in coverage reports.
        return 0

    def _score_tokens(self, inputs: Sequence[DetectionInput]) -> list[TokenScoring]:
        return [self._score_one(item) for item in inputs]

    def _score_one(self, item: DetectionInput) -> TokenScoring:
        vocab = _grounding_vocabulary(item)
        tokens: list[TokenScore] = []
        for match in COMPOUND_WORD.finditer(item.answer):
            word = match.group()
            tokens.append(
                TokenScore(
                    start=match.start(),
                    end=match.end(),
                    text=word,
                    probability=self._probability(word, vocab),
                )
            )
        coverage = Coverage(
            answer_chars=len(item.answer),
            answer_chars_scored=sum(t.end - t.start for t in tokens),
            answer_pieces=1,
            context_windows=1,
            context_split=False,
            max_length=0,
        )
        return tokens, coverage

    def _probability(self, word: str, vocab: set[str]) -> float:
        key = _absent_key(word, vocab)
        if key is None:
            return 0.0
        return self.number_probability if key.startswith("#") else self.word_probability


def _grounding_vocabulary(item: DetectionInput) -> set[str]:
    return _vocabulary([*item.context, item.question] if item.question else item.context)


def _absent_key(word: str, vocab: set[str]) -> str | None:
    """The normalised form of a content word the grounding lacks, else ``None``."""
    if word.lower() in STOPWORDS:
        return None
    key = _normalized(word)
    if key in vocab or key in STOPWORDS or not key:
        return None
    return key


def absent_word_starts(item: DetectionInput, skip: Sequence[tuple[int, int]] = ()) -> list[int]:
    """Where the answer's content words that occur nowhere in the context or question start.

    The words :class:`LexicalDetector` flags (a repeated word counts each time).

    Args:
        item: The answer and its grounding.
        skip: ``(start, end)`` character ranges of the answer whose words are not counted
            (the sentences the detector's abstention rule leaves unflagged).
    """
    return [start for start, _ in absent_words(item, skip)]


def absent_words(
    item: DetectionInput, skip: Sequence[tuple[int, int]] = ()
) -> list[tuple[int, str]]:
    """``(start, normalised form)`` of each answer content word the grounding lacks.

    The words of :func:`absent_word_starts`; a number's form starts with ``#``.
    """
    vocab = _grounding_vocabulary(item)
    out = []
    for match in COMPOUND_WORD.finditer(item.answer):
        if any(start <= match.start() < end for start, end in skip):
            continue
        key = _absent_key(match.group(), vocab)
        if key is not None:
            out.append((match.start(), key))
    return out


def absent_word_count(item: DetectionInput, skip: Sequence[tuple[int, int]] = ()) -> int:
    """How many of the answer's content words occur nowhere in the context or question."""
    return len(absent_word_starts(item, skip))


_NEGATIONS = frozenset({"not", "no", "never", "nobody", "nothing", "none", "n't", "nt"})


def _content(text: str) -> tuple[set[str], bool]:
    words = [w.lower() for w in COMPOUND_WORD.findall(text)]
    negated = any(w in _NEGATIONS or w.endswith("n't") for w in words)
    return {normalize_word(w) for w in words if w not in STOPWORDS}, negated


def lexical_nli(pairs: Sequence[tuple[str, str]]) -> list[NLILabel]:
    """A word-overlap NLI floor for the harness: no model, no training.

    ``contradiction`` when exactly one side is negated, ``entailment`` when every
    content word of the hypothesis occurs in the premise, else ``neutral``.
    """
    labels: list[NLILabel] = []
    for premise, hypothesis in pairs:
        premise_words, premise_negated = _content(premise)
        hypothesis_words, hypothesis_negated = _content(hypothesis)
        if premise_negated != hypothesis_negated:
            labels.append("contradiction")
        elif hypothesis_words <= premise_words:
            labels.append("entailment")
        else:
            labels.append("neutral")
    return labels
