"""A LlamaIndex ``FunctionAgent`` guarded by TruthLens: ``TruthLensFunctionAgent``.

The agent calls the ``record_lookup`` tool (the Eiffel Tower record: built
1887-1889, 330 meters) and answers "built in 1950 and is 500 meters tall". The
final ``AgentOutput`` is checked against the run's tool outputs before the workflow
finalizes it:

1. ``header``: the answer stays, the verdict is in ``response.additional_kwargs``;
2. ``standard`` mode: the agent's LLM is asked again with the spans and evidence;
3. ``block``, inside an ``AgentWorkflow``: withheld, and the workflow's event stream
   carries no delta of the unchecked answer (a ``TruthLensAgentEvent`` instead).

Run:
    python cookbook/llamaindex_function_agent.py              # scripted LLM, offline
    python cookbook/llamaindex_function_agent.py --real-llm   # SmolLM2 / $OPENAI_BASE_URL
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import Any

from _agents_setup import CORRECTED, QUESTION, engine_for, record_lookup, show, use_real
from _langchain_setup import HALLUCINATED, setup_logging
from llama_index.core.agent.workflow import AgentStream, AgentWorkflow
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool

from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.llamaindex_adapter import (
    FEEDBACK_KEY,
    TruthLensAgentEvent,
    TruthLensFunctionAgent,
)

LOOKUP = ToolCallBlock(
    tool_call_id="call-1", tool_name="record_lookup", tool_kwargs={"name": "Eiffel Tower"}
)


def make_llm(real: bool) -> MockFunctionCallingLLM:
    """A function-calling LLM: scripted, or the real backend after a planned lookup."""
    writer = None
    if real:
        from truthlens_integrations.core.llm import default_llm

        writer = default_llm()

    def reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        del kwargs
        if not any(m.role == MessageRole.TOOL for m in messages):
            return ChatMessage(role="assistant", blocks=[LOOKUP])  # planned for SmolLM2
        if writer is None:
            fixed = bool(messages[-1].additional_kwargs.get(FEEDBACK_KEY))
            return ChatMessage(role="assistant", content=CORRECTED if fixed else HALLUCINATED)
        facts = "\n".join(m.content or "" for m in messages if m.role == MessageRole.TOOL)
        last = messages[-1].content or ""
        prompt = f"Tool results:\n{facts}\n\n{last}\n\nAnswer in one sentence."
        return ChatMessage(role="assistant", content=writer.complete(prompt).text)

    return MockFunctionCallingLLM(response_generator=reply)


def agent(engine: TruthLens, real: bool) -> TruthLensFunctionAgent:
    return TruthLensFunctionAgent(
        name="landmarks",
        description="Answers questions about landmarks from their records.",
        tools=[FunctionTool.from_defaults(record_lookup)],
        llm=make_llm(real),
        system_prompt="Answer from the record_lookup tool.",
        engine=engine,
    )


async def ask(workflow: Any) -> None:
    handler = workflow.run(user_msg=QUESTION)
    async for event in handler.stream_events():
        if isinstance(event, AgentStream) and event.delta:
            print(f"  stream delta: {event.delta[:70]}")
        if isinstance(event, TruthLensAgentEvent):
            print(f"  TruthLensAgentEvent: decision {event.verdict['decision']}")
    output = await handler
    show(output.response.additional_kwargs["truthlens"], output.response.content)


async def run(real: bool) -> None:
    print(f"Q: {QUESTION}")
    print("\n1. header: flagged, answer kept, verdict in response.additional_kwargs")
    await ask(agent(engine_for(), real))
    print("\n2. standard mode: the agent's LLM is asked again with the spans and evidence")
    await ask(agent(engine_for(default_mode="standard"), real))
    print("\n3. block, inside an AgentWorkflow: withheld, no unchecked delta streamed")
    blocking = agent(engine_for(hallucination_action="block"), real)
    await ask(AgentWorkflow(agents=[blocking], root_agent=blocking.name))


def main(argv: list[str] | None = None) -> int:
    real = use_real(argv)
    setup_logging()
    asyncio.run(run(real))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
