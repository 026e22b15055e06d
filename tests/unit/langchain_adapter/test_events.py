"""Tests of ``langchain_adapter/_events.py``: guarded_events and the event stream: no unchecked
or withheld text.

A rewritten query carries the answer's unsupported claims. While the policy may
withhold the answer, the guard's retriever and re-query runs stay out of
``astream_events`` (tracers and other callbacks still see them: they are the operator's
channel), so the claims of a blocked answer never reach the stream as a retriever's
input. Detector: the real keyword model; NLI / classifier and LLMs: stand-ins.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from operator import itemgetter
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from pydantic import Field

from tests._agents_support import (
    EIFFEL_RECORD,
    QUESTION,
    RIGHT,
    WRONG,
    eiffel_script,
    engine_for,
    guarded_agent,
    without_verdicts,
)
from tests._fakes import leaks
from tests._langchain_support import PROMPT, RunRecorder, action_policy, make_engine, rag_chain_over
from tests.conftest import EIFFEL_ANSWER, EIFFEL_QUESTION
from truthlens_integrations.core.engine import DEFAULT_BLOCKED_MESSAGE, TruthLens
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.langchain_adapter import (
    TRUTHLENS_EVENT,
    TruthLensRunnable,
    guard_chain,
    guarded_events,
)
from truthlens_integrations.langchain_adapter._events import UNCHECKED_TAG

# -- Issue 43: the retrieval-feedback loop's rewritten queries in LangChain's event stream.


VAGUE = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
ECHO = '{"query": "Eiffel Tower built 1950 500 meters"}'  # a refiner copying the claims
BLOCKING = action_policy("block", default_mode="standard")


class VagueRetriever(BaseRetriever):
    """Finds a new passage without the facts for every query: the answer stays blocked."""

    queries: list[str] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.queries.append(query)
        return [Document(VAGUE if len(self.queries) == 1 else f"{VAGUE} Page {len(self.queries)}.")]


def _retriever_inputs(events: list[dict[str, Any]]) -> list[str]:
    return [
        json.dumps(e["data"].get("input"), default=str)
        for e in events
        if e["event"].startswith("on_retriever")
    ]


async def test_pipe_form_retriever_runs_of_a_blocked_answer_stay_out_of_events(
    detector: Detector,
) -> None:
    retriever = VagueRetriever()
    chain = RunnablePassthrough.assign(context=itemgetter("question") | retriever).assign(
        answer=PROMPT | FakeListChatModel(responses=[EIFFEL_ANSWER]) | StrOutputParser()
    )
    guard = TruthLensRunnable(
        engine=make_engine(detector, BLOCKING),
        llm=FakeListChatModel(responses=[ECHO, EIFFEL_ANSWER] * 4),
        retriever=retriever,
    )
    recorder = RunRecorder()
    events = [
        e
        async for e in (chain | guard).astream_events(
            {"question": EIFFEL_QUESTION}, {"callbacks": [recorder]}, version="v2"
        )
    ]
    out = events[-1]["data"]["output"]
    assert out["truthlens"]["blocked"] and out["truthlens"]["strategy"] == "retrieval_feedback"
    assert any("1950" in q for q in retriever.queries)  # the loop searched for the claims
    assert not any("1950" in i for i in _retriever_inputs(events))
    assert len(recorder.of("retriever")) == len(retriever.queries)  # the tracer saw them all


async def test_wrapper_requery_of_a_blocked_answer_stays_out_of_events(detector: Detector) -> None:
    retriever = VagueRetriever()
    model = FakeListChatModel(responses=[EIFFEL_ANSWER, ECHO, EIFFEL_ANSWER] * 4)
    chain = rag_chain_over(retriever, model)
    guarded = guard_chain(chain, engine=make_engine(detector, BLOCKING))
    events = [e async for e in guarded.astream_events(EIFFEL_QUESTION, version="v2")]
    assert any("1950" in q for q in retriever.queries)
    assert not any("1950" in i for i in _retriever_inputs(events))
    assert not any(e["name"] == "truthlens_requery" for e in events)
    # leaks(): a timing such as 0.0010719500023 holds "1950" among its digits (a flake before)
    assert not any(leaks("1950", json.dumps(e["data"], default=str)) for e in events[-3:])


# -- Issue 29, agents and LangGraph: attacks on the agent middleware, the graph guard, -----


# -- astream_events of a pipe (upstream | guard) under block: guarded_events ----------------------


def _pipe(engine: TruthLens) -> Any:
    model = GenericFakeChatModel(messages=iter([AIMessage(WRONG)]))
    to_dict = RunnableLambda(
        lambda m: {"context": [EIFFEL_RECORD], "question": QUESTION, "answer": m}
    )
    return model | to_dict | TruthLensRunnable(engine=engine, on_block="message")


async def _collect(events: AsyncIterator[Any]) -> list[dict[str, Any]]:
    return [dict(e) async for e in events]


def _holders(events: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {
        (e["event"], e["name"])
        for e in events
        if e["name"] != TRUTHLENS_EVENT and leaks("1950", without_verdicts(e.get("data")))
    }


# -- guarded_events: the usual shapes around the guard ---------------------------------------


def _guarded_shapes(engine: TruthLens) -> dict[str, Any]:
    """``upstream | <guard shape>`` for each shape users write around the guard."""
    from langchain_core.output_parsers import StrOutputParser

    def pipe(shape: Any) -> Any:
        model = GenericFakeChatModel(messages=iter([AIMessage(WRONG)]))
        to_dict = RunnableLambda(
            lambda m: {"context": [EIFFEL_RECORD], "question": QUESTION, "answer": m.content}
        )
        return model | to_dict | shape

    def guard() -> TruthLensRunnable:
        return TruthLensRunnable(engine=engine, on_block="message")

    pick = RunnableLambda(lambda out: out["answer"])
    return {
        "followed by steps": pipe(guard() | pick | StrOutputParser()),
        "with_retry": pipe(guard().with_retry(stop_after_attempt=2)),
        "with_fallbacks": pipe(guard().with_fallbacks([guard()])),
        "renamed": pipe(guard().with_config(run_name="fact check")),
    }


async def test_pipe_events_under_block_show_upstream_tokens_unless_guarded(
    base: TruthLens,
) -> None:
    engine = engine_for(base, hallucination_action="block")
    raw = await _collect(_pipe(engine).astream_events([HumanMessage(QUESTION)], version="v2"))
    # the attack: the plain stream shows the upstream model's answer before the check
    assert ("on_chat_model_end", "GenericFakeChatModel") in _holders(raw)
    safe = await _collect(guarded_events(_pipe(engine), [HumanMessage(QUESTION)]))
    assert _holders(safe) == set()
    assert not any(e["event"] == "on_chat_model_stream" for e in safe)
    ends = [e for e in safe if e["event"] == "on_chain_end" and e["name"] == "TruthLensRunnable"]
    assert ends and "input" not in ends[0]["data"]  # the guard's input was the raw answer
    final = next(e for e in safe if e["event"] == "on_chain_end" and not e["parent_ids"])
    assert final["data"]["output"]["answer"].content == DEFAULT_BLOCKED_MESSAGE
    assert any(e["name"] == TRUTHLENS_EVENT for e in safe)


async def test_guarded_events_keeps_tokens_when_the_policy_never_changes_text(
    base: TruthLens,
) -> None:
    # ``header`` never changes the text (the default ``body`` may add a warning).
    header = engine_for(base, hallucination_action="header")
    safe = await _collect(guarded_events(_pipe(header), [HumanMessage(QUESTION)]))
    assert any(e["event"] == "on_chat_model_stream" for e in safe)


async def test_guarded_events_on_an_agent_under_block(base: TruthLens) -> None:
    agent = guarded_agent(engine_for(base, hallucination_action="block"), eiffel_script())
    events = await _collect(guarded_events(agent, {"messages": [HumanMessage(QUESTION)]}))
    assert _holders(events) == set()
    assert any(e["event"] == "on_tool_end" for e in events)
    assert not any(UNCHECKED_TAG in e.get("tags", ()) for e in events)


async def test_guarded_events_hold_the_answer_in_every_usual_shape(base: TruthLens) -> None:
    engine = engine_for(base, hallucination_action="block")
    for label, chain in _guarded_shapes(engine).items():
        raw = await _collect(chain.astream_events([HumanMessage(QUESTION)], version="v2"))
        assert _holders(raw), label  # the plain stream shows the unchecked answer
        fresh = _guarded_shapes(engine)[label]  # a fresh scripted model
        safe = await _collect(guarded_events(fresh, [HumanMessage(QUESTION)]))
        assert _holders(safe) == set(), (label, _holders(safe))
        assert any(e["name"] == TRUTHLENS_EVENT for e in safe), label
        final = next(e for e in safe if e["event"] == "on_chain_end" and not e["parent_ids"])
        assert DEFAULT_BLOCKED_MESSAGE in json.dumps(final["data"]["output"], default=str), label


async def test_guarded_events_show_the_steps_after_a_passing_guard(base: TruthLens) -> None:
    from langchain_core.output_parsers import StrOutputParser

    engine = engine_for(base, hallucination_action="block")
    model = GenericFakeChatModel(messages=iter([AIMessage(RIGHT)]))
    to_dict = RunnableLambda(
        lambda m: {"context": [EIFFEL_RECORD], "question": QUESTION, "answer": m.content}
    )
    pick = RunnableLambda(lambda out: out["answer"])
    chain = model | to_dict | TruthLensRunnable(engine=engine) | pick | StrOutputParser()
    safe = await _collect(guarded_events(chain, [HumanMessage(QUESTION)]))
    parser_runs = [e for e in safe if e["name"] == "StrOutputParser"]
    assert any(e["event"] == "on_parser_end" for e in parser_runs)
    assert not any(e["event"] == "on_chat_model_stream" for e in safe)  # before the check


async def test_guarded_events_show_nothing_unchecked_when_the_guard_never_ran(
    base: TruthLens,
) -> None:
    engine = engine_for(base, hallucination_action="block")

    def broken(_: Any) -> Any:
        raise RuntimeError("the retriever is down")

    model = GenericFakeChatModel(messages=iter([AIMessage(WRONG)]))
    chain = model | RunnableLambda(broken) | TruthLensRunnable(engine=engine)
    seen: list[dict[str, Any]] = []

    async def watch() -> None:
        async for event in guarded_events(chain, [HumanMessage(QUESTION)]):
            seen.append(dict(event))  # noqa: PERF401 - kept as they come: the stream raises

    with pytest.raises(RuntimeError, match="the retriever is down"):
        await watch()
    assert seen and _holders(seen) == set()


# -- Issue 51: a guard anywhere in the composition, and more than one ----------------------
#
# ``guarded_events`` used to look for the guard in pipes, bindings and fallbacks only, and
# released the whole stream once the first guard had finished: a guard inside an
# ``assign``, a branch or a function step was not seen, and a second guard's upstream
# tokens streamed. Each composition below has an upstream model answer WRONG to a guard
# that blocks it; none of its text may reach the stream.


def _answer_chain(text: str) -> Any:
    """A model answering ``text``, shaped as the guard's dict input."""
    model = GenericFakeChatModel(messages=iter([AIMessage(text)]))
    to_dict = RunnableLambda(
        lambda m: {"context": [EIFFEL_RECORD], "question": QUESTION, "answer": m.content}
    )
    return model | to_dict


def _ask(_: Any) -> list[HumanMessage]:
    return [HumanMessage(QUESTION)]


def _compositions(engine: TruthLens) -> dict[str, tuple[Any, Any]]:
    """Each composition users write around guards, with its input; built fresh per call."""
    from langchain_core.runnables import RunnableBranch, RunnableParallel, chain

    def guard() -> TruthLensRunnable:
        return TruthLensRunnable(engine=engine, on_block="message")

    ask = [HumanMessage(QUESTION)]
    guarded = _answer_chain(WRONG) | guard()

    @chain
    async def awaits_the_guard(messages: Any) -> Any:
        return await (_answer_chain(WRONG) | guard()).ainvoke(messages)

    @chain
    def invokes_the_guard(messages: Any) -> Any:
        return (_answer_chain(WRONG) | guard()).invoke(messages)

    def next_question(out: Any) -> list[HumanMessage]:
        return [HumanMessage(f"{out['answer']} Say it again, briefly.")]

    two_guards = (
        _answer_chain(RIGHT) | guard() | RunnableLambda(next_question) | _answer_chain(WRONG)
    ) | guard()
    pick = RunnableLambda(lambda out: out["answer"])
    return {
        "pipe": (guarded, ask),
        "followed by steps": (guarded | pick | StrOutputParser(), ask),
        "with_retry": (_answer_chain(WRONG) | guard().with_retry(stop_after_attempt=2), ask),
        "with_fallbacks": (_answer_chain(WRONG) | guard().with_fallbacks([guard()]), ask),
        "assign": (
            RunnablePassthrough.assign(checked=RunnableLambda(_ask) | guarded),
            {"question": QUESTION},
        ),
        "branch": (RunnableBranch((lambda _: True, guarded), _answer_chain(RIGHT)), ask),
        "parallel map": (RunnableParallel(checked=guarded, question=lambda _: QUESTION), ask),
        "@chain awaiting the guard": (awaits_the_guard, ask),
        "@chain invoking the guard (sync)": (invokes_the_guard, ask),
        "a guard called by a function step": (
            _answer_chain(WRONG) | RunnableLambda(lambda d: guard().invoke(d)) | pick,
            ask,
        ),
        "two guards, the second blocks": (two_guards, ask),
        "nested: a guard, then more text to a second guard": (
            (_answer_chain(RIGHT) | guard() | RunnableLambda(next_question) | _answer_chain(WRONG))
            | RunnableLambda(lambda d: d)
            | guard(),
            ask,
        ),
    }


COMPOSITIONS = [
    "pipe",
    "followed by steps",
    "with_retry",
    "with_fallbacks",
    "assign",
    "branch",
    "parallel map",
    "@chain awaiting the guard",
    "@chain invoking the guard (sync)",
    "a guard called by a function step",
    "two guards, the second blocks",
    "nested: a guard, then more text to a second guard",
]


@pytest.fixture(scope="module")
def blocking_engine(detector: Detector) -> TruthLens:
    return make_engine(detector, BLOCKING_LIGHT)


BLOCKING_LIGHT = action_policy("block")


@pytest.mark.parametrize("label", COMPOSITIONS)
async def test_guarded_events_hold_what_any_guard_checks(
    blocking_engine: TruthLens, label: str
) -> None:
    chain, value = _compositions(blocking_engine)[label]
    raw = await _collect(chain.astream_events(value, version="v2"))
    assert _holders(raw), label  # the attack: the plain stream shows the wrong answer
    chain, value = _compositions(blocking_engine)[label]  # fresh scripted models
    safe = await _collect(guarded_events(chain, value))
    assert _holders(safe) == set(), (label, _holders(safe))
    assert any(e["name"] == TRUTHLENS_EVENT for e in safe), label
    final = next(e for e in safe if e["event"] == "on_chain_end" and not e["parent_ids"])
    assert DEFAULT_BLOCKED_MESSAGE in json.dumps(final["data"]["output"], default=str), label
    assert not leaks("1950", json.dumps(final["data"]["output"], default=str)), label


@pytest.mark.parametrize("label", COMPOSITIONS)
async def test_stream_and_astream_show_only_checked_text(
    blocking_engine: TruthLens, label: str
) -> None:
    chain, value = _compositions(blocking_engine)[label]
    chunks = [c async for c in chain.astream(value)]
    assert not leaks("1950", without_verdicts(chunks)), label
    if "awaiting" in label:
        return  # an async function step does not stream synchronously
    chain, value = _compositions(blocking_engine)[label]
    chunks = list(chain.stream(value))
    assert not leaks("1950", without_verdicts(chunks)), label


async def test_a_passing_guard_shows_its_output_and_the_steps_after_it(
    blocking_engine: TruthLens,
) -> None:
    pick = RunnableLambda(lambda out: out["answer"])
    guard = TruthLensRunnable(engine=blocking_engine)
    chain = _answer_chain(RIGHT) | guard | pick | StrOutputParser()
    safe = await _collect(guarded_events(chain, [HumanMessage(QUESTION)]))
    assert any(e["event"] == "on_parser_end" for e in safe)  # after the check: shown
    assert not any(e["event"] == "on_chat_model_stream" for e in safe)  # before it: dropped
    ends = [e for e in safe if e["event"] == "on_chain_end" and e["name"] == "TruthLensRunnable"]
    assert ends and "input" not in ends[0]["data"] and RIGHT in str(ends[0]["data"]["output"])


async def test_tokens_stream_live_when_no_guard_can_change_text(detector: Detector) -> None:
    header = TruthLensRunnable(engine=make_engine(detector, action_policy("header")))
    model = GenericFakeChatModel(messages=iter([AIMessage(WRONG)]))
    answer = PROMPT | model | StrOutputParser()
    chain = RunnablePassthrough.assign(answer=answer) | header  # every step seen into
    value = {"context": EIFFEL_RECORD, "question": QUESTION}
    seen = [e["event"] async for e in guarded_events(chain, value)]
    # live: the tokens come as they happen, not held for the end of the run
    assert "on_chat_model_stream" in seen
    assert seen.index("on_chat_model_stream") < seen.index("on_chain_end")


async def test_a_function_step_is_held_until_the_stream_ends(detector: Detector) -> None:
    # a function may invoke a guard: its events, and those before it, wait for the end
    header = make_engine(detector, action_policy("header"))
    chain = _answer_chain(RIGHT) | TruthLensRunnable(engine=header)
    events = await _collect(guarded_events(chain, [HumanMessage(QUESTION)]))
    root_end = next(
        i for i, e in enumerate(events) if e["event"] == "on_chain_end" and not e["parent_ids"]
    )
    tokens = [i for i, e in enumerate(events) if e["event"] == "on_chat_model_stream"]
    assert tokens and min(tokens) > root_end  # released after the root ended
