"""A Hugging Face sequence classifier (NLI, prompt classes) and its batched probabilities."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._loading import LoadedModel, load_sequence_classifier

if TYPE_CHECKING:
    import torch

__all__ = ["HFSequenceClassifier", "sequence_probabilities"]

logger = logging.getLogger(__name__)


def sequence_probabilities(
    loaded: LoadedModel,
    texts: Sequence[tuple[str, str | None]],
    *,
    batch_size: int,
    max_length: int,
    truncation: bool | str = True,
    logits: Callable[[Any], Any] | None = None,
) -> list[list[float]]:
    """Class probabilities of a sequence classifier per text (or text pair), in input order.

    Inputs are batched by length, so a batch pads little. A head with one logit is a
    binary classifier whose logit is the log-odds of its class: its row is that class's
    probability (a sigmoid; a softmax over one logit would always be 1).

    Args:
        loaded: A model from :func:`load_sequence_classifier`.
        texts: ``(first, second)`` pairs; ``second`` is ``None`` for single texts (then
            it must be ``None`` for all).
        batch_size: Inputs per forward pass.
        max_length: Token limit per input.
        truncation: The tokenizer's truncation rule (``"only_first"`` cuts premises).
        logits: Maps a batch's encoding (torch tensors on the model's device, or
            int64 numpy arrays on the ONNX backend) to class logits; ``None`` uses the
            model's own head.

    Returns:
        One probability row per input (one value for a one-logit head).
    """
    order = sorted(range(len(texts)), key=lambda i: len(texts[i][0]) + len(texts[i][1] or ""))
    rows: list[list[float]] = [[] for _ in texts]
    onnx = loaded.graph is not None
    if loaded.graph is not None and loaded.graph.rows_per_run is not None:
        batch_size = min(batch_size, loaded.graph.rows_per_run)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        seconds = [texts[i][1] for i in idx]
        with loaded.tokenizer_lock:
            encoded = loaded.tokenizer(
                [texts[i][0] for i in idx],
                None if seconds[0] is None else seconds,
                truncation=truncation,
                max_length=max_length,
                padding=True,
                return_tensors="np" if onnx else "pt",
            )
        probs = (
            _onnx_probabilities(loaded, encoded, logits)
            if onnx
            else _torch_probabilities(loaded, encoded, logits)
        )
        for i, row in zip(idx, probs, strict=True):
            rows[i] = row
    return rows


def _torch_probabilities(
    loaded: LoadedModel, encoded: Any, logits: Callable[[Any], Any] | None
) -> list[list[float]]:
    import torch

    with torch.inference_mode():
        encoded = encoded.to(loaded.device)
        scores = logits(encoded) if logits else loaded.model(**encoded).logits
    scores = scores.float()
    probs = torch.sigmoid(scores) if scores.shape[-1] == 1 else torch.softmax(scores, dim=-1)
    result: list[list[float]] = probs.cpu().tolist()
    return result


def _onnx_probabilities(
    loaded: LoadedModel, encoded: Any, logits: Callable[[Any], Any] | None
) -> list[list[float]]:
    import numpy as np

    assert loaded.graph is not None  # an onnx LoadedModel always has one
    feeds = {k: np.asarray(v, dtype=np.int64) for k, v in encoded.items()}
    scores = logits(feeds) if logits else loaded.graph.run(feeds, ["logits"])[0]
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape[-1] == 1:
        # tanh's form of the sigmoid: no overflow for a large negative logit
        sigmoid: list[list[float]] = (0.5 * (1.0 + np.tanh(scores / 2.0))).tolist()
        return sigmoid
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    result: list[list[float]] = (scores / scores.sum(axis=-1, keepdims=True)).tolist()
    return result


class HFSequenceClassifier:
    """A Hugging Face sequence classifier, loaded through the shared cache.

    The base of the NLI explainer and the prompt classifier backends: they differ only
    in how they read the model's labels.

    Args:
        model: A local model folder or a hub id (needs the hub or its local cache).
        device: Where to run; ``None`` picks automatically.
        dtype: Precision; ``None``/``"auto"`` picks bf16/fp16 on GPUs and fp32 on the CPU.
        batch_size: Inputs per forward pass (sorted by length first); ``None`` is the
            class's ``default_batch_size``.
        max_length: Token limit per input; longer inputs are cut.
        local_files_only: Only use the local Hugging Face cache for hub ids.
        backend: ``"auto"``, ``"torch"`` or ``"onnx"`` (see :func:`load_pretrained`).
        revision: Hub revision (branch, tag or commit) for hub ids.
        trust_remote_code: Let a checkpoint that ships its own model code run it
            (see :func:`load_pretrained`); off by default.

    Raises:
        ModelNotAvailableError: If the model cannot be found or downloaded.
        ModelLoadError: If it is not a sequence classifier, or its labels do not fit
            (see :meth:`_read_labels`).
    """

    default_batch_size = 16

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        batch_size: int | None = None,
        max_length: int = 256,
        local_files_only: bool | None = None,
        backend: str = "auto",
        revision: str | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        self._loaded = load_sequence_classifier(
            model,
            device=device,
            dtype=dtype,
            local_files_only=local_files_only,
            backend=backend,
            revision=revision,
            trust_remote_code=trust_remote_code,
        )
        self.device = self._loaded.device
        self.model_id = os.fspath(model)
        self.batch_size = batch_size or self.default_batch_size
        self.max_length = max_length
        self._read_labels(dict(self._loaded.config.id2label))

    def _read_labels(self, id2label: dict[int, str]) -> None:
        """Check and keep what the model's class names mean (raises ModelLoadError)."""

    def _probabilities(
        self, texts: Sequence[tuple[str, str | None]], truncation: bool | str = True
    ) -> list[list[float]]:
        return sequence_probabilities(
            self._loaded,
            texts,
            batch_size=self.batch_size,
            max_length=self.max_length,
            truncation=truncation,
        )
