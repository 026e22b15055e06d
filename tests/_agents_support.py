"""Shared pieces of the agent tests (LangChain middleware, LangGraph, LlamaIndex agents).

:class:`ScriptedToolModel` is a STAND-IN for a tool-calling chat model (the only faked
component): what it says depends on the conversation it is shown, so concurrent runs
on one agent each get their own script. The detector, NLI and prompt classifier are
the real bundled models.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.types import Command
from pydantic import Field

from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.testing import ScriptedChatModel

EIFFEL_RECORD = (
    '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters", '
    '"location": "Paris, France"}'
)
QUESTION = "When was the Eiffel Tower built and how tall is it?"
WRONG = "The Eiffel Tower was built in 1950 and is 500 meters tall."
RIGHT = "The Eiffel Tower was built from 1887 to 1889 and is 330 meters tall."


def engine_for(base: TruthLens, **hallucination: Any) -> TruthLens:
    """An engine with its own policy sharing ``base``'s loaded models."""
    # Header unless a test says otherwise: the tests read the answer as given.
    return TruthLens.from_config(
        {"hallucination": {"hallucination_action": "header", **hallucination}},
        detector=base.detector,
        nli=base.nli,
        fact_checker=base.fact_checker,
    )


@tool
def landmark_record(name: str) -> str:
    """Return the stored record of a landmark as JSON."""
    return EIFFEL_RECORD if "eiffel" in name.lower() else '{"error": "unknown landmark"}'


Script = Callable[[list[BaseMessage]], AIMessage]


def lookup_call(call_id: str = "call-1") -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[{"name": "landmark_record", "args": {"name": "Eiffel Tower"}, "id": call_id}],
    )


def eiffel_script(first: str = WRONG, fixed: str = RIGHT, *, call_tool: bool = True) -> Script:
    """Look the record up, answer ``first``; answer ``fixed`` when given feedback."""

    def respond(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage) and last.name == "truthlens":
            return AIMessage(fixed)
        if call_tool and not any(isinstance(m, ToolMessage) for m in messages):
            return lookup_call()
        return AIMessage(first)

    return respond


class ScriptedToolModel(ScriptedChatModel):
    """The package's scripted chat model, recording what it was shown.

    ``respond`` decides each reply from the conversation (``bind_tools`` returns the
    model itself); ``calls`` counts invocations, ``seen`` keeps every conversation.
    """

    calls: int = 0
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-model"

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        self.calls += 1
        self.seen.append(list(messages))
        return super()._reply(messages)


def scripted(script: Script) -> ScriptedToolModel:
    return ScriptedToolModel(respond=script)


def without_verdicts(value: object) -> str:
    """``value`` as JSON, leaving out the verdict payloads (they follow their own
    redaction rules: ``redact`` and the metadata shape are not this test's subject)."""

    def strip(item: object) -> object:
        if isinstance(item, Command):
            item = item.update
        if isinstance(item, BaseMessage):
            item = item.model_dump()
        if isinstance(item, dict):
            return {k: strip(v) for k, v in item.items() if k != "truthlens"}
        if isinstance(item, (list, tuple)):
            return [strip(v) for v in item]
        return item

    return json.dumps(strip(value), default=str)


def with_payloads(text: str) -> AIMessage:
    """An answer as real providers return it: the text again in their payloads."""
    return AIMessage(
        content=text,
        additional_kwargs={"reasoning_content": f"I will say: {text}", "refusal": None},
        response_metadata={
            "model_name": "m",
            "finish_reason": "stop",
            "logprobs": {"content": [{"token": t, "logprob": -0.1} for t in text.split()]},
            "raw_output": {"choices": [{"message": {"content": text}}]},
        },
        id="run-1",
    )


def guarded_agent(engine: TruthLens, script: Script, **kwargs: Any) -> Any:
    """A ``create_agent`` agent on the scripted model, the landmark tool and the middleware."""
    from langchain.agents import create_agent

    from truthlens_integrations.langchain_adapter import TruthLensMiddleware

    middleware = [TruthLensMiddleware(engine)]
    return create_agent(scripted(script), [landmark_record], middleware=middleware, **kwargs)
