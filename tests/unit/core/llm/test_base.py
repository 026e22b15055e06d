"""Tests of ``core/llm/_base.py``: the LLM protocol and its messages."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests._llm_support import FakeServer, ok_response, openai_llm
from truthlens_integrations.core._errors import InvalidInputError
from truthlens_integrations.core.llm import LLM, ChatMessage, LocalLLM
from truthlens_integrations.core.llm._base import to_messages

# -- protocol and messages -----------------------------------------------------------


def test_backends_satisfy_the_protocol() -> None:
    server = FakeServer(ok_response())
    assert isinstance(openai_llm(server), LLM)
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


@pytest.mark.parametrize("error", [RuntimeError, TimeoutError])
def test_a_wrapped_models_error_is_quoted_bounded_and_escaped(error: type[Exception]) -> None:
    from truthlens_integrations.core._errors import LLMError
    from truthlens_integrations.core.llm._base import map_llm_errors

    hostile = "\x1b[2J\nERROR forged http://admin:hunter2@gw/v1 " + "A" * 1_000_000
    with pytest.raises(LLMError) as caught, map_llm_errors("model 'm'"):
        raise error(hostile)
    message = str(caught.value)
    assert len(message) < 500 and "\x1b" not in message and "\n" not in message
    assert "hunter2" not in message
