"""Standard / premium / retrieval-feedback mitigation through TruthLensRunnable, and
ChatModelLLM (LangChain chat models behind the core LLM protocol).

Detector: the real keyword model; NLI / classifier: rule-based stand-ins
(tests/_langchain_support.py); LLMs: LangChain's fake chat models.
"""

from __future__ import annotations

import asyncio
import threading
from operator import itemgetter
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from pydantic import Field

from tests._langchain_support import (
    CLEAN,
    EIFFEL_DICT,
    PROMPT,
    FixedRetriever,
    RunRecorder,
    make_engine,
)
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import LLMError, LLMTimeoutError
from truthlens_integrations.core import llm as core_llm
from truthlens_integrations.core.engine import Verdict
from truthlens_integrations.core.llm import LLM, BaseLLM, ChatMessage, LLMResponse, TokenUsage
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.langchain_adapter import (
    ChatModelLLM,
    LLMChatModel,
    TruthLensRunnable,
    guard_chain,
)
from truthlens_integrations.langchain_adapter._runnable import find_chat_model

VAGUE = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
STANDARD = {"hallucination": {"default_mode": "standard"}}
PREMIUM = {"hallucination": {"default_mode": "premium"}}


class VagueFirstRetriever(BaseRetriever):
    """A retriever whose first query finds a passage without the facts (so the
    spans are 'neutral' and the retrieval-feedback loop runs) and any rewritten
    query finds the Eiffel record."""

    queries: list[str] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.queries.append(query)
        return [Document(VAGUE if query == EIFFEL_QUESTION else EIFFEL_CONTEXT)]


class LoopRecordingModel(GenericFakeChatModel):
    """A fake chat model with a native async path that records where it ran."""

    threads: list[str] = Field(default_factory=list)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.threads.append(threading.current_thread().name)
        return self._generate(messages, stop=stop, **kwargs)


# -- standard mode --------------------------------------------------------------------------


def test_standard_refines_with_the_given_model_as_a_child_run(detector: Detector) -> None:
    recorder = RunRecorder()
    runnable = TruthLensRunnable(
        engine=make_engine(detector, STANDARD), llm=FakeListChatModel(responses=[CLEAN])
    )
    out = runnable.invoke(EIFFEL_DICT, {"callbacks": [recorder], "tags": ["req-7"]})
    verdict = Verdict.model_validate(out["truthlens"])
    assert out["answer"] == CLEAN and verdict.final_answer == CLEAN
    assert verdict.strategy == "self_refine" and verdict.status in {"converged", "success"}
    assert verdict.original_answer == EIFFEL_ANSWER and verdict.cost.llm_calls == 1
    [root] = recorder.of("chain")
    [call] = recorder.of("chat_model")
    assert call["parent"] == root["run_id"] and "req-7" in call["tags"]
    # the event reports the final verdict
    [(_, data, _)] = recorder.events
    assert data["final_answer"] == CLEAN and data["history"][0]["answer"] == EIFFEL_ANSWER


async def test_standard_async_awaits_the_models_native_async_path(detector: Detector) -> None:
    model = LoopRecordingModel(messages=iter([CLEAN]))
    recorder = RunRecorder()
    runnable = TruthLensRunnable(engine=make_engine(detector, STANDARD), llm=model)
    out = await runnable.ainvoke(
        {**EIFFEL_DICT, "answer": AIMessage(EIFFEL_ANSWER)}, {"callbacks": [recorder]}
    )
    assert out["answer"].content == CLEAN
    assert out["answer"].response_metadata["truthlens"]["original_answer"] == EIFFEL_ANSWER
    assert model.threads == [threading.main_thread().name]  # ran on the event loop
    [root] = recorder.of("chain")
    assert [c["parent"] for c in recorder.of("chat_model")] == [root["run_id"]]


def test_lightweight_policy_never_calls_the_model(detector: Detector) -> None:
    model = FakeListChatModel(responses=[])  # would raise if called
    out = TruthLensRunnable(engine=make_engine(detector), llm=model).invoke(EIFFEL_DICT)
    assert out["answer"] == EIFFEL_ANSWER and out["truthlens"]["status"] == "not_run"


def test_wrapper_refines_with_the_chains_own_model(detector: Detector) -> None:
    model = FakeListChatModel(responses=[EIFFEL_ANSWER, CLEAN])
    chain = (
        {"context": FixedRetriever(passages=[EIFFEL_CONTEXT]), "question": RunnablePassthrough()}
        | PROMPT
        | model
    )
    assert find_chat_model(chain) is model
    recorder = RunRecorder()
    out = guard_chain(chain, engine=make_engine(detector, STANDARD)).invoke(
        EIFFEL_QUESTION, {"callbacks": [recorder]}
    )
    assert isinstance(out, AIMessage) and out.content == CLEAN
    assert out.response_metadata["truthlens"]["strategy"] == "self_refine"
    roots = {recorder.root_of(c["run_id"]) for c in recorder.of("chat_model")}
    assert len(recorder.of("chat_model")) == 2 and len(roots) == 1


def test_model_failure_keeps_the_original_answer(detector: Detector) -> None:
    class Broken(GenericFakeChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise ConnectionError("provider down")

    runnable = TruthLensRunnable(
        engine=make_engine(detector, STANDARD), llm=Broken(messages=iter([]))
    )
    verdict = Verdict.model_validate(runnable.invoke(EIFFEL_DICT)["truthlens"])
    assert verdict.status == "llm_error" and verdict.final_answer == EIFFEL_ANSWER
    assert [s.text for s in verdict.spans] == ["1950", "500 meters"]


# -- premium mode ------------------------------------------------------------------------------


async def test_premium_with_two_verification_models_and_a_judge(detector: Detector) -> None:
    verifiers = [
        FakeListChatModel(responses=[CLEAN] * 4),
        FakeListChatModel(responses=["It was built between 1887 and 1889, in Paris."] * 4),
    ]
    recorder = RunRecorder()
    runnable = TruthLensRunnable(
        engine=make_engine(detector, PREMIUM),
        llm=FakeListChatModel(responses=[CLEAN] * 4),
        verification_llms=verifiers,
        judge_llm=FakeListChatModel(responses=[CLEAN] * 4),
    )
    out = await runnable.ainvoke(EIFFEL_DICT, {"callbacks": [recorder]})
    verdict = Verdict.model_validate(out["truthlens"])
    assert verdict.strategy == "cross_model" and verdict.final_answer is not None
    assert "1950" not in verdict.final_answer and out["answer"] == verdict.final_answer
    assert verdict.cost.llm_calls >= 2
    [root] = recorder.of("chain")
    calls = recorder.of("chat_model")
    assert len(calls) == verdict.cost.llm_calls
    assert all(recorder.root_of(c["run_id"]) == root["run_id"] for c in calls)


# -- retrieval feedback ------------------------------------------------------------------------


def test_pipe_form_retrieval_feedback_with_a_langchain_retriever(detector: Detector) -> None:
    retriever = VagueFirstRetriever()
    recorder = RunRecorder()
    chain = RunnablePassthrough.assign(context=itemgetter("question") | retriever).assign(
        answer=PROMPT | FakeListChatModel(responses=[EIFFEL_ANSWER]) | StrOutputParser()
    )
    guard = TruthLensRunnable(
        engine=make_engine(detector, STANDARD),
        llm=FakeListChatModel(responses=["Eiffel Tower construction years and height", CLEAN]),
        retriever=retriever,
    )
    out = (chain | guard).invoke({"question": EIFFEL_QUESTION}, {"callbacks": [recorder]})
    verdict = Verdict.model_validate(out["truthlens"])
    assert verdict.strategy == "retrieval_feedback"
    assert len(retriever.queries) >= 2 and retriever.queries[0] == EIFFEL_QUESTION
    assert verdict.final_context is not None and EIFFEL_CONTEXT in verdict.final_context
    roots = {recorder.root_of(r["run_id"]) for r in recorder.of("retriever")}
    assert len(roots) == 1  # the feedback retrievals are child runs of the same invoke


def test_wrapper_retrieval_feedback_reinvokes_the_chain(detector: Detector) -> None:
    retriever = VagueFirstRetriever()
    model = FakeListChatModel(responses=[EIFFEL_ANSWER, "Eiffel Tower build dates", CLEAN, CLEAN])
    chain = (
        {
            "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | PROMPT
        | model
        | StrOutputParser()
    )
    recorder = RunRecorder()
    out = guard_chain(chain, engine=make_engine(detector, STANDARD)).invoke(
        EIFFEL_QUESTION, {"callbacks": [recorder]}
    )
    assert out.verdict is not None and out.verdict.strategy == "retrieval_feedback"
    assert out == CLEAN and len(retriever.queries) == 2
    [requery] = [r for r in recorder.of("chain") if r["name"] == "truthlens_requery"]
    [root] = [r for r in recorder.runs if r["parent"] is None]
    assert requery["parent"] == root["run_id"]


# -- ChatModelLLM --------------------------------------------------------------------------------


def test_chat_model_llm_satisfies_the_protocol_and_reports_usage() -> None:
    reply = AIMessage(
        "Paris",
        usage_metadata={"input_tokens": 7, "output_tokens": 1, "total_tokens": 8},
        response_metadata={"finish_reason": "stop"},
    )
    llm = ChatModelLLM(GenericFakeChatModel(messages=iter([reply])))
    assert isinstance(llm, LLM) and llm.model == "GenericFakeChatModel"
    out = llm.complete([ChatMessage.system("Be brief."), ChatMessage.user("Capital of France?")])
    assert out.text == "Paris" and out.finish_reason == "stop"
    assert out.usage is not None and out.usage.total_tokens == 8 and out.latency_ms >= 0


def test_chat_model_llm_errors_are_typed() -> None:
    with pytest.raises(LLMError, match="empty completion"):
        ChatModelLLM(GenericFakeChatModel(messages=iter(["  "]))).complete("q")

    class Slow(GenericFakeChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise TimeoutError("read timed out")

    with pytest.raises(LLMTimeoutError):
        ChatModelLLM(Slow(messages=iter([]))).complete("q")


async def test_chat_model_llm_async_is_native() -> None:
    model = LoopRecordingModel(messages=iter(["one", "two", "three"]))
    llm = ChatModelLLM(model)
    texts = await asyncio.gather(*(llm.acomplete("q") for _ in range(3)))
    assert sorted(t.text for t in texts) == ["one", "three", "two"]
    assert model.threads == [threading.main_thread().name] * 3


def test_chat_model_llm_forwards_stop_and_params() -> None:
    seen: dict[str, Any] = {}

    class Spy(GenericFakeChatModel):
        def _generate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: Any = None,
            **kwargs: Any,
        ) -> ChatResult:
            seen.update(stop=stop, roles=[m.type for m in messages], **kwargs)
            return ChatResult(generations=[ChatGeneration(message=AIMessage("ok"))])

    ChatModelLLM(Spy(messages=iter([]))).complete(
        [ChatMessage.system("s"), ChatMessage.user("u"), ChatMessage.assistant("a")],
        max_tokens=5,
        temperature=0.0,
        stop=["\n"],
    )
    assert seen == {
        "stop": ["\n"],
        "roles": ["system", "human", "ai"],
        "max_tokens": 5,
        "temperature": 0.0,
    }
    seen.clear()
    ChatModelLLM(Spy(messages=iter([])), forward_params=False).complete("u", max_tokens=5)
    assert "max_tokens" not in seen


# -- LLMChatModel (core LLM inside LCEL) -------------------------------------------------------


class ScriptedCoreLLM(BaseLLM):
    """A core LLM that answers from a script and records what it was sent."""

    name = "scripted"
    model = "scripted-1"

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.seen: list[tuple[list[ChatMessage], int | None, list[str] | None]] = []

    def _complete(self, request: core_llm.CompletionRequest) -> LLMResponse:
        self.seen.append((request.messages, request.max_tokens, request.stop))
        return LLMResponse(
            text=self.answers.pop(0),
            model=self.model,
            latency_ms=0.0,
            usage=TokenUsage(prompt_tokens=3, completion_tokens=2, total_tokens=5),
        )


async def test_llm_chat_model_runs_a_core_llm_in_lcel() -> None:
    core = ScriptedCoreLLM(["Paris", "Rome"])
    chain = PROMPT | LLMChatModel(llm=core, max_tokens=32) | StrOutputParser()
    assert chain.invoke({"context": "c", "question": "Capital of France?"}) == "Paris"
    messages, max_tokens, _ = core.seen[0]
    assert [m.role for m in messages] == ["system", "user"] and max_tokens == 32
    reply = await LLMChatModel(llm=core).ainvoke("Capital of Italy?", stop=["\n"])
    assert reply.content == "Rome" and reply.usage_metadata is not None
    assert reply.usage_metadata["total_tokens"] == 5 and core.seen[1][2] == ["\n"]
