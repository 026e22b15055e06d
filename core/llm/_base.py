"""The LLM protocol: chat messages in, text out, with token usage when the backend knows it.

Everything in the package that generates text (the mitigation loops, the query refiner,
the judge) talks to an :class:`LLM`. Backends (an OpenAI-compatible server, the local
SmolLM2 model, wrapped LangChain or LlamaIndex models) implement it.

An empty completion is never returned as an answer: backends raise :class:`LLMError`
instead, so a mitigation loop treats it like any other failed call (a failed iteration).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from .._errors import InvalidInputError, LLMError, LLMTimeoutError, TruthLensError
from .._quoting import quoted

__all__ = [
    "LLM",
    "BaseLLM",
    "ChatMessage",
    "CompletionRequest",
    "LLMResponse",
    "MessagesInput",
    "Role",
    "TokenUsage",
    "ensure_text",
    "map_llm_errors",
    "timed_response",
    "to_messages",
    "validated_request",
]

Role = Literal["system", "user", "assistant"]


class ChatMessage(BaseModel):
    """One chat turn.

    Attributes:
        role: Who speaks: ``"system"``, ``"user"`` or ``"assistant"``.
        content: The text of the turn.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str

    @classmethod
    def system(cls, content: str) -> ChatMessage:
        """Build a system message."""
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> ChatMessage:
        """Build a user message."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str) -> ChatMessage:
        """Build an assistant message."""
        return cls(role="assistant", content=content)


class TokenUsage(BaseModel):
    """Token counts of one call, as the backend reported or counted them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    total_tokens: int = Field(ge=0)


class LLMResponse(BaseModel):
    """The result of one completion call.

    Attributes:
        text: The generated text (never empty: empty output raises :class:`LLMError`).
        model: The model that answered, as the backend names it.
        usage: Token counts, or ``None`` when the backend did not report them.
        latency_ms: Wall time of the call in milliseconds, retries and waits included.
        finish_reason: The backend's raw finish reason (``"stop"``, ``"length"``, ...).
        attempts: How many attempts the call took (1 without retries).
        first_token_logprobs: The most likely first tokens and their log-probabilities,
            where the call asked for them (``top_logprobs``) and the server gave them;
            ``None`` otherwise.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    model: str
    usage: TokenUsage | None = None
    latency_ms: float = Field(ge=0.0)
    finish_reason: str | None = None
    attempts: int = Field(default=1, ge=1)
    first_token_logprobs: dict[str, float] | None = None


@dataclass(frozen=True)
class CompletionRequest:
    """One validated completion call, as :class:`BaseLLM` hands it to a backend.

    Attributes:
        messages: The conversation, oldest first.
        max_tokens: Upper bound on generated tokens; ``None`` for the backend default.
        temperature: Sampling temperature; ``None`` for the backend default.
        stop: Strings that end the generation; ``None`` when there are none.
        top_logprobs: How many most likely first tokens to return with their
            log-probabilities (OpenAI-compatible servers); ``None`` asks for none.
    """

    messages: list[ChatMessage]
    max_tokens: int | None = None
    temperature: float | None = None
    stop: list[str] | None = None
    top_logprobs: int | None = None

    def options(
        self, *, max_tokens: int | None = None, temperature: float | None = None
    ) -> dict[str, Any]:
        """``max_tokens`` and ``temperature`` as keyword arguments; unset ones left out.

        Args:
            max_tokens: The backend's default, used when the request gives none.
            temperature: The backend's default, used when the request gives none.
        """
        chosen = {
            "max_tokens": self.max_tokens if self.max_tokens is not None else max_tokens,
            "temperature": self.temperature if self.temperature is not None else temperature,
        }
        return {name: value for name, value in chosen.items() if value is not None}


MessagesInput = str | Sequence[ChatMessage | Mapping[str, str]]
"""What :meth:`BaseLLM.complete` accepts: a bare user prompt or a list of messages."""


@runtime_checkable
class LLM(Protocol):
    """A chat model: messages in, text out.

    Attributes:
        name: The backend's name, for cost accounting and metrics
            (e.g. ``"openai-compatible"``, ``"local-smollm2"``).
        model: The model's name (e.g. ``"gpt-4o-mini"``).
    """

    name: str
    model: str

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> LLMResponse:
        """Generate a reply to ``messages``.

        Args:
            messages: The conversation, oldest first.
            max_tokens: Upper bound on generated tokens; ``None`` for the backend default.
            temperature: Sampling temperature; ``None`` for the backend default,
                ``0`` for greedy decoding.
            stop: Strings that end the generation; they are not part of the text.

        Returns:
            The reply.

        Raises:
            LLMError: If the call failed or produced no text.
            LLMTimeoutError: If the call did not answer in time.
        """
        ...

    async def acomplete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> LLMResponse:
        """Async version of :meth:`complete`."""
        ...


def to_messages(messages: MessagesInput) -> list[ChatMessage]:
    """Normalise a prompt or a message list into :class:`ChatMessage` objects.

    Args:
        messages: A bare string (one user message), or a sequence of
            :class:`ChatMessage` or ``{"role": ..., "content": ...}`` mappings.

    Returns:
        The messages, validated.

    Raises:
        InvalidInputError: If the list is empty or an item is malformed.
    """
    if isinstance(messages, str):
        return [ChatMessage.user(messages)]
    result: list[ChatMessage] = []
    for item in messages:
        if isinstance(item, ChatMessage):
            result.append(item)
            continue
        try:
            result.append(ChatMessage.model_validate(dict(item)))
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"malformed chat message {item!r}: {exc}") from exc
    if not result:
        raise InvalidInputError("an LLM call needs at least one message")
    return result


def ensure_text(text: str | None, *, model: str) -> str:
    """Return ``text`` or raise when the model produced nothing usable.

    Args:
        text: The raw completion.
        model: The model's name, for the message.

    Returns:
        ``text`` unchanged.

    Raises:
        LLMError: If ``text`` is ``None`` or only whitespace.
    """
    if text is None or not text.strip():
        raise LLMError(f"empty completion from model {model!r}")
    return text


def timed_response(
    text: str | None,
    *,
    model: str,
    started: float,
    usage: TokenUsage | None = None,
    finish_reason: str | None = None,
    attempts: int = 1,
) -> LLMResponse:
    """The response of a call that began at ``started`` (a ``time.perf_counter()`` reading).

    Raises:
        LLMError: If ``text`` is empty (see :func:`ensure_text`).
    """
    return LLMResponse(
        text=ensure_text(text, model=model),
        model=model,
        usage=usage,
        latency_ms=(time.perf_counter() - started) * 1000.0,
        finish_reason=finish_reason,
        attempts=attempts,
    )


@contextmanager
def map_llm_errors(what: str) -> Iterator[None]:
    """Translate what a wrapped model raises into the package's LLM errors.

    Wrapped framework models raise whatever their provider package raises; callers
    catch one hierarchy. Works around ``await`` too, so sync and async paths share it.

    Args:
        what: Names the model in the message (e.g. ``"model 'gpt-4o-mini'"``).

    Raises:
        TruthLensError: Unchanged when the model already raised one.
        LLMTimeoutError: For a :class:`TimeoutError`.
        LLMError: For any other exception.
    """
    try:
        yield
    except TruthLensError:
        raise
    except TimeoutError as exc:
        raise LLMTimeoutError(f"{what} timed out: {quoted(exc)}") from exc
    except Exception as exc:
        raise LLMError(f"{what} failed: {quoted(exc)}") from exc


class BaseLLM:
    """Convenience base for backends.

    Subclasses implement :meth:`_complete` (and :meth:`_acomplete` when they have a
    real async path); this class validates the input. The default async path runs the
    sync one in a worker thread, which suits CPU-bound local models.
    """

    name: str = "llm"
    model: str = "unknown"
    #: Whether ``top_logprobs`` can be answered (a backend that cannot leaves it ``None``).
    gives_logprobs: bool = False

    def complete(
        self,
        messages: MessagesInput,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        top_logprobs: int | None = None,
    ) -> LLMResponse:
        """Generate a reply. See :meth:`LLM.complete`; also accepts a bare prompt string.

        ``top_logprobs`` (1-20) also asks for the first token's most likely alternatives
        (``LLMResponse.first_token_logprobs``); a backend that cannot give them (or a
        server that does not) leaves that ``None``.
        """
        request = validated_request(messages, max_tokens, temperature, stop, top_logprobs)
        return self._complete(request)

    async def acomplete(
        self,
        messages: MessagesInput,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        top_logprobs: int | None = None,
    ) -> LLMResponse:
        """Async version of :meth:`complete`."""
        request = validated_request(messages, max_tokens, temperature, stop, top_logprobs)
        return await self._acomplete(request)

    def _complete(self, request: CompletionRequest) -> LLMResponse:
        raise NotImplementedError

    async def _acomplete(self, request: CompletionRequest) -> LLMResponse:
        return await asyncio.to_thread(self._complete, request)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r})"


def validated_request(
    messages: MessagesInput,
    max_tokens: int | None,
    temperature: float | None,
    stop: Sequence[str] | None,
    top_logprobs: int | None = None,
) -> CompletionRequest:
    """Validate one call's arguments into the request a backend sees."""
    _check_params(max_tokens, temperature)
    if top_logprobs is not None:
        whole = isinstance(top_logprobs, int) and not isinstance(top_logprobs, bool)
        if not whole or not 1 <= top_logprobs <= 20:
            raise InvalidInputError(
                f"top_logprobs must be a whole number from 1 to 20, got {top_logprobs!r}"
            )
    return CompletionRequest(
        messages=to_messages(messages),
        max_tokens=max_tokens,
        temperature=temperature,
        stop=list(stop) if stop else None,
        top_logprobs=top_logprobs,
    )


def _check_params(max_tokens: int | None, temperature: float | None) -> None:
    if max_tokens is not None and max_tokens < 1:
        raise InvalidInputError(f"max_tokens must be at least 1, got {max_tokens}")
    if temperature is not None and temperature < 0:
        raise InvalidInputError(f"temperature must not be negative, got {temperature}")
