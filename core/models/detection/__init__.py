"""Detectors, and :func:`load_detector`, which picks one.

The protocol, the token classifier (LettuceDetect format), the bundled evidence detector,
the lexical reference and the service's.
"""

from __future__ import annotations

from .._loading import clear_model_cache
from ._base import BaseDetector, Detector, TokenScoring
from ._evidence_detector import EvidenceDetector
from ._factory import LoadDetectorKwargs, load_detector
from ._lexical import STOPWORDS, LexicalDetector, lexical_nli, normalize_word
from ._prompt import format_prompt
from ._remote import RemoteDetector
from ._response import ResponseCalibration
from ._transformer import TransformerDetector

__all__ = [
    "STOPWORDS",
    "BaseDetector",
    "Detector",
    "EvidenceDetector",
    "LexicalDetector",
    "LoadDetectorKwargs",
    "RemoteDetector",
    "ResponseCalibration",
    "TokenScoring",
    "TransformerDetector",
    "clear_model_cache",
    "format_prompt",
    "lexical_nli",
    "load_detector",
    "normalize_word",
]
