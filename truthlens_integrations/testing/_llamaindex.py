"""A scripted LlamaIndex function-calling LLM."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.llms import MockFunctionCallingLLM

from truthlens_integrations.core import InvalidArgumentError

from ._calls import ToolCall

__all__ = ["scripted_function_llm"]


def scripted_function_llm(replies: Sequence[str | ToolCall], *, cycle: bool = False) -> Any:
    """A LlamaIndex ``MockFunctionCallingLLM`` that gives ``replies`` in order.

    Each reply is a string (an answer) or a :class:`ToolCall` (from :func:`tool_call`).
    After the last reply it repeats the last one, or starts again with ``cycle=True``.

    Args:
        replies: The scripted replies, in order.
        cycle: Start again after the last reply instead of repeating it.

    Returns:
        The LLM, for ``FunctionAgent`` / ``TruthLensFunctionAgent`` or a query engine.

    Raises:
        InvalidArgumentError: For an empty script or a reply of another type.
    """
    script = list(replies)
    if not script or not all(isinstance(r, str | ToolCall) for r in script):
        raise InvalidArgumentError(
            "scripted_function_llm: replies is a non-empty list of str and ToolCall"
        )
    state = {"next": 0}

    def reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        del messages, kwargs  # scripted: the input does not matter
        index = state["next"]
        if index >= len(script):
            index = index % len(script) if cycle else len(script) - 1
        state["next"] += 1
        item = script[index]
        if isinstance(item, ToolCall):
            block = ToolCallBlock(tool_call_id=item.id, tool_name=item.name, tool_kwargs=item.args)
            return ChatMessage(role="assistant", blocks=[block])
        return ChatMessage(role="assistant", content=item)

    return MockFunctionCallingLLM(response_generator=reply)
