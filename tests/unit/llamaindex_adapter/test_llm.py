"""Tests of ``llamaindex_adapter/_llm.py``: LlamaIndexLLM and CoreLLMAsLlamaIndex: LlamaIndex
LLMs and the core LLM protocol.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage as LIChatMessage
from llama_index.core.base.llms.types import ChatResponse, MessageRole
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.llms import MockLLM

from truthlens_integrations.core import LLMError, LLMTimeoutError
from truthlens_integrations.core import llm as core_llm
from truthlens_integrations.llamaindex_adapter import CoreLLMAsLlamaIndex, LlamaIndexLLM

# -- LlamaIndexLLM: a LlamaIndex LLM behind the core LLM protocol (sync and real async).


class ChatRecorder(MockLLM):
    """STAND-IN chat model: records messages and kwargs, replies with a fixed text."""

    reply: str = "Paris."
    calls: list[tuple[list[LIChatMessage], dict[str, Any]]] = []  # noqa: RUF012
    usage: dict[str, Any] = {}  # noqa: RUF012
    error: Exception | None = None
    async_calls: int = 0

    def __init__(
        self,
        reply: str = "Paris.",
        usage: dict[str, Any] | None = None,
        error: Exception | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.reply, self.usage, self.error = reply, usage or {}, error
        self.calls = []

    def chat(self, messages, **kwargs):  # type: ignore[no-untyped-def]
        if self.error is not None:
            raise self.error
        self.calls.append((list(messages), kwargs))
        return ChatResponse(
            message=LIChatMessage(role=MessageRole.ASSISTANT, content=self.reply),
            additional_kwargs=self.usage,
        )

    async def achat(self, messages, **kwargs):  # type: ignore[no-untyped-def]
        self.async_calls += 1
        await asyncio.sleep(0.05)  # a real await: concurrent calls overlap
        return self.chat(messages, **kwargs)


def test_follows_the_core_protocol_and_maps_roles() -> None:
    inner = ChatRecorder()
    llm = LlamaIndexLLM(inner)
    assert isinstance(llm, core_llm.LLM) and llm.name == "llamaindex" and llm.model
    out = llm.complete(
        [core_llm.ChatMessage.system("Be brief."), core_llm.ChatMessage.user("Capital of France?")]
    )
    assert out.text == "Paris." and out.usage is None and out.latency_ms >= 0
    messages, kwargs = inner.calls[0]
    assert [(m.role, m.content) for m in messages] == [
        (MessageRole.SYSTEM, "Be brief."),
        (MessageRole.USER, "Capital of France?"),
    ]
    assert kwargs == {}  # nothing set: the LLM keeps its configured values


def test_passes_limits_reads_usage_and_applies_stop() -> None:
    inner = ChatRecorder(
        reply="Paris.\nQuestion: next",
        usage={"prompt_tokens": 7, "completion_tokens": 3, "finish_reason": "stop"},
    )
    out = LlamaIndexLLM(inner).complete("Capital?", max_tokens=5, temperature=0.0, stop=["\n"])
    assert inner.calls[0][1] == {"max_tokens": 5, "temperature": 0.0}
    assert out.text == "Paris."
    assert out.usage is not None and out.usage.total_tokens == 10
    assert out.finish_reason == "stop"


def test_errors_are_typed() -> None:
    with pytest.raises(LLMError, match="empty completion"):
        LlamaIndexLLM(ChatRecorder(reply="   ")).complete("Hi")
    with pytest.raises(LLMTimeoutError):
        LlamaIndexLLM(ChatRecorder(error=TimeoutError("slow"))).complete("Hi")
    with pytest.raises(LLMError, match="boom") as info:
        LlamaIndexLLM(ChatRecorder(error=RuntimeError("boom"))).complete("Hi")
    assert isinstance(info.value.__cause__, RuntimeError)


async def test_async_path_awaits_achat() -> None:
    inner = ChatRecorder()
    llm = LlamaIndexLLM(inner)
    loop = asyncio.get_running_loop()
    started = loop.time()
    outs = await asyncio.gather(*(llm.acomplete("Hi") for _ in range(5)))
    assert [o.text for o in outs] == ["Paris."] * 5 and inner.async_calls == 5
    assert loop.time() - started < 0.2  # five 50 ms awaits overlapped: no thread per call


def test_llamaindex_callbacks_still_fire() -> None:
    debug = LlamaDebugHandler()
    inner = MockLLM(callback_manager=CallbackManager([debug]))
    out = LlamaIndexLLM(inner).complete("echo me")
    assert "echo me" in out.text  # MockLLM echoes its prompt
    assert debug.get_event_pairs(CBEventType.LLM)


class EchoCore(core_llm.BaseLLM):
    """STAND-IN core backend: replies with the roles it saw and the last message."""

    name, model = "echo", "echo-1"

    def __init__(self) -> None:
        self.seen: list[list[core_llm.ChatMessage]] = []
        self.async_calls = 0
        self.max_tokens: list[int | None] = []

    def _complete(self, request: core_llm.CompletionRequest) -> core_llm.LLMResponse:
        messages = request.messages
        self.seen.append(messages)
        self.max_tokens.append(request.max_tokens)
        roles = ",".join(m.role for m in messages)
        return core_llm.LLMResponse(
            text=f"[{roles}] {messages[-1].content[-20:]}", model=self.model, latency_ms=0.0
        )

    async def _acomplete(self, request: core_llm.CompletionRequest) -> core_llm.LLMResponse:
        self.async_calls += 1
        return self._complete(request)


async def test_core_llm_inside_a_llamaindex_query_engine() -> None:
    from tests._llamaindex_support import QUESTION, build_index

    core = EchoCore()
    llm = CoreLLMAsLlamaIndex(core, num_output=64)
    assert llm.metadata.is_chat_model and llm.metadata.model_name == "echo-1"
    chat = llm.chat(
        [
            LIChatMessage(role=MessageRole.SYSTEM, content="sys"),
            LIChatMessage(role=MessageRole.TOOL, content="t"),
        ]
    )
    assert chat.message.content == "[system,user] t"  # a tool turn becomes a user turn
    engine = build_index().as_query_engine(llm=llm, similarity_top_k=1)
    response = engine.query(QUESTION)
    assert str(response).startswith("[") and core.max_tokens[-1] == 64
    assert any(QUESTION in m.content for m in core.seen[-1])  # LlamaIndex's QA prompt
    await engine.aquery(QUESTION)
    assert core.async_calls == 1
    assert "".join(c.delta or "" for c in llm.stream_complete("hello")) == "[user] hello"


# -- Issue 13, LlamaIndex side: arguments from one definition, typed errors, retries, redaction.


class Flaky(MockLLM):
    """FAKE LlamaIndex LLM: fails twice with a 429-like error, then answers."""

    calls: int = 0

    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        self.calls += 1
        if self.calls <= 2:
            error = RuntimeError("rate limited")
            error.status_code = 429  # type: ignore[attr-defined]
            raise error
        return ChatResponse(message=LIChatMessage(role="assistant", content="Paris"))

    async def achat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        return self.chat(messages, **kwargs)


def test_transient_errors_of_a_llamaindex_llm_are_retried() -> None:
    model = Flaky()
    llm = LlamaIndexLLM(model, retry=core_llm.RetryPolicy(max_attempts=3, wait_initial=0.0))
    response = llm.complete("Capital of France?")
    assert response.text == "Paris" and response.attempts == 3
    again = LlamaIndexLLM(Flaky(), retry=core_llm.RetryPolicy(wait_initial=0.0))
    assert asyncio.run(again.acomplete("Capital?")).attempts == 3


# -- the one answer to "is this a LlamaIndex LLM?" (issue 51) ----------------------------------


def test_a_langchain_chat_model_given_to_the_llamaindex_adapter_is_wrapped() -> None:
    from langchain_core.language_models import FakeListChatModel

    from truthlens_integrations.llamaindex_adapter._llm import as_core_llm, to_core_llm

    chat = FakeListChatModel(responses=["Paris."])
    assert to_core_llm(chat) is None  # not LlamaIndex's: its adapter answers
    llm = as_core_llm(chat)
    assert (
        llm is not None and llm.complete([core_llm.ChatMessage.user("Capital?")]).text == "Paris."
    )
    with pytest.raises(TypeError, match="must be a truthlens LLM"):
        as_core_llm("gpt-4o-mini")
