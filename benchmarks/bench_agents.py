"""Overhead of the agent integrations per checked turn, beyond the engine.

Usage:
    python benchmarks/bench_agents.py [--repeats 300] [--rounds 5] [--e2e-repeats 20]
        [--out benchmarks/results/agents.md]

Each row runs the same agent (or graph) twice, with and without TruthLens, and the
engine returns a precomputed verdict (constant, ~0 cost), so the difference is what
the integration adds to one checked turn: the hook or node, finding the final answer
and its grounding, the verdict payload, events, and the message copy.

- LangChain: ``create_agent`` with a scripted tool-calling model (tool call, tool,
  final answer), without middleware vs with ``TruthLensMiddleware`` (header; block,
  where the model is copied with streaming off), ``invoke`` and ``ainvoke``.
- LangGraph: ``generate -> check`` where ``check`` is ``TruthLensGraphGuard.node`` vs a
  plain node calling ``engine.guard`` itself.
- LlamaIndex: ``FunctionAgent`` vs ``TruthLensFunctionAgent`` with a scripted
  function-calling LLM (tool call, tool, final answer).

End to end: the LangChain agent with the real bundled models, next to ``engine.guard``
on the same turn, for scale.

Reported: median over ``--rounds`` rounds of the mean per-run time of ``--repeats``
runs; the runs with and without TruthLens alternate round by round.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import AgentMiddleware  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock  # noqa: E402
from llama_index.core.llms import MockFunctionCallingLLM  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402

from tests._agents_support import (  # noqa: E402
    EIFFEL_RECORD,
    QUESTION,
    WRONG,
    eiffel_script,
    landmark_record,
    scripted,
)
from truthlens_integrations.core.engine import TruthLens, Verdict  # noqa: E402
from truthlens_integrations.langchain_adapter import (  # noqa: E402
    TruthLensGraphGuard,
    TruthLensGraphState,
    TruthLensMiddleware,
)
from truthlens_integrations.llamaindex_adapter import TruthLensFunctionAgent  # noqa: E402


class CachedEngine(TruthLens):
    """A TruthLens whose ``guard`` / ``aguard`` return one precomputed verdict."""

    def __init__(self, policy: Any, verdict: Verdict) -> None:
        super().__init__(policy)
        self._verdict = verdict

    def guard(self, **_: Any) -> Verdict:  # type: ignore[override]
        return self._verdict

    async def aguard(self, **_: Any) -> Verdict:  # type: ignore[override]
        return self._verdict


def _timed(func: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Mean (CPU ms, wall ms) per call; CPU time is the process's, all threads."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(repeats):
        func()
    return (
        (time.process_time() - cpu) * 1000.0 / repeats,
        (time.perf_counter() - wall) * 1000.0 / repeats,
    )


Pair = tuple[float, float, float, float]  # CPU without, CPU with, wall without, wall with


def pair_ms(
    without: Callable[[], Any], with_: Callable[[], Any], repeats: int, rounds: int
) -> Pair:
    """Median per-run times of two callables, timed in alternating rounds (less drift)."""
    for _ in range(min(20, repeats)):
        without()
        with_()
    a, b = [], []
    for _ in range(rounds):
        a.append(_timed(without, repeats))
        b.append(_timed(with_, repeats))
    return (
        statistics.median(x[0] for x in a),
        statistics.median(x[0] for x in b),
        statistics.median(x[1] for x in a),
        statistics.median(x[1] for x in b),
    )


def async_pair_ms(
    without: Callable[[], Awaitable[Any]],
    with_: Callable[[], Awaitable[Any]],
    repeats: int,
    rounds: int,
) -> Pair:
    """:func:`pair_ms` for coroutines, on one event loop."""
    loop = asyncio.new_event_loop()

    def sync(make: Callable[[], Awaitable[Any]]) -> Callable[[], Any]:
        return lambda: loop.run_until_complete(make())

    try:
        return pair_ms(sync(without), sync(with_), repeats, rounds)
    finally:
        loop.close()


def per_run_ms(func: Callable[[], Any], repeats: int, rounds: int) -> float:
    """Median wall ms per run."""
    for _ in range(min(5, repeats)):
        func()
    return statistics.median(_timed(func, repeats)[1] for _ in range(rounds))


class _NoOp(AgentMiddleware[Any, Any, Any]):
    """A middleware that only passes the call on: what any wrap_model_call costs."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


def langchain_rows(engine: TruthLens, blocking: TruthLens, r: int, n: int) -> list[Any]:
    state = {"messages": [HumanMessage(QUESTION)]}
    plain = create_agent(scripted(eiffel_script()), [landmark_record])
    header = create_agent(
        scripted(eiffel_script()), [landmark_record], middleware=[TruthLensMiddleware(engine)]
    )
    block = create_agent(
        scripted(eiffel_script()), [landmark_record], middleware=[TruthLensMiddleware(blocking)]
    )
    nop = create_agent(scripted(eiffel_script()), [landmark_record], middleware=[_NoOp()])
    rows = [
        ("LangChain create_agent, invoke, a no-op wrap_model_call (LangChain's share)", nop, False),
        ("LangChain create_agent, invoke, header", header, False),
        ("LangChain create_agent, invoke, block (tokens held)", block, False),
        ("LangChain create_agent, ainvoke, header", header, True),
    ]
    out = []
    for name, agent, is_async in rows:
        if is_async:
            times = async_pair_ms(
                lambda: plain.ainvoke(state), lambda a=agent: a.ainvoke(state), r, n
            )
        else:
            times = pair_ms(lambda: plain.invoke(state), lambda a=agent: a.invoke(state), r, n)
        out.append((name, *times))
    return out


class _RagState(TruthLensGraphState, total=False):
    question: str
    documents: list[str]
    answer: str


def langgraph_rows(engine: TruthLens, r: int, n: int) -> list[Any]:
    def generate(_: _RagState) -> dict[str, Any]:
        return {"answer": WRONG}

    def direct(state: _RagState) -> dict[str, Any]:
        engine.guard(context=state["documents"], question=state["question"], answer=state["answer"])
        return {}

    def build(check: Any) -> Any:
        graph = StateGraph(_RagState)
        graph.add_node("generate", generate)
        graph.add_node("check", check)
        graph.add_edge(START, "generate")
        graph.add_edge("generate", "check")
        graph.add_edge("check", END)
        return graph.compile()

    state = {"question": QUESTION, "documents": [EIFFEL_RECORD]}
    plain, guarded = build(direct), build(TruthLensGraphGuard(engine, max_attempts=1).node)
    times = pair_ms(lambda: plain.invoke(state), lambda: guarded.invoke(state), r, n)
    return [("LangGraph guard node vs a node calling engine.guard", *times)]


def _script(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
    if not any(m.role == MessageRole.TOOL for m in messages):
        call = ToolCallBlock(tool_call_id="c1", tool_name="record", tool_kwargs={"name": "Eiffel"})
        return ChatMessage(role="assistant", blocks=[call])
    return ChatMessage(role="assistant", content=WRONG)


def record(name: str) -> str:
    """Return the stored record of a landmark as JSON."""
    del name
    return EIFFEL_RECORD


def llamaindex_rows(engine: TruthLens, r: int, n: int) -> list[Any]:
    tools = [FunctionTool.from_defaults(record)]
    plain = FunctionAgent(tools=tools, llm=MockFunctionCallingLLM(response_generator=_script))
    guarded = TruthLensFunctionAgent(
        tools=tools, llm=MockFunctionCallingLLM(response_generator=_script), engine=engine
    )

    async def run(agent: Any) -> Any:
        return await agent.run(user_msg=QUESTION)

    times = async_pair_ms(lambda: run(plain), lambda: run(guarded), r, n)
    return [("LlamaIndex FunctionAgent vs TruthLensFunctionAgent", *times)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--e2e-repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/agents.md")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    real = TruthLens.from_config()
    verdict = real.guard(context=[EIFFEL_RECORD], question=QUESTION, answer=WRONG)
    blocking_policy = TruthLens.from_config({"hallucination": {"hallucination_action": "block"}})
    cached = CachedEngine(real.policy, verdict)
    cached_block = CachedEngine(blocking_policy.policy, verdict)
    r, n = args.repeats, args.rounds
    rows = [
        *langchain_rows(cached, cached_block, r, n),
        *langgraph_rows(cached, r, n),
        *llamaindex_rows(cached, max(1, r // 3), n),
    ]

    e = args.e2e_repeats
    state = {"messages": [HumanMessage(QUESTION)]}
    agent = create_agent(
        scripted(eiffel_script()), [landmark_record], middleware=[TruthLensMiddleware(real)]
    )
    plain = create_agent(scripted(eiffel_script()), [landmark_record])
    e2e_engine = per_run_ms(
        lambda: real.guard(context=[EIFFEL_RECORD], question=QUESTION, answer=WRONG), e, n
    )
    e2e_agent = per_run_ms(lambda: agent.invoke(state), e, n)
    e2e_plain = per_run_ms(lambda: plain.invoke(state), e, n)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    command = "python benchmarks/bench_agents.py " + " ".join(
        [f"--repeats {r}", f"--rounds {n}", f"--e2e-repeats {e}"]
    )
    lines = [
        "# Agent integrations: overhead per checked turn",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs (shared with other jobs), torch threads 1, "
        f"load average {load:.2f}",
        "",
        "Median over the rounds of the mean time per run (with and without TruthLens",
        "timed in alternating rounds). The engine returns a",
        "precomputed verdict on both sides, so the difference is the integration alone",
        "for one checked turn (one tool call, one final answer). Target: < 2 ms.",
        "",
        "CPU time is the process's (all threads): what the integration costs, whatever",
        "else the machine runs. Wall time is the latency seen, and on a shared machine",
        "it carries the waits for a core.",
        "",
        "| run | CPU without (ms) | CPU with (ms) | **CPU overhead (ms)** "
        "| wall without (ms) | wall with (ms) | wall overhead (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {name} | {ca:.3f} | {cb:.3f} | **{cb - ca:.3f}** | {wa:.3f} | {wb:.3f} "
            f"| {wb - wa:.3f} |"
            for name, ca, cb, wa, wb in rows
        ),
        "",
        "End to end with the bundled models (detector, NLI, prompt classifier), the",
        "Eiffel turn (answer flagged, header):",
        "",
        "| what | ms per run |",
        "|---|---:|",
        f"| engine.guard on the final answer | {e2e_engine:.2f} |",
        f"| agent without middleware | {e2e_plain:.2f} |",
        f"| agent with TruthLensMiddleware | {e2e_agent:.2f} |",
        "",
        "These three are for scale only: on a shared 2-core machine the model calls vary",
        "by more than the whole integration costs, so the overhead is read from the",
        "first table, where the engine's cost is constant on both sides.",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
