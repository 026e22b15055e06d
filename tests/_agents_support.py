"""Shared pieces of the agent tests (LangChain middleware, LangGraph, LlamaIndex agents).

:class:`ScriptedToolModel` is a STAND-IN for a tool-calling chat model (the only faked
component): what it says depends on the conversation it is shown, so concurrent runs
on one agent each get their own script. The detector, NLI and prompt classifier are
the real bundled models.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from pydantic import Field

from truthlens_integrations.core.engine import TruthLens

EIFFEL_RECORD = (
    '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters", '
    '"location": "Paris, France"}'
)
QUESTION = "When was the Eiffel Tower built and how tall is it?"
WRONG = "The Eiffel Tower was built in 1950 and is 500 meters tall."
RIGHT = "The Eiffel Tower was built from 1887 to 1889 and is 330 meters tall."


def engine_for(base: TruthLens, **hallucination: Any) -> TruthLens:
    """An engine with its own policy sharing ``base``'s loaded models."""
    return TruthLens.from_config(
        {"hallucination": hallucination},
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


class ScriptedToolModel(BaseChatModel):
    """A chat model whose reply is ``script(messages)``; streams word by word.

    ``bind_tools`` returns the model itself (the script decides on tool calls);
    ``calls`` counts invocations, ``seen`` keeps every conversation it was shown.
    """

    script: Any
    calls: int = 0
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        del tools, kwargs
        return self

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        self.calls += 1
        self.seen.append(list(messages))
        reply = self.script(list(messages))
        assert isinstance(reply, AIMessage)
        return reply

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(messages)
        if reply.tool_calls:
            chunk = AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {"name": c["name"], "args": _json(c["args"]), "id": c["id"], "index": i}
                    for i, c in enumerate(reply.tool_calls)
                ],
            )
            if run_manager:
                run_manager.on_llm_new_token("", chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)
            return
        words = str(reply.content).split(" ")
        for i, word in enumerate(words):
            piece = word if i == len(words) - 1 else word + " "
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


def _json(value: object) -> str:
    import json

    return json.dumps(value)


def scripted(script: Script) -> ScriptedToolModel:
    return ScriptedToolModel(script=script)
