"""Load time and generation speed of the local SmolLM2-135M-Instruct backend.

Usage:
    python benchmarks/local_llm_bench.py [--threads 2] [--tokens 128] [--reps 3] [--llama-cpp]

Measures the transformers runtime (``LocalLLM``): first load from the GGUF file
(conversion), load from the converted cache, and greedy tokens/s. With ``--llama-cpp``
also times llama-cpp-python on the same GGUF file, if it is importable.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

PROMPTS = [
    "Write a long story about a robot who learns to paint.",
    "Explain in detail how photosynthesis works.",
    "Describe the history of the Roman Empire.",
]


def _cpu_name() -> str:
    try:
        with Path("/proc/cpuinfo").open(encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def bench_transformers(tokens: int, reps: int) -> dict[str, Any]:
    from truthlens_integrations._lab_api import clear_local_llm_cache
    from truthlens_integrations.core.llm import LocalLLM

    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        llm = LocalLLM.smollm2(device="cpu", cache_dir=cache).load()
        first_load = time.perf_counter() - started
        assert llm.load_source == "gguf"
        clear_local_llm_cache()
        started = time.perf_counter()
        llm = LocalLLM.smollm2(device="cpu", cache_dir=cache).load()
        cached_load = time.perf_counter() - started
        assert llm.load_source == "cache"
        llm.complete("Hi", max_tokens=4)  # warm-up
        rates = []
        for _ in range(reps):
            for prompt in PROMPTS:
                response = llm.complete(prompt, max_tokens=tokens)
                assert response.usage is not None
                rates.append(response.usage.completion_tokens / (response.latency_ms / 1000))
    return {"first_load_s": first_load, "cached_load_s": cached_load, "tok_s": rates}


def bench_llama_cpp(tokens: int, reps: int, threads: int) -> dict[str, Any]:
    from llama_cpp import Llama

    from truthlens_integrations._lab_api import smollm2_gguf_path

    started = time.perf_counter()
    model = Llama(model_path=str(smollm2_gguf_path()), n_threads=threads, verbose=False, seed=0)
    load = time.perf_counter() - started
    rates = []
    for _ in range(reps):
        for prompt in PROMPTS:
            started = time.perf_counter()
            out: Any = model.create_chat_completion(
                messages=[{"role": "user", "content": prompt}], max_tokens=tokens, temperature=0.0
            )
            elapsed = time.perf_counter() - started
            rates.append(out["usage"]["completion_tokens"] / elapsed)
    return {"load_s": load, "tok_s": rates}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--llama-cpp", action="store_true")
    args = parser.parse_args()

    started = time.perf_counter()
    import torch
    import transformers

    import_s = time.perf_counter() - started
    torch.set_num_threads(args.threads)
    print(f"machine: {_cpu_name()}, {args.threads} threads, Python {platform.python_version()}")
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    print(f"import torch+transformers: {import_s:.1f}s")

    result = bench_transformers(args.tokens, args.reps)
    rates = result["tok_s"]
    print(
        f"transformers: first load (GGUF conversion) {result['first_load_s']:.1f}s, "
        f"cached load {result['cached_load_s']:.1f}s, greedy {args.tokens} new tokens: "
        f"median {statistics.median(rates):.1f} tok/s (min {min(rates):.1f}, max {max(rates):.1f})"
    )
    if args.llama_cpp:
        try:
            result = bench_llama_cpp(args.tokens, args.reps, args.threads)
        except ImportError as exc:
            print(f"llama-cpp-python: not importable ({exc})")
        else:
            rates = result["tok_s"]
            print(
                f"llama-cpp-python: load {result['load_s']:.1f}s, greedy {args.tokens} new "
                f"tokens: median {statistics.median(rates):.1f} tok/s "
                f"(min {min(rates):.1f}, max {max(rates):.1f})"
            )


if __name__ == "__main__":
    main()
