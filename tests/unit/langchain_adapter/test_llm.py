"""Tests of ``langchain_adapter/_llm.py``: ChatModelLLM and LLMChatModel: LangChain chat models
and the core LLM protocol, both ways.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult

from tests._langchain_support import PROMPT, Flaky, LoopRecordingModel
from truthlens_integrations.core import LLMError, LLMTimeoutError
from truthlens_integrations.core import llm as core_llm
from truthlens_integrations.core.llm import (
    LLM,
    BaseLLM,
    ChatMessage,
    LLMResponse,
    RetryPolicy,
    TokenUsage,
)
from truthlens_integrations.langchain_adapter import ChatModelLLM, LLMChatModel

FIXED = "The Eiffel Tower was built from 1887 to 1889."


# -- 6. retries, with_retry / with_fallbacks -------------------------------------------------


def test_transient_errors_of_a_chat_model_are_retried() -> None:
    model = Flaky(messages=iter([AIMessage(FIXED)]))
    llm = ChatModelLLM(model, retry=RetryPolicy(max_attempts=3, wait_initial=0.0))
    response = llm.complete("When?")
    assert response.text == FIXED and response.attempts == 3 and model.calls == 3
    asyncio.run(ChatModelLLM(Flaky(messages=iter([AIMessage(FIXED)]))).acomplete("When?"))


def test_a_bad_request_is_not_retried() -> None:
    class BadRequestError(Exception):
        status_code = 400

    model = Flaky(messages=iter([AIMessage(FIXED)]), error=BadRequestError)
    with pytest.raises(Exception, match="try again"):
        ChatModelLLM(model, retry=RetryPolicy(wait_initial=0.0)).complete("When?")
    assert model.calls == 1


# -- Standard / premium / retrieval-feedback mitigation through TruthLensRunnable, and -----


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


async def test_llm_chat_model_runs_a_core_llm_in_lcel() -> None:
    core = ScriptedCoreLLM(["Paris", "Rome"])
    chain = PROMPT | LLMChatModel(llm=core, max_tokens=32) | StrOutputParser()
    assert chain.invoke({"context": "c", "question": "Capital of France?"}) == "Paris"
    messages, max_tokens, _ = core.seen[0]
    assert [m.role for m in messages] == ["system", "user"] and max_tokens == 32
    reply = await LLMChatModel(llm=core).ainvoke("Capital of Italy?", stop=["\n"])
    assert reply.content == "Rome" and reply.usage_metadata is not None
    assert reply.usage_metadata["total_tokens"] == 5 and core.seen[1][2] == ["\n"]


# -- the one answer to "is this a LangChain model?" (issue 51) ---------------------------------


def test_a_langchain_llm_that_is_not_a_chat_model_reads_as_text() -> None:
    from langchain_core.language_models import FakeListLLM

    from truthlens_integrations.langchain_adapter._llm import to_core_llm

    llm = to_core_llm(FakeListLLM(responses=[FIXED]))
    assert llm is not None and llm.complete("When?").text == FIXED
