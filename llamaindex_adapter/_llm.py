"""A LlamaIndex LLM behind the package's LLM protocol.

The engine's mitigation loops (refinement, query rewriting, verification, judging)
talk to :class:`~truthlens_integrations.core.llm.LLM`. :class:`LlamaIndexLLM` lets
them use the LLM a LlamaIndex application already has, with LlamaIndex's own
callbacks and instrumentation still firing on every call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, Unpack

from llama_index.core import llms as li_llms
from llama_index.core.base.llms.types import ChatMessage as LIChatMessage
from llama_index.core.base.llms.types import (
    ChatResponse,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from truthlens_integrations.core import llm as core_llm
from truthlens_integrations.core._adapter_api import (
    WrappedLLM,
    reject_unknown,
    timed_response,
    to_llm,
)
from truthlens_integrations.core.llm import ChatMessage, CompletionRequest, LLMResponse

__all__ = ["CoreLLMAsLlamaIndex", "LlamaIndexLLM", "as_core_llm", "to_core_llm"]


class _NoOtherArguments(TypedDict):
    """No other keyword argument: type checkers reject one; at runtime it is named."""


_ROLES = {
    "system": MessageRole.SYSTEM,
    "user": MessageRole.USER,
    "assistant": MessageRole.ASSISTANT,
}


def _to_llama(messages: Sequence[ChatMessage]) -> list[LIChatMessage]:
    return [LIChatMessage(role=_ROLES[m.role], content=m.content) for m in messages]


def _cut_at_stop(text: str, stop: Sequence[str] | None) -> str:
    """Cut ``text`` at the first stop string; many LlamaIndex LLMs ignore ``stop``."""
    if not stop:
        return text
    cut = min((i for s in stop if s and (i := text.find(s)) >= 0), default=len(text))
    return text[:cut]


def _usage(response: ChatResponse) -> core_llm.TokenUsage | None:
    """Token counts where the backend reported them (OpenAI-style keys)."""
    extra: Mapping[str, Any] = response.additional_kwargs or {}
    prompt, completion = extra.get("prompt_tokens"), extra.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    total = extra.get("total_tokens")
    return core_llm.TokenUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total if isinstance(total, int) else prompt + completion,
    )


def _model_name(llm: li_llms.LLM) -> str:
    for attr in ("model", "model_name"):
        value = getattr(llm, attr, None)
        if isinstance(value, str) and value:
            return value
    return llm.metadata.model_name or llm.class_name()


class LlamaIndexLLM(WrappedLLM):
    """Adapts a LlamaIndex ``LLM`` to the package's LLM protocol.

    Calls go through ``llm.chat`` / ``llm.achat`` (a real async path, not a worker
    thread), so the LLM's callbacks and instrumentation see them. ``max_tokens`` and
    ``temperature`` are passed as keyword arguments when set; LLMs that do not take
    them per call keep their configured values. Stop strings are also applied to the
    returned text, since many LlamaIndex LLMs ignore them. Transient errors (429,
    5xx, timeouts, connection failures) are retried with backoff.

    Args:
        llm: The LlamaIndex LLM.
        retry: Retries of transient errors (default: 3 attempts, 0.5-8 s backoff).

    Raises:
        LLMError: From :meth:`complete` when the call fails or returns no text.
        LLMTimeoutError: From :meth:`complete` when the call times out.
    """

    name = "llamaindex"
    label = "LlamaIndex LLM"

    def __init__(self, llm: li_llms.LLM, *, retry: core_llm.RetryPolicy | None = None) -> None:
        self.llm = llm
        self.retry = retry or core_llm.RetryPolicy()
        self.model = _model_name(llm)

    def _call(self, request: CompletionRequest) -> ChatResponse:
        return self.llm.chat(_to_llama(request.messages), **request.options())

    async def _acall(self, request: CompletionRequest) -> ChatResponse:
        return await self.llm.achat(_to_llama(request.messages), **request.options())

    def _reply(
        self, raw: ChatResponse, request: CompletionRequest, started: float, attempts: int
    ) -> LLMResponse:
        return timed_response(
            _cut_at_stop(raw.message.content or "", request.stop),
            model=self.model,
            started=started,
            usage=_usage(raw),
            finish_reason=_finish_reason(raw),
            attempts=attempts,
        )


def _finish_reason(response: ChatResponse) -> str | None:
    value = (response.additional_kwargs or {}).get("finish_reason")
    return value if isinstance(value, str) else None


def to_core_llm(llm: object) -> LlamaIndexLLM | None:
    """A LlamaIndex LLM as a core LLM; ``None`` for anything else.

    The LlamaIndex adapter's one answer to "is this a LlamaIndex LLM?": the core asks it
    for every LlamaIndex object given where an LLM is taken (``TruthLens.guard(llm=...)``;
    registered by the package root, see ``core/_frameworks.py``). A LlamaIndex LLM has
    ``complete`` and ``acomplete`` of its own, which take other arguments than the core
    protocol's: it is wrapped, never used as one.
    """
    return LlamaIndexLLM(llm) if isinstance(llm, li_llms.LLM) else None


def as_core_llm(llm: object) -> core_llm.LLM | None:
    """Wrap a LlamaIndex LLM; pass through a core LLM; ``None`` stays ``None``.

    Args:
        llm: A LlamaIndex ``LLM``, a core LLM, a LangChain chat model (wrapped by its
            adapter), or ``None``.

    Returns:
        An object following the core LLM protocol, or ``None``.

    Raises:
        InvalidArgumentError: If ``llm`` is none of these (a ``TypeError``).
    """
    if llm is None:
        return None
    wrapped = to_core_llm(llm)
    return wrapped if wrapped is not None else to_llm(llm)


_CORE_ROLES = {MessageRole.SYSTEM: "system", MessageRole.ASSISTANT: "assistant"}


def _to_core(messages: Sequence[LIChatMessage]) -> list[ChatMessage]:
    """LlamaIndex messages as core ones; roles the core protocol lacks become ``user``."""
    return [
        ChatMessage(role=_CORE_ROLES.get(m.role, "user"), content=m.content or "")  # type: ignore[arg-type]
        for m in messages
    ]


class CoreLLMAsLlamaIndex(CustomLLM):
    """A package LLM (local SmolLM2, an OpenAI-compatible server) as a LlamaIndex LLM.

    Lets an index or query engine generate with the same backends the engine uses
    (``index.as_query_engine(llm=CoreLLMAsLlamaIndex(default_llm()))``), with
    LlamaIndex's callbacks firing. Async calls use the backend's ``acomplete``.
    Streaming is not incremental: the whole completion arrives as one chunk.

    Args:
        llm: An object following the package's LLM protocol.
        context_window: What LlamaIndex may pack into one prompt, in tokens.
        num_output: Tokens LlamaIndex reserves for the answer.
    """

    context_window: int = 2048
    num_output: int = 256
    _core: core_llm.LLM = PrivateAttr()

    def __init__(
        self,
        llm: core_llm.LLM,
        *,
        context_window: int = 2048,
        num_output: int = 256,
        **unknown: Unpack[_NoOtherArguments],
    ) -> None:
        reject_unknown(unknown, ("llm", "context_window", "num_output"), "CoreLLMAsLlamaIndex")
        super().__init__(context_window=context_window, num_output=num_output)
        self._core = llm

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "TruthLensCoreLLM"

    @property
    def metadata(self) -> LLMMetadata:
        """Chat model metadata with the wrapped backend's model name."""
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.num_output,
            is_chat_model=True,
            model_name=self._core.model,
        )

    def _options(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """``max_tokens`` / ``temperature`` from a call's kwargs; others do not apply."""
        max_tokens = kwargs.get("max_tokens")
        temperature = kwargs.get("temperature")
        return {
            "max_tokens": max_tokens if isinstance(max_tokens, int) else self.num_output,
            "temperature": temperature if isinstance(temperature, int | float) else None,
        }

    @llm_chat_callback()
    def chat(self, messages: Sequence[LIChatMessage], **kwargs: Any) -> ChatResponse:
        """Generate with the backend."""
        result = self._core.complete(_to_core(messages), **self._options(kwargs))
        return _chat_response(result)

    @llm_chat_callback()
    async def achat(self, messages: Sequence[LIChatMessage], **kwargs: Any) -> ChatResponse:
        """Generate with the backend's async path."""
        result = await self._core.acomplete(_to_core(messages), **self._options(kwargs))
        return _chat_response(result)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Complete a bare prompt (sent as one user message)."""
        del formatted  # the backend applies its own chat template
        result = self._core.complete([ChatMessage.user(prompt)], **self._options(kwargs))
        return CompletionResponse(text=result.text)

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        """Async :meth:`complete`."""
        del formatted
        result = await self._core.acomplete([ChatMessage.user(prompt)], **self._options(kwargs))
        return CompletionResponse(text=result.text)

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        """The whole completion as one chunk."""
        text = self.complete(prompt, formatted=formatted, **kwargs).text

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=text, delta=text)

        return gen()


def _chat_response(result: LLMResponse) -> ChatResponse:
    extra: dict[str, Any] = {}
    if result.usage is not None:
        extra = result.usage.model_dump()
    return ChatResponse(
        message=LIChatMessage(role=MessageRole.ASSISTANT, content=result.text),
        additional_kwargs=extra,
    )
