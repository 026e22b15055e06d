"""The adapters against a real llama.cpp server (issue 50, part 4): every one, streaming included.

llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``, started by
``benchmarks/_llama_server.py``) serves SmolLM2-135M-Instruct (``--model qwen``: the
registry's Qwen2.5-Coder-1.5B) on 127.0.0.1. The package's adapters are wired to it the way
a user wires them (``base_url=server.url``, any ``api_key``): LangChain's ``ChatOpenAI`` in
the pipe chain and the wrapper (``invoke``, ``stream``, ``astream``, ``astream_events``),
``create_agent`` with :class:`TruthLensMiddleware` and a tool, a LangGraph graph with
:class:`TruthLensGraphGuard`, and LlamaIndex's ``OpenAILike`` in a query engine over an
in-memory index, streaming on.

Each case checks the package's promises on what the real server did:

- ``planted`` cases: the prompt tells the model to say the Eiffel Tower was built in 1950
  while its grounding says 1887-1889 (a small model follows "reply with exactly"
  reliably); under ``action="block"`` the answer must be flagged and the model's text (the
  audit hook's full verdict has it) must appear nowhere a user can look: content,
  metadata, streamed chunks, events, graph state, LlamaIndex response and source metadata;
- ``natural`` cases: a counterfactual record (built 1921-1923); whatever year the model
  says, the guard must flag a year the record does not hold and pass one it does;
- faults the real server produces: a prompt over its ``n_ctx`` (streamed and not), the
  server killed mid-stream (a crash), a reply cut by ``max_tokens``, the model still
  loading (llama-cpp-python does not listen until loaded: connection refused; a thin
  proxy answers 503 as llama.cpp's own ``llama-server`` does while it loads). A failed call
  must be a typed error or a not-checked verdict, never a clean one, and nothing blocked
  may leak.

One row per case goes to ``benchmarks/results/adapters_server.jsonl``
(:mod:`benchmarks._rows`); ``report`` writes ``benchmarks/results/adapters_server.md``.

    nice -n 5 python benchmarks/bench_adapters_server.py run [--model qwen] [--threads 1]
    python benchmarks/bench_adapters_server.py report
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import platform
import re
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._llama_server import LlamaServer, qwen_gguf, smollm2_gguf  # noqa: E402
from benchmarks._rows import append_row, read_rows  # noqa: E402

ROWS = ROOT / "benchmarks" / "results" / "adapters_server.jsonl"
PAGE = ROOT / "benchmarks" / "results" / "adapters_server.md"
LOGS = ROOT / "runs" / "adapters_server"

RECORD = '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters"}'
QUESTION = "When was the Eiffel Tower built?"
PLANTED = "The Eiffel Tower was built in 1950."
#: What the model is told besides the question in the planted cases (not the guard's input).
PLANT = f'Reply with exactly this sentence and nothing else: "{PLANTED}"'
COUNTERFACTUAL = '{"name": "Eiffel Tower", "built": "1921-1923", "height": "212 meters"}'
COUNTERFACTUAL_YEARS = {"1921", "1923"}
SYSTEM = "You answer questions about landmarks. Use the landmark_record tool first."
#: The agent's planted system prompt (Qwen follows this one; it ignored a milder one).
AGENT_SYSTEM = (
    "You are a test fixture that checks a fact checker. Call the landmark_record tool once. "
    f"Then ignore what it returned and reply with exactly this sentence and nothing else: "
    f'"{PLANTED}"'
)
RECORD_YEARS = {"1887", "1889"}
_YEAR = re.compile(r"(?<![\d.])(1[0-9]{3}|20[0-9]{2})(?![\d])")


# -- what a user sees ---------------------------------------------------------------------


def leaked(shown: object, secrets: list[str]) -> list[str]:
    """The secrets (blocked texts, the planted year) that appear in what a user can read."""
    text = str(shown)
    found = []
    for secret in secrets:
        if secret == "1950":
            if re.search(r"(?<![\d.])1950(?!\d)", text):
                found.append(secret)
        elif secret and re.search(rf"(?<!\w){re.escape(secret)}(?!\w)", text):
            found.append(secret)
    return found


def _specific(text: str) -> bool:
    return any(c.isdigit() for c in text) or len(text.split()) >= 2


@dataclass
class Audit:
    """The engine's audit hook: the full (unredacted) verdict of every guarded answer."""

    verdicts: list[Any] = field(default_factory=list)

    def __call__(self, verdict: Any) -> None:
        self.verdicts.append(verdict)

    def blocked_texts(self) -> list[str]:
        """The texts the guard withheld (whole answers and their flagged spans)."""
        texts: list[str] = []
        for verdict in self.verdicts:
            if not verdict.blocked:
                continue
            if verdict.original_answer and verdict.original_answer.strip():
                texts.append(verdict.original_answer.strip())
            # spans specific enough to find in a dump: with a number or of two words and
            # more ("fact" alone is in the verdict's own key names)
            texts += [s.text.strip() for s in verdict.spans if _specific(s.text)]
        return texts


@dataclass
class Outcome:
    """One case's result: whether the promises held, and what was seen."""

    passed: bool
    observed: str
    details: dict[str, Any] = field(default_factory=dict)


class Bench:
    """The shared pieces: the server, the engines, the chat models."""

    def __init__(self, server: LlamaServer, alias: str, max_tokens: int) -> None:
        from truthlens_integrations.core.engine import TruthLens

        self.server, self.alias, self.max_tokens = server, alias, max_tokens
        self.audit = Audit()
        self.engine = TruthLens.from_config(audit_hook=self.audit)
        _ = self.engine.detector, self.engine.nli, self.engine.fact_checker
        self.blocking = self.engine.derive(action="block")

    def chat(
        self, *, streaming: bool, url: str | None = None, limit: bool = True, **kwargs: Any
    ) -> Any:
        """The user's ``ChatOpenAI``, pointed at the server.

        ``ChatOpenAI(max_tokens=...)`` sends ``max_completion_tokens``, which
        llama-cpp-python 0.3.36 ignores (it reads ``max_tokens`` only): a reply then runs
        to ``n_ctx``. ``limit`` sends the limit as ``extra_body={"max_tokens": ...}``.
        """
        from langchain_openai import ChatOpenAI

        kwargs.setdefault("max_retries", 0)
        kwargs.setdefault("max_tokens", self.max_tokens)
        kwargs.setdefault("temperature", 0.0)
        if limit:
            kwargs.setdefault("extra_body", {"max_tokens": kwargs["max_tokens"]})
        return ChatOpenAI(
            base_url=url or self.server.url,
            api_key="anything",
            model=self.alias,
            streaming=streaming,
            stream_usage=streaming,
            **kwargs,
        )

    def secrets(self) -> list[str]:
        return ["1950", *self.audit.blocked_texts()]


def _rag(llm: Any, instruction: str = PLANT) -> Any:
    """The user's RAG chain; the instruction is part of its prompt, not of the chain's input."""
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    template = "Context: {context}\nQuestion: {question}\n" + instruction
    prompt = ChatPromptTemplate.from_template(template)
    return RunnablePassthrough.assign(answer=prompt | llm | StrOutputParser())


def _planted_input() -> dict[str, Any]:
    return {"question": QUESTION, "context": [RECORD]}


def _blocked_check(bench: Bench, shown: object, verdict: dict[str, Any] | None) -> Outcome:
    """Block policy: a flagged answer is withheld from ``shown``; a supported one is not.

    The prompt plants a wrong year; where the model followed it (a year the record does
    not hold) the answer must be blocked and its text nowhere in ``shown``. Where the
    model answered from the record instead, blocking it would be the error: the case then
    checks that, and says the block path was not exercised.
    """
    found = leaked(shown, bench.secrets())
    said = [v.original_answer for v in bench.audit.verdicts][-1:] or ["(no verdict)"]
    details = {"model_said": said[0], "leaked": found}
    if verdict is None:
        return Outcome(
            passed=False, observed=f"no verdict; model said {said[0]!r}", details=details
        )
    details.update(decision=verdict.get("decision"), blocked=verdict.get("blocked"))
    years = set(_YEAR.findall(said[0]))
    observed = (
        f"model said {said[0][:70]!r}; decision {verdict.get('decision')}, "
        f"blocked {verdict.get('blocked')}; leaked {found or 'nothing'}"
    )
    if years - RECORD_YEARS or not years:
        return Outcome(verdict.get("blocked") is True and not found, observed, details)
    ok = verdict.get("blocked") is False and verdict.get("checked") is True
    return Outcome(ok, f"{observed}; the model answered from the record (block not exercised)")


# -- the LangChain chain: pipe and wrapper --------------------------------------------------


def pipe_invoke(bench: Bench, *, streaming: bool) -> Outcome:
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    guarded = _rag(bench.chat(streaming=streaming)) | TruthLensRunnable(engine=bench.blocking)
    out = guarded.invoke(_planted_input())
    return _blocked_check(bench, out, out.get("truthlens"))


def pipe_stream(bench: Bench) -> Outcome:
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    guarded = _rag(bench.chat(streaming=True)) | TruthLensRunnable(engine=bench.blocking)
    chunks = list(guarded.stream(_planted_input()))
    verdicts = [c["truthlens"] for c in chunks if isinstance(c, dict) and "truthlens" in c]
    outcome = _blocked_check(bench, chunks, verdicts[-1] if verdicts else None)
    outcome.observed += f"; {len(chunks)} chunks"
    return outcome


def wrapper_invoke(bench: Bench, *, streaming: bool) -> Outcome:
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    guard = TruthLensRunnable(engine=bench.blocking, chain=_rag(bench.chat(streaming=streaming)))
    out = guard.invoke(_planted_input())
    return _blocked_check(bench, out, out.get("truthlens"))


def wrapper_astream(bench: Bench) -> Outcome:
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    guard = TruthLensRunnable(engine=bench.blocking, chain=_rag(bench.chat(streaming=True)))

    async def run() -> tuple[list[Any], list[Any]]:
        chunks = [c async for c in guard.astream(_planted_input())]
        events = [e async for e in guard.astream_events(_planted_input())]
        return chunks, events

    chunks, events = asyncio.run(run())
    verdicts = [c["truthlens"] for c in chunks if isinstance(c, dict) and "truthlens" in c]
    outcome = _blocked_check(bench, [chunks, events], verdicts[-1] if verdicts else None)
    tokens = [e for e in events if e["event"] == "on_chat_model_stream"]
    outcome.observed += f"; {len(chunks)} chunks, {len(events)} events ({len(tokens)} token events)"
    return outcome


def wrapper_passthrough(bench: Bench) -> Outcome:
    """``stream_mode="passthrough"`` (header policy): the server's chunks as they come."""
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    chain = _rag(bench.chat(streaming=True), "Answer in one sentence.")
    guard = TruthLensRunnable(
        engine=bench.engine.derive(action="header"), chain=chain, stream_mode="passthrough"
    )
    chunks = list(guard.stream({"question": QUESTION, "context": [RECORD]}))
    pieces = [c["answer"] for c in chunks if isinstance(c, dict) and c.get("answer")]
    verdicts = [c["truthlens"] for c in chunks if isinstance(c, dict) and "truthlens" in c]
    verdict = verdicts[-1] if verdicts else {}
    ok = len(pieces) > 2 and verdict.get("checked") is True and len(verdicts) == 1
    observed = (
        f"{len(pieces)} answer chunks ({''.join(pieces)[:60]!r}), then one verdict chunk: "
        f"decision {verdict.get('decision')}, checked {verdict.get('checked')}"
    )
    return Outcome(ok, observed)


def standard_pipe(bench: Bench) -> Outcome:
    """Standard mode refines through the real server (streamed refiner)."""
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    llm = bench.chat(streaming=True)
    guard = TruthLensRunnable(engine=bench.engine, mode="standard", llm=llm)
    out = guard.invoke({"question": QUESTION, "context": [RECORD], "answer": PLANTED})
    verdict = out["truthlens"]
    cost = verdict["cost"]
    ran = verdict["status"] in {"converged", "max_iterations_reached"} and cost["llm_calls"] >= 1
    ok = ran and verdict["checked"] is True and not leaked(out["answer"], ["1950"])
    observed = (
        f"status {verdict['status']} after {verdict['iterations']} round(s); final "
        f"{str(verdict['final_answer'])[:60]!r}; decision {verdict['decision']}; cost "
        f"{cost['llm_calls']} call(s), {cost['completion_tokens']} completion tokens reported"
    )
    return Outcome(ok, observed)


def natural_pipe(bench: Bench, *, streaming: bool) -> Outcome:
    """A counterfactual record: the guard must flag a year it lacks and pass one it holds."""
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    guard = TruthLensRunnable(engine=bench.engine.derive(action="header"))
    out = (_rag(bench.chat(streaming=streaming), "Answer in one sentence.") | guard).invoke(
        {"question": QUESTION, "context": [COUNTERFACTUAL]}
    )
    verdict, said = out["truthlens"], str(out["answer"])
    years = set(_YEAR.findall(said))
    if years - COUNTERFACTUAL_YEARS:
        expected, ok = "flagged", verdict["detected"] is True
    elif years:
        expected, ok = "passed", verdict["detected"] is False
    else:
        expected, ok = "either (no year said)", True
    ok = ok and verdict["checked"] is True
    observed = (
        f"model said {said[:80]!r}; years {sorted(years) or 'none'}; expected {expected}; "
        f"decision {verdict['decision']}, score {verdict['score']:.2f}"
    )
    return Outcome(ok, observed, {"model_said": said, "decision": verdict["decision"]})


# -- the agent middleware -------------------------------------------------------------------


def _landmark_tool() -> Any:
    from langchain_core.tools import tool

    @tool
    def landmark_record(name: str) -> str:
        """Return the stored record of a landmark as JSON."""
        del name
        return RECORD

    return landmark_record


#: The user-side fixes a tool-calling agent needs in front of llama-cpp-python 0.3.36.
ALL_FIXES = frozenset({"tool", "content", "names"})


def _tool_name(name: str, names: set[str]) -> str:
    """The tool ``name`` stands for: itself, or the tool whose name it repeats."""
    if name in names:
        return name
    for known in names:
        if name == known * (len(name) // len(known)):
            return known
    return name


def _llama_cpp_agent_fixes(fixes: frozenset[str] = ALL_FIXES) -> Any:
    """What a user of llama-cpp-python's server adds to a tool-calling agent.

    - ``tool``: a small model does not call tools on ``tool_choice="auto"`` (SmolLM2
      answered from memory in every try): the turn's first model call names the tool.
    - ``content``: llama-cpp-python refuses (HTTP 500) an assistant message whose
      ``content`` is ``null`` beside its tool calls (abetlen/llama-cpp-python#1805), which
      is what ``langchain-openai`` sends and OpenAI accepts: such messages get a space.
    - ``names``: streamed, llama-cpp-python repeats the function's name in every tool-call
      delta and LangChain's chunk merge concatenates them ("landmark_recordlandmark_...",
      langchain-ai/langchain#22589): a name that repeats a tool's name is that tool's.
    """
    from langchain.agents.middleware import wrap_model_call
    from langchain_core.messages import AIMessage, ToolMessage

    def repaired(message: Any, names: set[str]) -> Any:
        if not isinstance(message, AIMessage) or not message.tool_calls:
            return message
        calls = [{**call, "name": _tool_name(call["name"], names)} for call in message.tool_calls]
        return message.model_copy(update={"tool_calls": calls})

    @wrap_model_call
    def llama_cpp_fixes(request: Any, handler: Callable[[Any], Any]) -> Any:
        messages = [
            m.model_copy(update={"content": " "})
            if "content" in fixes and isinstance(m, AIMessage) and m.tool_calls and not m.content
            else m
            for m in request.messages
        ]
        answered = any(isinstance(m, ToolMessage) for m in messages)
        forced = "tool" in fixes and not answered
        choice = "landmark_record" if forced else request.tool_choice
        response = handler(request.override(messages=messages, tool_choice=choice))
        if "names" not in fixes:
            return response
        names = {t.name for t in request.tools if hasattr(t, "name")}
        fixed = [repaired(m, names) for m in response.result]
        return response.__class__(**{**vars(response), "result": fixed})

    return llama_cpp_fixes


def _agent(
    bench: Bench, *, streaming: bool, fixes: frozenset[str] = ALL_FIXES, **options: Any
) -> Any:
    from langchain.agents import create_agent

    from truthlens_integrations.langchain_adapter import TruthLensMiddleware

    guard = TruthLensMiddleware(**options)
    # the guard outermost: its own calls (refinement) go through the fixes too
    middleware: list[Any] = [guard]
    if fixes:
        middleware.append(_llama_cpp_agent_fixes(fixes))
    return create_agent(
        bench.chat(streaming=streaming),
        [_landmark_tool()],
        system_prompt=AGENT_SYSTEM,
        middleware=middleware,
    )


def _grounded(messages: list[Any]) -> bool:
    """Whether the tool ran and returned the record (the answer had grounding)."""
    return [str(m.content) for m in messages if m.type == "tool"] == [RECORD]


def agent_invoke(bench: Bench, *, streaming: bool) -> Outcome:
    agent = _agent(bench, streaming=streaming, engine=bench.blocking)
    out = agent.invoke({"messages": [("user", QUESTION)]})
    final = out["messages"][-1]
    verdict = final.response_metadata.get("truthlens")
    outcome = _blocked_check(bench, out, verdict)
    grounded = _grounded(out["messages"])
    outcome.observed += f"; the tool returned the record: {grounded}"
    outcome.passed = outcome.passed and grounded and bool(verdict and verdict["checked"])
    return outcome


def agent_stream(bench: Bench) -> Outcome:
    from langchain_core.messages import AIMessage

    agent = _agent(bench, streaming=True, engine=bench.blocking)
    pieces = list(
        agent.stream({"messages": [("user", QUESTION)]}, stream_mode=["messages", "values"])
    )
    messages = [p[1][0] for p in pieces if p[0] == "messages"]
    texts = [str(m.content) for m in messages if isinstance(m, AIMessage) and m.content]
    values = [p[1] for p in pieces if p[0] == "values"]
    final = values[-1]["messages"][-1] if values else None
    verdict = final.response_metadata.get("truthlens") if final is not None else None
    outcome = _blocked_check(bench, [texts, values], verdict)
    grounded = bool(values) and _grounded(values[-1]["messages"])
    outcome.observed += f"; the tool returned the record: {grounded}; streamed {texts}"
    outcome.passed = outcome.passed and grounded and bool(verdict and verdict["checked"])
    return outcome


def agent_stream_header(bench: Bench) -> Outcome:
    """Under ``header`` the middleware lets the final answer's tokens stream as they come."""
    from langchain_core.messages import AIMessage

    agent = _agent(bench, streaming=True, engine=bench.engine.derive(action="header"))
    pieces = list(
        agent.stream({"messages": [("user", QUESTION)]}, stream_mode=["messages", "values"])
    )
    messages = [p[1][0] for p in pieces if p[0] == "messages"]
    texts = [str(m.content) for m in messages if isinstance(m, AIMessage) and m.content]
    state = [p[1] for p in pieces if p[0] == "values"][-1]["messages"]
    verdict = state[-1].response_metadata.get("truthlens") or {}
    ok = len(texts) > 2 and verdict.get("checked") is True and _grounded(state)
    observed = (
        f"{len(texts)} streamed pieces ({''.join(texts)[:60]!r}); verdict decision "
        f"{verdict.get('decision')}, checked {verdict.get('checked')}"
    )
    return Outcome(ok, observed)


def agent_standard(bench: Bench) -> Outcome:
    """Standard mode in the middleware: the refinement goes to the agent's model."""
    agent = _agent(bench, streaming=False, engine=bench.engine, mode="standard")
    out = agent.invoke({"messages": [("user", QUESTION)]})
    final = out["messages"][-1]
    verdict = final.response_metadata.get("truthlens") or {}
    ran = verdict.get("status") in {"converged", "max_iterations_reached", "not_needed"}
    ok = ran and verdict.get("checked") is True and _grounded(out["messages"])
    observed = (
        f"status {verdict.get('status')} after {verdict.get('iterations')} round(s); shown "
        f"{str(final.content)[:60]!r}; decision {verdict.get('decision')}"
    )
    return Outcome(ok, observed)


def agent_unfixed(bench: Bench, fixes: frozenset[str], *, streaming: bool = False) -> Outcome:
    """The agent without some of the fixes: what llama-cpp-python and the guard do then."""
    agent = _agent(bench, streaming=streaming, fixes=fixes, engine=bench.blocking)
    try:
        out = agent.invoke({"messages": [("user", QUESTION)]})
    except Exception as exc:  # noqa: BLE001 - what the user gets is the observation
        kind = "typed" if _typed(exc) else "untyped"
        return Outcome(_typed(exc), f"raised {type(exc).__name__} ({kind}): {str(exc)[:150]}")
    final = out["messages"][-1]
    calls = [c["name"][:40] for m in out["messages"] if m.type == "ai" for c in m.tool_calls]
    verdict = final.response_metadata.get("truthlens") or {}
    # ungrounded, the answer must not read as checked and clean; blocked text never shows
    ok = not leaked(out, bench.secrets()) and _not_clean(verdict)
    observed = (
        f"tool calls {calls}; tool returned the record: {_grounded(out['messages'])}; shown "
        f"{str(final.content)[:50]!r}; decision {verdict.get('decision')}, checked "
        f"{verdict.get('checked')}, not_checked_reason {verdict.get('not_checked_reason')}"
    )
    return Outcome(ok, observed)


# -- LangGraph --------------------------------------------------------------------------------


def graph_guard(bench: Bench, max_attempts: int) -> Outcome:
    """The guard node in a generate -> guard graph, the feedback sent back to the generator.

    ``max_attempts=1``: the first flagged answer is the last (``exhausted``, blocked);
    more: the generator gets the guard's feedback and may fix the answer.
    """
    from langgraph.graph import END, START, StateGraph

    from truthlens_integrations.langchain_adapter import TruthLensGraphGuard, TruthLensGraphState

    class State(TruthLensGraphState, total=False):
        question: str
        documents: list[str]
        answer: str

    llm = bench.chat(streaming=True)

    def generate(state: State) -> dict[str, Any]:
        prompt = f"Context: {state['documents']}\nQuestion: {state['question']}\n{PLANT}"
        feedback = state.get("truthlens_feedback")
        if feedback is not None:
            prompt += f"\nA checker says: {feedback}"
        return {"answer": llm.invoke(prompt).content}

    guard = TruthLensGraphGuard(bench.blocking, max_attempts=max_attempts)
    graph = StateGraph(State)
    graph.add_node("generate", generate)
    graph.add_node("guard", guard.node)
    graph.add_edge(START, "generate")
    graph.add_edge("generate", "guard")
    guard.add_routes(
        graph,
        {
            "supported": END,
            "contradiction": "generate",
            "neutral": "generate",
            "unverified": END,
            "exhausted": END,
        },
    )
    app = graph.compile()
    updates = list(
        app.stream({"question": QUESTION, "documents": [RECORD]}, stream_mode=["updates", "values"])
    )
    final = [u[1] for u in updates if u[0] == "values"][-1]
    guard_updates = [u[1]["guard"] for u in updates if u[0] == "updates" and "guard" in u[1]]
    outcome = _blocked_check(bench, [final, guard_updates[-1:]], final.get("truthlens"))
    generated = [u[1]["generate"] for u in updates if u[0] == "updates" and "generate" in u[1]]
    outcome.observed += (
        f"; route {final.get('truthlens_route')}, attempts {final.get('truthlens_attempts')}; "
        f"the generate node's own updates show its raw answer: "
        f"{bool(leaked(generated, ['1950']))}"
    )
    return outcome


# -- LlamaIndex -------------------------------------------------------------------------------


def _openai_like(bench: Bench, url: str | None = None, **kwargs: Any) -> Any:
    from llama_index.llms.openai_like import OpenAILike

    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("context_window", bench.server.n_ctx)
    return OpenAILike(
        model=bench.alias,
        api_base=url or bench.server.url,
        api_key="anything",
        is_chat_model=True,
        max_tokens=bench.max_tokens,
        temperature=0.0,
        **kwargs,
    )


def _query_engine(
    bench: Bench,
    texts: list[str],
    url: str | None = None,
    instruction: str = PLANT,
    **llm_options: Any,
) -> Any:
    """The user's query engine over an in-memory index; the instruction is in its QA prompt."""
    from llama_index.core import Document, PromptTemplate, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    index = VectorStoreIndex.from_documents(
        [Document(text=t, metadata={"source": f"doc{i}"}) for i, t in enumerate(texts)],
        embed_model=MockEmbedding(embed_dim=8),
    )
    template = PromptTemplate(
        "Context:\n{context_str}\nQuestion: {query_str}\n" + instruction.replace("{", "{{")
    )
    return index.as_query_engine(
        llm=_openai_like(bench, url, **llm_options), streaming=True, text_qa_template=template
    )


def llamaindex_query(bench: Bench) -> Outcome:
    from truthlens_integrations.llamaindex_adapter import TruthLensQueryEngine

    guarded = TruthLensQueryEngine(_query_engine(bench, [RECORD]), engine=bench.blocking)
    response = guarded.query(QUESTION)
    streamed = list(response.response_gen) if hasattr(response, "response_gen") else []
    sources = [(n.node.metadata, n.node.get_content()) for n in response.source_nodes]
    shown = [str(response), streamed, response.metadata, sources]
    outcome = _blocked_check(bench, shown, response.metadata.get("truthlens"))
    outcome.observed += f"; {type(response).__name__}, {len(streamed)} streamed piece(s)"
    return outcome


# -- faults -----------------------------------------------------------------------------------


def _typed(exc: BaseException) -> bool:
    """A typed error a caller can catch: the OpenAI client's, httpx's, or the package's."""
    import httpx
    import openai

    from truthlens_integrations.core import TruthLensError

    return isinstance(exc, openai.APIError | httpx.HTTPError | TruthLensError)


def _not_clean(verdict: dict[str, Any]) -> bool:
    """A verdict that does not read as a checked, supported answer."""
    return not (verdict.get("checked") and verdict.get("decision") == "PASS")


def overflow_chain(bench: Bench, *, streaming: bool) -> Outcome:
    """A prompt over the server's ``n_ctx`` through the guarded wrapper."""
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    chain = _rag(bench.chat(streaming=streaming), "Answer in one sentence.")
    guard = TruthLensRunnable(engine=bench.blocking, chain=chain)
    try:
        out = guard.invoke(
            {"question": QUESTION, "context": [RECORD, *_filler(bench.server.n_ctx)]}
        )
    except Exception as exc:  # noqa: BLE001 - what the user gets is the observation
        # the user's chain failed before the guard: an error and no verdict holds the
        # promise; whether the error says what happened is the client's part
        kind = "typed" if _typed(exc) else "untyped"
        return Outcome(
            passed=True, observed=f"raised {type(exc).__name__} ({kind}): {str(exc)[:200]}"
        )
    verdict = out["truthlens"]
    observed = (
        f"no error; answer {str(out.get('answer'))[:60]!r}; decision {verdict['decision']}, "
        f"checked {verdict['checked']}, reason {verdict.get('not_checked_reason')}"
    )
    return Outcome(_not_clean(verdict), observed, {"verdict": verdict.get("decision")})


def _filler(n_ctx: int) -> list[str]:
    """Passages about the tower, together over ``n_ctx`` tokens."""
    passage = (
        "The tower stands on the Champ de Mars in Paris. Visitors climb its stairs or take "
        "the lifts to three levels, and the view reaches far over the city."
    )
    return [passage] * (n_ctx // 25)


def overflow_refine(bench: Bench) -> Outcome:
    """Standard mode whose refiner is a server with a smaller ``n_ctx`` than its prompt.

    Streamed, llama-cpp-python answers an overflow with 200 and an empty event stream;
    whole, with 400 ``context_length_exceeded``. Either way the refinement failed: the
    verdict must say so (``llm_error``) and still block the flagged answer.
    """
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    small = LlamaServer(
        bench.server.model, alias=bench.alias, n_ctx=64, threads=bench.server.threads,
        log=LOGS / "small-ctx.log",
    )  # fmt: skip
    notes, ok = [], True
    with small:
        for streaming in (True, False):
            refiner = bench.chat(streaming=streaming, url=small.url)
            guard = TruthLensRunnable(
                engine=bench.engine, mode="standard", llm=refiner, action="block"
            )
            out = guard.invoke({"question": QUESTION, "context": [RECORD], "answer": PLANTED})
            verdict = out["truthlens"]
            ok = ok and verdict["status"] == "llm_error" and verdict["blocked"] is True
            ok = ok and not leaked(out, bench.secrets())
            notes.append(
                f"{'streamed' if streaming else 'whole'}: status {verdict['status']}, decision "
                f"{verdict['decision']}, blocked {verdict['blocked']}, error "
                f"{str(verdict.get('mitigation_error'))[:90]!r}"
            )
    return Outcome(ok, "; ".join(notes))


def max_tokens_cut(bench: Bench, *, streaming: bool, limit: bool = True) -> Outcome:
    """A reply cut at 6 tokens (``finish_reason="length"``): checked as it is shown.

    ``limit=False``: the limit only as ``ChatOpenAI(max_tokens=6)``, which reaches
    llama-cpp-python as ``max_completion_tokens`` and is ignored.
    """
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    llm = bench.chat(streaming=streaming, max_tokens=6, limit=limit)
    guard = TruthLensRunnable(engine=bench.engine.derive(action="header"))
    # the answer as the AIMessage: its finish_reason and usage stay readable
    chain = RunnablePassthrough.assign(answer=prompt | llm) | guard
    out = chain.invoke({"context": [RECORD], "question": QUESTION})
    message = out["answer"]
    finish = message.response_metadata.get("finish_reason")
    tokens = (message.usage_metadata or {}).get("output_tokens")
    verdict = out["truthlens"]
    ok = verdict["checked"] is True and (finish == "length") is limit
    observed = (
        f"finish_reason {finish!r}, {tokens} output tokens; text {str(message.content)[:70]!r}; "
        f"decision {verdict['decision']}, checked {verdict['checked']}"
    )
    return Outcome(ok, observed)


def overflow_llamaindex(bench: Bench) -> Outcome:
    from truthlens_integrations.llamaindex_adapter import TruthLensQueryEngine

    # LlamaIndex packs the retrieved text into the LLM's context_window; a user who leaves
    # OpenAILike's default (3,900 tokens) in front of a smaller server overflows it.
    long_text = " ".join([RECORD, *_filler(bench.server.n_ctx * 2)])
    inner = _query_engine(
        bench, [long_text], instruction="Answer in one sentence.", context_window=3900
    )
    guarded = TruthLensQueryEngine(inner, engine=bench.blocking)
    try:
        response = guarded.query(QUESTION)
        streamed = list(response.response_gen) if hasattr(response, "response_gen") else []
    except Exception as exc:  # noqa: BLE001 - what the user gets is the observation
        return Outcome(_typed(exc), f"raised {type(exc).__name__}: {str(exc)[:200]}")
    verdict = response.metadata.get("truthlens") or {}
    observed = (
        f"no error; response {str(response)[:60]!r} ({len(streamed)} pieces); decision "
        f"{verdict.get('decision')}, checked {verdict.get('checked')}"
    )
    return Outcome(_not_clean(verdict), observed)


@contextlib.contextmanager
def killing_server(bench: Bench, after_tokens: int) -> Iterator[tuple[LlamaServer, Any]]:
    """A second server, and a callback that kills it after ``after_tokens`` streamed tokens."""
    from langchain_core.callbacks import BaseCallbackHandler

    server = LlamaServer(
        bench.server.model,
        alias=bench.alias,
        n_ctx=bench.server.n_ctx,
        threads=bench.server.threads,
        log=LOGS / "killed.log",
    )

    class KillAfter(BaseCallbackHandler):
        tokens = 0

        def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
            del kwargs
            if not token:  # a tool call's pieces carry no text: count the answer's
                return
            self.tokens += 1
            if self.tokens == after_tokens:
                server.kill()

    with server:
        yield server, KillAfter()


STORY = "Tell a long story about the Eiffel Tower, then answer."


def killed_pipe_stream(bench: Bench) -> Outcome:
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    with killing_server(bench, after_tokens=5) as (server, killer):
        llm = bench.chat(streaming=True, url=server.url, max_tokens=200)
        guarded = _rag(llm, STORY) | TruthLensRunnable(engine=bench.blocking)
        chunks: list[Any] = []
        try:
            chunks.extend(guarded.stream(_planted_input(), config={"callbacks": [killer]}))
        except Exception as exc:  # noqa: BLE001 - what the user gets is the observation
            answers = [c.get("answer") for c in chunks if isinstance(c, dict) and "answer" in c]
            verdicts = [c for c in chunks if isinstance(c, dict) and "truthlens" in c]
            ok = _typed(exc) and not answers and not verdicts
            return Outcome(
                ok,
                f"killed after {killer.tokens} tokens; raised {type(exc).__name__}: "
                f"{str(exc)[:120]}; {len(chunks)} chunk(s) before it, answer chunks {answers}",
            )
        return Outcome(passed=False, observed=f"no error after the kill; {len(chunks)} chunks")


def killed_agent_stream(bench: Bench) -> Outcome:
    from langchain_core.messages import AIMessage

    with killing_server(bench, after_tokens=3) as (server, killer):
        from langchain.agents import create_agent

        from truthlens_integrations.langchain_adapter import TruthLensMiddleware

        agent = create_agent(
            bench.chat(streaming=True, url=server.url, max_tokens=200),
            [_landmark_tool()],
            system_prompt=f"{SYSTEM} Then tell a long story about it.",
            middleware=[TruthLensMiddleware(engine=bench.blocking), _llama_cpp_agent_fixes()],
        )
        texts: list[str] = []
        try:
            for message, _meta in agent.stream(
                {"messages": [("user", QUESTION)]},
                stream_mode="messages",
                config={"callbacks": [killer]},
            ):
                if isinstance(message, AIMessage) and message.content:
                    texts.append(str(message.content))
        except Exception as exc:  # noqa: BLE001 - what the user gets is the observation
            ok = _typed(exc) and not texts
            return Outcome(
                ok,
                f"killed after {killer.tokens} tokens; raised {type(exc).__name__}: "
                f"{str(exc)[:120]}; streamed texts before it: {texts}",
            )
        return Outcome(passed=False, observed=f"no error after the kill; streamed {texts}")


def killed_llamaindex(bench: Bench) -> Outcome:
    from truthlens_integrations.llamaindex_adapter import TruthLensQueryEngine

    server = LlamaServer(
        bench.server.model,
        alias=bench.alias,
        n_ctx=bench.server.n_ctx,
        threads=bench.server.threads,
        log=LOGS / "killed-llamaindex.log",
    )
    with server:
        inner = _query_engine(bench, [RECORD], url=server.url, instruction=STORY)
        guarded = TruthLensQueryEngine(inner, engine=bench.blocking)
        from llama_index.core.instrumentation import get_dispatcher
        from llama_index.core.instrumentation.event_handlers import BaseEventHandler
        from llama_index.core.instrumentation.events.llm import LLMChatInProgressEvent

        counted = {"n": 0}

        class KillAfter(BaseEventHandler):
            @classmethod
            def class_name(cls) -> str:
                return "KillAfter"

            def handle(self, event: Any, **kwargs: Any) -> None:
                del kwargs
                if isinstance(event, LLMChatInProgressEvent):
                    counted["n"] += 1
                    if counted["n"] == 3:
                        server.kill()

        dispatcher = get_dispatcher()
        handler = KillAfter()
        dispatcher.add_event_handler(handler)
        try:
            response = guarded.query(QUESTION)
            streamed = list(response.response_gen) if hasattr(response, "response_gen") else []
        except Exception as exc:  # noqa: BLE001 - what the user gets is the observation
            return Outcome(
                _typed(exc),
                f"killed after {counted['n']} pieces; raised {type(exc).__name__}: "
                f"{str(exc)[:120]}",
            )
        finally:
            dispatcher.event_handlers.remove(handler)
        verdict = response.metadata.get("truthlens") or {}
        observed = (
            f"killed after {counted['n']} pieces; no error; response {str(response)[:60]!r} "
            f"({len(streamed)} pieces); decision {verdict.get('decision')}, checked "
            f"{verdict.get('checked')}"
        )
        return Outcome(_not_clean(verdict), observed)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (its retries, the run's end) is no error of the proxy."""
        del request, client_address


class LoadingProxy:
    """A thin proxy that answers 503 while its upstream does not listen, then forwards.

    llama.cpp's own ``llama-server`` answers every request with 503 ``Loading model``
    until its model is loaded; llama-cpp-python's server does not listen until then
    (connection refused). This proxy gives the second shape from the first, so the
    clients' 503 path runs against the real server behind it. The body is OpenAI's error
    shape with llama-server's message.
    """

    BODY = json.dumps(
        {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}
    ).encode()

    def __init__(self, upstream_port: int) -> None:
        proxy = self
        self.upstream_port = upstream_port
        self.answered: list[int] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                del args

            def do_GET(self) -> None:
                proxy.forward(self)

            def do_POST(self) -> None:
                proxy.forward(self)

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def forward(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120)
        try:
            upstream.request(
                handler.command, handler.path, body=body, headers=dict(handler.headers)
            )
            reply = upstream.getresponse()
        except ConnectionRefusedError:
            self.answered.append(503)
            handler.send_response(503)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(self.BODY)))
            handler.end_headers()
            handler.wfile.write(self.BODY)
            return
        self.answered.append(reply.status)
        handler.send_response(reply.status)
        for name, value in reply.getheaders():
            if name.lower() not in {"transfer-encoding", "connection", "content-length"}:
                handler.send_header(name, value)
        handler.send_header("Connection", "close")
        handler.end_headers()
        while piece := reply.read1(65536):
            handler.wfile.write(piece)
            handler.wfile.flush()
        handler.close_connection = True
        upstream.close()

    def __enter__(self) -> LoadingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _fresh_server(bench: Bench, name: str) -> LlamaServer:
    return LlamaServer(
        bench.server.model,
        alias=bench.alias,
        n_ctx=bench.server.n_ctx,
        threads=bench.server.threads,
        log=LOGS / f"{name}.log",
    )


def loading_refused(bench: Bench) -> Outcome:
    """What llama-cpp-python's server does while it loads: measured from the first try."""
    import httpx

    server = _fresh_server(bench, "loading")
    seen: list[tuple[float, str]] = []
    server.start(wait=False)
    begun = time.perf_counter()
    try:
        while time.perf_counter() - begun < 120:
            try:
                r = httpx.post(
                    f"{server.url}/chat/completions",
                    json={"model": bench.alias, "messages": [{"role": "user", "content": "Hi"}],
                          "max_tokens": 2},
                    timeout=30,
                )  # fmt: skip
                seen.append((time.perf_counter() - begun, f"HTTP {r.status_code}"))
                break
            except httpx.ConnectError as exc:
                if not seen or seen[-1][1] != type(exc).__name__:
                    seen.append((time.perf_counter() - begun, type(exc).__name__))
            time.sleep(0.05)
        # the same while loading, through the user's chain
        second = _fresh_server(bench, "loading2")
        second.start(wait=False)
        from truthlens_integrations.langchain_adapter import TruthLensRunnable

        guard = TruthLensRunnable(
            engine=bench.blocking, chain=_rag(bench.chat(streaming=True, url=second.url))
        )
        try:
            guard.invoke(_planted_input())
            chain = "no error (the model was loaded already)"
            typed = False
        except Exception as exc:  # noqa: BLE001 - what the user gets is the observation
            chain = f"the guarded chain raised {type(exc).__name__}"
            typed = _typed(exc)
        finally:
            second.stop()
    finally:
        server.stop()
    timeline = ", ".join(f"{t:.2f} s {what}" for t, what in seen)
    never_503 = all("503" not in what for _t, what in seen)
    return Outcome(
        typed and never_503,
        f"{timeline}; never 503; {chain}",
        {"timeline": seen},
    )


def loading_503(bench: Bench) -> Outcome:
    """llama-server's 503 while loading (the proxy), through the user's chain and the guard."""
    from truthlens_integrations.langchain_adapter import TruthLensRunnable

    server = _fresh_server(bench, "loading503")
    with LoadingProxy(server.port) as proxy:
        notes = []
        # 1. no retries: the chain fails with the client's typed error, no verdict
        guard = TruthLensRunnable(
            engine=bench.blocking, chain=_rag(bench.chat(streaming=True, url=proxy.url))
        )
        try:
            guard.invoke(_planted_input())
            first_ok = False
            notes.append("no retries: no error")
        except Exception as exc:  # noqa: BLE001 - what the user gets is the observation
            first_ok = _typed(exc)
            notes.append(f"no retries: {type(exc).__name__}")
        # 2. standard mode whose refiner meets the 503: not clean, status llm_error
        refiner = bench.chat(streaming=False, url=proxy.url)
        standard = TruthLensRunnable(engine=bench.engine, mode="standard", llm=refiner)
        out = standard.invoke({"question": QUESTION, "context": [RECORD], "answer": PLANTED})
        verdict = out["truthlens"]
        second_ok = verdict["status"] == "llm_error" and _not_clean(verdict)
        notes.append(f"refiner: status {verdict['status']}, decision {verdict['decision']}")
        # 3. the client's retries wait out the load: the answer is checked
        server.start(wait=False)
        patient = bench.chat(streaming=True, url=proxy.url, max_retries=8)
        begun = time.perf_counter()
        try:
            out = (_rag(patient) | TruthLensRunnable(engine=bench.blocking)).invoke(
                _planted_input()
            )
            third_ok = out["truthlens"]["checked"] is True and out["truthlens"]["blocked"]
            notes.append(
                f"8 retries: answered after {time.perf_counter() - begun:.1f} s, decision "
                f"{out['truthlens']['decision']}, blocked {out['truthlens']['blocked']}"
            )
        except Exception as exc:  # noqa: BLE001 - what the user gets is the observation
            third_ok = False
            notes.append(f"8 retries: {type(exc).__name__}")
        finally:
            server.stop()
        statuses = sorted(set(proxy.answered))
        notes.append(f"proxy answered {statuses}")
    return Outcome(first_ok and second_ok and third_ok, "; ".join(notes))


# -- the run ----------------------------------------------------------------------------------

Case = Callable[[Bench], Outcome]
CASES: list[tuple[str, str, Case]] = [
    ("pipe invoke, streaming off", "langchain pipe", lambda b: pipe_invoke(b, streaming=False)),
    ("pipe invoke, streaming on", "langchain pipe", lambda b: pipe_invoke(b, streaming=True)),
    ("pipe .stream()", "langchain pipe", pipe_stream),
    (
        "wrapper invoke, streaming off",
        "langchain wrapper",
        lambda b: wrapper_invoke(b, streaming=False),
    ),
    (
        "wrapper invoke, streaming on",
        "langchain wrapper",
        lambda b: wrapper_invoke(b, streaming=True),
    ),
    ("wrapper .astream() + astream_events", "langchain wrapper", wrapper_astream),
    ("wrapper .stream(), passthrough, header", "langchain wrapper", wrapper_passthrough),
    ("standard mode, streamed refiner", "langchain pipe", standard_pipe),
    (
        "natural: counterfactual record, streaming off",
        "langchain pipe",
        lambda b: natural_pipe(b, streaming=False),
    ),
    (
        "natural: counterfactual record, streaming on",
        "langchain pipe",
        lambda b: natural_pipe(b, streaming=True),
    ),
    (
        "agent as first written (tool_choice auto)",
        "agent middleware",
        lambda b: agent_unfixed(b, frozenset()),
    ),
    (
        "agent, tool forced, content null kept",
        "agent middleware",
        lambda b: agent_unfixed(b, frozenset({"tool"})),
    ),
    (
        "agent streamed, tool names not repaired",
        "agent middleware",
        lambda b: agent_unfixed(b, ALL_FIXES - {"names"}, streaming=True),
    ),
    ("agent invoke, streaming off", "agent middleware", lambda b: agent_invoke(b, streaming=False)),
    ("agent invoke, streaming on", "agent middleware", lambda b: agent_invoke(b, streaming=True)),
    ("agent .stream(messages, values)", "agent middleware", agent_stream),
    ("agent .stream(), header: tokens pass", "agent middleware", agent_stream_header),
    ("agent, standard mode (refines with its model)", "agent middleware", agent_standard),
    ("graph guard node, block, 1 attempt", "langgraph", lambda b: graph_guard(b, 1)),
    ("graph guard node, block, 3 attempts", "langgraph", lambda b: graph_guard(b, 3)),
    ("query engine, OpenAILike, streaming on", "llamaindex", llamaindex_query),
    (
        "fault: prompt over n_ctx, streaming off",
        "langchain wrapper",
        lambda b: overflow_chain(b, streaming=False),
    ),
    (
        "fault: prompt over n_ctx, streaming on",
        "langchain wrapper",
        lambda b: overflow_chain(b, streaming=True),
    ),
    ("fault: refinement over n_ctx (standard mode)", "langchain pipe", overflow_refine),
    ("fault: prompt over n_ctx, query engine", "llamaindex", overflow_llamaindex),
    (
        "fault: cut by max_tokens, streaming off",
        "langchain pipe",
        lambda b: max_tokens_cut(b, streaming=False),
    ),
    (
        "fault: cut by max_tokens, streaming on",
        "langchain pipe",
        lambda b: max_tokens_cut(b, streaming=True),
    ),
    (
        "ChatOpenAI(max_tokens=6) alone",
        "langchain pipe",
        lambda b: max_tokens_cut(b, streaming=False, limit=False),
    ),
    ("fault: server killed mid-stream, pipe .stream()", "langchain pipe", killed_pipe_stream),
    ("fault: server killed mid-stream, agent stream", "agent middleware", killed_agent_stream),
    ("fault: server killed mid-stream, query engine", "llamaindex", killed_llamaindex),
    ("fault: model loading (llama-cpp-python)", "langchain wrapper", loading_refused),
    ("fault: 503 while loading (llama-server's shape)", "langchain wrapper", loading_503),
]


def _server_version() -> str:
    from importlib.metadata import version

    return f"llama-cpp-python {version('llama-cpp-python')}"


def run(args: argparse.Namespace) -> int:
    gguf = qwen_gguf() if args.model == "qwen" else smollm2_gguf()
    LOGS.mkdir(parents=True, exist_ok=True)
    run_id = uuid.uuid4().hex[:8]
    wanted = [c for c in CASES if not args.only or any(o in c[0] for o in args.only)]
    failures = 0
    with LlamaServer(
        gguf, alias=args.model, n_ctx=args.n_ctx, threads=args.threads, log=LOGS / "main.log"
    ) as server:
        print(f"{server.url}: {gguf.name}, ready in {server.started_s:.1f} s", flush=True)
        bench = Bench(server, args.model, args.max_tokens)
        for name, adapter, case in wanted:
            bench.audit.verdicts.clear()
            begun = time.perf_counter()
            try:
                outcome = case(bench)
            except Exception as exc:  # noqa: BLE001 - a case that breaks is a failure, recorded
                broke = f"the case broke: {type(exc).__name__}: {exc}"[:400]
                outcome = Outcome(passed=False, observed=broke)
                traceback.print_exc()
            seconds = time.perf_counter() - begun
            failures += not outcome.passed
            row = {
                "run": run_id,
                "case": name,
                "adapter": adapter,
                "passed": outcome.passed,
                "observed": outcome.observed,
                "seconds": round(seconds, 2),
                "model": gguf.name,
                "server": _server_version(),
                "n_ctx": args.n_ctx,
                "threads": args.threads,
                "max_tokens": args.max_tokens,
                "machine": f"{platform.machine()}, {_cores()} cores",
                "started_s": round(server.started_s, 2),
                "details": _jsonable(outcome.details),
            }
            append_row(args.rows, row)
            mark = "pass" if outcome.passed else "FAIL"
            print(f"[{mark}] {name} ({seconds:.1f} s): {outcome.observed}", flush=True)
    print(f"{len(wanted) - failures}/{len(wanted)} cases held; rows in {args.rows}")
    return 1 if failures else 0


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


#: What the runs showed beyond pass/fail: how the real server differs from OpenAI's API,
#: what a user sees, and what the benchmark does about it (the page's second section).
FINDINGS = """\
## What the real server does that a stub does not

- **Loading**: llama-cpp-python's server loads the model before it listens: a client
  meanwhile gets *connection refused* (`APIConnectionError`; LangChain's
  `OpenAIConnectionError`), never 503. llama.cpp's own `llama-server` answers 503
  `Loading model` instead; the benchmark puts a thin proxy giving that answer in front
  of the loading server: without retries the chain raises a typed error; a refiner that
  meets it ends `llm_error` (never clean); `max_retries=8` waits the load out.
- **Prompt over `n_ctx`**: not streamed, HTTP 400 `context_length_exceeded` (typed).
  Streamed, the server answers 200 and an *empty* event stream (the error is raised
  after the headers) and drops the pooled connection; LangChain then raises
  `ValueError("No generations found in stream.")`, LlamaIndex yields an empty answer,
  which the guarded query engine refuses with `InvalidInputError`. Either way no verdict
  is made; a refiner that overflows ends `llm_error` with the answer still blocked.
- **Killed mid-stream**: the client raises `httpx.RemoteProtocolError` (incomplete
  chunked read) from inside the stream; under `block` no token of the partial answer had
  been shown (pipe, agent `stream_mode="messages"`, query engine).
- **`max_tokens`**: `ChatOpenAI(max_tokens=N)` sends `max_completion_tokens`, which
  llama-cpp-python ignores: the reply runs on to `n_ctx` or the end of turn. The
  benchmark's chat models also send `extra_body={"max_tokens": N}`; cut replies end
  `finish_reason="length"` and are checked as they are shown.
- **Usage**: streamed replies carry no usage (even with `stream_options.include_usage`),
  so a streamed refiner's cost reads 0 tokens; whole replies report it.
- **Tool calls** (agent middleware): on `tool_choice="auto"` SmolLM2 never called the
  tool (it answered from memory: not checked, `no_grounding`, withheld under `block`).
  With the tool forced, the next turn is refused with HTTP 500, as llama-cpp-python
  rejects an assistant message with `content: null` beside tool calls
  (abetlen/llama-cpp-python#1805), which langchain-openai sends. Streamed, the server
  repeats the function name in every delta and LangChain joins them
  (`landmark_recordlandmark_record...`, as in langchain-ai/langchain#22589): the tool is
  not found and the answer is not checked. The agent cases run with a small user-side
  middleware that forces the first call's tool, fills empty content and repairs the
  names (`_llama_cpp_agent_fixes`); the cases without it show each failure, and the guard
  never read any of them as clean.
- **LangGraph**: the guard node withholds a blocked answer from the final state and from
  its own updates; the generator node's own update (`stream_mode="updates"`) and its
  tokens (`"messages"`) carry the raw answer before the guard runs, as any node's do.
- **Earlier failing rows** were the benchmark's own faults, fixed in it: Qwen ignored the
  milder agent plant and answered from the record, which the case then wrongly expected
  blocked (a supported answer now must pass; the agent's plant is firmer); and a flagged
  span "fact" matched the verdict's own key names in the leak check (spans are now
  searched as words, and only those with a number or of two words and more).
"""


def report(args: argparse.Namespace) -> int:
    rows = read_rows(args.rows)
    if not rows:
        raise SystemExit(f"no rows in {args.rows}")
    lines = [
        "# The adapters against a real llama.cpp server",
        "",
        "Written by `python benchmarks/bench_adapters_server.py report` from "
        f"`{args.rows.relative_to(ROOT)}` (each case's latest row per model). Each case wires an "
        "adapter to llama.cpp's OpenAI-compatible server the way a user does and checks the "
        "package's promises on what the real server did: a flagged answer under `block` is "
        "withheld from every surface (content, metadata, streamed chunks, events, graph "
        "state, LlamaIndex response and sources); a failed call is an error or a not-checked "
        "verdict, never a clean one. Planted cases tell the model to say 1950 while the "
        "record says 1887-1889; natural ones give it a counterfactual record (1921-1923).",
        "",
        FINDINGS,
    ]
    for model in dict.fromkeys(r["model"] for r in rows):
        # each case's latest row: a run of some cases (--only) replaces theirs alone
        latest = {r["case"]: r for r in rows if r["model"] == model}
        mine = [latest[name] for name, _adapter, _case in CASES if name in latest]
        first = mine[0]
        runs = list(dict.fromkeys(r["run"] for r in mine))
        held = sum(r["passed"] for r in mine)
        wall = sum(r["seconds"] for r in mine)
        earlier = [r for r in rows if r["model"] == model and r not in mine]
        failed_before = sorted({r["case"] for r in earlier if not r["passed"]})
        lines += [
            f"## {model}",
            "",
            f"- command: `nice -n 5 python benchmarks/bench_adapters_server.py run --model "
            f"{'qwen' if 'qwen' in model else 'smollm2'} --threads {first['threads']} "
            f"--n-ctx {first['n_ctx']} --max-tokens {first['max_tokens']}`",
            f"- machine: {first['machine']} (shared with a training job), server "
            f"{first['server']}, `n_ctx` {first['n_ctx']}, {first['threads']} thread(s), "
            f"ready in {first['started_s']} s",
            f"- {held} of {len(mine)} cases held; wall time {wall:.0f} s; run(s) {', '.join(runs)}",
        ]
        if failed_before:
            lines.append(
                "- failed in an earlier run of this model, rerun or renamed since (rows kept "
                f"in the file): {'; '.join(failed_before)}"
            )
        lines += [
            "",
            "| case | adapter | result | s | observed |",
            "|---|---|---|---:|---|",
        ]
        for r in mine:
            observed = r["observed"].replace("|", "\\|").replace("\n", " ")
            result = "pass" if r["passed"] else "**fail**"
            lines.append(
                f"| {r['case']} | {r['adapter']} | {result} | {r['seconds']:.1f} | {observed} |"
            )
        lines.append("")
    args.page.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.page}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="start the server and run the cases")
    go.add_argument("--model", choices=("smollm2", "qwen"), default="smollm2")
    go.add_argument("--threads", type=int, default=1)
    go.add_argument("--n-ctx", type=int, default=1024)
    go.add_argument("--max-tokens", type=int, default=64)
    go.add_argument("--only", nargs="*", help="run the cases whose name holds one of these")
    go.add_argument("--rows", type=Path, default=ROWS)
    show = sub.add_parser("report", help="write the results page from the rows")
    show.add_argument("--rows", type=Path, default=ROWS)
    show.add_argument("--page", type=Path, default=PAGE)
    args = parser.parse_args(argv)
    return run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    sys.exit(main())
