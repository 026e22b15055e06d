"""The guard pipeline: prompt gating, detection, NLI explanation, decisions and actions."""

from __future__ import annotations

from ._engine import TruthLens
from ._hf_nli import TransformersNLIExplainer, map_nli_labels
from ._premise import answer_sentence, select_premise, split_sentences
from ._protocols import (
    BundledFactCheckAdapter,
    BundledNLIAdapter,
    FactCheckClassifier,
    NLIExplainer,
)
from ._verdict import SEVERITY, Verdict

__all__ = [
    "SEVERITY",
    "BundledFactCheckAdapter",
    "BundledNLIAdapter",
    "FactCheckClassifier",
    "NLIExplainer",
    "TransformersNLIExplainer",
    "TruthLens",
    "Verdict",
    "answer_sentence",
    "map_nli_labels",
    "select_premise",
    "split_sentences",
]
