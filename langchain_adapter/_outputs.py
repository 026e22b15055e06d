"""Build the runnable's output from a verdict, keeping the input's type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessageChunk, BaseMessage

from truthlens_integrations.core._adapter_api import OnBlock, verdict_payload
from truthlens_integrations.core.engine import DEFAULT_BLOCKED_MESSAGE, Verdict

from ._inputs import ParsedInput, message_text

__all__ = [
    "DEFAULT_BLOCKED_MESSAGE",
    "GUARD_TAG",
    "SAFE_PROVIDER_METADATA",
    "TRUTHLENS_EVENT",
    "BlockMode",
    "GuardedText",
    "render",
    "text_replaced",
    "verdict_chunk",
    "verdict_payload",
    "with_verdict",
]

#: Name of the custom event the runnable dispatches after each detection.
TRUTHLENS_EVENT = "truthlens_detection"

#: Tag of a guard's run whose policy may change or withhold the text it is given: what
#: ran before it and fed it is unchecked text (``guarded_events`` holds and drops it).
#: Set by the guard itself when it runs, so it is seen wherever the guard sits (inside
#: an ``assign``, a branch, a function step).
GUARD_TAG = "truthlens:guard"

#: Deprecated name of :data:`~truthlens_integrations.core.engine._blocked.OnBlock`.
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


#: Provider metadata that describes a generation without carrying its text: kept on a
#: message whose answer was withheld or replaced. Everything else a provider puts in
#: ``response_metadata`` (``logprobs`` holds every token of the answer) is dropped.
SAFE_PROVIDER_METADATA = frozenset(
    {
        "finish_reason",
        "id",
        "model",
        "model_name",
        "model_provider",
        "service_tier",
        "system_fingerprint",
        "token_usage",
        "usage",
    }
)


def with_verdict(message: BaseMessage, text: str, verdict: Verdict) -> BaseMessage:
    """``message`` showing ``text``, its ``response_metadata["truthlens"]`` the verdict.

    The one place a LangChain message gets its verdict (runnable, middleware, graph).
    When the model's answer is withheld (blocked) or replaced (a refined answer), the
    provider payloads that could carry its text go too: ``additional_kwargs``
    (``reasoning_content``, refusals, audio transcripts) and every ``response_metadata``
    entry outside :data:`SAFE_PROVIDER_METADATA`. Tool calls stay where they are
    (they are the agent's next step, not the answer); the verdict is the one channel to
    the original.
    """
    original = message_text(message)
    metadata = {**message.response_metadata}
    update: dict[str, Any] = {}
    if verdict.blocked or text_replaced(original, text, verdict):
        metadata = {k: v for k, v in metadata.items() if k in SAFE_PROVIDER_METADATA}
        kept = {k: v for k, v in message.additional_kwargs.items() if k == "tool_calls"}
        update["additional_kwargs"] = kept
    update["response_metadata"] = {**metadata, "truthlens": verdict.to_dict()}
    # Keep list-of-blocks content untouched when the text did not change.
    if text != original:
        update["content"] = text
    return message.model_copy(update=update)


def text_replaced(original: str, shown: str, verdict: Verdict) -> bool:
    """Whether the shown text is another answer than the model's (a refinement)."""
    final = verdict.final_answer
    return final is not None and final != original and original not in shown


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
