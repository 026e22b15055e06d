"""Every model the guard runs, in one place.

One subpackage per role, each with its protocol, its Hugging Face backend, the bundled
model and the service's: :mod:`.detection` (which answer tokens the grounding does not
support), :mod:`.nli` (why: entailment, neutral or contradiction per span) and
:mod:`.classifier` (does a prompt ask for facts). They share one loader
(``_loading``: local folders and hub ids, validation, a cache per path, device and dtype),
the bundled encoder (``_bundled``) and the service client (``_service``).

torch and transformers are imported only when a model is built.

Public here: the three protocols, :func:`load_detector`, the bundled weights' path and
its encoder's fingerprint, and the two bundled models their model cards name; every
model is public in its subpackage.
"""

from __future__ import annotations

from ._bundled import bundled_detector_path, encoder_fingerprint
from ._loading import clear_model_cache
from .classifier import BundledPromptClassifier, FactCheckClassifier
from .detection import Detector, load_detector
from .nli import BundledNLI, NLIExplainer

__all__ = [
    "BundledNLI",
    "BundledPromptClassifier",
    "Detector",
    "FactCheckClassifier",
    "NLIExplainer",
    "bundled_detector_path",
    "clear_model_cache",
    "encoder_fingerprint",
    "load_detector",
]
