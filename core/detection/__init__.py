"""Detectors: the protocol, the transformer token classifier and their loading."""

from __future__ import annotations

from ._base import BaseDetector, Detector, TokenScoring
from ._factory import load_detector
from ._loading import clear_model_cache
from ._prompt import format_prompt
from ._transformer import TransformerDetector

__all__ = [
    "BaseDetector",
    "Detector",
    "TokenScoring",
    "TransformerDetector",
    "clear_model_cache",
    "format_prompt",
    "load_detector",
]
