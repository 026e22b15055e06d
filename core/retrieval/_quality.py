"""The retrieval-quality filter (design layer 1): weak, short and near-duplicate passages out.

Adapters wrap it in their framework's shape (a LangChain document compressor, a
LlamaIndex node postprocessor); the rules live here once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from .._errors import InvalidInputError

__all__ = ["QualityFilter", "word_jaccard"]

_WORD = re.compile(r"\w+")


def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def word_jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' lower-cased word sets (1.0 for two empty texts)."""
    left, right = _words(a), _words(b)
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


class QualityFilter(BaseModel):
    """Which retrieved passages are worth grounding an answer on.

    Attributes:
        min_score: Passages whose retrieval score is below this are dropped; ``None``
            keeps every score.
        keep_unscored: Whether a passage without a score passes the score check.
        min_length: Passages shorter than this many non-blank characters are dropped.
        dedupe_similarity: A passage whose word-set Jaccard similarity with an
            earlier kept passage reaches this is a near duplicate and is dropped;
            ``None`` keeps duplicates.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_score: float | None = 0.7
    keep_unscored: bool = True
    min_length: int = Field(default=50, ge=0)
    dedupe_similarity: float | None = Field(default=0.9, gt=0.0, le=1.0)

    def select(
        self, texts: Sequence[str], scores: Sequence[float | None] | None = None
    ) -> list[int]:
        """Indices of the passages to keep, in input order.

        Args:
            texts: The passages, best first (earlier ones win among duplicates).
            scores: One retrieval score (or ``None``) per passage; ``None`` when the
                retriever gives none.

        Returns:
            Indices into ``texts``.

        Raises:
            InvalidInputError: If ``scores`` and ``texts`` differ in length.
        """
        if scores is not None and len(scores) != len(texts):
            raise InvalidInputError(f"{len(scores)} scores for {len(texts)} passages")
        kept: list[int] = []
        kept_words: list[frozenset[str]] = []
        for i, text in enumerate(texts):
            score = scores[i] if scores is not None else None
            if score is None:
                if not self.keep_unscored:
                    continue
            elif self.min_score is not None and score < self.min_score:
                continue
            if len("".join(text.split())) < self.min_length:
                continue
            words = _words(text)
            if self.dedupe_similarity is not None and any(
                _similar(words, other, self.dedupe_similarity) for other in kept_words
            ):
                continue
            kept.append(i)
            kept_words.append(words)
        return kept


def _similar(a: frozenset[str], b: frozenset[str], threshold: float) -> bool:
    if not a and not b:
        return True
    return len(a & b) / len(a | b) >= threshold
