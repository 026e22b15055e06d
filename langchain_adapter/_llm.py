"""Any LangChain chat model behind the core LLM protocol (``complete`` / ``acomplete``).

The engine's mitigation loops (refinement, verification, judging) talk to
:class:`~truthlens_integrations.core.llm.LLM`; wrapping a ``BaseChatModel`` lets them
use ``ChatOpenAI``, ``ChatAnthropic`` or any other LangChain model. Calls are made
with ``invoke`` / ``ainvoke`` (real async), without an explicit config, so inside a
runnable they pick up the active run's config and show up as its child runs; a
config given explicitly (:meth:`ChatModelLLM.bind_config`) wins, which also holds
across threads.

A chat model wrapped with ``with_retry()`` or ``with_fallbacks()`` is accepted
wherever a chat model is. Transient provider errors (429, 5xx, timeouts, connection
failures) are retried here too, with backoff (:class:`RetryPolicy`); other errors
fail at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Required, TypedDict, Unpack

from langchain_core.caches import BaseCache
from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
    Callbacks,
)
from langchain_core.language_models import BaseChatModel, BaseLanguageModel
from langchain_core.language_models.model_profile import ModelProfile
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    UsageMetadata,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.rate_limiters import BaseRateLimiter
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.fallbacks import RunnableWithFallbacks
from typing_extensions import override

from truthlens_integrations.core import (
    InvalidArgumentError,
    LLMError,
)
from truthlens_integrations.core._adapter_api import (
    WrappedLLM,
    reject_unknown,
    timed_response,
    to_llm,
)
from truthlens_integrations.core.llm import (
    LLM,
    BaseLLM,
    ChatMessage,
    CompletionRequest,
    LLMResponse,
    RetryPolicy,
    TokenUsage,
)

from ._inputs import message_text

__all__ = ["ChatModelLLM", "LLMChatModel", "as_llm", "chat_model_of", "to_core_llm"]


def _model_of(model: object) -> BaseLanguageModel[Any] | None:
    """The model inside ``model`` (itself, or under ``with_retry`` / ``with_fallbacks``)."""
    if isinstance(model, BaseLanguageModel):
        return model
    if isinstance(model, RunnableBindingBase):
        return _model_of(model.bound)
    if isinstance(model, RunnableWithFallbacks):
        return _model_of(model.runnable)
    return None


def chat_model_of(model: object) -> BaseChatModel | None:
    """The chat model inside ``model`` (itself, or under ``with_retry`` / ``with_fallbacks``)."""
    inner = _model_of(model)
    return inner if isinstance(inner, BaseChatModel) else None


def _model_name(model: Runnable[Any, Any]) -> str:
    inner = _model_of(model)
    if inner is not None and inner is not model:
        return _model_name(inner)
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return model.get_name()


def _to_langchain(messages: list[ChatMessage]) -> list[BaseMessage]:
    kinds: dict[str, type[BaseMessage]] = {
        "system": SystemMessage,
        "user": HumanMessage,
        "assistant": AIMessage,
    }
    return [kinds[m.role](content=m.content) for m in messages]


def _usage(message: AIMessage) -> TokenUsage | None:
    usage = message.usage_metadata
    if not usage:
        return None
    return TokenUsage(
        prompt_tokens=usage.get("input_tokens", 0),
        completion_tokens=usage.get("output_tokens", 0),
        total_tokens=usage.get("total_tokens", 0),
    )


def _finish_reason(message: AIMessage) -> str | None:
    meta = message.response_metadata
    for key in ("finish_reason", "stop_reason", "done_reason"):
        value = meta.get(key)
        if isinstance(value, str):
            return value
    return None


class ChatModelLLM(WrappedLLM):
    """A LangChain chat model as a core :class:`~truthlens_integrations.core.llm.LLM`.

    Args:
        chat_model: Any ``BaseChatModel``, also wrapped with ``with_retry()`` or
            ``with_fallbacks()`` (any runnable that takes messages and returns an
            ``AIMessage``).
        forward_params: Pass ``max_tokens`` / ``temperature`` to the model as call
            keyword arguments (most providers accept them; turn off for one that
            rejects unknown keywords).
        config: Runnable config for every call (callbacks, tags); ``None`` uses the
            config of the run the call happens in.
        retry: Retries of transient errors (default: 3 attempts, 0.5-8 s backoff).

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> llm = ChatModelLLM(FakeListChatModel(responses=["Paris"]))
        >>> llm.complete("Capital of France?").text
        'Paris'
    """

    name = "langchain"

    def __init__(
        self,
        chat_model: Runnable[Any, Any],
        *,
        forward_params: bool = True,
        config: RunnableConfig | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not isinstance(chat_model, Runnable):
            raise InvalidArgumentError(
                f"ChatModelLLM takes a LangChain chat model, got {type(chat_model).__name__}"
            )
        self.chat_model = chat_model
        self.forward_params = forward_params
        self.config = config
        self.retry = retry or RetryPolicy()
        self.model = _model_name(chat_model)

    def bind_config(self, config: RunnableConfig | None) -> ChatModelLLM:
        """A copy whose calls run with ``config`` (e.g. a parent run's child config)."""
        return ChatModelLLM(
            self.chat_model, forward_params=self.forward_params, config=config, retry=self.retry
        )

    def _kwargs(self, request: CompletionRequest) -> dict[str, Any]:
        return request.options() if self.forward_params else {}

    def _call(self, request: CompletionRequest) -> Any:
        return self.chat_model.invoke(
            _to_langchain(request.messages), self.config, stop=request.stop, **self._kwargs(request)
        )

    async def _acall(self, request: CompletionRequest) -> Any:
        return await self.chat_model.ainvoke(
            _to_langchain(request.messages), self.config, stop=request.stop, **self._kwargs(request)
        )

    def _reply(
        self, raw: Any, request: CompletionRequest, started: float, attempts: int
    ) -> LLMResponse:
        del request  # its stop strings went to the model with the call
        if isinstance(raw, str):  # a LangChain LLM (text in, text out), not a chat model
            return timed_response(raw, model=self.model, started=started, attempts=attempts)
        if not isinstance(raw, AIMessage):
            raise LLMError(f"model {self.model!r} returned {type(raw).__name__}, not a message")
        return timed_response(
            message_text(raw),
            model=self.model,
            started=started,
            usage=_usage(raw),
            finish_reason=_finish_reason(raw),
            attempts=attempts,
        )


def to_core_llm(model: object) -> ChatModelLLM | None:
    """A LangChain chat model or LLM as a core LLM; ``None`` for anything else.

    The LangChain adapter's one answer to "is this a LangChain model?": the core asks it
    for every LangChain object given where an LLM is taken (``TruthLens.guard(llm=...)``;
    registered by the package root, see ``core/_frameworks.py``).

    Args:
        model: A ``BaseChatModel`` or LangChain ``BaseLLM``, also under ``with_retry()``
            / ``with_fallbacks()``.
    """
    return ChatModelLLM(model) if isinstance(model, Runnable) and _model_of(model) else None


def as_llm(model: object, config: RunnableConfig | None = None) -> LLM:
    """Wrap a chat model as a core LLM (calls run with ``config``); core LLMs pass through.

    Any runnable that takes messages is wrapped; another framework's model (a LlamaIndex
    LLM) is wrapped by its adapter (``to_llm``).

    Args:
        model: A chat model or LLM (also under ``with_retry`` / ``with_fallbacks``), a
            core LLM, or a LlamaIndex LLM.
        config: The config its calls run with.

    Returns:
        The core LLM.

    Raises:
        InvalidArgumentError: If ``model`` is none of these.
    """
    if isinstance(model, ChatModelLLM):
        return model.bind_config(config)
    if isinstance(model, BaseLLM):
        return model
    if isinstance(model, Runnable):
        return ChatModelLLM(model, config=config)
    return to_llm(model)


def _to_core(messages: list[BaseMessage]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    for message in messages:
        text = message_text(message)
        if isinstance(message, SystemMessage):
            out.append(ChatMessage.system(text))
        elif isinstance(message, AIMessage):
            out.append(ChatMessage.assistant(text))
        elif isinstance(message, ToolMessage):
            out.append(ChatMessage.user(f"Tool result:\n{text}"))
        else:
            out.append(ChatMessage.user(text))
    return out


class _ChatModelKwargs(TypedDict, total=False):
    """LangChain's ``BaseChatModel`` fields, typed (langchain-core 1.x; a test pins them)."""

    name: str | None
    cache: BaseCache | bool | None
    verbose: bool
    callbacks: Callbacks
    tags: list[str] | None
    metadata: dict[str, Any] | None
    custom_get_token_ids: Callable[[str], list[int]] | None
    rate_limiter: BaseRateLimiter | None
    disable_streaming: bool | Literal["tool_calling"]
    output_version: str | None
    profile: ModelProfile | None


class LLMChatModelKwargs(_ChatModelKwargs, total=False):
    """The fields of :class:`LLMChatModel` as typed keyword arguments.

    Its own (described there) and LangChain's chat model fields (``callbacks``, ...).
    """

    llm: Required[LLM]
    max_tokens: int | None
    temperature: float | None


class LLMChatModel(BaseChatModel):
    """A core :class:`~truthlens_integrations.core.llm.LLM` as a LangChain chat model.

    The other direction of :class:`ChatModelLLM`: puts the package's backends (the
    offline SmolLM2 model, the OpenAI-compatible client) into LCEL chains, e.g.
    ``prompt | LLMChatModel(llm=default_llm())``. Tool calling is not supported.

    Attributes:
        llm: The core LLM.
        max_tokens: Completion limit per call; ``None`` for the backend default.
        temperature: Sampling temperature; ``None`` for the backend default.
    """

    llm: Any
    max_tokens: int | None = 256
    temperature: float | None = None

    def __init__(self, **data: Unpack[LLMChatModelKwargs]) -> None:
        # LangChain models drop unknown fields; a misspelt one would be ignored.
        reject_unknown(data, type(self).model_fields, "LLMChatModel")
        fields: dict[str, Any] = dict(data)  # the base's __init__ is pydantic's
        super().__init__(**fields)

    @property
    def _llm_type(self) -> str:
        return f"truthlens-{getattr(self.llm, 'name', 'llm')}"

    @staticmethod
    def _result(response: LLMResponse) -> ChatResult:
        usage = response.usage
        message = AIMessage(
            content=response.text,
            response_metadata={
                "model_name": response.model,
                "finish_reason": response.finish_reason,
            },
            usage_metadata=UsageMetadata(
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                total_tokens=usage.total_tokens,
            )
            if usage is not None
            else None,
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        response = self.llm.complete(
            _to_core(messages),
            max_tokens=kwargs.get("max_tokens", self.max_tokens),
            temperature=kwargs.get("temperature", self.temperature),
            stop=stop,
        )
        return self._result(response)

    @override
    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        response = await self.llm.acomplete(
            _to_core(messages),
            max_tokens=kwargs.get("max_tokens", self.max_tokens),
            temperature=kwargs.get("temperature", self.temperature),
            stop=stop,
        )
        return self._result(response)
