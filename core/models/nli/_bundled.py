"""The bundled NLI explainer: a branch of the shared bundled encoder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ..._errors import InvalidInputError, ModelLoadError, ModelNotAvailableError
from ..._types import NLILabel
from .._bundled import (
    BRANCH_FILE,
    BUNDLED_DIR,
    Branch,
    head_probabilities,
    load_branch,
    load_shared,
)

if TYPE_CHECKING:
    import torch

__all__ = ["BundledNLI", "BundledNLIAdapter", "NLIPrediction"]

_NLI_LABELS: tuple[NLILabel, ...] = ("entailment", "neutral", "contradiction")


class NLIPrediction(BaseModel):
    """The NLI explainer's verdict on one (premise, hypothesis) pair."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: NLILabel
    confidence: float = Field(ge=0.0, le=1.0, description="Probability of ``label``.")
    probabilities: dict[NLILabel, float]


class BundledNLI:
    """The bundled NLI explainer: entailment / neutral / contradiction.

    Uses the NLI branch in ``branch_path`` when it was trained on this encoder, else the
    encoder's multi-task ``nli`` head (e.g. for a retrained encoder without a branch).

    Args:
        path: A bundled model folder; ``None`` uses the one shipped in the package.
        branch_path: A folder holding an NLI branch (``model.safetensors``); ``None`` uses
            the shipped one. A folder named here must hold a branch that fits ``path``.
        device: Where to run (see :func:`resolve_device`); ``None`` picks automatically.
        dtype: Precision (see :func:`resolve_dtype`); ``None`` is fp32 on the CPU.
        backend: ``"auto"`` (torch), ``"torch"`` or ``"onnx"`` (ONNX Runtime, CPU).
        batch_size: Pairs per forward pass.
        max_length: Token limit of one (premise, hypothesis) pair; premises are cut.

    Raises:
        ModelNotAvailableError: If the bundled weights are missing, or ``branch_path``
            holds no branch.
        ModelLoadError: If they cannot be loaded, or the named branch does not fit.
    """

    def __init__(
        self,
        *,
        path: Path | None = None,
        branch_path: Path | None = None,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        batch_size: int = 32,
        max_length: int = 256,
        backend: str = "auto",
    ) -> None:
        self._shared = load_shared(path, device, dtype, backend)
        self._branch = self._find_branch(branch_path)
        self.batch_size = batch_size
        self.max_length = max_length

    @property
    def backend(self) -> str:
        """What runs the encoder: ``"torch"``, ``"onnx-int8"`` or ``"onnx-fp32"``."""
        graph = self._shared.loaded.graph
        return f"onnx-{graph.quantization}" if graph is not None else "torch"

    @property
    def uses_branch(self) -> bool:
        """Whether predictions come from the NLI branch rather than the multi-task head."""
        return self._branch is not None

    def _find_branch(self, branch_path: Path | None) -> Branch | None:
        folder = branch_path or BUNDLED_DIR / "nli"
        if not (folder / BRANCH_FILE).is_file():
            if branch_path is not None:
                raise ModelNotAvailableError(f"no NLI branch ({BRANCH_FILE}) in {folder}")
            return None
        branch = load_branch(self._shared, folder)
        if branch is None and branch_path is not None:
            raise ModelLoadError(
                f"the NLI branch in {folder} was trained on another encoder than "
                f"{self._shared.folder}; pass the encoder it was built for as path="
            )
        return branch

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[NLIPrediction]:
        """Judge whether each premise entails, contradicts or is neutral to its hypothesis.

        Args:
            pairs: ``(premise, hypothesis)`` pairs, e.g. a context sentence and a
                flagged span in its answer sentence.

        Returns:
            One prediction per pair, in input order.

        Raises:
            InvalidInputError: If a pair is not two non-empty strings.
        """
        checked: list[tuple[str, str | None]] = []
        for i, pair in enumerate(pairs):
            if (
                not isinstance(pair, tuple | list)
                or len(pair) != 2
                or not all(isinstance(x, str) and x.strip() for x in pair)
            ):
                raise InvalidInputError(
                    f"pairs[{i}] must be a (premise, hypothesis) pair of non-empty strings"
                )
            checked.append((pair[0], pair[1]))
        if not checked:
            return []
        rows = head_probabilities(
            self._shared,
            "nli",
            checked,
            batch_size=self.batch_size,
            max_length=self.max_length,
            branch=self._branch,
        )
        out = []
        for row in rows:
            best = max(range(len(_NLI_LABELS)), key=lambda k: row[k])
            out.append(
                NLIPrediction(
                    label=_NLI_LABELS[best],
                    confidence=row[best],
                    probabilities=dict(zip(_NLI_LABELS, row, strict=True)),
                )
            )
        return out

    def not_entailed(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """``1 - P(entailment)`` of each pair: the claim check the response map reads.

        Args:
            pairs: ``(premise, hypothesis)`` pairs.

        Raises:
            InvalidInputError: If a pair is not two non-empty strings.
        """
        return [1.0 - p.probabilities["entailment"] for p in self.predict(pairs)]


class BundledNLIAdapter(BundledNLI):
    """The bundled NLI model behind :class:`NLIExplainer` (``explain`` over ``predict``).

    Takes the same arguments as :class:`BundledNLI`.
    """

    model_id = "truthlens-bundled-nli"

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[NLILabel, float]]:
        """Label each pair with the bundled model."""
        return [(p.label, p.confidence) for p in self.predict(pairs)]
