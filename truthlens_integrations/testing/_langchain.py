"""A scripted LangChain chat model that can call tools."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

from truthlens_integrations.core import InvalidArgumentError

from ._calls import ToolCall

__all__ = ["ScriptedChatModel"]


class ScriptedChatModel(BaseChatModel):
    """A chat model that gives ``replies`` in order, for offline examples and tests.

    Each reply is a string (an answer), a :class:`ToolCall` (from :func:`tool_call`)
    or an ``AIMessage``. ``bind_tools`` returns the model itself, so it works as the
    model of ``langchain.agents.create_agent``. Replies are streamed word by word.
    After the last reply it repeats the last one (``cycle=False``, the default) or
    starts again (``cycle=True``).

    Attributes:
        replies: The scripted replies, in order.
        cycle: Start again after the last reply instead of repeating it.

    Example:
        >>> model = ScriptedChatModel(replies=["The Eiffel Tower was built in 1950."])
        >>> model.invoke("When was the Eiffel Tower built?").content
        'The Eiffel Tower was built in 1950.'
    """

    replies: list[Any]
    cycle: bool = False
    _next: int = PrivateAttr(default=0)

    def model_post_init(self, context: Any, /) -> None:
        """Check the script once, when the model is built."""
        del context
        if not self.replies:
            raise InvalidArgumentError("ScriptedChatModel: replies must not be empty")
        for reply in self.replies:
            if not isinstance(reply, str | ToolCall | AIMessage):
                raise InvalidArgumentError(
                    "ScriptedChatModel: each reply is a str, a ToolCall or an AIMessage, "
                    f"got {type(reply).__name__}"
                )

    @property
    def _llm_type(self) -> str:
        return "truthlens-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        """The model itself: its tool calls are scripted."""
        del tools, kwargs
        return self

    def _reply(self) -> AIMessage:
        index = self._next
        if index >= len(self.replies):
            index = index % len(self.replies) if self.cycle else len(self.replies) - 1
        self._next += 1
        reply = self.replies[index]
        if isinstance(reply, AIMessage):
            return reply
        if isinstance(reply, ToolCall):
            return AIMessage(
                "", tool_calls=[{"name": reply.name, "args": reply.args, "id": reply.id}]
            )
        return AIMessage(reply)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        del messages, stop, run_manager, kwargs  # scripted: the input does not matter
        return ChatResult(generations=[ChatGeneration(message=self._reply())])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        del messages, stop, kwargs  # scripted: the input does not matter
        reply = self._reply()
        if reply.tool_calls:
            calls = [
                tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
                for i, c in enumerate(reply.tool_calls)
            ]
            chunk = ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=calls))
            if run_manager:
                run_manager.on_llm_new_token("", chunk=chunk)
            yield chunk
            return
        words = str(reply.content).split(" ")
        for i, word in enumerate(words):
            piece = word if i == len(words) - 1 else word + " "
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
