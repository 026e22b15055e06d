"""The package's own OpenAI-compatible backend, and the demo, against the local server.

``OPENAI_BASE_URL`` alone (no ``TRUTHLENS_LLM_MODEL``) used to send OpenAI's
``gpt-4o-mini`` to whatever server it named; a server that does not serve it answers
404. The backend now asks the server's ``/models`` for its one model, refuses with a
``ConfigError`` naming ``TRUTHLENS_LLM_MODEL`` when there are several, and accepts the
base URL with or without ``/v1``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests._openai_server import ChatRequest, OpenAIServer
from tests._scripts import COOKBOOK, offline_env, run_script
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.llm import OpenAICompatibleLLM, default_llm

CORRECT = "The Eiffel Tower was built from 1887 to 1889 and is 330 meters tall."
WRONG = "The Eiffel Tower was built in 1950 and is 500 meters tall."


@pytest.fixture
def vllm() -> Iterator[OpenAIServer]:
    """A server with one model, as vLLM serves (``vllm serve <model>``)."""
    with OpenAIServer(models=("Qwen/Qwen2.5-0.5B-Instruct",)) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TRUTHLENS_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("suffix", ["/v1", "", "/", "/v1/"])
def test_base_url_alone_uses_the_servers_model(
    vllm: OpenAIServer, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", vllm.root + suffix)
    vllm.script("Paris.")
    llm = default_llm()
    assert isinstance(llm, OpenAICompatibleLLM)
    assert llm.complete("Capital of France?").text == "Paris."
    assert llm.model == vllm.model
    sent = vllm.chat_requests()
    assert [r.body["model"] for r in sent] == [vllm.model]
    assert sent[0].headers["authorization"] == "Bearer not-needed"  # no key: a placeholder


async def test_async_path_asks_the_server_too(vllm: OpenAIServer) -> None:
    vllm.script("Paris.")
    llm = OpenAICompatibleLLM(base_url=vllm.root)
    assert (await llm.acomplete("Capital of France?")).text == "Paris."
    assert [r.body["model"] for r in vllm.chat_requests()] == [vllm.model]


def test_several_models_need_a_name(openai_server: OpenAIServer) -> None:
    llm = OpenAICompatibleLLM(base_url=openai_server.url)
    with pytest.raises(ConfigError, match=r"TRUTHLENS_LLM_MODEL") as caught:
        llm.complete("q")
    assert "test-model" in str(caught.value) and "gpt-4o-mini" in str(caught.value)
    assert openai_server.chat_requests() == []  # nothing sent to a guessed model


def test_a_server_that_cannot_list_needs_a_name(openai_server: OpenAIServer) -> None:
    llm = OpenAICompatibleLLM(base_url=openai_server.root + "/gateway", max_attempts=1)
    with pytest.raises(ConfigError, match=r"could not list.*TRUTHLENS_LLM_MODEL"):
        llm.complete("q")


def test_a_named_model_is_sent_as_named(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRUTHLENS_LLM_MODEL", "gpt-4o-mini")
    openai_server.script("ok")
    assert OpenAICompatibleLLM(base_url=openai_server.root).complete("q").text == "ok"
    assert [r.path for r in openai_server.requests] == ["/v1/chat/completions"]  # no listing
    assert openai_server.requests[0].body["model"] == "gpt-4o-mini"


def test_openais_own_api_keeps_its_default_model() -> None:
    assert OpenAICompatibleLLM(api_key="sk-x").model == "gpt-4o-mini"
    llm = OpenAICompatibleLLM(api_key="sk-x", base_url="https://api.openai.com/v1")
    assert llm.model == "gpt-4o-mini"


@pytest.mark.parametrize("url", ["localhost:8000/v1", "ftp://host/v1", "http://"])
def test_a_base_url_that_is_no_url_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match="not an http"):
        OpenAICompatibleLLM(base_url=url, model="m")


@pytest.mark.parametrize("stream", [False, True])
def test_the_legacy_completions_api(openai_server: OpenAIServer, stream: bool) -> None:
    import openai

    openai_server.script("Paris is the capital.")
    client = openai.OpenAI(base_url=openai_server.url, api_key="test", max_retries=0)
    if stream:
        pieces = client.completions.create(model="test-model", prompt="Capital?", stream=True)
        text = "".join(c.choices[0].text for c in pieces if c.choices)
    else:
        text = client.completions.create(model="test-model", prompt="Capital?").choices[0].text
    assert text == "Paris is the capital."
    assert openai_server.requests[0].path == "/v1/completions"


# -- the demo ---------------------------------------------------------------------------


def _demo_model(request: ChatRequest) -> str:
    """The demo's chat model: wrong at first, right when asked to correct marked spans."""
    return CORRECT if "[[" in request.text else WRONG


@pytest.mark.slow  # a subprocess that loads every model
def test_the_demo_runs_against_the_endpoint(vllm: OpenAIServer) -> None:
    vllm.respond(_demo_model)
    env = offline_env(drop=("TRUTHLENS_COOKBOOK_LLM", "TRUTHLENS_LLM_MODEL"))
    env |= {"OPENAI_BASE_URL": vllm.url, "OPENAI_API_KEY": "test"}
    result = run_script(COOKBOOK / "langchain_rag.py", env=env)
    sent = vllm.chat_requests()
    assert sent and {r.body["model"] for r in sent} == {vllm.model}
    assert {r.headers["authorization"] for r in sent} == {"Bearer test"}
    # the chain's answer was flagged and refined through the endpoint
    assert any("[[" in r.text and "1950" in r.text for r in sent)
    shown = [line for line in result.stdout.splitlines() if line.startswith("shown to the user:")]
    assert len(shown) == 2 and all(CORRECT in line for line in shown), result.stdout
