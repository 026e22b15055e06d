"""Offline models shipped inside the package: detector, NLI explainer, prompt classifier.

All three share one MiniLM-L6 encoder stored in ``_bundled/detector``. That folder is a
standard ``BertForTokenClassification`` checkpoint in the LettuceDetect format (the
detector), plus ``heads.safetensors`` with two small sequence heads (NLI and "needs
fact check") applied to the same encoder's mean-pooled states. The encoder comes from the
detector's model cache (:func:`load_token_classifier`), so the detector, the NLI explainer
and the classifier hold one copy of it per (path, device, dtype).

The NLI explainer adds a branch of its own (``_bundled/nli/model.safetensors``): it reuses
the encoder's embeddings and lower layers as they are and replaces the upper layers and
the head with ones trained for NLI alone. The branch records a fingerprint of the layers it
was trained on and is only used with an encoder that matches it.

torch and transformers are imported lazily, inside the functions that need them.
"""

from __future__ import annotations

import copy
import hashlib
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
    "encoder_fingerprint",
]

logger = logging.getLogger(__name__)

_BUNDLED_DIR = Path(__file__).resolve().parent / "_bundled"
_DETECTOR_FILES = ("config.json", "model.safetensors", "tokenizer.json")
_HEADS_FILE = "heads.safetensors"
_BRANCH_FILE = "model.safetensors"
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


def encoder_fingerprint(folder: Path, shared_layers: int) -> str:
    """SHA-256 over the embeddings and the lower ``shared_layers`` layers of an encoder.

    The token head and the upper layers are left out, so recalibrating the detector's
    head does not break a branch built on the same lower layers.

    Args:
        folder: A bundled detector folder (``model.safetensors`` in it).
        shared_layers: How many lower transformer layers to include.

    Returns:
        The hex digest.
    """
    from safetensors import safe_open

    prefixes = ("bert.embeddings.", *(f"bert.encoder.layer.{i}." for i in range(shared_layers)))
    digest = hashlib.sha256()
    with safe_open(str(folder / "model.safetensors"), framework="pt") as fh:
        for key in sorted(k for k in fh.keys() if k.startswith(prefixes)):  # noqa: SIM118
            digest.update(key.encode())
            digest.update(fh.get_tensor(key).contiguous().numpy().tobytes())
    return digest.hexdigest()


@dataclass
class _Branch:
    """An encoder that shares the lower layers of another one, with its own head."""

    model: Any
    head: dict[str, torch.Tensor]


@dataclass
class _Shared:
    """One loaded encoder with its tokenizer and heads."""

    model: Any
    tokenizer: Any
    heads: dict[str, torch.Tensor]
    device: torch.device
    dtype: torch.dtype
    tokenizer_lock: threading.Lock
    folder: Path
    # None: the folder's branch was built for another encoder
    branches: dict[str, _Branch | None]


_cache: dict[tuple[str, str, str], _Shared] = {}
_cache_lock = threading.Lock()


def _load_shared(
    path: Path | None, device: str | torch.device | None, dtype: str | torch.dtype | None
) -> _Shared:
    folder = path or bundled_detector_path()
    dev = resolve_device(device)
    precision = resolve_dtype(dev, dtype)
    key = (str(folder), str(dev), str(precision))
    with _cache_lock:
        if key not in _cache:
            _cache[key] = _load(folder, dev, precision)
        return _cache[key]


def _load(folder: Path, device: torch.device, dtype: torch.dtype) -> _Shared:
    from safetensors.torch import load_file

    from .detection._loading import load_token_classifier

    heads_path = folder / _HEADS_FILE
    if not heads_path.is_file():
        raise ModelNotAvailableError(f"no {_HEADS_FILE} in {folder}: not a bundled model folder")
    encoder = load_token_classifier(folder, device=device, dtype=dtype)
    try:
        heads = {k: v.to(device=device, dtype=dtype) for k, v in load_file(heads_path).items()}
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelLoadError(f"could not load the heads in {heads_path}: {exc}") from exc
    return _Shared(
        encoder.model, encoder.tokenizer, heads, device, dtype, encoder.tokenizer_lock, folder, {}
    )


def _load_branch(shared: _Shared, folder: Path) -> _Branch | None:
    """The NLI branch in ``folder`` for this encoder; ``None`` if it was built for another."""
    with _cache_lock:
        if str(folder) not in shared.branches:
            shared.branches[str(folder)] = _read_branch(shared, folder)
        return shared.branches[str(folder)]


def _read_branch(shared: _Shared, folder: Path) -> _Branch | None:
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file
    from transformers import BertModel

    file = folder / _BRANCH_FILE
    try:
        with safe_open(str(file), framework="pt") as fh:
            meta = fh.metadata() or {}
        k = int(meta["shared_layers"])
        if meta.get("encoder_sha256") != encoder_fingerprint(shared.folder, k):
            logger.info("NLI branch %s was trained on another encoder than %s", file, shared.folder)
            return None
        tensors = load_file(str(file))
    except (OSError, KeyError, ValueError, RuntimeError) as exc:
        raise ModelLoadError(f"could not read the NLI branch {file}: {exc}") from exc
    bert = shared.model.bert
    with torch.device("meta"):
        model: Any = BertModel(bert.config, add_pooling_layer=False)
    model.embeddings = bert.embeddings
    upper = copy.deepcopy(bert.encoder.layer[k:])
    prefix = "encoder.layer."
    for offset, layer in enumerate(upper):
        key = f"{prefix}{k + offset}."
        layer.load_state_dict({n[len(key) :]: v for n, v in tensors.items() if n.startswith(key)})
    model.encoder.layer = torch.nn.ModuleList([*bert.encoder.layer[:k], *upper])
    model.to(shared.device, shared.dtype).eval()
    # stored as "head.*"; named like the multi-task NLI head so callers need not care
    head = {
        "nli." + n.removeprefix("head."): v.to(shared.device, shared.dtype)
        for n, v in tensors.items()
        if n.startswith("head.")
    }
    logger.info("loaded NLI branch from %s (%d shared layers)", folder, k)
    return _Branch(model, head)


def _head_logits(heads: dict[str, Any], name: str, states: torch.Tensor, mask: torch.Tensor) -> Any:
    import torch

    m = mask.unsqueeze(-1).to(states.dtype)
    pooled = (states * m).sum(1) / m.sum(1).clamp(min=1.0)
    h = heads
    hidden = torch.tanh(pooled @ h[f"{name}.dense.weight"].T + h[f"{name}.dense.bias"])
    return hidden @ h[f"{name}.out.weight"].T + h[f"{name}.out.bias"]


def _classify(
    shared: _Shared,
    head: str,
    texts: Sequence[tuple[str, str | None]],
    *,
    batch_size: int,
    max_length: int,
    branch: _Branch | None = None,
) -> list[list[float]]:
    """Class probabilities per input, batched by length, in input order.

    ``head`` names a head of ``heads.safetensors``; with a ``branch``, the branch's
    encoder and its head of that name are used instead.
    """
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
            encoder = branch.model if branch else shared.model.bert
            states = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
            logits = _head_logits(branch.head if branch else shared.heads, head, states, mask)
            batch = torch.softmax(logits.float(), dim=-1)
            for i, row in zip(idx, batch.cpu().tolist(), strict=True):
                probs[i] = row
    return probs


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
    ) -> None:
        self._shared = _load_shared(path, device, dtype)
        self._branch = self._find_branch(branch_path)
        self.batch_size = batch_size
        self.max_length = max_length

    @property
    def uses_branch(self) -> bool:
        """Whether predictions come from the NLI branch rather than the multi-task head."""
        return self._branch is not None

    def _find_branch(self, branch_path: Path | None) -> _Branch | None:
        folder = branch_path or _BUNDLED_DIR / "nli"
        if not (folder / _BRANCH_FILE).is_file():
            if branch_path is not None:
                raise ModelNotAvailableError(f"no NLI branch ({_BRANCH_FILE}) in {folder}")
            return None
        branch = _load_branch(self._shared, folder)
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
        rows = _classify(
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


class BundledPromptClassifier:
    """The bundled prompt classifier: does a prompt need fact checking?

    Factual questions do; creative writing, code, opinions and rewriting do not.

    Args:
        path: A bundled model folder; ``None`` uses the one shipped in the package.
        device: Where to run; ``None`` picks automatically.
        dtype: Precision (see :func:`resolve_dtype`); ``None`` is fp32 on the CPU.
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
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise InvalidInputError(f"threshold must be within [0, 1], got {threshold}")
        self._shared = _load_shared(path, device, dtype)
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
