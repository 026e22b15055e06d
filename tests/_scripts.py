"""Running Python code and the cookbook examples from the tests (fresh interpreters, offline)."""

from __future__ import annotations

import importlib.util
import os
import runpy
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import pytest

COOKBOOK = Path(__file__).resolve().parent.parent / "cookbook"

# Whatever the developer's shell holds, the examples must not reach a hosted LLM.
_HOSTED = ("OPENAI_API_KEY", "OPENAI_BASE_URL")


def offline_env(*, drop: Iterable[str] = (), **extra: str) -> dict[str, str]:
    """This process's environment with ``extra`` set and no hosted-LLM settings."""
    env = {**os.environ, **extra}
    for key in (*_HOSTED, *drop):
        env.pop(key, None)
    return env


def run_python(
    code: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -c code args...`` (this environment by default); check it exited with 0."""
    return _run_checked([sys.executable, "-c", code, *args], env)


def run_script(
    script: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python script args...`` (this environment by default); check it exited with 0."""
    return _run_checked([sys.executable, str(script), *args], env)


def _run_checked(argv: list[str], env: dict[str, str] | None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def run_here(name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``cookbook/<name>``'s ``main([])`` in this process, on the fake chat models.

    Returns:
        What it printed, once its exit code was checked to be 0.
    """
    monkeypatch.syspath_prepend(str(COOKBOOK))
    monkeypatch.setenv("TRUTHLENS_COOKBOOK_LLM", "fake")
    module = runpy.run_path(str(COOKBOOK / name))
    assert module["main"]([]) == 0
    return capsys.readouterr().out


def load_example(name: str) -> ModuleType:
    """Import ``cookbook/<name>`` as a module (its ``main`` is not run).

    The cookbook folder is on ``sys.path`` while it loads, as when the example runs,
    so that it finds its set-up modules (``_langchain_setup``, ...).
    """
    spec = importlib.util.spec_from_file_location(f"cookbook_{Path(name).stem}", COOKBOOK / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(COOKBOOK))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(COOKBOOK))
    return module
