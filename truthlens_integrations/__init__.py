"""TruthLens Integrations: catch and fix hallucinations in LLM answers.

Importing this package is cheap: torch, transformers, LangChain and LlamaIndex load
only when a model or an adapter is first used.

Example:
    >>> from truthlens_integrations import load_detector
    >>> detector = load_detector()  # the bundled offline model  # doctest: +SKIP
    >>> detector.detect(context=["..."], question="...", answer="...")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthlens_integrations import core as _core
from truthlens_integrations.core import *  # noqa: F403 - the core's public names are the package's
from truthlens_integrations.core import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from truthlens_integrations.core.engine import TruthLens, Verdict
    from truthlens_integrations.core.models.detection import (
        Detector,
        TransformerDetector,
        load_detector,
    )

__version__ = "0.1.0"

# Names resolved on first access, so that importing the package stays light.
_LAZY = {
    "Detector": "truthlens_integrations.core.models.detection",
    "TransformerDetector": "truthlens_integrations.core.models.detection",
    "load_detector": "truthlens_integrations.core.models.detection",
    "TruthLens": "truthlens_integrations.core.engine",
    "Verdict": "truthlens_integrations.core.engine",
}


__getattr__, __dir__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "Detector",
    "TransformerDetector",
    "TruthLens",
    "Verdict",
    "__version__",
    "load_detector",
]
__all__ += _core.__all__
