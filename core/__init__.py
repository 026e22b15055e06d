"""Framework-free engine: detection, scoring, policy and mitigation."""

from __future__ import annotations

from ._device import resolve_device, resolve_dtype
from ._errors import (
    BlockedResponseError,
    ConfigError,
    ContextTooLongError,
    InvalidArgumentError,
    InvalidInputError,
    LLMError,
    LLMTimeoutError,
    MissingDependencyError,
    ModelLoadError,
    ModelNotAvailableError,
    ServiceError,
    ServiceTimeoutError,
    TruthLensError,
    UnknownArgumentError,
)
from ._optional import lazy_attributes, require
from ._scoring import decide, merge_spans, noisy_or, optimal_threshold, response_score, span_score
from ._types import (
    Coverage,
    Decision,
    DetectionConfig,
    DetectionInput,
    DetectionResult,
    DetectionStatus,
    HallucinationSpan,
    NLILabel,
    TokenScore,
)

__all__ = [
    "BlockedResponseError",
    "ConfigError",
    "ContextTooLongError",
    "Coverage",
    "Decision",
    "DetectionConfig",
    "DetectionInput",
    "DetectionResult",
    "DetectionStatus",
    "HallucinationSpan",
    "InvalidArgumentError",
    "InvalidInputError",
    "LLMError",
    "LLMTimeoutError",
    "MissingDependencyError",
    "ModelLoadError",
    "ModelNotAvailableError",
    "NLILabel",
    "ServiceError",
    "ServiceTimeoutError",
    "TokenScore",
    "TruthLensError",
    "UnknownArgumentError",
    "decide",
    "lazy_attributes",
    "merge_spans",
    "noisy_or",
    "optimal_threshold",
    "require",
    "resolve_device",
    "resolve_dtype",
    "response_score",
    "span_score",
]
