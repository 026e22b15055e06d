"""A scripted LangChain chat model that can call tools."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field, PrivateAttr

from truthlens_integrations.core import InvalidArgumentError

from ._calls import ToolCall

__all__ = ["ScriptedChatModel"]


Reply = str | ToolCall | AIMessage
"""One scripted reply: an answer, a tool call or a whole ``AIMessage``."""


class ScriptedChatModel(BaseChatModel):
    """A chat model that gives scripted replies, for offline examples and tests.

    Either ``replies``, given in order, or ``respond``, a function of the conversation
    that decides each reply (what it says can depend on what the model is shown: a
    tool result, the guard's feedback). Each reply is a string (an answer), a
    :class:`ToolCall` (from :func:`tool_call`) or an ``AIMessage``. ``bind_tools``
    returns the model itself, so it works as the model of
    ``langchain.agents.create_agent``. Replies are streamed word by word. After the
    last of ``replies`` it repeats the last one (``cycle=False``, the default) or
    starts again (``cycle=True``).

    Attributes:
        replies: The scripted replies, in order.
        respond: Instead of ``replies``: gives the reply to a conversation.
        cycle: Start again after the last reply instead of repeating it.

    Example:
        >>> model = ScriptedChatModel(replies=["The Eiffel Tower was built in 1950."])
        >>> model.invoke("When was the Eiffel Tower built?").content
        'The Eiffel Tower was built in 1950.'
        >>> echo = ScriptedChatModel(respond=lambda messages: f"{len(messages)} message(s)")
        >>> echo.invoke("Hello").content
        '1 message(s)'
    """

    replies: list[Any] = Field(default_factory=list)
    respond: Callable[[list[BaseMessage]], Reply] | None = None
    cycle: bool = False
    _next: int = PrivateAttr(default=0)

    def model_post_init(self, context: Any, /) -> None:
        """Check the script once, when the model is built."""
        del context
        if (self.respond is None) == (not self.replies):
            raise InvalidArgumentError(
                "ScriptedChatModel: give non-empty replies or a respond function (one of them)"
            )
        for reply in self.replies:
            _checked(reply)

    @property
    def _llm_type(self) -> str:
        return "truthlens-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        """The model itself: its tool calls are scripted."""
        del tools, kwargs
        return self

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        """The next reply to ``messages``, as a message."""
        if self.respond is not None:
            return _as_message(_checked(self.respond(list(messages))))
        index = self._next
        if index >= len(self.replies):
            index = index % len(self.replies) if self.cycle else len(self.replies) - 1
        self._next += 1
        return _as_message(self.replies[index])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        del stop, run_manager, kwargs  # scripted: nothing else matters
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        del stop, kwargs  # scripted: nothing else matters
        reply = self._reply(messages)
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


def _checked(reply: object) -> Reply:
    """``reply`` when it is a string, a :class:`ToolCall` or an ``AIMessage``."""
    if not isinstance(reply, str | ToolCall | AIMessage):
        raise InvalidArgumentError(
            "ScriptedChatModel: each reply is a str, a ToolCall or an AIMessage, "
            f"got {type(reply).__name__}"
        )
    return reply


def _as_message(reply: Reply) -> AIMessage:
    if isinstance(reply, AIMessage):
        return reply
    if isinstance(reply, ToolCall):
        return AIMessage("", tool_calls=[{"name": reply.name, "args": reply.args, "id": reply.id}])
    return AIMessage(reply)
