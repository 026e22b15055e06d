"""NLI explainers: the protocol, the Hugging Face backend, the bundled model, the service's."""

from __future__ import annotations

from ._bundled import BundledNLI, BundledNLIAdapter, NLIPrediction
from ._hf import TransformersNLIExplainer, map_nli_labels
from ._protocol import NLIExplainer
from ._remote import RemoteNLIExplainer

__all__ = [
    "BundledNLI",
    "BundledNLIAdapter",
    "NLIExplainer",
    "NLIPrediction",
    "RemoteNLIExplainer",
    "TransformersNLIExplainer",
    "map_nli_labels",
]
