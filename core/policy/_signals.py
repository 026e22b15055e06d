"""Routing signals: domain classifiers, keyword matching and the fact-check signal."""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from .._errors import ConfigError
from ._config import KeywordRule
from ._defaults import DEFAULT_DOMAIN_DESCRIPTIONS, DEFAULT_DOMAIN_KEYWORDS, GENERAL_DOMAIN
from ._fields import Operator

__all__ = [
    "DomainClassifier",
    "EmbedFn",
    "EmbeddingDomainClassifier",
    "FactCheckSignal",
    "KeywordMatcher",
    "LexiconDomainClassifier",
]

EmbedFn = Callable[[Sequence[str]], Sequence[Sequence[float]]]
"""Turns texts into vectors, one per text (lists, numpy rows or tensors of floats)."""

FactCheckSignal = Callable[[str], tuple[bool, float]]
"""``(prompt) -> (needs_fact_check, confidence of that prediction)``."""


@runtime_checkable
class DomainClassifier(Protocol):
    """Scores a prompt against named domains.

    A ``domain`` condition fires when its domain's score reaches the router's
    ``domain_threshold``. Classifiers may expose a ``domains`` attribute listing the
    names they know; the router then rejects conditions on unknown domains.
    """

    def classify(self, text: str) -> Mapping[str, float]:
        """Score ``text`` against each domain.

        Args:
            text: The prompt.

        Returns:
            A score in [0, 1] per domain name.
        """
        ...


def _phrase_pattern(phrase: str, *, plurals: bool) -> str:
    escaped = re.escape(phrase.strip())
    if not phrase.isascii():
        # Word boundaries mean little in scripts without spaces (e.g. Chinese).
        return escaped
    suffix = r"(?:s|es)?" if plurals else ""
    return rf"(?<!\w){escaped}{suffix}(?!\w)"


class KeywordMatcher:
    """Matches one keyword list against text on word boundaries.

    Args:
        keywords: Words or phrases.
        operator: ``OR``: any keyword is enough; ``AND``: all must appear.
        case_sensitive: Whether case matters.

    Raises:
        ConfigError: If ``keywords`` is empty.
    """

    def __init__(
        self, keywords: Iterable[str], *, operator: Operator = "OR", case_sensitive: bool = False
    ) -> None:
        words = [k for k in keywords if k.strip()]
        if not words:
            raise ConfigError("a keyword list must not be empty")
        flags = 0 if case_sensitive else re.IGNORECASE
        self.keywords = tuple(words)
        self.operator = operator
        self._patterns = [re.compile(_phrase_pattern(k, plurals=False), flags) for k in words]

    @classmethod
    def from_rule(cls, rule: KeywordRule) -> KeywordMatcher:
        """Build a matcher from a policy's keyword rule."""
        return cls(rule.keywords, operator=rule.operator, case_sensitive=rule.case_sensitive)

    def matches(self, text: str) -> list[str]:
        """The keywords found in ``text``, in list order."""
        return [k for k, p in zip(self.keywords, self._patterns, strict=True) if p.search(text)]

    def __call__(self, text: str) -> bool:
        """Whether ``text`` satisfies the list under its operator."""
        found = self.matches(text)
        if self.operator == "AND":
            return len(found) == len(self.keywords)
        return bool(found)


class LexiconDomainClassifier:
    """Keyword-lexicon domain classifier, the default of the router.

    A domain's score is ``1 - exp(-hits / saturation)`` over the distinct lexicon
    entries found (singular or plural, whole words, case-insensitive), so with the
    default saturation one hit scores 0.63 and two 0.86. The fallback domain
    (``general``) scores ``1 - max(other scores)``: 1.0 for a prompt no lexicon
    matches.

    Args:
        lexicons: Keywords per domain; the built-in lexicons by default.
        fallback: Name of the catch-all domain, or ``None`` for none.
        saturation: Hits at which a score reaches ``1 - 1/e``.
    """

    def __init__(
        self,
        lexicons: Mapping[str, Sequence[str]] | None = None,
        *,
        fallback: str | None = GENERAL_DOMAIN,
        saturation: float = 1.0,
    ) -> None:
        if saturation <= 0:
            raise ConfigError(f"saturation must be positive, got {saturation}")
        source = DEFAULT_DOMAIN_KEYWORDS if lexicons is None else lexicons
        self._fallback = fallback
        self._saturation = saturation
        self._patterns: dict[str, re.Pattern[str]] = {}
        for domain, words in source.items():
            if domain == fallback:
                continue
            alternatives = [
                _phrase_pattern(w, plurals=True)
                for w in sorted(words, key=len, reverse=True)
                if w.strip()
            ]
            if alternatives:
                self._patterns[domain] = re.compile("|".join(alternatives), re.IGNORECASE)
        names = list(source)
        if fallback is not None and fallback not in names:
            names.append(fallback)
        self.domains: tuple[str, ...] = tuple(names)

    def classify(self, text: str) -> dict[str, float]:
        """Score ``text`` against every domain (see the class docstring)."""
        scores = dict.fromkeys(self.domains, 0.0)
        for domain, pattern in self._patterns.items():
            hits = {m.group(0).lower() for m in pattern.finditer(text)}
            if hits:
                scores[domain] = 1.0 - math.exp(-len(hits) / self._saturation)
        if self._fallback is not None:
            specific = [s for d, s in scores.items() if d != self._fallback]
            scores[self._fallback] = 1.0 - max(specific, default=0.0)
        return scores


def _normalise(vector: Sequence[float]) -> list[float]:
    values = [float(x) for x in vector]
    norm = math.sqrt(sum(x * x for x in values))
    return [x / norm for x in values] if norm > 0 else values


class EmbeddingDomainClassifier:
    """Domain classifier by cosine similarity to domain descriptions.

    Scores are a softmax over ``cosine / temperature`` across domains, so they sum
    to 1 and the router's ``domain_threshold`` (0.5 by default) fires at most one
    domain. A domain may have several descriptions; its best cosine counts. The
    descriptions are embedded once, on first use.

    Args:
        embed: ``embed(texts) -> vectors``, e.g. a sentence encoder's encode method.
        descriptions: Description(s) per domain; the built-in ones by default
            (``Policy.domain_descriptions()`` gives a policy's).
        temperature: Softmax temperature; lower is more decisive.

    Raises:
        ConfigError: If there are no descriptions or the temperature is not positive.
    """

    def __init__(
        self,
        embed: EmbedFn,
        descriptions: Mapping[str, str | Sequence[str]] | None = None,
        *,
        temperature: float = 0.05,
    ) -> None:
        source = DEFAULT_DOMAIN_DESCRIPTIONS if descriptions is None else descriptions
        if not source:
            raise ConfigError("EmbeddingDomainClassifier needs at least one domain description")
        if temperature <= 0:
            raise ConfigError(f"temperature must be positive, got {temperature}")
        self._embed = embed
        self._temperature = temperature
        self._texts: list[tuple[str, str]] = []
        for domain, text in source.items():
            items = [text] if isinstance(text, str) else list(text)
            self._texts.extend((domain, t) for t in items)
        self.domains: tuple[str, ...] = tuple(source)
        self._vectors: list[list[float]] | None = None
        self._lock = threading.Lock()

    def _description_vectors(self) -> list[list[float]]:
        with self._lock:
            if self._vectors is None:
                raw = self._embed([t for _, t in self._texts])
                self._vectors = [_normalise(v) for v in raw]
            return self._vectors

    def similarities(self, text: str) -> dict[str, float]:
        """Best cosine similarity of ``text`` to each domain's descriptions."""
        vectors = self._description_vectors()
        query = _normalise(self._embed([text])[0])
        best = dict.fromkeys(self.domains, -1.0)
        for (domain, _), vec in zip(self._texts, vectors, strict=True):
            cosine = sum(a * b for a, b in zip(query, vec, strict=True))
            best[domain] = max(best[domain], cosine)
        return best

    def classify(self, text: str) -> dict[str, float]:
        """Softmax-normalised domain scores of ``text``."""
        cosines = self.similarities(text)
        top = max(cosines.values())
        weights = {d: math.exp((c - top) / self._temperature) for d, c in cosines.items()}
        total = sum(weights.values())
        return {d: w / total for d, w in weights.items()}
