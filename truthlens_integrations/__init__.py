"""TruthLens Integrations: catch and fix hallucinations in LLM answers.

The top level holds what the user's guide uses: the engine and its verdict, the
detector, the policy loader, the detection types and every error. Everything else lives
in documented submodules: ``truthlens_integrations.core`` (scoring, device and
optional-dependency helpers), ``.core.engine``, ``.core.policy``, ``.core.models``,
``.core.llm``, ``.core.mitigation``, ``.core.observability``, the adapters
(``.langchain_adapter``, ``.llamaindex_adapter``), the service (``.serve``), the
evaluation harness (``.evaluation``) and scripted models for tests (``.testing``).

Importing this package is cheap: torch, transformers, LangChain and LlamaIndex load
only when a model or an adapter is first used.

Example:
    >>> from truthlens_integrations import load_detector
    >>> detector = load_detector()  # the bundled offline model  # doctest: +SKIP
    >>> detector.detect(context=["..."], question="...", answer="...")  # doctest: +SKIP
"""

from __future__ import annotations

import logging as _logging
from typing import TYPE_CHECKING

from truthlens_integrations.core import (
    Aggregation,
    AuditHookError,
    BlockedResponseError,
    ConfigError,
    ContextTooLongError,
    Coverage,
    Decision,
    DetectionConfig,
    DetectionInput,
    DetectionResult,
    DetectionStatus,
    HallucinationSpan,
    InvalidArgumentError,
    InvalidInputError,
    LLMError,
    LLMTimeoutError,
    MissingDependencyError,
    ModelLoadError,
    ModelNotAvailableError,
    NLILabel,
    RetrievalError,
    ServiceError,
    ServiceTimeoutError,
    TruthLensError,
    UnknownArgumentError,
    optimal_threshold,
)
from truthlens_integrations.core._adapter_api import lazy_attributes as _lazy_attributes
from truthlens_integrations.core._adapter_api import register_llm_wrapper as _register_llm_wrapper

if TYPE_CHECKING:
    from truthlens_integrations.core.engine import TruthLens, Verdict
    from truthlens_integrations.core.models.detection import (
        Detector,
        TransformerDetector,
        load_detector,
    )
    from truthlens_integrations.core.policy import load_policy

__version__ = "0.1.0"

# A library writes nothing unless the application configures logging. Without a handler
# in the package's hierarchy, Python's last-resort handler prints every WARNING record
# (a flagged answer's "langchain.verdict ...") to stderr of an app that asked for none.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

# Wherever an LLM is taken, a framework's model is wrapped by the adapter that reads it;
# the adapter (and its framework) is imported only when such a model is given.
_register_llm_wrapper("langchain_core", "truthlens_integrations.langchain_adapter._llm:to_core_llm")
_register_llm_wrapper("llama_index", "truthlens_integrations.llamaindex_adapter._llm:to_core_llm")

# Names resolved on first access, so that importing the package stays light.
_LAZY = {
    "Detector": "truthlens_integrations.core.models.detection",
    "TransformerDetector": "truthlens_integrations.core.models.detection",
    "load_detector": "truthlens_integrations.core.models.detection",
    "TruthLens": "truthlens_integrations.core.engine",
    "Verdict": "truthlens_integrations.core.engine",
    "load_policy": "truthlens_integrations.core.policy",
}


__getattr__, __dir__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "Aggregation",
    "AuditHookError",
    "BlockedResponseError",
    "ConfigError",
    "ContextTooLongError",
    "Coverage",
    "Decision",
    "DetectionConfig",
    "DetectionInput",
    "DetectionResult",
    "DetectionStatus",
    "Detector",
    "HallucinationSpan",
    "InvalidArgumentError",
    "InvalidInputError",
    "LLMError",
    "LLMTimeoutError",
    "MissingDependencyError",
    "ModelLoadError",
    "ModelNotAvailableError",
    "NLILabel",
    "RetrievalError",
    "ServiceError",
    "ServiceTimeoutError",
    "TransformerDetector",
    "TruthLens",
    "TruthLensError",
    "UnknownArgumentError",
    "Verdict",
    "__version__",
    "load_detector",
    "load_policy",
    "optimal_threshold",
]
