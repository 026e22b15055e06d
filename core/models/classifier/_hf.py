"""Prompt classifier backed by any Hugging Face binary sequence classifier.

For the policy's ``hallucination_mitigation.fact_check_model.model_id``, e.g. a
HaluGate Sentinel checkpoint: "does this prompt ask for facts that must be checked?".
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._device import resolve_device, resolve_dtype
from ..._errors import InvalidInputError, ModelLoadError, ModelNotAvailableError

if TYPE_CHECKING:
    import torch

__all__ = ["TransformersFactCheckClassifier", "positive_class"]

logger = logging.getLogger(__name__)

_NEGATION = re.compile(r"(^|_)(no|not|non)(_|$)")
_POSITIVE = re.compile(r"fact|check|verif|yes|true|positive|needs")


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_")


def positive_class(id2label: Mapping[int, str]) -> int:
    """Index of the "needs fact checking" class of a two-class model.

    The class whose name says so (``FACT_CHECK_NEEDED``, ``needs_fact_check``, ``yes``)
    and carries no negation; for unnamed classes (``LABEL_0`` / ``LABEL_1``) index 1.

    Args:
        id2label: The model config's class names.

    Returns:
        The positive class index.

    Raises:
        ModelLoadError: If the model does not have two classes or the names are ambiguous.
    """
    if len(id2label) != 2:
        raise ModelLoadError(
            f"a fact-check classifier needs two classes, this model has {len(id2label)}"
        )
    names = {int(i): _norm(n) for i, n in id2label.items()}
    if all(re.fullmatch(r"label_\d+", n) for n in names.values()):
        return 1
    positive = [i for i, n in names.items() if _POSITIVE.search(n) and not _NEGATION.search(n)]
    if len(positive) != 1:
        raise ModelLoadError(
            f"cannot tell which class means 'needs fact check' from {dict(id2label)}; "
            "name them e.g. FACT_CHECK_NEEDED / NO_FACT_CHECK_NEEDED in the config"
        )
    return positive[0]


class TransformersFactCheckClassifier:
    """Runs a Hugging Face two-class prompt classifier behind ``FactCheckClassifier``.

    Args:
        model: A local model folder or a hub id (needs the hub or its local cache).
        device: Where to run; ``None`` picks automatically.
        dtype: Precision; ``None``/``"auto"`` picks bf16/fp16 on GPUs and fp32 on the CPU.
        batch_size: Prompts per forward pass (prompts are sorted by length first).
        max_length: Token limit per prompt; longer prompts are cut.

    Raises:
        ModelNotAvailableError: If the model cannot be found or downloaded.
        ModelLoadError: If it is not a two-class sequence classifier.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        batch_size: int = 32,
        max_length: int = 256,
    ) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        source = os.fspath(model)
        self.device = resolve_device(device)
        precision = resolve_dtype(self.device, dtype)
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(source)
            self._model: Any = AutoModelForSequenceClassification.from_pretrained(
                source, dtype=precision
            )
        except Exception as exc:
            if Path(source).is_dir():
                raise ModelLoadError(f"could not load the classifier in {source}: {exc}") from exc
            raise ModelNotAvailableError(
                f"could not load fact-check model {source!r} ({type(exc).__name__}: {exc}); "
                "download it where the hub is reachable (e.g. `huggingface-cli download "
                f"{source} --local-dir ./fact-check`) and set fact_check_model.model_id to "
                "that folder"
            ) from exc
        self.positive = positive_class(self._model.config.id2label)
        self._model.to(self.device).eval()
        self.model_id = source
        self.batch_size = batch_size
        self.max_length = max_length
        self._tokenizer_lock = threading.Lock()
        logger.info("loaded fact-check classifier %s on %s", source, self.device)

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        """``(needs_fact_check, confidence of that decision)`` per prompt, in order.

        Raises:
            InvalidInputError: If a prompt is not a non-empty string.
        """
        import torch

        for i, prompt in enumerate(prompts):
            if not isinstance(prompt, str) or not prompt.strip():
                raise InvalidInputError(f"prompts[{i}] must be a non-empty string")
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        out: list[tuple[bool, float]] = [(True, 1.0)] * len(prompts)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            with self._tokenizer_lock:
                encoded = self._tokenizer(
                    [prompts[i] for i in idx],
                    truncation=True,
                    max_length=self.max_length,
                    padding=True,
                    return_tensors="pt",
                )
            with torch.inference_mode():
                logits = self._model(**encoded.to(self.device)).logits
            yes = torch.softmax(logits.float(), dim=-1)[:, self.positive].cpu().tolist()
            for i, p in zip(idx, yes, strict=True):
                out[i] = (p >= 0.5, p if p >= 0.5 else 1.0 - p)
        return out
