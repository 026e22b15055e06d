"""A base for LLMs that wrap another framework's model (LangChain, LlamaIndex).

The wrapped model raises whatever its provider package raises and has no retries of
its own that we can count, so every wrapper runs its call the same way: retry the
transient failures, translate the rest into the package's errors, time the call.
Subclasses say only how to call the model and how to read its reply.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from .._quoting import quoted
from ._base import BaseLLM, CompletionRequest, LLMResponse, map_llm_errors
from ._retry import RetryPolicy, with_retries, with_retries_async

__all__ = ["WrappedLLM"]


class WrappedLLM(BaseLLM):
    """A core LLM over a framework model: retries and error translation written once.

    Subclasses set :attr:`retry` and implement :meth:`_call`, :meth:`_acall` and
    :meth:`_reply`.

    Attributes:
        retry: Retries of transient errors.
        label: Names the model in error messages, before its name (``"model"``).
    """

    retry: RetryPolicy
    label: ClassVar[str] = "model"

    def _call(self, request: CompletionRequest) -> Any:
        """Call the wrapped model once; return its raw reply."""
        raise NotImplementedError

    async def _acall(self, request: CompletionRequest) -> Any:
        """Async :meth:`_call`."""
        raise NotImplementedError

    def _reply(
        self, raw: Any, request: CompletionRequest, started: float, attempts: int
    ) -> LLMResponse:
        """Read the raw reply of a call that began at ``started``."""
        raise NotImplementedError

    def _complete(self, request: CompletionRequest) -> LLMResponse:
        started = time.perf_counter()
        with map_llm_errors(f"{self.label} {quoted(self.model, limit=80)!r}"):
            raw, attempts = with_retries(lambda: self._call(request), self.retry)
        return self._reply(raw, request, started, attempts)

    async def _acomplete(self, request: CompletionRequest) -> LLMResponse:
        started = time.perf_counter()
        with map_llm_errors(f"{self.label} {quoted(self.model, limit=80)!r}"):
            raw, attempts = await with_retries_async(lambda: self._acall(request), self.retry)
        return self._reply(raw, request, started, attempts)
