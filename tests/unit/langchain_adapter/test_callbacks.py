"""Tests of ``langchain_adapter/_callbacks.py``: TruthLensCallbackHandler,
AsyncTruthLensCallbackHandler and truthlens_callback on real chains.

Detector: the real keyword model; NLI / classifier: rule-based stand-ins
(tests/_langchain_support.py); LLMs: LangChain's fake chat models.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnableConfig, RunnableLambda, RunnablePassthrough
from langchain_core.tools import tool

from tests._langchain_support import (
    CLEAN,
    PROMPT,
    FixedRetriever,
    QuestionWordClassifier,
    RuleNLI,
    make_engine,
)
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import Decision
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.langchain_adapter import (
    AsyncTruthLensCallbackHandler,
    TruthLensCallbackHandler,
    truthlens_callback,
)

# a record that supports the hallucinated answer: the RuleNLI stand-in finds every number
# -- TruthLensCallbackHandler / AsyncTruthLensCallbackHandler / truthlens_callback on real chains and a tool-calling loop, including concurrent runs.


AGREEING = '{"name": "Eiffel Tower", "built": "1950", "height": "500 meters"}'


@pytest.fixture(scope="module")
def engine(detector: Detector) -> TruthLens:
    return make_engine(detector)


def rag_chain(passage: str, answer: str) -> Any:
    return (
        {
            "context": FixedRetriever(passages=[passage]) | (lambda d: d[0].page_content),
            "question": RunnablePassthrough(),
        }
        | PROMPT
        | GenericFakeChatModel(messages=iter([answer]))
        | StrOutputParser()
    )


@tool
def landmark_record(name: str) -> str:
    """Return the stored record of a landmark as JSON."""
    return EIFFEL_CONTEXT


def agent() -> Any:
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(
                    "Let me look that up.",
                    tool_calls=[
                        {"name": "landmark_record", "args": {"name": "Eiffel Tower"}, "id": "c1"}
                    ],
                ),
                EIFFEL_ANSWER,
            ]
        )
    )

    def run(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages = list(state["messages"])
        while True:
            reply = model.invoke(messages, config)
            messages.append(reply)
            if not reply.tool_calls:
                return {"messages": messages}
            messages.extend(landmark_record.invoke(c, config) for c in reply.tool_calls)

    return RunnableLambda(run, name="agent")


def test_rag_chain_is_checked_and_output_unchanged(engine: TruthLens) -> None:
    handler = TruthLensCallbackHandler(engine)
    run_id = uuid.uuid4()
    out = rag_chain(EIFFEL_CONTEXT, EIFFEL_ANSWER).invoke(
        EIFFEL_QUESTION, {"callbacks": [handler], "run_id": run_id}
    )
    assert out == EIFFEL_ANSWER and not hasattr(out, "verdict")  # unchanged
    [verdict] = handler.verdicts(run_id)
    assert [s.text for s in verdict.spans] == ["1950", "500 meters"]
    assert verdict.fact_check_needed and not verdict.unverified
    assert handler.stats == {
        "checked": 1,
        "not_checked": 0,
        "flagged": 1,
        "skipped": 0,
        "errors": 0,
    }
    assert handler._roots == {} and handler._parents == {} and handler._llms == {}


def test_tool_loop_spans_come_from_the_tool_output(
    engine: TruthLens, caplog: pytest.LogCaptureFixture
) -> None:
    handler = TruthLensCallbackHandler(engine)
    run_id = uuid.uuid4()
    with caplog.at_level(logging.WARNING, logger="truthlens_integrations.langchain_adapter"):
        agent().invoke(
            {"messages": [HumanMessage(EIFFEL_QUESTION)]},
            {"callbacks": [handler], "run_id": run_id},
        )
    [verdict] = handler.verdicts(run_id)  # the tool-call step is skipped, not checked
    assert [s.text for s in verdict.spans] == ["1950", "500 meters"]
    assert handler.stats["skipped"] == 1 and handler.stats["checked"] == 1
    [record] = [r for r in caplog.records if "langchain.verdict" in r.getMessage()]
    # Issue 13: logs carry span offsets, never span text, unless the policy allows it.
    assert record.levelno == logging.WARNING and "30-34; 42-52" in record.getMessage()
    assert "1950" not in record.getMessage()


def test_llm_call_without_chain(engine: TruthLens) -> None:
    handler = TruthLensCallbackHandler(engine)
    run_id = uuid.uuid4()
    FakeListChatModel(responses=[EIFFEL_ANSWER]).invoke(
        EIFFEL_QUESTION, {"callbacks": [handler], "run_id": run_id}
    )
    [verdict] = handler.verdicts(run_id)
    assert verdict.unverified and verdict.decision is Decision.MITIGATE  # never "clean"


def test_concurrent_runs_keep_their_own_grounding(engine: TruthLens) -> None:
    handler = TruthLensCallbackHandler(engine)
    jobs = [(uuid.uuid4(), AGREEING if i % 2 else EIFFEL_CONTEXT) for i in range(12)]

    def run(job: tuple[uuid.UUID, str]) -> str:
        run_id, passage = job
        return rag_chain(passage, EIFFEL_ANSWER).invoke(
            EIFFEL_QUESTION, {"callbacks": [handler], "run_id": run_id}
        )

    with ThreadPoolExecutor(max_workers=6) as pool:
        outputs = list(pool.map(run, jobs))
    assert outputs == [EIFFEL_ANSWER] * 12
    for run_id, passage in jobs:
        [verdict] = handler.verdicts(run_id)
        # mixed-up grounding would give the agreeing runs a contradicting record
        assert verdict.detected is (passage == EIFFEL_CONTEXT), passage
    assert handler.stats["checked"] == 12 and handler.stats["errors"] == 0
    assert handler._roots == {} and handler._parents == {}


async def test_async_handler_under_concurrent_runs(engine: TruthLens) -> None:
    handler = AsyncTruthLensCallbackHandler(engine)
    jobs = [(uuid.uuid4(), AGREEING if i % 2 else EIFFEL_CONTEXT) for i in range(8)]
    await asyncio.gather(
        *(
            rag_chain(p, EIFFEL_ANSWER).ainvoke(
                EIFFEL_QUESTION, {"callbacks": [handler], "run_id": r}
            )
            for r, p in jobs
        )
    )
    for run_id, passage in jobs:
        [verdict] = handler.verdicts(run_id)
        assert verdict.detected is (passage == EIFFEL_CONTEXT)
    assert len(handler.all_verdicts) == 8


def test_never_raises_unless_raise_error(engine: TruthLens) -> None:
    class Failing:
        model_id = "broken"
        config = engine.detector.config

        def detect_batch(self, inputs: Any) -> Any:
            raise RuntimeError("detector exploded")

    broken = make_engine(Failing())  # type: ignore[arg-type]
    handler = TruthLensCallbackHandler(broken)
    assert (
        rag_chain(EIFFEL_CONTEXT, EIFFEL_ANSWER).invoke(EIFFEL_QUESTION, {"callbacks": [handler]})
        == EIFFEL_ANSWER
    )
    assert handler.stats["errors"] == 1 and handler.all_verdicts == []
    strict = TruthLensCallbackHandler(broken, raise_error=True)
    with pytest.raises(RuntimeError, match="detector exploded"):
        rag_chain(EIFFEL_CONTEXT, EIFFEL_ANSWER).invoke(EIFFEL_QUESTION, {"callbacks": [strict]})


def test_context_manager_attaches_for_the_block(engine: TruthLens) -> None:
    with truthlens_callback(engine) as cb:
        rag_chain(EIFFEL_CONTEXT, EIFFEL_ANSWER).invoke(EIFFEL_QUESTION)
        rag_chain(EIFFEL_CONTEXT, CLEAN).invoke(EIFFEL_QUESTION)
    assert [v.detected for v in cb.all_verdicts] == [True, False]
    rag_chain(EIFFEL_CONTEXT, EIFFEL_ANSWER).invoke(EIFFEL_QUESTION)  # outside: not seen
    assert len(cb.all_verdicts) == 2


async def test_context_manager_in_async_code(engine: TruthLens) -> None:
    with truthlens_callback(engine) as cb:
        await rag_chain(EIFFEL_CONTEXT, EIFFEL_ANSWER).ainvoke(EIFFEL_QUESTION)
    assert [v.detected for v in cb.all_verdicts] == [True]


def test_results_are_bounded(engine: TruthLens) -> None:
    handler = TruthLensCallbackHandler(engine, max_results=2)
    ids = [uuid.uuid4() for _ in range(3)]
    for run_id in ids:
        rag_chain(EIFFEL_CONTEXT, CLEAN).invoke(
            EIFFEL_QUESTION, {"callbacks": [handler], "run_id": run_id}
        )
    assert handler.verdicts(ids[0]) == [] and len(handler.verdicts(ids[2])) == 1


# -- Issue 13, LangChain side: arguments, retries, orphan tool messages, state leaks, events.


FIXED = "The Eiffel Tower was built from 1887 to 1889."


def fake(*replies: str) -> FakeListChatModel:
    return FakeListChatModel(responses=list(replies) or [FIXED])


def large_page_retriever() -> FixedRetriever:
    """A retriever returning one large document (the leak test's 100 KB pages)."""
    return FixedRetriever(passages=["x" * 100_000])


# -- 8. callback state of runs started on their own ---------------------------------------------


def test_standalone_retriever_and_tool_runs_leave_no_state(detector: Detector) -> None:
    handler = TruthLensCallbackHandler(make_engine(detector))
    retriever = large_page_retriever()

    @tool
    def lookup(name: str) -> str:
        """Look a landmark up."""
        return EIFFEL_CONTEXT

    for _ in range(500):
        retriever.invoke("tower", {"callbacks": [handler]})
    for _ in range(100):
        lookup.invoke({"name": "Eiffel Tower"}, {"callbacks": [handler]})
    assert handler._roots == {} and handler._parents == {} and handler._llms == {}


def test_a_root_llm_run_whose_check_fails_leaves_no_state(detector: Detector) -> None:
    class Broken:
        def detect_batch(self, inputs: Any) -> Any:
            raise RuntimeError("detector down")

    engine = TruthLens.from_config(
        None, detector=Broken(), nli=RuleNLI(), fact_checker=QuestionWordClassifier()
    )
    handler = TruthLensCallbackHandler(engine)
    model = fake(*([EIFFEL_ANSWER] * 20))
    prompt = [
        HumanMessage(EIFFEL_QUESTION),
        AIMessage("", tool_calls=[{"name": "record", "args": {}, "id": "c1"}]),
        ToolMessage(EIFFEL_CONTEXT, tool_call_id="c1"),
    ]
    for _ in range(20):
        model.invoke(prompt, {"callbacks": [handler]})
    assert handler.stats["errors"] == 20
    assert handler._roots == {} and handler._llms == {}
