"""Tests of ``core/llm/_openai.py``: the OpenAI-compatible client against a faked HTTP server:
requests, retries, timeouts, errors.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests._llm_support import FakeServer, ok_response, openai_llm
from truthlens_integrations.core._errors import (
    ConfigError,
    InvalidInputError,
    LLMError,
    LLMTimeoutError,
)
from truthlens_integrations.core.llm import ChatMessage, OpenAICompatibleLLM


def _error(status: int, message: str = "nope") -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message, "type": "x", "code": None}})


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TRUTHLENS_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


MESSAGES = [ChatMessage.system("Answer briefly."), ChatMessage.user("Capital of France?")]


# -- OpenAI-compatible client ----------------------------------------------------------


def test_success_returns_text_usage_and_sends_the_request() -> None:
    server = FakeServer(ok_response("Paris."))
    llm = openai_llm(server)
    response = llm.complete(MESSAGES, max_tokens=20, temperature=0.0, stop=["\n\n"])
    assert response.text == "Paris."
    assert response.model == "fake-model-0613"
    assert response.usage is not None
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (12, 3)
    assert response.usage.total_tokens == 15
    assert response.finish_reason == "stop"
    assert response.attempts == 1
    assert response.latency_ms >= 0
    (body,) = server.bodies
    assert body["model"] == "fake-model"
    assert body["messages"][0] == {"role": "system", "content": "Answer briefly."}
    assert body["max_tokens"] == 20
    assert body["temperature"] == 0.0
    assert body["stop"] == ["\n\n"]
    assert server.requests[0].url == "http://llm.test/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"


def test_max_completion_tokens_param() -> None:
    server = FakeServer(ok_response())
    openai_llm(server, max_tokens_param="max_completion_tokens").complete("q", max_tokens=7)
    assert server.bodies[0]["max_completion_tokens"] == 7
    assert "max_tokens" not in server.bodies[0]


def test_rate_limit_is_retried() -> None:
    server = FakeServer(_error(429, "slow down"), ok_response("ok"))
    response = openai_llm(server).complete(MESSAGES)
    assert response.text == "ok"
    assert response.attempts == 2
    assert len(server.requests) == 2


def test_server_errors_exhaust_attempts() -> None:
    server = FakeServer(_error(500, "boom"))
    with pytest.raises(LLMError, match=r"500 after 3 attempts") as info:
        openai_llm(server, max_attempts=3).complete(MESSAGES)
    assert not isinstance(info.value, LLMTimeoutError)
    assert len(server.requests) == 3


def test_connection_errors_are_retried() -> None:
    server = FakeServer(httpx.ConnectError, ok_response("back"))
    assert openai_llm(server).complete(MESSAGES).text == "back"
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("status", "pattern"),
    [(401, "rejected the API key"), (400, "error 400"), (404, "not found")],
)
def test_client_errors_are_not_retried(status: int, pattern: str) -> None:
    server = FakeServer(_error(status, "bad"), ok_response())
    with pytest.raises(LLMError, match=pattern):
        openai_llm(server).complete(MESSAGES)
    assert len(server.requests) == 1


def test_timeout_raises_llm_timeout_after_retries() -> None:
    server = FakeServer(httpx.ReadTimeout)
    with pytest.raises(LLMTimeoutError, match=r"did not answer within 2\.5s after 2 attempts"):
        openai_llm(server, max_attempts=2, timeout=2.5).complete(MESSAGES)
    assert len(server.requests) == 2


def test_timeout_is_sent_per_call() -> None:
    seen: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions.get("timeout"))
        return ok_response()

    llm = OpenAICompatibleLLM(
        model="m",
        api_key="k",
        base_url="http://llm.test/v1",
        timeout=4.0,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    llm.complete("q")
    assert seen and seen[0]["read"] == 4.0


@pytest.mark.parametrize("content", [None, "", "   \n"])
def test_empty_completion_is_an_error(content: str | None) -> None:
    server = FakeServer(ok_response(content))
    with pytest.raises(LLMError, match="empty completion"):
        openai_llm(server).complete(MESSAGES)
    assert len(server.requests) == 1


async def test_async_path_retries_and_answers() -> None:
    server = FakeServer(_error(503), ok_response("async ok"))
    llm = openai_llm(server)
    response = await llm.acomplete(MESSAGES)
    assert response.text == "async ok"
    assert response.attempts == 2


async def test_async_calls_run_concurrently() -> None:
    server = FakeServer(ok_response("x"))
    llm = openai_llm(server)
    results = await asyncio.gather(*(llm.acomplete(f"q{i}") for i in range(5)))
    assert [r.text for r in results] == ["x"] * 5
    assert sorted(b["messages"][0]["content"] for b in server.bodies) == [f"q{i}" for i in range(5)]


async def test_async_timeout() -> None:
    server = FakeServer(httpx.ReadTimeout)
    with pytest.raises(LLMTimeoutError):
        await openai_llm(server, max_attempts=2).acomplete(MESSAGES)


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://ollama.test/v1")
    monkeypatch.setenv("TRUTHLENS_LLM_MODEL", "llama3.2")
    server = FakeServer(ok_response())
    llm = OpenAICompatibleLLM(http_client=httpx.Client(transport=httpx.MockTransport(server)))
    llm.complete("q")
    assert llm.model == "llama3.2"
    assert str(server.requests[0].url) == "http://ollama.test/v1/chat/completions"
    # A self-hosted server needs no key: a placeholder is sent.
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_missing_key_for_openai_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAICompatibleLLM()


def test_bad_call_arguments() -> None:
    llm = openai_llm(FakeServer(ok_response()))
    with pytest.raises(InvalidInputError):
        llm.complete("q", max_tokens=0)
    with pytest.raises(InvalidInputError):
        llm.complete("q", temperature=-1)
