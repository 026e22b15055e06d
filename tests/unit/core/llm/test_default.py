"""Tests of ``core/llm/_default.py``: the default backend follows the environment."""

from __future__ import annotations

import pytest

from tests._llm_support import needs_local_llm
from truthlens_integrations.core.llm import LocalLLM, OpenAICompatibleLLM, default_llm


@needs_local_llm
def test_default_llm_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert isinstance(default_llm(), OpenAICompatibleLLM)
    monkeypatch.delenv("OPENAI_API_KEY")
    local = default_llm()
    assert isinstance(local, LocalLLM)
    assert local.name == "local-smollm2"
