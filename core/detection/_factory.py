"""``load_detector``: one entry point for every detector backend."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._errors import InvalidInputError, ModelNotAvailableError
from .._types import DetectionConfig
from ._base import Detector

__all__ = ["load_detector"]

_CONFIG_FIELDS = frozenset(DetectionConfig.model_fields)
_LOAD_FIELDS = frozenset({"device", "dtype", "revision", "local_files_only", "model_id"})


def load_detector(
    model: str | os.PathLike[str] | None = None,
    *,
    config: DetectionConfig | None = None,
    **options: Any,
) -> Detector:
    """Load a hallucination detector.

    Args:
        model: ``None`` or ``"bundled"`` for the model shipped with the package,
            ``"lexical"`` for the word-overlap reference detector, a local model folder,
            or a Hugging Face Hub id in the LettuceDetect format.
        config: Thresholds and limits. Alternatively pass its fields as keyword
            arguments (``token_threshold=0.8``, ``threshold=0.6``, ...).
        **options: :class:`DetectionConfig` fields, and for transformer models
            ``device``, ``dtype``, ``revision``, ``local_files_only``, ``model_id``.

    Returns:
        A detector; transformer weights are loaded once per process and shared.

    Raises:
        InvalidInputError: For an unknown option.
        ModelNotAvailableError: If the model cannot be found or downloaded.
    """
    unknown = set(options) - _CONFIG_FIELDS - _LOAD_FIELDS
    if unknown:
        raise InvalidInputError(f"unknown detector option(s): {', '.join(sorted(unknown))}")
    overrides = {k: v for k, v in options.items() if k in _CONFIG_FIELDS}
    load_options = {k: v for k, v in options.items() if k in _LOAD_FIELDS}
    if overrides:
        base = config.model_dump() if config else {}
        config = DetectionConfig(**{**base, **overrides})

    name = os.fspath(model) if model is not None else "bundled"
    if name == "lexical":
        from ..evaluation import LexicalDetector

        return LexicalDetector(config=config)

    from ._transformer import TransformerDetector

    if name == "bundled":
        path = _bundled_path()
        load_options.setdefault("model_id", "truthlens-bundled-detector")
        return TransformerDetector(path, config=config, **load_options)
    return TransformerDetector(name, config=config, **load_options)


def _bundled_path() -> str:
    try:
        from .._bundled_models import bundled_detector_path
    except ImportError as exc:
        raise ModelNotAvailableError(
            "this install has no bundled detector yet; pass a local model folder or a "
            "Hugging Face Hub id, e.g. load_detector('path/to/model')"
        ) from exc
    path: Path = bundled_detector_path()
    return os.fspath(path)
