"""Every LangChain cookbook example runs offline (smoke test).

The examples use the bundled detector / NLI / classifier and, with
``TRUTHLENS_COOKBOOK_LLM=fake``, LangChain's scripted fake chat models instead of the
local SmolLM2 backend (which takes ~30 s to load). All examples run in ONE
subprocess so the bundled models load once.
"""

from __future__ import annotations

import re
import runpy
import sys
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from tests._scripts import COOKBOOK, offline_env, run_python
from truthlens_integrations.testing import ScriptedChatModel

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


# -- The demo's chain shows its model the passages as text, and the guard the documents.


def test_the_demo_prompt_holds_passages_as_text_and_the_guard_gets_documents(
    monkeypatch: Any,
) -> None:
    monkeypatch.syspath_prepend(str(COOKBOOK))
    demo = runpy.run_path(str(COOKBOOK / "langchain_rag.py"))
    shared = sys.modules["_langchain_setup"]
    seen: list[list[BaseMessage]] = []

    def respond(messages: list[BaseMessage]) -> str:
        seen.append(messages)
        return shared.CORRECT

    out = demo["rag_chain"](ScriptedChatModel(respond=respond)).invoke(
        {"question": shared.EIFFEL_QUESTION}
    )
    system = str(seen[0][0].content)
    assert '"built": "1887-1889"' in system  # the record, as its text
    assert "page_content" not in system and "Document(" not in system
    assert out["answer"] == shared.CORRECT
    assert out["context"] and all(isinstance(d, Document) for d in out["context"])


# -- The LlamaIndex cookbook example runs offline (smoke test). ----------------------------


SCRIPT = COOKBOOK / "llamaindex_query_engine.py"


OFFLINE_RUNNER = """
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
    result = run_python(OFFLINE_RUNNER, str(SCRIPT), env=env)
    out = result.stdout
    # spans, refinement and a rewritten query, with the bundled models
    assert "=== standard mode: refinement ===" in out
    assert "flagged spans   : '1950'" in out
    assert "round 1: refine" in out and "status          : converged (self_refine)" in out
    assert "round 1: retrieve query='Eiffel Tower construction history started finished'" in out
    assert "status          : success (retrieval_feedback)" in out
    assert out.count("shown answer    : 'The Eiffel Tower was built from 1887 to 1889.'") == 2
    assert "history.txt" in out.split("=== retrieval feedback")[1]  # found by the rewrite


def test_the_defence_layers_example_withholds_the_wrong_answer_where_it_matters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.conftest import BUNDLED

    if BUNDLED is None:
        pytest.skip("bundled weights are not here")
    module = runpy.run_path(str(COOKBOOK / "defence_layers.py"))
    assert module["main"]([]) == 0
    out = capsys.readouterr().out
    assert "[1] kept 2 of 5 retrieved passages" in out  # duplicate, short, unreliable out
    assert "robots" not in out.split("[2]")[0]
    right, wrong = out.split("[2] constrained prompt")[1:]
    assert "guard: PASS" in right and "entertainment: approved" in right
    assert "guard: MITIGATE" in wrong
    assert "medical: rejected -> Please consult a medical professional." in wrong
    assert "1950" not in wrong.split("[3]")[1]  # the wrong answer is never shown after the guard
