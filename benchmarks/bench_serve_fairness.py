"""How long a small request waits behind a large one on the service (issue 29).

Usage:
    python benchmarks/bench_serve_fairness.py [--out benchmarks/results/...md]

Starts the service on 127.0.0.1 (local Ray, 2 CPUs, one replica, dynamic batching on)
twice: with the default limits, where a request's answers reach the models in chunks
of at most ``max_answer_chars`` (12,000) characters, and with ``max_answer_chars`` set to
the per-request total (48,000), which makes the whole request one chunk: the scheduling
before issue 29. For each it sends, over loopback:

* a large ``/v1/detect`` request: 4 answers of 11,900 characters (the most one
  request may carry by default), then 0.5 s later a small one (one short answer), and
  reports how long each took as the client saw it;
* a 400 KB answer, which took about 45 s before the limits (issue 29), and reports the
  status and time of the refusal.

Every call has a 600 s client timeout; each step runs once (the machine is shared, so
the numbers are one sample each, not a distribution).
"""

from __future__ import annotations

import argparse
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from truthlens_integrations._lab_api import machine_info

CONTEXT = (
    "The Eiffel Tower was built between 1887 and 1889 for the World's Fair in Paris. "
    "It is 330 meters tall and was the tallest structure in the world until 1930. "
)
SENTENCE = "The Eiffel Tower was built in 1950 and is 500 meters tall. "
SMALL = {
    "context": [CONTEXT],
    "question": "When was it built?",
    "answer": "The Eiffel Tower was built in 1950.",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answer(chars: int) -> str:
    return (SENTENCE * (chars // len(SENTENCE) + 1))[:chars]


def _timed_post(url: str, body: dict[str, Any], out: dict[str, Any], key: str) -> None:
    started = time.perf_counter()
    with httpx.Client(timeout=600) as http:
        reply = http.post(f"{url}/v1/detect", json=body)
    out[key] = (reply.status_code, time.perf_counter() - started)


def _run(service: dict[str, Any]) -> dict[str, Any]:
    from truthlens_integrations.serve import start_local

    running = start_local({"service": service}, host="127.0.0.1", port=_free_port(), num_cpus=2)
    out: dict[str, Any] = {}
    try:
        # Warm the replica (first forward pass).
        _timed_post(running.url, SMALL, out, "warm")
        large = {"inputs": [{**SMALL, "answer": _answer(11_900)} for _ in range(4)]}
        worker = threading.Thread(target=_timed_post, args=(running.url, large, out, "large"))
        worker.start()
        time.sleep(0.5)
        _timed_post(running.url, SMALL, out, "small")
        worker.join(timeout=600)
        _timed_post(running.url, {**SMALL, "answer": _answer(400_000)}, out, "huge")
    finally:
        running.stop()
    return out


def main() -> None:
    """Run both deployments and write the markdown table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    runs = {
        "one chunk per request (scheduling before issue 29)": {"max_answer_chars": 48_000},
        "chunks of at most 12,000 answer characters (default)": {},
    }
    rows = []
    for name, service in runs.items():
        got = _run({"max_batch_size": 16, **service})
        rows.append(
            f"| {name} | {got['large'][1]:.1f} s ({got['large'][0]}) | "
            f"{got['small'][1]:.1f} s ({got['small'][0]}) | "
            f"{got['huge'][1]:.2f} s ({got['huge'][0]}) |"
        )
        print(rows[-1], flush=True)
    table = "\n".join(
        [
            "| deployment | large request (4 x 11,900 chars) | small request sent 0.5 s "
            "after it | 400 KB answer |",
            "|---|---|---|---|",
            *rows,
        ]
    )
    text = f"Machine: {machine_info()}\n\n{table}\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
