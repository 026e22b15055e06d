"""A tool-calling agent guarded by TruthLens: the tool's output is the grounding.

The design's example: the agent calls ``landmark_record`` (a real ``@tool``), which
returns the Eiffel Tower record, and the model then answers "built in 1950, 500 meters
tall". The guard reads the ``ToolMessage`` as context, the human message as the
question and the last AI message as the answer, and flags "1950" and "500".

Run:
    python cookbook/langchain_agent_tools.py             # offline, local SmolLM2
    python cookbook/langchain_agent_tools.py --fake-llm  # scripted model (CI)

The small local model cannot emit tool calls, so without one the loop makes the
lookup itself (a fixed "plan" step); a tool-calling model (e.g. ``ChatOpenAI``) would
produce the call through ``bind_tools``.
"""

from __future__ import annotations

import sys
from typing import Any

import _langchain_setup as shared
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool

from truthlens_integrations.langchain_adapter import TruthLensRunnable, guard_chain

QUESTION = "When was the Eiffel Tower built, and how tall is it?"
LOOKUP = {"name": "landmark_record", "args": {"name": "Eiffel Tower"}, "id": "call-1"}


@tool
def landmark_record(name: str) -> str:
    """Return the stored record of a landmark as JSON."""
    records = {"Eiffel Tower": shared.EIFFEL_RECORD}
    return records.get(name, '{"error": "unknown landmark"}')


def make_agent(fake: bool) -> RunnableLambda[dict[str, Any], dict[str, Any]]:
    model = shared.chat_model([AIMessage("", tool_calls=[LOOKUP]), shared.HALLUCINATED], fake=fake)

    def agent(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages = [SystemMessage("Answer from the tool results."), *state["messages"]]
        for _ in range(3):
            reply = model.invoke(messages, config) if fake or len(messages) > 2 else None
            if reply is None:  # no tool calling in the local model: plan the lookup
                reply = AIMessage("", tool_calls=[LOOKUP])
            messages.append(reply)
            if not isinstance(reply, AIMessage) or not reply.tool_calls:
                break
            messages.extend(landmark_record.invoke(call, config) for call in reply.tool_calls)
        return {"messages": messages[1:]}

    return RunnableLambda(agent, name="landmark_agent")


def main(argv: list[str] | None = None) -> int:
    shared.setup_logging()
    fake = shared.use_fake(argv)
    state = {"messages": [HumanMessage(QUESTION)]}

    # Pipe form: the agent's final state goes through the guard.
    guarded = make_agent(fake) | TruthLensRunnable(engine=shared.engine())
    out = guarded.invoke(state)
    print(f"Q: {QUESTION}")
    for message in out["messages"][1:]:
        print(f"  {message.type}: {message.content or message.tool_calls}")  # type: ignore[attr-defined]
    shared.show_verdict(out["truthlens"])

    # Wrapper form: the guard runs the agent and collects the tool output itself.
    wrapped = guard_chain(
        make_agent(fake) | RunnableLambda(lambda s: s["messages"][-1]), engine=shared.engine()
    )
    final = wrapped.invoke(state)
    print("\nWrapper form, final message only:")
    print(f"  answer: {final.content}")
    meta = final.response_metadata["truthlens"]
    flagged = [s["text"] for s in meta["spans"]]
    print(f"  flagged: {flagged}  headers: {meta['metadata']['x-vsr-hallucination-spans']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
