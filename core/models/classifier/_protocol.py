"""What the engine asks of a prompt classifier."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["FactCheckClassifier"]


@runtime_checkable
class FactCheckClassifier(Protocol):
    """Decides whether prompts ask for facts that should be checked.

    Any object with this method plugs in: the bundled model, a Hugging Face classifier,
    the service's, or a deterministic stand-in in tests.
    """

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        """One ``(needs_fact_check, confidence of that prediction)`` per prompt."""
        ...
