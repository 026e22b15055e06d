"""Healthy runs print nothing the application did not ask for.

- the library logs, and never prints: no handler, no output (the callback handler's
  ``langchain.verdict`` warnings reached stderr through Python's last-resort handler);
- ``truthlens detect`` writes records to stdout and a progress bar only to a terminal;
- the local service stops the application, then Ray (never ``serve.shutdown()``, which
  made Ray report the controller's own exit as a failed task), and starts Ray without
  the dashboard UI.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest

_VERDICT_LOG = """
import logging, sys
from truthlens_integrations.core.observability._logging import log_event
from truthlens_integrations.langchain_adapter._callbacks import logger
if sys.argv[1] == "configured":
    logging.basicConfig(level=logging.WARNING)
log_event(logger, "langchain.verdict", level=logging.WARNING, decision="MITIGATE", spans="16-20")
"""


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_callback_handlers_warnings_print_only_once_logging_is_configured() -> None:
    quiet = _python(_VERDICT_LOG, "bare")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    shown = _python(_VERDICT_LOG, "configured")
    assert "langchain.verdict" in shown.stderr  # the app asked: the record is there


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    path = tmp_path / "answers.jsonl"
    row = {"context": ["The tower was built from 1887 to 1889."], "question": "When?"}
    lines = [json.dumps({**row, "id": i, "answer": "It was built in 1950."}) for i in range(5)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _detect(answers: Path, stderr: Any) -> subprocess.CompletedProcess[str]:
    code = "from truthlens_integrations._cli import main; raise SystemExit(main())"
    command = [sys.executable, "-c", code, "detect", "--model", "lexical", "--json"]
    return subprocess.run(
        [*command, "--input", str(answers)],
        check=False,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        timeout=120,
    )


def _records(stdout: str) -> list[int]:
    return [json.loads(line)["id"] for line in stdout.splitlines()]


def test_detect_shows_no_progress_bar_when_stderr_is_not_a_terminal(answers: Path) -> None:
    run = _detect(answers, subprocess.PIPE)
    assert run.returncode == 0, run.stderr
    assert _records(run.stdout) == [0, 1, 2, 3, 4]
    assert run.stderr == ""  # a bar here would interleave with the records in `2>&1`


def test_detect_shows_the_bar_on_a_terminal_and_keeps_stdout_records_only(
    answers: Path,
) -> None:
    leader, follower = pty.openpty()
    # A terminal of 80 columns (a new pseudo-terminal has none: tqdm would draw nothing).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        run = _detect(answers, follower)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: everything was read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert run.returncode == 0
    assert _records(run.stdout) == [0, 1, 2, 3, 4]  # stdout is records only
    assert b"5/5" in shown  # the bar went to the terminal


class _Recorder:
    """Stands in for ``ray`` and ``ray.serve``: records the calls, in order."""

    def __init__(self, calls: list[str], prefix: str) -> None:
        self.calls, self.prefix = calls, prefix

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> None:
            self.calls.append(f"{self.prefix}.{name}")
            if name == "init":
                self.calls.append(json.dumps(sorted(kwargs.items()), default=str))

        return call


def test_the_local_service_stops_the_app_then_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    # serve.shutdown() before ray.shutdown() made Ray print "Task
    # ServeController.graceful_shutdown failed. There are infinite retries remaining"
    # on every stop (seen with a real `truthlens serve`; gone without it).
    from truthlens_integrations.serve import _runner

    calls: list[str] = []
    fakes = {"ray": _Recorder(calls, "ray"), "ray.serve": _Recorder(calls, "serve")}
    monkeypatch.setattr(_runner, "require", lambda name, **_: fakes[name])
    _runner.LocalService(url="http://127.0.0.1:1", owns_ray=True).stop()
    assert calls == ["serve.delete", "ray.shutdown"]
    calls.clear()
    _runner.LocalService(url="http://127.0.0.1:1", owns_ray=False).stop()
    assert calls == ["serve.delete"]  # someone else's Ray keeps running


def test_local_ray_starts_without_the_dashboard_ui(monkeypatch: pytest.MonkeyPatch) -> None:
    from truthlens_integrations.serve import _runner

    calls: list[str] = []
    monkeypatch.setattr(_runner, "require", lambda name, **_: _Recorder(calls, "ray"))
    _runner._init_local_ray("/tmp/x", num_cpus=1, object_store_bytes=1, metrics_port=None)
    options = dict(json.loads(calls[1]))
    assert (options["include_dashboard"], options["log_to_driver"]) == (False, False)
