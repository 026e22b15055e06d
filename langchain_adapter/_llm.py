"""Any LangChain chat model behind the core LLM protocol (``complete`` / ``acomplete``).

The engine's mitigation loops (refinement, verification, judging) talk to
:class:`~truthlens_integrations.core.llm.LLM`; wrapping a ``BaseChatModel`` lets them
use ``ChatOpenAI``, ``ChatAnthropic`` or any other LangChain model. Calls are made
with ``invoke`` / ``ainvoke`` (real async), without an explicit config, so inside a
runnable they pick up the active run's config and show up as its child runs; a
config given explicitly (:meth:`ChatModelLLM.bind_config`) wins, which also holds
across threads.
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from truthlens_integrations.core import LLMError, LLMTimeoutError, TruthLensError
from truthlens_integrations.core.llm import BaseLLM, ChatMessage, LLMResponse, TokenUsage
from truthlens_integrations.core.llm import ensure_text as _ensure_text

from ._inputs import message_text

__all__ = ["ChatModelLLM", "as_llm"]


def _model_name(model: BaseChatModel) -> str:
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


class ChatModelLLM(BaseLLM):
    """A LangChain chat model as a core :class:`~truthlens_integrations.core.llm.LLM`.

    Args:
        chat_model: Any ``BaseChatModel``.
        forward_params: Pass ``max_tokens`` / ``temperature`` to the model as call
            keyword arguments (most providers accept them; turn off for one that
            rejects unknown keywords).
        config: Runnable config for every call (callbacks, tags); ``None`` uses the
            config of the run the call happens in.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> llm = ChatModelLLM(FakeListChatModel(responses=["Paris"]))
        >>> llm.complete("Capital of France?").text
        'Paris'
    """

    name = "langchain"

    def __init__(
        self,
        chat_model: BaseChatModel,
        *,
        forward_params: bool = True,
        config: RunnableConfig | None = None,
    ) -> None:
        self.chat_model = chat_model
        self.forward_params = forward_params
        self.config = config
        self.model = _model_name(chat_model)

    def bind_config(self, config: RunnableConfig | None) -> ChatModelLLM:
        """A copy whose calls run with ``config`` (e.g. a parent run's child config)."""
        return ChatModelLLM(self.chat_model, forward_params=self.forward_params, config=config)

    def _kwargs(self, max_tokens: int | None, temperature: float | None) -> dict[str, Any]:
        if not self.forward_params:
            return {}
        kwargs: dict[str, Any] = {}
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if temperature is not None:
            kwargs["temperature"] = temperature
        return kwargs

    def _response(self, result: BaseMessage, started: float) -> LLMResponse:
        if not isinstance(result, AIMessage):
            raise LLMError(f"model {self.model!r} returned {type(result).__name__}, not a message")
        return LLMResponse(
            text=_ensure_text(message_text(result), model=self.model),
            model=self.model,
            usage=_usage(result),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            finish_reason=_finish_reason(result),
        )

    def _complete(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int | None,
        temperature: float | None,
        stop: list[str] | None,
    ) -> LLMResponse:
        started = time.perf_counter()
        try:
            result = self.chat_model.invoke(
                _to_langchain(messages),
                self.config,
                stop=stop,
                **self._kwargs(max_tokens, temperature),
            )
        except TruthLensError:
            raise
        except TimeoutError as exc:
            raise LLMTimeoutError(f"model {self.model!r} timed out: {exc}") from exc
        except Exception as exc:
            raise LLMError(f"model {self.model!r} failed: {exc}") from exc
        return self._response(result, started)

    async def _acomplete(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int | None,
        temperature: float | None,
        stop: list[str] | None,
    ) -> LLMResponse:
        started = time.perf_counter()
        try:
            result = await self.chat_model.ainvoke(
                _to_langchain(messages),
                self.config,
                stop=stop,
                **self._kwargs(max_tokens, temperature),
            )
        except TruthLensError:
            raise
        except TimeoutError as exc:
            raise LLMTimeoutError(f"model {self.model!r} timed out: {exc}") from exc
        except Exception as exc:
            raise LLMError(f"model {self.model!r} failed: {exc}") from exc
        return self._response(result, started)


def as_llm(model: BaseChatModel | BaseLLM, config: RunnableConfig | None = None) -> BaseLLM:
    """Wrap a chat model as a core LLM (calls run with ``config``); core LLMs pass through."""
    if isinstance(model, BaseChatModel):
        return ChatModelLLM(model, config=config)
    if isinstance(model, ChatModelLLM):
        return model.bind_config(config)
    return model
