"""Issue 43: the retrieval-feedback loop's rewritten queries in LangChain's event stream.

A rewritten query carries the answer's unsupported claims. While the policy may
withhold the answer, the guard's retriever and re-query runs stay out of
``astream_events`` (tracers and other callbacks still see them: they are the operator's
channel), so the claims of a blocked answer never reach the stream as a retriever's
input. Detector: the real keyword model; NLI / classifier and LLMs: stand-ins.
"""

from __future__ import annotations

import json
from operator import itemgetter
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from pydantic import Field

from tests._langchain_support import PROMPT, RunRecorder, action_policy, make_engine
from tests.conftest import EIFFEL_ANSWER, EIFFEL_QUESTION
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.langchain_adapter import TruthLensRunnable, guard_chain

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
    chain = (
        {
            "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | PROMPT
        | model
        | StrOutputParser()
    )
    guarded = guard_chain(chain, engine=make_engine(detector, BLOCKING))
    events = [e async for e in guarded.astream_events(EIFFEL_QUESTION, version="v2")]
    assert any("1950" in q for q in retriever.queries)
    assert not any("1950" in i for i in _retriever_inputs(events))
    assert not any(e["name"] == "truthlens_requery" for e in events)
    assert not any("1950" in json.dumps(e["data"], default=str) for e in events[-3:])
