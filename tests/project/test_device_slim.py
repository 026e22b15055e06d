"""scripts/device_slim.sh, run in a throwaway git checkout: files go aside and come back whole."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests._paths import REPO

SCRIPT = REPO / "scripts" / "device_slim.sh"
MOVED = (
    "benchmarks/results/a.md",
    "lab/records/b.md",
    "lab/training/data/rows.jsonl",
    "core/_bundled/nli/model.safetensors",
)
WEIGHTS = "core/_bundled/detector/model.safetensors"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    for rel in (*MOVED, WEIGHTS, "core/code.py"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(f"content of {rel}\n")
    (repo / "scripts").mkdir()
    shutil.copy(SCRIPT, repo / "scripts" / "device_slim.sh")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "x"]):
        subprocess.run(cmd, cwd=repo, check=True, env=env)
    return repo


def _run(repo: Path, aside: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/device_slim.sh", *args],
        cwd=repo,
        env={**os.environ, "TRUTHLENS_ASIDE": str(aside)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_aside_then_restore_leaves_the_checkout_as_it_was(checkout: Path, tmp_path: Path) -> None:
    aside = tmp_path / "aside"
    first = _run(checkout, aside, "aside", "--weights")
    assert first.returncode == 0, first.stderr
    for rel in (*MOVED, WEIGHTS):
        assert not (checkout / rel).exists()
        assert (aside / rel).read_text() == f"content of {rel}\n"
    assert (checkout / "core/code.py").exists()  # code stays

    assert _run(checkout, aside, "aside").returncode == 1  # never twice
    back = _run(checkout, aside, "restore")
    assert back.returncode == 0, back.stderr
    for rel in (*MOVED, WEIGHTS):
        assert (checkout / rel).read_text() == f"content of {rel}\n"
    assert not aside.exists()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=checkout, capture_output=True, text=True, check=True
    )
    assert status.stdout == ""


def test_restore_never_overwrites_what_came_back(checkout: Path, tmp_path: Path) -> None:
    aside = tmp_path / "aside"
    assert _run(checkout, aside, "aside").returncode == 0
    # a benchmark wrote a new report into the moved folder while it was away
    (checkout / "benchmarks/results").mkdir(parents=True)
    (checkout / "benchmarks/results/a.md").write_text("new\n")
    back = _run(checkout, aside, "restore")
    assert back.returncode == 1
    assert "merge it by hand" in back.stderr
    assert (checkout / "benchmarks/results/a.md").read_text() == "new\n"
    assert (aside / "benchmarks/results/a.md").exists()  # nothing lost ...
    assert not (checkout / "lab/training/data/rows.jsonl").exists()  # ... and nothing moved


def test_a_missing_verb_is_a_usage_error(checkout: Path, tmp_path: Path) -> None:
    result = _run(checkout, tmp_path / "aside", "sideways")
    assert result.returncode == 2
    assert "usage" in result.stderr
