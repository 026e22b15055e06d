"""NLI explainer backed by any Hugging Face sequence-classification NLI model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..._errors import InvalidInputError, ModelLoadError
from ..._types import NLILabel
from .._sequence import HFSequenceClassifier

__all__ = ["TransformersNLIExplainer", "map_nli_labels"]

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


class TransformersNLIExplainer(HFSequenceClassifier):
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

    labels: dict[int, NLILabel]

    def _read_labels(self, id2label: dict[int, str]) -> None:
        self.labels = map_nli_labels(id2label)

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[NLILabel, float]]:
        """Label each (premise, hypothesis) pair.

        Args:
            pairs: ``(premise, hypothesis)`` pairs of non-empty strings.

        Returns:
            ``(label, confidence)`` per pair, in input order.

        Raises:
            InvalidInputError: If a pair is not two non-empty strings.
        """
        for i, pair in enumerate(pairs):
            if len(pair) != 2 or not all(isinstance(x, str) and x.strip() for x in pair):
                raise InvalidInputError(f"pairs[{i}] must be two non-empty strings")
        rows = self._probabilities([(p, h) for p, h in pairs], truncation="only_first")
        out: list[tuple[NLILabel, float]] = []
        for row in rows:
            totals: dict[NLILabel, float] = {}
            for index, p in enumerate(row):
                label = self.labels[index]
                totals[label] = totals.get(label, 0.0) + p
            best = max(totals, key=lambda k: totals[k])
            out.append((best, min(1.0, totals[best])))
        return out
