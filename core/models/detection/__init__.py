"""Detectors, and :func:`load_detector`, which picks one.

The protocol, the token classifier (LettuceDetect format), the bundled evidence detector,
the lexical reference and the service's.
"""

from __future__ import annotations

from .._loading import clear_model_cache
from ._base import BaseDetector, Detector
from ._evidence_detector import EvidenceDetector
from ._factory import LoadDetectorKwargs, load_detector
from ._lexical import LexicalDetector
from ._remote import RemoteDetector
from ._transformer import TransformerDetector

__all__ = [
    "BaseDetector",
    "Detector",
    "EvidenceDetector",
    "LexicalDetector",
    "LoadDetectorKwargs",
    "RemoteDetector",
    "TransformerDetector",
    "clear_model_cache",
    "load_detector",
]
