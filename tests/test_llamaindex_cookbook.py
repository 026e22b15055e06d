"""The LlamaIndex cookbook example runs offline (smoke test).

It uses the bundled detector / NLI / classifier and, with ``--fake-llm``, a scripted
LlamaIndex MockLLM instead of the local SmolLM2 backend (about 30 s to load). It runs
in a subprocess whose sockets refuse to connect, so a download attempt would fail it.
"""

from __future__ import annotations

import pytest

from tests._scripts import COOKBOOK, offline_env, run_python

SCRIPT = COOKBOOK / "llamaindex_query_engine.py"

RUNNER = """
import runpy, socket, sys

def refuse(*args, **kwargs):
    raise OSError("network access in the offline cookbook smoke test")

socket.socket.connect = refuse
sys.path.insert(0, str(__import__("pathlib").Path(sys.argv[1]).parent))
code = runpy.run_path(sys.argv[1])["main"](["--fake-llm"])
sys.exit(code)
"""


@pytest.mark.slow  # runs the cookbook scripts in subprocesses
def test_llamaindex_cookbook_runs_offline() -> None:
    env = offline_env(drop=["TRUTHLENS_COOKBOOK_LLM"], HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    result = run_python(RUNNER, str(SCRIPT), env=env)
    out = result.stdout
    # spans, refinement and a rewritten query, with the bundled models
    assert "=== standard mode: refinement ===" in out
    assert "flagged spans   : '1950'" in out
    assert "round 1: refine" in out and "status          : converged (self_refine)" in out
    assert "round 1: retrieve query='Eiffel Tower construction history started finished'" in out
    assert "status          : success (retrieval_feedback)" in out
    assert out.count("shown answer    : 'The Eiffel Tower was built from 1887 to 1889.'") == 2
    assert "history.txt" in out.split("=== retrieval feedback")[1]  # found by the rewrite
