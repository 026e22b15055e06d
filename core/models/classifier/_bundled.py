"""The bundled prompt classifier: a sequence head on the shared bundled encoder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ..._errors import InvalidInputError
from .._bundled import head_probabilities, load_shared

if TYPE_CHECKING:
    import torch

__all__ = ["BundledFactCheckAdapter", "BundledPromptClassifier", "FactCheckPrediction"]


class FactCheckPrediction(BaseModel):
    """Whether a prompt asks for facts that should be checked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    needs_fact_check: bool
    confidence: float = Field(ge=0.0, le=1.0, description="Probability of the returned decision.")
    probability: float = Field(ge=0.0, le=1.0, description="Probability that it needs one.")


class BundledPromptClassifier:
    """The bundled prompt classifier: does a prompt need fact checking?

    Factual questions do; creative writing, code, opinions and rewriting do not.

    Args:
        path: A bundled model folder; ``None`` uses the one shipped in the package.
        device: Where to run; ``None`` picks automatically.
        dtype: Precision (see :func:`resolve_dtype`); ``None`` is fp32 on the CPU.
        backend: ``"auto"`` (torch), ``"torch"`` or ``"onnx"`` (ONNX Runtime, CPU).
        threshold: Probability at or above which a prompt needs a fact check.
        batch_size: Prompts per forward pass.
        max_length: Token limit per prompt; longer prompts are cut.

    Raises:
        ModelNotAvailableError: If the bundled weights are missing.
        ModelLoadError: If they cannot be loaded.
    """

    def __init__(
        self,
        *,
        path: Path | None = None,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        threshold: float = 0.5,
        batch_size: int = 32,
        max_length: int = 128,
        backend: str = "auto",
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise InvalidInputError(f"threshold must be within [0, 1], got {threshold}")
        self._shared = load_shared(path, device, dtype, backend)
        self.threshold = threshold
        self.batch_size = batch_size
        self.max_length = max_length

    def predict(self, prompts: Sequence[str]) -> list[FactCheckPrediction]:
        """Classify prompts.

        Args:
            prompts: User prompts.

        Returns:
            One prediction per prompt, in input order.

        Raises:
            InvalidInputError: If a prompt is not a non-empty string.
        """
        if isinstance(prompts, str):
            raise InvalidInputError("prompts must be a sequence of strings, not one string")
        for i, p in enumerate(prompts):
            if not isinstance(p, str) or not p.strip():
                raise InvalidInputError(f"prompts[{i}] must be a non-empty string")
        if not prompts:
            return []
        rows = head_probabilities(
            self._shared,
            "prompt",
            [(p, None) for p in prompts],
            batch_size=self.batch_size,
            max_length=self.max_length,
        )
        out = []
        for row in rows:
            yes = row[1]
            needs = yes >= self.threshold
            out.append(
                FactCheckPrediction(
                    needs_fact_check=needs, confidence=yes if needs else 1.0 - yes, probability=yes
                )
            )
        return out


class BundledFactCheckAdapter(BundledPromptClassifier):
    """The bundled prompt classifier behind :class:`FactCheckClassifier`.

    Takes the same arguments as :class:`BundledPromptClassifier`.
    """

    model_id = "truthlens-bundled-classifier"

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        """Classify each prompt with the bundled model."""
        return [(p.needs_fact_check, p.confidence) for p in self.predict(prompts)]
