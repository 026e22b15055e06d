"""Shared by the integration tests: one OpenAI-compatible server, one loaded engine.

The server (:mod:`tests._openai_server`) listens on 127.0.0.1 for the whole session;
each test starts with an empty script and no recorded requests. The engine is the
bundled models, loaded once; tests derive their modes and actions from it (the loaded
models are shared).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests._openai_server import OpenAIServer
from truthlens_integrations.core.engine import TruthLens

EIFFEL_RECORD = '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters"}'
QUESTION = "When was the Eiffel Tower built?"
WRONG = "The Eiffel Tower was built in 1950."
RIGHT = "The Eiffel Tower was built from 1887 to 1889."


@pytest.fixture(scope="session")
def server() -> Iterator[OpenAIServer]:
    """The OpenAI-compatible server, serving ``test-model`` and ``gpt-4o-mini``.

    ``gpt-4o-mini`` is there for LlamaIndex's ``OpenAI`` LLM, which refuses model names
    it does not know (a proxy serving OpenAI's names is the common setup).
    """
    with OpenAIServer(models=("test-model", "gpt-4o-mini")) as running:
        yield running


@pytest.fixture(autouse=True)
def openai_server(server: OpenAIServer) -> Iterator[OpenAIServer]:
    """The server with an empty script and no recorded requests."""
    server.reset()
    yield server
    server.reset()


@pytest.fixture(scope="session")
def engine() -> TruthLens:
    """The bundled detector, NLI explainer and prompt classifier, loaded once."""
    built = TruthLens.from_config()
    _ = built.detector, built.nli, built.fact_checker
    return built


def shows_wrong_year(shown: object) -> bool:
    """Whether the wrong year appears in what a user can read (its ``str``).

    A year, not any run of its digits: a latency such as ``8.750195`` holds "1950" too.
    """
    return re.search(r"(?<![\d.])1950(?!\d)", str(shown)) is not None


def refine_requests(server: OpenAIServer) -> list[str]:
    """The text of the chat requests that asked the model to correct marked spans."""
    return [r.text for r in server.chat_requests() if "[[" in r.text and "]]" in r.text]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test here ``integration`` and let it reach 127.0.0.1 (and only that)."""
    for item in items:
        if "tests/integration/" not in str(item.path).replace("\\", "/"):
            continue
        item.add_marker(pytest.mark.integration)
        item.add_marker(pytest.mark.allow_hosts(["127.0.0.1"]))
