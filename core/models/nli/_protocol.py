"""What the engine asks of an NLI explainer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..._types import NLILabel

__all__ = ["NLIExplainer"]


@runtime_checkable
class NLIExplainer(Protocol):
    """Judges (premise, hypothesis) pairs as entailment, neutral or contradiction.

    Any object with this method plugs in: the bundled model, a Hugging Face NLI model, the
    service's, or a deterministic stand-in in tests.
    """

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[NLILabel, float]]:
        """One ``(label, confidence)`` per pair, in input order."""
        ...
