"""Build the runnable's output from a verdict, keeping the input's type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessageChunk, BaseMessage

from truthlens_integrations.core.engine import (
    DEFAULT_BLOCKED_MESSAGE,
    OnBlock,
    Verdict,
    verdict_payload,
)

from ._inputs import ParsedInput, message_text

__all__ = [
    "DEFAULT_BLOCKED_MESSAGE",
    "TRUTHLENS_EVENT",
    "BlockMode",
    "GuardedText",
    "render",
    "verdict_chunk",
    "verdict_payload",
    "with_verdict",
]

#: Name of the custom event the runnable dispatches after each detection.
TRUTHLENS_EVENT = "truthlens_detection"

#: Deprecated name of :data:`~truthlens_integrations.core.engine.OnBlock`.
BlockMode = OnBlock


class GuardedText(str):
    """A ``str`` that also carries the verdict (``text.verdict``).

    Strings stay strings (``isinstance(x, str)``, ``==``, ``"".join`` all work); the
    verdict rides along for callers that want it. Concatenation gives a plain ``str``.
    """

    verdict: Verdict | None

    def __new__(cls, text: str, verdict: Verdict | None = None) -> GuardedText:
        obj = super().__new__(cls, text)
        obj.verdict = verdict
        return obj

    def __reduce__(self) -> tuple[Any, ...]:
        return (GuardedText, (str(self), self.verdict))


def with_verdict(message: BaseMessage, text: str, verdict: Verdict) -> BaseMessage:
    """``message`` showing ``text``, its ``response_metadata["truthlens"]`` the verdict.

    The one place a LangChain message gets its verdict (runnable, middleware, graph).
    """
    update: dict[str, Any] = {
        "response_metadata": {**message.response_metadata, "truthlens": verdict.to_dict()}
    }
    # Keep list-of-blocks content untouched when the text did not change.
    if text != message_text(message):
        update["content"] = text
    return message.model_copy(update=update)


def render(
    parsed: ParsedInput,
    verdict: Verdict,
    text: str,
    *,
    answer_key: str,
    verdict_key: str,
) -> Any:
    """The output for one guarded input: same type as the input.

    Args:
        parsed: The parsed input.
        verdict: The engine's verdict.
        text: The text to show (the engine's :meth:`~TruthLens.shown`).
        answer_key: Dict key of the answer.
        verdict_key: Dict key the verdict goes under.

    Returns:
        A :class:`GuardedText` for a string, an ``AIMessage`` with
        ``response_metadata["truthlens"]``, a dict with ``verdict.to_dict()`` under
        ``verdict_key``, or a message list / agent state with the last AI message
        replaced (and ``verdict_key`` in the state).
    """
    value = parsed.value
    if parsed.kind == "text":
        return GuardedText(text, verdict)
    if parsed.kind == "message":
        return with_verdict(value, text, verdict)
    if parsed.kind == "dict":
        answer = value[answer_key]
        if isinstance(answer, BaseMessage):
            new_answer: Any = with_verdict(answer, text, verdict)
        else:
            new_answer = GuardedText(text, verdict)
        return {**value, answer_key: new_answer, verdict_key: verdict.to_dict()}
    messages = list(value["messages"] if parsed.kind == "state" else value)
    messages[parsed.answer_index] = with_verdict(messages[parsed.answer_index], text, verdict)
    if parsed.kind == "state":
        return {**value, "messages": messages, verdict_key: verdict.to_dict()}
    return messages


def verdict_chunk(sample: object, verdict: Verdict, verdict_key: str) -> Any:
    """The closing chunk of a pass-through stream: no text, only the verdict.

    Args:
        sample: A chunk of the stream, to pick the chunk type.
        verdict: The verdict.
        verdict_key: Dict key the verdict goes under for dict streams.

    Returns:
        An empty :class:`GuardedText`, an empty ``AIMessageChunk`` with
        ``response_metadata["truthlens"]``, or ``{verdict_key: verdict.to_dict()}``.
    """
    if isinstance(sample, BaseMessage):
        return AIMessageChunk(content="", response_metadata={"truthlens": verdict.to_dict()})
    if isinstance(sample, Mapping):
        return {verdict_key: verdict.to_dict()}
    return GuardedText("", verdict)
