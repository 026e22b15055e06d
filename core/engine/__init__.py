"""The guard pipeline: prompt gating, detection, NLI explanation, decisions and actions."""

from __future__ import annotations

from ._engine import TruthLens
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
    "TruthLens",
    "Verdict",
    "answer_sentence",
    "select_premise",
    "split_sentences",
]
