"""The adapters against a real llama.cpp server (opt-in): a quick subset of the benchmark.

``benchmarks/bench_adapters_server.py`` drives every adapter against llama.cpp's
OpenAI-compatible server; these tests run a few of its cases on SmolLM2-135M so a
developer with the build can check a change against the real server's streaming, errors
and tool calls. They need ``llama-cpp-python[server]`` (the ``llama-cpp`` extra, a build
from source) and ``TRUTHLENS_REAL_SERVER=1``; without both they skip, so CI is unaffected::

    TRUTHLENS_REAL_SERVER=1 python -m pytest -q tests/integration/test_real_llama_server.py

The server runs on 127.0.0.1 (the integration tests may reach that host only) with one
thread. Each case asserts the package's promises on what the real model did: a flagged
answer under ``block`` is withheld from every surface, a failed call is an error or a
not-checked verdict, never a clean one.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator

import pytest

pytestmark = pytest.mark.slow

if os.environ.get("TRUTHLENS_REAL_SERVER") != "1":
    pytest.skip(
        "set TRUTHLENS_REAL_SERVER=1 to run against a real llama.cpp server",
        allow_module_level=True,
    )
if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("llama-cpp-python is not installed (the llama-cpp extra)", allow_module_level=True)
pytest.importorskip("langchain_openai", reason="the dev extra is not installed")
pytest.importorskip("llama_index.llms.openai_like", reason="the dev extra is not installed")

from benchmarks import bench_adapters_server as real  # noqa: E402
from benchmarks._llama_server import LlamaServer, smollm2_gguf  # noqa: E402


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[real.Bench]:
    """SmolLM2 behind llama.cpp's server, and the engines the cases guard with."""
    logs = tmp_path_factory.mktemp("llama-server")
    real.LOGS = logs  # the fault cases' second servers log here too
    with LlamaServer(
        smollm2_gguf(), alias="smollm2", n_ctx=1024, threads=1, log=logs / "main.log"
    ) as server:
        yield real.Bench(server, "smollm2", max_tokens=64)


CASES: dict[str, Callable[[real.Bench], real.Outcome]] = {
    "pipe-streamed": lambda b: real.pipe_invoke(b, streaming=True),
    "wrapper-astream-events": real.wrapper_astream,
    "agent-stream-block": real.agent_stream,
    "graph-guard-block": lambda b: real.graph_guard(b, 1),
    "llamaindex-streamed-block": real.llamaindex_query,
    "overflow-streamed": lambda b: real.overflow_chain(b, streaming=True),
    "overflow-refiner": real.overflow_refine,
    "killed-mid-stream": real.killed_pipe_stream,
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_promises_hold_against_the_real_server(bench: real.Bench, case: str) -> None:
    bench.audit.verdicts.clear()
    outcome = CASES[case](bench)
    assert outcome.passed, outcome.observed
