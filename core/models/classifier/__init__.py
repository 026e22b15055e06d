"""Prompt classifiers: the protocol, the Hugging Face backend, the bundled model, the service's."""

from __future__ import annotations

from ._bundled import BundledFactCheckAdapter, BundledPromptClassifier, FactCheckPrediction
from ._hf import TransformersFactCheckClassifier
from ._protocol import FactCheckClassifier
from ._remote import RemoteFactCheckClassifier

__all__ = [
    "BundledFactCheckAdapter",
    "BundledPromptClassifier",
    "FactCheckClassifier",
    "FactCheckPrediction",
    "RemoteFactCheckClassifier",
    "TransformersFactCheckClassifier",
]
