"""The package's exception hierarchy.

Every error the package raises on purpose derives from :class:`TruthLensError`, so a
caller can catch one type at the edge of its application. Errors about bad input also
derive from :class:`ValueError` and missing optional dependencies from
:class:`ImportError`, so generic handlers keep working.
"""

from __future__ import annotations

__all__ = [
    "AuditHookError",
    "BlockedResponseError",
    "ConfigError",
    "ContextTooLongError",
    "InputTooLargeError",
    "InvalidArgumentError",
    "InvalidInputError",
    "LLMError",
    "LLMTimeoutError",
    "MissingDependencyError",
    "ModelLoadError",
    "ModelNotAvailableError",
    "RetrievalError",
    "ServiceError",
    "ServiceTimeoutError",
    "TruthLensError",
    "UnknownArgumentError",
]


class TruthLensError(Exception):
    """Base class of every error raised by truthlens-integrations."""


class InvalidInputError(TruthLensError, ValueError):
    """The caller passed input the engine cannot work with (empty answer, non-text items)."""


class ContextTooLongError(InvalidInputError):
    """The input cannot be scored within the configured limits, even after windowing."""


class InputTooLargeError(InvalidInputError):
    """The input is larger than a configured limit (the service answers it with 413).

    Attributes:
        limit: The limit, in the unit the message names (characters, bytes, inputs);
            ``None`` when unknown (a service's reply that did not say).
        size: The size of what was given, in the same unit (or ``None``).
    """

    def __init__(self, message: str, *, limit: int | None = None, size: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit
        self.size = size


class InvalidArgumentError(TruthLensError, TypeError):
    """A constructor or call got an argument of the wrong type (``nli=42``, ``llm="gpt"``).

    Raised at the call, not later when the value is first used.
    """


class UnknownArgumentError(InvalidArgumentError):
    """A constructor got a keyword it does not know; the message suggests the closest one.

    A silently ignored option would leave the caller believing it took effect.
    """


class ConfigError(TruthLensError, ValueError):
    """A policy or detector configuration is malformed."""


class MissingDependencyError(TruthLensError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""

    def __init__(self, package: str, extra: str, feature: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{feature} needs the '{package}' package, which is not installed. "
            f"Install it with: pip install 'truthlens-integrations[{extra}]'"
        )


class ModelLoadError(TruthLensError):
    """A model was found but could not be loaded (corrupt files, wrong architecture)."""


class ModelNotAvailableError(ModelLoadError):
    """A model could not be found locally and the Hugging Face Hub could not provide it."""


class LLMError(TruthLensError):
    """An LLM call failed after retries, or returned something unusable."""


class LLMTimeoutError(LLMError, TimeoutError):
    """An LLM call did not answer within its timeout."""


class RetrievalError(TruthLensError):
    """A retriever or grounded answerer failed, or returned something that is not text."""


class ServiceError(TruthLensError):
    """The TruthLens service could not be reached, failed, or answered something unusable."""


class ServiceTimeoutError(ServiceError, TimeoutError):
    """The TruthLens service did not answer within the client's timeout."""


class BlockedResponseError(TruthLensError):
    """The policy withheld an answer. The verdict, with the original answer, is attached."""

    def __init__(self, message: str, verdict: object | None = None) -> None:
        super().__init__(message)
        self.verdict = verdict


class AuditHookError(TruthLensError):
    """The engine's ``audit_hook`` raised: the verdict was not handed out.

    The hook's own exception is the ``__cause__``; the full verdict is attached as
    ``verdict`` for the application's own record.
    """

    def __init__(self, message: str, verdict: object | None = None) -> None:
        super().__init__(message)
        self.verdict = verdict
