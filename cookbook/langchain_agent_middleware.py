"""One line guards a LangChain 1.x agent: ``middleware=[TruthLensMiddleware()]``.

The design's scenario with a real ``create_agent`` agent: the model calls the
``landmark_record`` tool, which returns the Eiffel Tower record
(built 1887-1889, 330 meters), and then answers "built in 1950 and is 500 meters
tall". The middleware checks that final answer against the tool result before it
becomes the agent's answer, three ways:

1. ``header`` (the default): the answer stays, the verdict (spans, NLI labels,
   ``x-*`` headers) is in the final message's ``response_metadata["truthlens"]``;
2. ``standard`` mode: the answer goes back to the agent's model with the flagged
   spans and the tool evidence named, and the fixed answer replaces it;
3. ``block``: the answer is withheld, also from ``stream_mode="messages"``.

Run:
    python cookbook/langchain_agent_middleware.py              # scripted model, offline
    python cookbook/langchain_agent_middleware.py --real-llm   # SmolLM2 / $OPENAI_BASE_URL
"""

from __future__ import annotations

import sys
from typing import Any

from _agents_setup import QUESTION, agent_model, engine_for, landmark_record, show, use_real
from _langchain_setup import setup_logging
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from truthlens_integrations.langchain_adapter import TruthLensMiddleware

SYSTEM = "Answer questions about landmarks from the landmark_record tool."


def ask(middleware: TruthLensMiddleware, real: bool) -> dict[str, Any]:
    agent = create_agent(
        agent_model(real), [landmark_record], system_prompt=SYSTEM, middleware=[middleware]
    )
    final = agent.invoke({"messages": [HumanMessage(QUESTION)]})["messages"][-1]
    payload: dict[str, Any] = final.response_metadata["truthlens"]
    show(payload, str(final.content))
    return payload


def stream_blocked(real: bool) -> None:
    middleware = TruthLensMiddleware(engine_for(hallucination_action="block"))
    agent = create_agent(
        agent_model(real), [landmark_record], system_prompt=SYSTEM, middleware=[middleware]
    )
    for message, meta in agent.stream(
        {"messages": [HumanMessage(QUESTION)]}, stream_mode="messages"
    ):
        if message.content:
            print(f"  streamed from {meta['langgraph_node']}: {str(message.content)[:70]}")


def main(argv: list[str] | None = None) -> int:
    real = use_real(argv)
    setup_logging()
    print(f"Q: {QUESTION}")
    print("\n1. header (the default action): flagged, answer kept, verdict in metadata")
    payload = ask(TruthLensMiddleware(engine_for()), real)
    assert real or payload["detected"]
    print("\n2. standard mode: sent back to the agent's model with the spans and evidence")
    ask(TruthLensMiddleware(engine_for(default_mode="standard")), real)
    print("\n3. block: withheld")
    payload = ask(TruthLensMiddleware(engine_for(hallucination_action="block")), real)
    assert real or payload["blocked"]
    print("   stream_mode='messages' under block (the unchecked tokens never show):")
    stream_blocked(real)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
