"""Shared set-up of the agent cookbook examples: tool-calling chat models, offline.

- ``TRUTHLENS_COOKBOOK_LLM=fake`` (or ``--fake-llm``; the default of these examples):
  scripted tool-calling models. The model calls ``landmark_record`` first, then answers
  "built in 1950, 500 meters tall"; sent TruthLens feedback, it answers from the tool
  result. Runs in seconds: what CI's smoke test uses.
- ``TRUTHLENS_COOKBOOK_LLM=local`` or ``auto`` (or ``--real-llm``): the package's default backend
  (an OpenAI-compatible endpoint when ``$OPENAI_API_KEY`` / ``$OPENAI_BASE_URL`` is
  set, else the offline SmolLM2 model) writes the answers. SmolLM2 cannot emit tool
  calls, so the lookup is planned by a fixed first step (a ``ScriptedChatModel`` whose
  ``respond`` asks the real model for every later reply); everything after it,
  refinement included, is the real model's text.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from _langchain_setup import EIFFEL_RECORD, ENV_LLM, HALLUCINATED
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.tools import tool

from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.testing import ScriptedChatModel

QUESTION = "When was the Eiffel Tower built, and how tall is it?"
CORRECTED = "The Eiffel Tower was built from 1887 to 1889 and is 330 meters tall."
LOOKUP = {"name": "landmark_record", "args": {"name": "Eiffel Tower"}, "id": "call-1"}


def use_real(argv: Sequence[str] | None = None) -> bool:
    """Whether to use the real backend (``--real-llm`` or ``TRUTHLENS_COOKBOOK_LLM=local``)."""
    args = sys.argv[1:] if argv is None else argv
    if "--fake-llm" in args:
        return False
    return "--real-llm" in args or os.environ.get(ENV_LLM, "fake").lower() in ("auto", "local")


@tool
def landmark_record(name: str) -> str:
    """Return the stored record of a landmark as JSON."""
    return EIFFEL_RECORD if "eiffel" in name.lower() else '{"error": "unknown landmark"}'


def record_lookup(name: str) -> str:
    """Return the stored record of a landmark as JSON (plain function, for LlamaIndex)."""
    return EIFFEL_RECORD if "eiffel" in name.lower() else '{"error": "unknown landmark"}'


def is_feedback(message: BaseMessage) -> bool:
    """Whether ``message`` is the guard's refinement request."""
    return isinstance(message, HumanMessage) and message.name == "truthlens"


def scripted_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """The fake model: look the record up, answer wrongly, fix it when told."""
    if messages and is_feedback(messages[-1]):
        return AIMessage(CORRECTED)
    if not any(isinstance(m, ToolMessage) for m in messages):
        return AIMessage("", tool_calls=[LOOKUP])
    return AIMessage(HALLUCINATED)


def agent_model(real: bool) -> ScriptedChatModel:
    """The agent's model: scripted, or the real backend after a planned lookup."""
    if not real:
        return ScriptedChatModel(respond=scripted_reply)
    from _langchain_setup import chat_model

    writer = chat_model([], fake=False, temperature=0.0)

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return AIMessage("", tool_calls=[LOOKUP])  # planned: SmolLM2 has no tool calls
        plain = [m for m in messages if not isinstance(m, ToolMessage) and not _calls(m)]
        facts = "\n".join(str(m.content) for m in messages if isinstance(m, ToolMessage))
        prompt = HumanMessage(f"Tool results:\n{facts}\n\nAnswer in one sentence.")
        answer = writer.invoke([*plain, prompt])
        return AIMessage(str(answer.content))

    return ScriptedChatModel(respond=reply)


def _calls(message: BaseMessage) -> bool:
    return isinstance(message, AIMessage) and bool(message.tool_calls)


_BASE: list[TruthLens] = []


def engine_for(**hallucination: Any) -> TruthLens:
    """An engine with its own policy; all of them share one load of the bundled models."""
    if not _BASE:
        base = TruthLens.from_config()
        _ = base.detector, base.nli, base.fact_checker
        _BASE.append(base)
    base = _BASE[0]
    return TruthLens.from_config(
        {"hallucination": hallucination} if hallucination else None,
        detector=base.detector,
        nli=base.nli,
        fact_checker=base.fact_checker,
    )


def show(payload: dict[str, Any], final: str) -> None:
    """Print the spans, the action taken, the refinement rounds and the final answer."""
    spans = payload["history"][0]["spans"] if payload.get("history") else payload["spans"]
    for span in spans:
        print(
            f"  flagged span: {span['text']!r} ({span['nli_label']}, severity {span['severity']})"
        )
    if payload.get("unverified"):
        print("  no tool was called: the answer could not be verified")
    for step in payload.get("history", [])[1:]:
        shown = step["answer"] if step["answer"] is not None else f"(failed: {step['error']})"
        kept = "kept" if step["accepted"] else "rejected"
        print(f"  round {step['index']} ({step['kind']}, {kept}): {shown}")
    print(f"  action: {payload['action'] or 'none'}  status: {payload['status']}")
    print(f"  final answer: {final}")
