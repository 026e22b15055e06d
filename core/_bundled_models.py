"""Offline models shipped inside the package: detector, NLI explainer, prompt classifier.

All three share one MiniLM-L6 encoder stored in ``_bundled/detector``. That folder is a
standard ``BertForTokenClassification`` checkpoint in the LettuceDetect format (the
detector), plus ``heads.safetensors`` with two small sequence heads (NLI and "needs
fact check") applied to the same encoder's mean-pooled states. The encoder is loaded
once per (path, device) and shared by every loader here.

torch and transformers are imported lazily, inside the functions that need them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ._device import resolve_device, resolve_dtype
from ._errors import InvalidInputError, ModelLoadError, ModelNotAvailableError
from ._types import NLILabel

if TYPE_CHECKING:
    import torch

__all__ = [
    "BundledNLI",
    "BundledPromptClassifier",
    "FactCheckPrediction",
    "NLIPrediction",
    "bundled_detector_path",
]

logger = logging.getLogger(__name__)

_BUNDLED_DIR = Path(__file__).resolve().parent / "_bundled"
_DETECTOR_FILES = ("config.json", "model.safetensors", "tokenizer.json")
_HEADS_FILE = "heads.safetensors"
_NLI_LABELS: tuple[NLILabel, ...] = ("entailment", "neutral", "contradiction")


class NLIPrediction(BaseModel):
    """The NLI explainer's verdict on one (premise, hypothesis) pair."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: NLILabel
    confidence: float = Field(ge=0.0, le=1.0, description="Probability of ``label``.")
    probabilities: dict[NLILabel, float]


class FactCheckPrediction(BaseModel):
    """Whether a prompt asks for facts that should be checked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    needs_fact_check: bool
    confidence: float = Field(ge=0.0, le=1.0, description="Probability of the returned decision.")
    probability: float = Field(ge=0.0, le=1.0, description="Probability that it needs one.")


def bundled_detector_path() -> Path:
    """Folder of the bundled detector (a LettuceDetect-format token classifier).

    Returns:
        The folder, loadable with ``AutoModelForTokenClassification.from_pretrained``.

    Raises:
        ModelNotAvailableError: If the weights are not in this installation.
    """
    path = _BUNDLED_DIR / "detector"
    missing = [name for name in _DETECTOR_FILES if not (path / name).is_file()]
    if missing:
        raise ModelNotAvailableError(
            f"the bundled detector is missing from this installation ({path}: no "
            f"{', '.join(missing)}). Reinstall truthlens-integrations from a wheel that "
            "includes its package data, or name another model."
        )
    return path


@dataclass
class _Shared:
    """One loaded encoder with its tokenizer and heads."""

    model: Any
    tokenizer: Any
    heads: dict[str, torch.Tensor]
    device: torch.device
    dtype: torch.dtype
    tokenizer_lock: threading.Lock


_cache: dict[tuple[str, str], _Shared] = {}
_cache_lock = threading.Lock()


def _load_shared(path: Path | None, device: str | torch.device | None) -> _Shared:
    folder = path or bundled_detector_path()
    dev = resolve_device(device)
    key = (str(folder), str(dev))
    with _cache_lock:
        if key not in _cache:
            _cache[key] = _load(folder, dev)
        return _cache[key]


def _load(folder: Path, device: torch.device) -> _Shared:
    from safetensors.torch import load_file
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    heads_path = folder / _HEADS_FILE
    if not heads_path.is_file():
        raise ModelNotAvailableError(f"no {_HEADS_FILE} in {folder}: not a bundled model folder")
    dtype = resolve_dtype(device)
    try:
        model = AutoModelForTokenClassification.from_pretrained(str(folder), dtype=dtype)
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        heads = {k: v.to(device=device, dtype=dtype) for k, v in load_file(heads_path).items()}
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelLoadError(f"could not load the bundled model from {folder}: {exc}") from exc
    model.to(device).eval()
    logger.info("loaded bundled encoder from %s on %s (%s)", folder, device, dtype)

    return _Shared(model, tokenizer, heads, device, dtype, threading.Lock())


def _head_logits(shared: _Shared, name: str, states: torch.Tensor, mask: torch.Tensor) -> Any:
    import torch

    m = mask.unsqueeze(-1).to(states.dtype)
    pooled = (states * m).sum(1) / m.sum(1).clamp(min=1.0)
    h = shared.heads
    hidden = torch.tanh(pooled @ h[f"{name}.dense.weight"].T + h[f"{name}.dense.bias"])
    return hidden @ h[f"{name}.out.weight"].T + h[f"{name}.out.bias"]


def _classify(
    shared: _Shared,
    head: str,
    texts: Sequence[tuple[str, str | None]],
    *,
    batch_size: int,
    max_length: int,
) -> list[list[float]]:
    """Class probabilities per input, batched by length, in input order."""
    import torch

    order = sorted(range(len(texts)), key=lambda i: len(texts[i][0]) + len(texts[i][1] or ""))
    probs: list[list[float]] = [[] for _ in texts]
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            firsts = [texts[i][0] for i in idx]
            seconds = [texts[i][1] for i in idx]
            # Fast tokenizers are not safe to call from several threads at once.
            with shared.tokenizer_lock:
                enc = shared.tokenizer(
                    firsts,
                    None if seconds[0] is None else seconds,
                    truncation=True,
                    max_length=max_length,
                    padding=True,
                    return_tensors="pt",
                )
            ids = enc["input_ids"].to(shared.device)
            mask = enc["attention_mask"].to(shared.device)
            states = shared.model.bert(input_ids=ids, attention_mask=mask).last_hidden_state
            batch = torch.softmax(_head_logits(shared, head, states, mask).float(), dim=-1)
            for i, row in zip(idx, batch.cpu().tolist(), strict=True):
                probs[i] = row
    return probs


class BundledNLI:
    """The bundled NLI explainer: entailment / neutral / contradiction.

    Args:
        path: A bundled model folder; ``None`` uses the one shipped in the package.
        device: Where to run (see :func:`resolve_device`); ``None`` picks automatically.
        batch_size: Pairs per forward pass.
        max_length: Token limit of one (premise, hypothesis) pair; premises are cut.

    Raises:
        ModelNotAvailableError: If the bundled weights are missing.
        ModelLoadError: If they cannot be loaded.
    """

    def __init__(
        self,
        *,
        path: Path | None = None,
        device: str | torch.device | None = None,
        batch_size: int = 32,
        max_length: int = 256,
    ) -> None:
        self._shared = _load_shared(path, device)
        self.batch_size = batch_size
        self.max_length = max_length

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
        rows = _classify(
            self._shared, "nli", checked, batch_size=self.batch_size, max_length=self.max_length
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


class BundledPromptClassifier:
    """The bundled prompt classifier: does a prompt need fact checking?

    Factual questions do; creative writing, code, opinions and rewriting do not.

    Args:
        path: A bundled model folder; ``None`` uses the one shipped in the package.
        device: Where to run; ``None`` picks automatically.
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
        threshold: float = 0.5,
        batch_size: int = 32,
        max_length: int = 128,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise InvalidInputError(f"threshold must be within [0, 1], got {threshold}")
        self._shared = _load_shared(path, device)
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
        rows = _classify(
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
