"""NLI explainer backed by any Hugging Face sequence-classification NLI model."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._device import resolve_device, resolve_dtype
from ..._errors import InvalidInputError, ModelLoadError, ModelNotAvailableError
from ..._types import NLILabel

if TYPE_CHECKING:
    import torch

__all__ = ["TransformersNLIExplainer", "map_nli_labels"]

logger = logging.getLogger(__name__)

# Label names seen in NLI model configs, lower-cased. Two-way models
# (entailment / not_entailment) map their negative class to neutral: they cannot
# tell a contradiction from a claim the premise is silent about.
_ALIASES: Mapping[str, NLILabel] = {
    "entailment": "entailment",
    "entail": "entailment",
    "neutral": "neutral",
    "not_entailment": "neutral",
    "non_entailment": "neutral",
    "contradiction": "contradiction",
    "contradict": "contradiction",
}


def map_nli_labels(id2label: Mapping[int, str]) -> dict[int, NLILabel]:
    """Map a model config's ``id2label`` onto entailment / neutral / contradiction.

    Args:
        id2label: The config's class names, e.g. ``{0: "ENTAILMENT", 1: "NEUTRAL", ...}``.

    Returns:
        Class index to NLI label.

    Raises:
        ModelLoadError: If a class name is not an NLI label or no entailment class exists.
    """
    mapping: dict[int, NLILabel] = {}
    for index, name in id2label.items():
        label = _ALIASES.get(str(name).strip().lower().replace("-", "_").replace(" ", "_"))
        if label is None:
            raise ModelLoadError(
                f"class {index} is named {name!r}, not an NLI label; expected "
                "entailment / neutral / contradiction in the model config's id2label"
            )
        mapping[int(index)] = label
    if "entailment" not in mapping.values():
        raise ModelLoadError("the model has no entailment class: not an NLI model")
    return mapping


class TransformersNLIExplainer:
    """Runs a Hugging Face NLI model (e.g. ``tasksource/ModernBERT-base-nli``).

    Labels come from the model config's ``id2label``; the confidence of a label is the
    summed probability of the classes mapped to it.

    Args:
        model: A local model folder or a hub id (needs the hub or its local cache).
        device: Where to run; ``None`` picks automatically.
        dtype: Precision; ``None``/``"auto"`` picks bf16/fp16 on GPUs and fp32 on the CPU.
        batch_size: Pairs per forward pass.
        max_length: Token limit of one pair; the premise is cut first.
        local_files_only: Only use the local Hugging Face cache for hub ids.

    Raises:
        ModelNotAvailableError: If the model cannot be found or downloaded.
        ModelLoadError: If it is not a sequence classifier with NLI labels.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        batch_size: int = 16,
        max_length: int = 256,
        local_files_only: bool | None = None,
    ) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        source = os.fspath(model)
        is_local = Path(source).is_dir()
        self.device = resolve_device(device)
        kwargs: dict[str, Any] = {"dtype": resolve_dtype(self.device, dtype)}
        if not is_local and local_files_only is not None:
            kwargs["local_files_only"] = local_files_only
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
            self._model = AutoModelForSequenceClassification.from_pretrained(source, **kwargs)
        except Exception as exc:
            if is_local:
                raise ModelLoadError(f"could not load the NLI model in {source}: {exc}") from exc
            raise ModelNotAvailableError(
                f"could not load NLI model {source!r} ({type(exc).__name__}: {exc}); "
                "download it where the hub is reachable and pass the local folder"
            ) from exc
        self.labels = map_nli_labels(self._model.config.id2label)
        self._model.to(self.device).eval()
        self.model_id = source
        self.batch_size = batch_size
        self.max_length = max_length
        # Fast tokenizers change truncation state per call; keep calls one at a time.
        self._tokenizer_lock = threading.Lock()
        logger.info("loaded NLI model %s on %s", source, self.device)

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[NLILabel, float]]:
        """Label each (premise, hypothesis) pair.

        Args:
            pairs: ``(premise, hypothesis)`` pairs of non-empty strings.

        Returns:
            ``(label, confidence)`` per pair, in input order.

        Raises:
            InvalidInputError: If a pair is not two non-empty strings.
        """
        import torch

        for i, pair in enumerate(pairs):
            if len(pair) != 2 or not all(isinstance(x, str) and x.strip() for x in pair):
                raise InvalidInputError(f"pairs[{i}] must be two non-empty strings")
        out: list[tuple[NLILabel, float]] = []
        for start in range(0, len(pairs), self.batch_size):
            chunk = pairs[start : start + self.batch_size]
            with self._tokenizer_lock:
                encoded = self._tokenizer(
                    [p for p, _ in chunk],
                    [h for _, h in chunk],
                    truncation="only_first",
                    max_length=self.max_length,
                    padding=True,
                    return_tensors="pt",
                )
            with torch.inference_mode():
                logits = self._model(**encoded.to(self.device)).logits
            probs = torch.softmax(logits.float(), dim=-1).cpu().tolist()
            for row in probs:
                totals: dict[NLILabel, float] = {}
                for index, p in enumerate(row):
                    label = self.labels[index]
                    totals[label] = totals.get(label, 0.0) + p
                best = max(totals, key=lambda k: totals[k])
                out.append((best, min(1.0, totals[best])))
        return out
