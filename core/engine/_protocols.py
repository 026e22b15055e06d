"""The two model roles of the guard pipeline besides the detector, as small protocols.

Any object with the right method plugs in: the bundled models (through the adapters
below), a Hugging Face NLI model, or a deterministic stand-in in tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from .._types import NLILabel

__all__ = [
    "BundledFactCheckAdapter",
    "BundledNLIAdapter",
    "FactCheckClassifier",
    "NLIExplainer",
]


@runtime_checkable
class NLIExplainer(Protocol):
    """Judges (premise, hypothesis) pairs as entailment, neutral or contradiction."""

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[NLILabel, float]]:
        """One ``(label, confidence)`` per pair, in input order."""
        ...


@runtime_checkable
class FactCheckClassifier(Protocol):
    """Decides whether prompts ask for facts that should be checked."""

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        """One ``(needs_fact_check, confidence of that prediction)`` per prompt."""
        ...


class BundledNLIAdapter:
    """Puts the bundled NLI model behind :class:`NLIExplainer`.

    Args:
        **options: Passed to ``BundledNLI`` (``path``, ``device``, ``batch_size``, ...).

    Raises:
        ModelNotAvailableError: If the bundled weights are not installed.
    """

    def __init__(self, **options: Any) -> None:
        from .._bundled_models import BundledNLI

        self.model_id = "truthlens-bundled-nli"
        self._model = BundledNLI(**options)

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[NLILabel, float]]:
        """Label each pair with the bundled model."""
        return [(p.label, p.confidence) for p in self._model.predict(pairs)]


class BundledFactCheckAdapter:
    """Puts the bundled prompt classifier behind :class:`FactCheckClassifier`.

    Args:
        **options: Passed to ``BundledPromptClassifier``.

    Raises:
        ModelNotAvailableError: If the bundled weights are not installed.
    """

    def __init__(self, **options: Any) -> None:
        from .._bundled_models import BundledPromptClassifier

        self.model_id = "truthlens-bundled-classifier"
        self._model = BundledPromptClassifier(**options)

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        """Classify each prompt with the bundled model."""
        return [(p.needs_fact_check, p.confidence) for p in self._model.predict(prompts)]
