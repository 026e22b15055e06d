"""Retry transient failures of any backend (LangChain, LlamaIndex, user code).

The OpenAI client knows its SDK's error types (:func:`is_transient_error`); wrapped
framework models raise whatever their provider package raises. This module reads
the signs every provider shares: an HTTP status (429, 408, 5xx) on the error or on
its ``response``, timeout and connection errors, and the usual class names
(``RateLimitError``, ``ServiceUnavailableError``, ``APITimeoutError``, ...). Only
those are retried; a bad request or a wrong key fails at once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .._quoting import quoted

__all__ = ["RetryPolicy", "is_transient", "with_retries", "with_retries_async"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_STATUS = frozenset({408, 409, 425, 429})
_NAMES = (
    "ratelimit",
    "timeout",
    "timedout",
    "serviceunavailable",
    "internalserver",
    "overloaded",
    "apiconnection",
    "connectionerror",
    "servererror",
    "toomanyrequests",
)


def _status(exc: BaseException) -> int | None:
    for owner in (exc, getattr(exc, "response", None)):
        for attr in ("status_code", "status", "http_status", "code"):
            value = getattr(owner, attr, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value < 600:
                return value
    return None


def is_transient(exc: BaseException) -> bool:
    """Whether an error from any LLM backend is worth retrying.

    Args:
        exc: The exception the backend raised.

    Returns:
        ``True`` for rate limits (429), timeouts, connection failures and server
        errors (5xx), judged by status code, exception type or class name.
    """
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    status = _status(exc)
    if status is not None:
        return status >= 500 or status in _STATUS
    name = type(exc).__name__.lower().replace("_", "")
    return any(part in name for part in _NAMES)


class RetryPolicy:
    """How often and how long to retry transient failures.

    Args:
        max_attempts: Attempts per call, the first included (1 disables retries).
        wait_initial: Base of the exponential backoff, in seconds.
        wait_max: Longest wait between two attempts, in seconds.
    """

    def __init__(
        self, max_attempts: int = 3, wait_initial: float = 0.5, wait_max: float = 8.0
    ) -> None:
        if max_attempts < 1 or wait_initial < 0 or wait_max < 0:
            raise ValueError("max_attempts must be at least 1 and waits not negative")
        self.max_attempts = max_attempts
        self.wait_initial = wait_initial
        self.wait_max = wait_max

    def kwargs(
        self,
        transient: Callable[[BaseException], bool] = is_transient,
        before_sleep: Callable[[Any], None] | None = None,
    ) -> dict[str, Any]:
        """Keyword arguments for tenacity's ``Retrying`` / ``AsyncRetrying``.

        Args:
            transient: Which errors are retried (default :func:`is_transient`).
            before_sleep: Called before each wait; by default logs the error's type.

        Returns:
            The keyword arguments; failures that are not retried are re-raised as is.
        """
        from tenacity import retry_if_exception, stop_after_attempt, wait_random_exponential

        return {
            "stop": stop_after_attempt(self.max_attempts),
            # Full jitter: clients hit by the same rate limit do not retry in lockstep.
            "wait": wait_random_exponential(multiplier=self.wait_initial, max=self.wait_max),
            "retry": retry_if_exception(transient),
            "reraise": True,
            "before_sleep": before_sleep or _log_retry,
        }


def with_retries(call: Callable[[], _T], policy: RetryPolicy) -> tuple[_T, int]:
    """Run ``call``, retrying transient failures.

    Args:
        call: The call, without arguments.
        policy: Attempts and waits.

    Returns:
        The result and the number of attempts it took.
    """
    from tenacity import Retrying

    retrying = Retrying(**policy.kwargs())
    result: _T = retrying(call)
    return result, attempts_made(retrying)


async def with_retries_async(
    call: Callable[[], Awaitable[_T]], policy: RetryPolicy
) -> tuple[_T, int]:
    """Async :func:`with_retries`."""
    from tenacity import AsyncRetrying

    retrying = AsyncRetrying(**policy.kwargs())

    async def attempt() -> _T:
        return await call()

    result: _T = await retrying(attempt)
    return result, attempts_made(retrying)


def attempts_made(retrying: Any) -> int:
    """How many attempts a finished tenacity ``Retrying`` made (at least 1)."""
    number = retrying.statistics.get("attempt_number", 1)
    return int(number) if number else 1


def _log_retry(state: Any, *, with_message: bool = False) -> None:
    outcome = state.outcome
    error = outcome.exception() if outcome is not None else None
    sleep = state.next_action.sleep if state.next_action is not None else 0.0
    what = f"{type(error).__name__}: {quoted(error)}" if with_message else type(error).__name__
    logger.warning(
        "LLM call failed (attempt %d: %s); retrying in %.2fs", state.attempt_number, what, sleep
    )


def log_retry_with_message(state: Any) -> None:
    """Tenacity ``before_sleep`` hook that logs the error's message too (our own SDK's)."""
    _log_retry(state, with_message=True)
