"""Discovery of a server's one model (``GET /v1/models``) under the client's own rules.

Issue 51 found the listing outside them: it waited 13 s with ``timeout=2``; ``{"data":
null}``, a JSON list or an HTML page answered with 200 raised ``TypeError``,
``AttributeError`` or ``JSONDecodeError``; a null or blank id was sent as the model; a
2 MB id with terminal escapes and a password in ``OPENAI_BASE_URL`` were printed raw in
the error. Each fault is played by the local test server.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

import pytest

from tests._openai_server import Listing, OpenAIServer
from truthlens_integrations.core import ConfigError, LLMError, LLMTimeoutError, TruthLensError
from truthlens_integrations.core.llm import OpenAICompatibleLLM

PASSWORD = "hunter2-secret"
# A terminal escape that repaints the screen red, a line break that forges a log line,
# a right-to-left override: none may reach a terminal raw.
ESCAPES = "\x1b[31m\x1b]0;owned\x07\nERROR forged\u202e"


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TRUTHLENS_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


def _llm(url: str, **options: Any) -> OpenAICompatibleLLM:
    options = {"max_attempts": 1, "wait_initial": 0.0, "wait_max": 0.0, **options}
    return OpenAICompatibleLLM(base_url=url, **options)


def _listings(server: OpenAIServer) -> int:
    return sum(r.path == "/v1/models" for r in server.requests)


def _call(llm: OpenAICompatibleLLM, how: str) -> None:
    if how == "sync":
        llm.complete("q")
    else:
        asyncio.run(llm.acomplete("q"))


def _assert_safe(message: str) -> None:
    """An error message that quotes outside text: bounded, nothing hidden, no secret."""
    assert len(message) < 1200, len(message)
    assert PASSWORD not in message
    assert not any(ch in message for ch in "\x1b\x07\n\u202e"), repr(message[:200])


# -- the timeout and the retries are the calls' own -------------------------------------


@pytest.mark.parametrize("how", ["sync", "async"])
def test_the_listing_keeps_the_clients_timeout(openai_server: OpenAIServer, how: str) -> None:
    openai_server.script_models(Listing(body={"data": [{"id": "m"}]}, delay_s=4.0))
    started = time.perf_counter()
    with pytest.raises(LLMTimeoutError, match=r"listing its models.*within 0.5s"):
        _call(_llm(openai_server.url, timeout=0.5), how)
    assert time.perf_counter() - started < 3.0
    assert openai_server.chat_requests() == []


@pytest.mark.parametrize("how", ["sync", "async"])
@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_transient_listing_failure_is_retried(vllm: OpenAIServer, how: str, status: int) -> None:
    vllm.script_models(Listing(status=status))
    vllm.script("Paris.")
    llm = _llm(vllm.url, max_attempts=3)
    _call(llm, how)
    assert _listings(vllm) == 2
    assert llm.model == vllm.model


def test_transient_listing_failures_end_as_the_calls_error(openai_server: OpenAIServer) -> None:
    openai_server.script_models(*[Listing(status=503)] * 3)
    with pytest.raises(LLMError, match=r"listing its models.*503 after 3 attempts"):
        _llm(openai_server.url, max_attempts=3).complete("q")
    assert _listings(openai_server) == 3


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_a_refused_listing_is_not_retried(openai_server: OpenAIServer, status: int) -> None:
    openai_server.script_models(Listing(status=status))
    with pytest.raises(ConfigError, match=r"could not list its models.*TRUTHLENS_LLM_MODEL"):
        _llm(openai_server.url, max_attempts=3).complete("q")
    assert _listings(openai_server) == 1


# -- the answer must be a model list ------------------------------------------------------

NOT_A_LIST = {
    "data null": Listing(body={"data": None}),
    "a JSON list": Listing(body=[{"id": "m"}]),
    "an HTML page": Listing(raw=b"<html><body>Welcome</body></html>", content_type="text/html"),
    "broken JSON": Listing(raw=b'{"data": [{"id": "m"}'),
    "no data": Listing(body={"object": "list"}),
    "data a string": Listing(body={"data": "m"}),
    "data an object": Listing(body={"data": {"id": "m"}}),
    "a number": Listing(body=42),
    "an empty body": Listing(raw=b""),
    "a duplicate key": Listing(raw=b'{"data": [], "data": [{"id": "m"}]}'),
}
BAD_IDS = {
    "null id": [{"id": None}],
    "no id": [{"object": "model"}],
    "blank id": [{"id": ""}],
    "spaces id": [{"id": "   "}],
    "numeric id": [{"id": 42}],
    "entry a string": ["m"],
    "entry null": [None],
    "id with spaces at its end": [{"id": "m "}],
    "id with an escape": [{"id": "m\x1b[2J"}],
    "id with a zero-width space": [{"id": "m\u200b"}],
    "a 2 MB id with escapes": [{"id": ESCAPES + "A" * 2_000_000}],
    "one good id and one null": [{"id": "m"}, {"id": None}],
}


@pytest.mark.parametrize("how", ["sync", "async"])
@pytest.mark.parametrize(
    "listing",
    [*NOT_A_LIST.values(), *(Listing(body={"data": d}) for d in BAD_IDS.values())],
    ids=[*NOT_A_LIST, *BAD_IDS],
)
def test_an_answer_that_names_no_usable_model_is_a_config_error(
    openai_server: OpenAIServer, listing: Listing, how: str
) -> None:
    openai_server.script_models(listing)
    with pytest.raises(ConfigError, match=r"TRUTHLENS_LLM_MODEL") as caught:
        _call(_llm(openai_server.url), how)
    _assert_safe(str(caught.value))
    assert openai_server.chat_requests() == []  # nothing sent to a made-up model


def test_several_long_models_are_listed_bounded(openai_server: OpenAIServer) -> None:
    names = [f"org/{'B' * 500}{i}" for i in range(1000)]
    openai_server.script_models(Listing(body={"data": [{"id": n} for n in names]}))
    with pytest.raises(ConfigError, match=r"serves 1000 models \(org/B") as caught:
        _llm(openai_server.url).complete("q")
    _assert_safe(str(caught.value))


def test_one_good_id_is_used(vllm: OpenAIServer) -> None:
    vllm.script_models(Listing(body={"object": "list", "data": [{"id": vllm.model}]}))
    vllm.script("Paris.")
    assert _llm(vllm.url).complete("q").text == "Paris."
    assert [r.body["model"] for r in vllm.chat_requests()] == [vllm.model]


# -- a password in the base URL is never shown --------------------------------------------


def _with_password(url: str) -> str:
    return url.replace("http://", f"http://admin:{PASSWORD}@", 1)


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1?api_key={PASSWORD}"


FAULTS = {
    "a refused listing": (Listing(status=404), None),
    "a slow listing": (Listing(body={"data": []}, delay_s=2.0), None),
    "a listing that is HTML": (Listing(raw=b"<html>" + ESCAPES.encode() + b"</html>"), None),
    "several models": (Listing(body={"data": [{"id": "a"}, {"id": "b"}]}), None),
    "a failing completion": (None, "m"),
}


@pytest.mark.parametrize("how", ["sync", "async"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_no_error_or_log_line_shows_the_password(
    openai_server: OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    fault: str,
    how: str,
) -> None:
    listing, model = FAULTS[fault]
    if listing is not None:
        openai_server.script_models(listing)
    monkeypatch.setenv("OPENAI_BASE_URL", _with_password(openai_server.url))
    if model is not None:
        monkeypatch.setenv("TRUTHLENS_LLM_MODEL", model)
    caplog.set_level(logging.DEBUG, logger="truthlens_integrations")
    with pytest.raises(TruthLensError) as caught:
        _call(OpenAICompatibleLLM(timeout=0.5, max_attempts=2, wait_max=0.01), how)
    _assert_safe(str(caught.value))
    assert "***@127.0.0.1" in str(caught.value)
    assert PASSWORD not in caplog.text


@pytest.mark.parametrize("how", ["sync", "async"])
def test_an_unreachable_server_does_not_show_the_key_in_its_url(how: str) -> None:
    with pytest.raises(LLMError) as caught:
        _call(_llm(_closed_port()), how)
    _assert_safe(str(caught.value))
    assert "api_key=***" in str(caught.value)


def test_a_base_url_that_is_no_url_does_not_show_its_password() -> None:
    with pytest.raises(ConfigError) as caught:
        OpenAICompatibleLLM(base_url=f"ftp://admin:{PASSWORD}@host/v1", model="m")
    _assert_safe(str(caught.value))


@pytest.fixture
def vllm() -> Any:
    """A server with one model, as vLLM serves."""
    with OpenAIServer(models=("Qwen/Qwen2.5-0.5B-Instruct",)) as running:
        yield running
