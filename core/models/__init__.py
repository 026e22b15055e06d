"""Every model the guard runs, in one place.

One subpackage per role, each with its protocol, its Hugging Face backend, the bundled
model and the service's: :mod:`.detection` (which answer tokens the grounding does not
support), :mod:`.nli` (why: entailment, neutral or contradiction per span) and
:mod:`.classifier` (does a prompt ask for facts). They share one loader
(``_loading``: local folders and hub ids, validation, a cache per path, device and dtype),
the bundled encoder (``_bundled``) and the service client (``_service``).

torch and transformers are imported only when a model is built.
"""

from __future__ import annotations

from ._bundled import bundled_detector_path, encoder_fingerprint
from ._loading import (
    LoadedModel,
    clear_model_cache,
    load_pretrained,
    load_sequence_classifier,
    load_token_classifier,
)
from ._service import OnError, ServiceClient, is_service_url, shared_client
from .classifier import (
    BundledFactCheckAdapter,
    BundledPromptClassifier,
    FactCheckClassifier,
    FactCheckPrediction,
    RemoteFactCheckClassifier,
    TransformersFactCheckClassifier,
    positive_class,
)
from .detection import (
    STOPWORDS,
    BaseDetector,
    Detector,
    EvidenceDetector,
    LexicalDetector,
    RemoteDetector,
    TokenScoring,
    TransformerDetector,
    format_prompt,
    lexical_nli,
    load_detector,
    normalize_word,
)
from .nli import (
    BundledNLI,
    BundledNLIAdapter,
    NLIExplainer,
    NLIPrediction,
    RemoteNLIExplainer,
    TransformersNLIExplainer,
    map_nli_labels,
)

__all__ = [
    "STOPWORDS",
    "BaseDetector",
    "BundledFactCheckAdapter",
    "BundledNLI",
    "BundledNLIAdapter",
    "BundledPromptClassifier",
    "Detector",
    "EvidenceDetector",
    "FactCheckClassifier",
    "FactCheckPrediction",
    "LexicalDetector",
    "LoadedModel",
    "NLIExplainer",
    "NLIPrediction",
    "OnError",
    "RemoteDetector",
    "RemoteFactCheckClassifier",
    "RemoteNLIExplainer",
    "ServiceClient",
    "TokenScoring",
    "TransformerDetector",
    "TransformersFactCheckClassifier",
    "TransformersNLIExplainer",
    "bundled_detector_path",
    "clear_model_cache",
    "encoder_fingerprint",
    "format_prompt",
    "is_service_url",
    "lexical_nli",
    "load_detector",
    "load_pretrained",
    "load_sequence_classifier",
    "load_token_classifier",
    "map_nli_labels",
    "normalize_word",
    "positive_class",
    "shared_client",
]
