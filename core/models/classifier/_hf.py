"""Prompt classifier backed by any Hugging Face binary sequence classifier.

For the policy's ``hallucination_mitigation.fact_check_model.model_id``, e.g. a
HaluGate Sentinel checkpoint: "does this prompt ask for facts that must be checked?".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..._errors import InvalidInputError, ModelLoadError
from .._sequence import HFSequenceClassifier

__all__ = ["TransformersFactCheckClassifier", "positive_class"]

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


class TransformersFactCheckClassifier(HFSequenceClassifier):
    """Runs a Hugging Face two-class prompt classifier behind ``FactCheckClassifier``.

    Args:
        model: A local model folder or a hub id (needs the hub or its local cache).
        device: Where to run; ``None`` picks automatically.
        dtype: Precision; ``None``/``"auto"`` picks bf16/fp16 on GPUs and fp32 on the CPU.
        batch_size: Prompts per forward pass (prompts are sorted by length first).
        max_length: Token limit per prompt; longer prompts are cut.
        local_files_only: Only use the local Hugging Face cache for hub ids.

    Raises:
        ModelNotAvailableError: If the model cannot be found or downloaded.
        ModelLoadError: If it is not a two-class sequence classifier.
    """

    default_batch_size = 32
    positive: int

    def _read_labels(self, id2label: dict[int, str]) -> None:
        self.positive = positive_class(id2label)

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        """``(needs_fact_check, confidence of that decision)`` per prompt, in order.

        Raises:
            InvalidInputError: If a prompt is not a non-empty string.
        """
        for i, prompt in enumerate(prompts):
            if not isinstance(prompt, str) or not prompt.strip():
                raise InvalidInputError(f"prompts[{i}] must be a non-empty string")
        rows = self._probabilities([(prompt, None) for prompt in prompts])
        out: list[tuple[bool, float]] = []
        for row in rows:
            yes = row[self.positive]
            out.append((yes >= 0.5, yes if yes >= 0.5 else 1.0 - yes))
        return out
