"""A scripted LlamaIndex function-calling LLM."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    ToolCallBlock,
)
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from pydantic import PrivateAttr

from truthlens_integrations.core import InvalidArgumentError

from ._calls import ToolCall

__all__ = ["scripted_function_llm"]


def scripted_function_llm(replies: Sequence[str | ToolCall], *, cycle: bool = False) -> Any:
    """A LlamaIndex function-calling LLM that gives ``replies`` in order.

    Each reply is a string (an answer) or a :class:`ToolCall` (from :func:`tool_call`).
    After the last reply it repeats the last one, or starts again with ``cycle=True``.
    Like a hosted chat model, it is a chat model (``metadata.is_chat_model``) and every
    path gives the next reply: ``chat`` and ``complete``, sync and async, streamed word
    by word or whole. A tool call on a completion path raises
    :class:`InvalidArgumentError` (completions have no tools).

    Args:
        replies: The scripted replies, in order.
        cycle: Start again after the last reply instead of repeating it.

    Returns:
        The LLM (a ``MockFunctionCallingLLM``), for ``FunctionAgent`` /
        ``TruthLensFunctionAgent`` or a query engine.

    Raises:
        InvalidArgumentError: For an empty script or a reply of another type.
    """
    script = list(replies)
    if not script or not all(isinstance(r, str | ToolCall) for r in script):
        raise InvalidArgumentError(
            "scripted_function_llm: replies is a non-empty list of str and ToolCall"
        )
    llm = _ScriptedFunctionLLM(is_chat_model=True)
    llm._script = script
    llm._cycle = cycle
    return llm


class _ScriptedFunctionLLM(MockFunctionCallingLLM):
    """``MockFunctionCallingLLM`` whose every path gives the next scripted reply.

    The base class echoes the prompt on its completion paths, so a query engine that
    completes instead of chatting would answer with its own prompt template.
    """

    _script: list[str | ToolCall] = PrivateAttr(default_factory=list)
    _cycle: bool = PrivateAttr(default=False)
    _next: int = PrivateAttr(default=0)

    @classmethod
    def class_name(cls) -> str:
        return "ScriptedFunctionLLM"

    def _next_reply(self) -> str | ToolCall:
        index = self._next
        if index >= len(self._script):
            index = index % len(self._script) if self._cycle else len(self._script) - 1
        self._next += 1
        return self._script[index]

    def _message(self) -> ChatMessage:
        item = self._next_reply()
        if isinstance(item, ToolCall):
            block = ToolCallBlock(tool_call_id=item.id, tool_name=item.name, tool_kwargs=item.args)
            return ChatMessage(role="assistant", blocks=[block])
        return ChatMessage(role="assistant", content=item)

    def _text(self) -> str:
        item = self._next_reply()
        if isinstance(item, ToolCall):
            raise InvalidArgumentError(
                f"scripted_function_llm: the next reply is a tool call ({item.name}), "
                "but the caller asked for a completion, which has no tools"
            )
        return item

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        del messages, kwargs  # scripted: the input does not matter
        message = self._message()
        content = message.content or ""
        return ChatResponse(message=message, delta=content, raw={"content": content})

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        response: ChatResponse = self.chat(messages, **kwargs)
        return response

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        del messages, kwargs
        return _chat_chunks(self._message())

    @llm_chat_callback()
    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        del messages, kwargs
        chunks = list(_chat_chunks(self._message()))

        async def gen() -> AsyncGenerator[ChatResponse, None]:
            for chunk in chunks:
                yield chunk

        return gen()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        del prompt, formatted, kwargs
        return CompletionResponse(text=self._text())

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        del prompt, formatted, kwargs
        return CompletionResponse(text=self._text())

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        del prompt, formatted, kwargs
        return _completion_chunks(self._text())

    @llm_completion_callback()
    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        del prompt, formatted, kwargs
        chunks = list(_completion_chunks(self._text()))

        async def gen() -> AsyncGenerator[CompletionResponse, None]:
            for chunk in chunks:
                yield chunk

        return gen()


def _words(text: str) -> list[str]:
    """``text`` in word-sized deltas that join back to it."""
    words = text.split(" ")
    return [word if i == len(words) - 1 else word + " " for i, word in enumerate(words)]


def _chat_chunks(message: ChatMessage) -> Generator[ChatResponse, None, None]:
    """A reply as a hosted model streams it: text word by word, a tool call whole."""
    if any(isinstance(block, ToolCallBlock) for block in message.blocks):
        yield ChatResponse(message=message, delta="")
        return
    text = ""
    for delta in _words(message.content or ""):
        text += delta
        yield ChatResponse(message=ChatMessage(role="assistant", content=text), delta=delta)


def _completion_chunks(text: str) -> Generator[CompletionResponse, None, None]:
    """A completion as a hosted model streams it: word by word, the text so far."""
    so_far = ""
    for delta in _words(text):
        so_far += delta
        yield CompletionResponse(text=so_far, delta=delta)
