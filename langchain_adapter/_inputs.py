"""Turn what LangChain hands a runnable into the engine's (context, question, answer).

Accepted shapes:

- a string or an ``AIMessage``: an answer without grounding (the engine's
  "unverified factual" path, never silently clean);
- a dict holding the answer, the context and the question (the usual LCEL RAG shape);
  context as ``Document``s, strings or one string;
- a list of messages, or an agent state ``{"messages": [...]}``: ``ToolMessage``
  contents become grounding, the last human message the question and the last AI
  message the answer. Only a ``ToolMessage`` answering a tool call that an earlier
  ``AIMessage`` made counts: one with no matching call could have been put there by
  anyone, so it is not evidence.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from truthlens_integrations.core import InvalidInputError
from truthlens_integrations.core._adapter_api import GuardCall, GuardTools

__all__ = [
    "InputKind",
    "ParsedInput",
    "answered_tool_messages",
    "dedupe",
    "last_human_text",
    "message_text",
    "parse_input",
    "passages",
    "question_of",
    "structured_text",
    "tool_passages",
]

InputKind = Literal["text", "message", "dict", "messages", "state"]


@dataclass(frozen=True)
class ParsedInput:
    """One input, taken apart.

    Attributes:
        kind: Which shape it came in, so the output can keep it.
        context: Grounding passages (may be empty).
        question: The user's question, if the input carries one.
        answer: The text to check.
        value: The input exactly as given.
        answer_index: Position of the answer message in a message list.
    """

    kind: InputKind
    context: list[str]
    question: str | None
    answer: str
    value: Any
    answer_index: int = -1

    def call(self, tools: GuardTools | None = None) -> GuardCall:
        """The engine's typed call for this input, with the mitigation ``tools`` if any."""
        return GuardCall(
            context=self.context,
            question=self.question,
            answer=self.answer,
            tools=tools if tools is not None else GuardTools(),
        )


def message_text(message: BaseMessage) -> str:
    """The plain text of a message: string content, or its text blocks joined.

    Written here rather than using ``BaseMessage.text`` because that is a method in
    langchain-core 0.3 and a property in 1.x.
    """
    return content_text(message.content)


def content_text(content: object) -> str:
    """Text of a message ``content``: a string, or a list of strings / text blocks."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
    return "".join(parts)


def structured_text(value: object, prefix: str = "") -> str:
    """A structured answer (a schema's fields) as ``key: value`` lines to check.

    Nested objects get dotted keys and list items their index, so every field the
    caller will read is in the text the detector judges; ``None`` fields are left out.

    Args:
        value: The arguments of a structured-output tool call (JSON-like values).
        prefix: The key of ``value`` itself (for nested values).

    Returns:
        One line per field, in the order given.
    """
    if isinstance(value, Mapping):
        items: Iterable[tuple[str, object]] = ((str(k), v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((str(i), v) for i, v in enumerate(value))
    else:
        if value is None:
            return ""
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return f"{prefix}: {text}" if prefix else text
    lines = [structured_text(v, f"{prefix}.{k}" if prefix else k) for k, v in items]
    return "\n".join(line for line in lines if line)


def dedupe(items: Iterable[str]) -> list[str]:
    """Non-blank items in first-seen order, exact repeats dropped."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item.strip() and item not in seen:
            seen.add(item)
            out.append(item)
    return out


def tool_passages(output: object) -> list[str]:
    """Grounding passages from one tool result.

    A ``ToolMessage`` with ``status="error"`` yields nothing: an error is not
    evidence. JSON text stays as the model saw it, except that a JSON list is split
    into one passage per element (several records or search hits).

    Args:
        output: A ``ToolMessage``, its content, or any value a tool returned.

    Returns:
        The passages, possibly empty.
    """
    if isinstance(output, ToolMessage):
        if output.status == "error":
            return []
        output = output.content
    if isinstance(output, list) and all(isinstance(b, (str, Mapping)) for b in output):
        text = content_text(output)
        if text or not output:
            output = text
    if isinstance(output, Document):
        return [output.page_content]
    if not isinstance(output, str):
        try:
            return [json.dumps(output, ensure_ascii=False, default=str)]
        except (TypeError, ValueError):
            return [str(output)]
    text = output.strip()
    if text.startswith("["):
        try:
            parsed = json.loads(text)
        except ValueError:
            return [output]
        if isinstance(parsed, list):
            return [
                item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
                for item in parsed
            ]
    return [output]


def answered_tool_messages(
    messages: Sequence[object], made: Collection[str] | None = None
) -> list[ToolMessage]:
    """The ``ToolMessage``s that answer a tool call made by an earlier ``AIMessage``.

    The one rule for what a tool result is, shared by the runnable, the callback
    handler and the agent middleware: a ``ToolMessage`` nobody asked for could have
    been put there by anyone.

    Args:
        messages: A conversation, oldest first.
        made: The ids of the tool calls known to come from a model run (the agent
            middleware records its run's); ``None`` when no such record exists and
            any earlier ``AIMessage``'s call counts.

    Returns:
        The tool messages whose ``tool_call_id`` matches a call made before them
        (and, with ``made``, one of those).
    """
    called: set[str] = set()
    found: list[ToolMessage] = []
    for message in messages:
        if isinstance(message, AIMessage):
            ids = (i for c in message.tool_calls if (i := c.get("id")) is not None)
            called.update(i for i in ids if made is None or i in made)
        elif isinstance(message, ToolMessage) and message.tool_call_id in called:
            found.append(message)
    return found


def passages(value: object) -> list[str]:
    """Grounding passages from a context value.

    Args:
        value: ``None``, a string, a ``Document``, a message, a mapping with
            ``page_content`` / ``content`` / ``text``, or a list of these.

    Returns:
        The passages, blank ones dropped.

    Raises:
        InvalidInputError: If an item cannot be read as text.
    """
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Document):
        return [value.page_content]
    if isinstance(value, ToolMessage):
        return tool_passages(value)
    if isinstance(value, BaseMessage):
        return [message_text(value)]
    if isinstance(value, Mapping):
        for key in ("page_content", "content", "text"):
            text = value.get(key)
            if isinstance(text, str):
                return [text]
        return [json.dumps(dict(value), ensure_ascii=False, default=str)]
    if isinstance(value, Sequence):
        out: list[str] = []
        for item in value:
            out.extend(passages(item))
        return out
    raise InvalidInputError(
        f"cannot read context of type {type(value).__name__}; pass Documents, strings or a string"
    )


def last_human_text(messages: Sequence[object]) -> str | None:
    """The text of the last human message, or ``None`` when there is none or it is empty."""
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    return message_text(humans[-1]) or None if humans else None


def _text(value: object, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseMessage):
        return message_text(value)
    raise InvalidInputError(f"{what} must be a string or a message, got {type(value).__name__}")


def question_of(value: object, question_key: str) -> str | None:
    """The question an input carries, if any (used for a wrapped chain's input).

    Args:
        value: A chain input: a string, a dict, a message list or an agent state.
        question_key: Dict key of the question.

    Returns:
        The question, or ``None``.
    """
    if isinstance(value, str):
        return value or None
    if isinstance(value, HumanMessage):
        return message_text(value) or None
    if isinstance(value, Mapping):
        if "messages" in value and question_key not in value:
            return question_of(value["messages"], question_key)
        for key in (question_key, "question", "input", "query"):
            found = value.get(key)
            if isinstance(found, (str, BaseMessage)):
                return _text(found, "question") or None
        return None
    if isinstance(value, Sequence):
        return last_human_text(value)
    return None


def _parse_messages(messages: Sequence[object], kind: InputKind, value: object) -> ParsedInput:
    if not all(isinstance(m, BaseMessage) for m in messages):
        raise InvalidInputError("a message list must hold only LangChain messages")
    answer_index = -1
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], AIMessage):
            answer_index = i
            break
    if answer_index < 0:
        raise InvalidInputError("the messages hold no AI message to check")
    last_ai = messages[answer_index]
    assert isinstance(last_ai, AIMessage)
    answer = message_text(last_ai)
    if not answer.strip():
        raise InvalidInputError(
            "the last AI message has no text to check (only tool calls?); guard the "
            "final answer of the agent"
        )
    context: list[str] = []
    for message in answered_tool_messages(messages):
        context.extend(tool_passages(message))
    return ParsedInput(
        kind=kind,
        context=dedupe(context),
        question=last_human_text(messages[:answer_index]),
        answer=answer,
        value=value,
        answer_index=answer_index,
    )


def parse_input(
    value: object, *, answer_key: str, context_key: str, question_key: str
) -> ParsedInput:
    """Take an input apart; see the module docstring for the shapes.

    Args:
        value: What the runnable received.
        answer_key: Dict key of the answer.
        context_key: Dict key of the context.
        question_key: Dict key of the question.

    Returns:
        The parsed input.

    Raises:
        InvalidInputError: If the input has no answer to check or an unknown shape.
    """
    if isinstance(value, str):
        return ParsedInput(kind="text", context=[], question=None, answer=value, value=value)
    if isinstance(value, AIMessage):
        return ParsedInput(
            kind="message", context=[], question=None, answer=message_text(value), value=value
        )
    if isinstance(value, Mapping):
        if answer_key not in value and isinstance(value.get("messages"), Sequence):
            return _parse_messages(value["messages"], "state", value)
        if answer_key not in value:
            keys = ", ".join(repr(k) for k in value)
            raise InvalidInputError(
                f"the input dict has no {answer_key!r} key (keys: {keys}); set answer_key "
                "or pass a dict holding the answer"
            )
        question = value.get(question_key)
        return ParsedInput(
            kind="dict",
            context=dedupe(passages(value.get(context_key))),
            question=_text(question, "question") if question is not None else None,
            answer=_text(value[answer_key], "answer"),
            value=value,
        )
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return _parse_messages(value, "messages", value)
    raise InvalidInputError(
        f"cannot guard a {type(value).__name__}: pass a string, an AIMessage, a dict with "
        "the answer, a list of messages or an agent state"
    )
