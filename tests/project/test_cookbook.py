"""Every LangChain cookbook example runs offline (smoke test).

The examples use the bundled detector / NLI / classifier and, with
``TRUTHLENS_COOKBOOK_LLM=fake``, LangChain's scripted fake chat models instead of the
local SmolLM2 backend (which takes ~30 s to load). All examples run in ONE
subprocess so the bundled models load once.
"""

from __future__ import annotations

import re

import pytest

from tests._scripts import COOKBOOK, offline_env, run_python

EXAMPLES = sorted(p.name for p in COOKBOOK.glob("langchain_*.py"))

RUNNER = """
import runpy, sys
sys.path.insert(0, sys.argv[1])
for name in sys.argv[2:]:
    print(f"=== {name}", flush=True)
    module = runpy.run_path(f"{sys.argv[1]}/{name}")
    code = module["main"]([])
    assert code == 0, (name, code)
"""


@pytest.mark.slow  # runs the cookbook scripts in subprocesses
def test_every_langchain_example_runs_offline() -> None:
    assert EXAMPLES == [
        "langchain_agent_middleware.py",
        "langchain_agent_tools.py",
        "langchain_callbacks.py",
        "langchain_premium.py",
        "langchain_rag.py",
    ]
    env = offline_env(TRUTHLENS_COOKBOOK_LLM="fake")
    result = run_python(RUNNER, str(COOKBOOK), *EXAMPLES, env=env)
    out = result.stdout
    assert [line for line in out.splitlines() if line.startswith("===")] == [
        f"=== {name}" for name in EXAMPLES
    ]
    # the examples show flagged spans and the refined answer
    assert "flagged span: '1950'" in out
    # issue 13: the main demo labels what it prints, rounds scores, shows no progress bars
    demo = out.split("=== langchain_rag.py")[1]
    wrong = demo.split("[2] A deliberately wrong answer")[1]
    assert "wrong answer in:   The Eiffel Tower was built in 1950" in wrong
    assert "shown to the user: The Eiffel Tower was built from 1887 to 1889" in wrong
    assert re.findall(r"score: (\S+)", demo) and all(
        re.fullmatch(r"\d\.\d{3}|-", s) for s in re.findall(r"score:? (\S+?)[,\s]", demo)
    )
    assert "Loading weights" not in result.stderr and "it/s]" not in result.stderr
    assert "refined answer:  The Eiffel Tower was built from 1887 to 1889" in out
    assert "strategy: cross_model" in out
    assert "event truthlens_detection" in out
    # the agent middleware example: fixed in standard mode, withheld under block
    assert "round 1 (refine, kept): The Eiffel Tower was built from 1887 to 1889" in out
    assert "streamed from model: I can't give a verified answer" in out
