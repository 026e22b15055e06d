"""Detection through the Ray Serve service against in-process detection.

Usage:
    python benchmarks/bench_serve.py [--requests 96] [--threads 1] [--backend auto|torch|onnx]
        [--precision auto|float32|int8] [--replicas 1 2] [--out benchmarks/results/serve.md]

Starts a local Ray (all cores, 200 MB object store, no dashboard) and the service on
127.0.0.1, then for each deployment (1 or 2 replicas of 1 CPU each, dynamic batching on
with up to 16 answers per batch or off) sends ``--requests`` detection requests with 1, 8
and 32 requests in flight (asyncio, one pooled ``RemoteDetector``). The in-process rows
call the same detector in this process: one ``detect`` per request from 1, 8 and 32
threads, and one ``detect_batch`` of all requests (the batching ceiling).

Requests cycle through four short grounded answers (the Eiffel record and a Statue of
Liberty sentence, wrong and right answers; 20-40 tokens each). Latency is per request as
the client sees it; throughput is requests per second of wall time. ``--backend`` sets the
policy's ``hallucination.backend`` and ``--precision`` its ``precision`` (in-process and in
every replica), ``--replicas`` which
deployments run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from truthlens_integrations._lab_api import machine_info
from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import Detector, load_detector

EIFFEL = (
    '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters", '
    '"location": "Paris, France"}'
)
STATUE = "The Statue of Liberty was dedicated in 1886 in New York Harbor."
INPUTS = [
    DetectionInput.create(
        context=[EIFFEL],
        question="When was the Eiffel Tower built?",
        answer="The Eiffel Tower was built in 1950 and is 500 meters tall.",
    ),
    DetectionInput.create(
        context=[EIFFEL],
        question="When was the Eiffel Tower built?",
        answer="The Eiffel Tower was built between 1887 and 1889 and is 330 meters tall.",
    ),
    DetectionInput.create(
        context=[STATUE], question=None, answer="The Statue of Liberty was dedicated in 1920."
    ),
    DetectionInput.create(
        context=[STATUE], question=None, answer="It was dedicated in 1886 in New York Harbor."
    ),
]
CONCURRENCY = (1, 8, 32)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _row(name: str, concurrency: int | str, latencies: list[float], wall: float) -> dict[str, Any]:
    return {
        "setup": name,
        "concurrency": concurrency,
        "requests": len(latencies),
        "rps": len(latencies) / wall,
        "p50": _pct(latencies, 0.5) * 1000,
        "p99": _pct(latencies, 0.99) * 1000,
    }


def _items(n: int) -> list[DetectionInput]:
    return [INPUTS[i % len(INPUTS)] for i in range(n)]


def bench_in_process(detector: Detector, n: int) -> list[dict[str, Any]]:
    rows = []
    items = _items(n)
    detector.detect_batch(items[:8])  # warm-up

    def one(item: DetectionInput) -> float:
        started = time.perf_counter()
        detector.detect_batch([item])
        return time.perf_counter() - started

    for c in CONCURRENCY:
        with ThreadPoolExecutor(max_workers=c) as pool:
            started = time.perf_counter()
            latencies = list(pool.map(one, items))
            rows.append(
                _row("in-process, detect per request", c, latencies, time.perf_counter() - started)
            )
    started = time.perf_counter()
    detector.detect_batch(items)
    wall = time.perf_counter() - started
    rows.append(_row("in-process, one detect_batch", "all", [wall] * n, wall))
    return rows


async def _remote_run(url: str, n: int, concurrency: int) -> tuple[list[float], float]:
    detector = load_detector(url, timeout_s=120)
    items = _items(n)
    await detector.adetect_batch(items[:8])  # warm-up, and the /healthz handshake
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(item: DetectionInput) -> None:
        async with gate:
            started = time.perf_counter()
            result = await detector.adetect_batch([item])
            latencies.append(time.perf_counter() - started)
            assert result[0].answer == item.answer

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in items))
    return latencies, time.perf_counter() - started


def bench_service(url: str, name: str, n: int) -> list[dict[str, Any]]:
    rows = []
    for c in CONCURRENCY:
        latencies, wall = asyncio.run(_remote_run(url, n, c))
        rows.append(_row(name, c, latencies, wall))
        print(rows[-1], flush=True)
    return rows


def deploy(policy: dict[str, Any] | None, replicas: int, max_batch_size: int) -> None:
    from ray import serve

    from truthlens_integrations._lab_api import APP_NAME
    from truthlens_integrations.serve import service_app

    app = service_app(policy, replicas=replicas, max_batch_size=max_batch_size)
    serve.run(app, name=APP_NAME, route_prefix="/", blocking=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=96)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/serve.md"))
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="in-process torch and ONNX Runtime threads (a replica has its num_cpus, 1)",
    )
    parser.add_argument("--backend", default="auto", choices=["auto", "torch", "onnx"])
    parser.add_argument("--precision", default="auto", choices=["auto", "float32", "int8"])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    knobs = {
        key: value
        for key, value in (("backend", args.backend), ("precision", args.precision))
        if value != "auto"
    }
    policy = {"hallucination": knobs} if knobs else None
    load_before = os.getloadavg()

    import torch

    torch.set_num_threads(args.threads)
    # the in-process rows use what one replica gets, whichever backend runs
    os.environ["TRUTHLENS_ONNX_THREADS"] = str(args.threads)
    detector = TruthLens.from_config(policy).detector
    described = (
        f"{type(detector).__name__} `{detector.model_id}` ({getattr(detector, 'backend', '?')})"
    )
    rows = bench_in_process(detector, args.requests)
    for row in rows:
        print(row, flush=True)

    from truthlens_integrations.serve import start_local

    service = start_local(policy, host="127.0.0.1", port=args.port, replicas=1)
    try:
        for replicas in args.replicas:
            for batch in (16, 1):
                deploy(policy, replicas, batch)
                label = (
                    f"service, {replicas} replica(s), batching {'on (16)' if batch > 1 else 'off'}"
                )
                rows += bench_service(service.url, label, args.requests)
    finally:
        service.stop()
    _write(args.out, rows, load_before, os.getloadavg(), args, described)


def _write(
    out: Path,
    rows: list[dict[str, Any]],
    before: tuple[float, ...],
    after: tuple[float, ...],
    args: argparse.Namespace,
    described: str,
) -> None:
    import ray

    info = machine_info()
    lines = [
        "# Detection through the Ray Serve service",
        "",
        f"- machine: {info['machine']}, {info['cpu_count']} cores, Python {info['python']}, "
        f"torch {info.get('torch', '?')} ({info.get('torch_threads', '?')} threads in-process), "
        f"ray {ray.__version__}",
        "- each replica reserves 1 CPU (Ray sets OMP_NUM_THREADS to it, and with it the "
        "threads of torch and of ONNX Runtime)",
        f"- load average (1/5/15 min) before: {' / '.join(f'{x:.1f}' for x in before)}, "
        f"after: {' / '.join(f'{x:.1f}' for x in after)}",
        f"- command: `python benchmarks/bench_serve.py --requests {args.requests} "
        f"--threads {args.threads} --backend {args.backend} --precision {args.precision} "
        f"--replicas {' '.join(map(str, args.replicas))}`",
        f"- detector: {described} (the default of `load_detector`, in-process and in "
        "each replica); requests: short grounded answers (20-40 tokens); p50 / p99 are "
        "per request as the client sees them",
        "",
        "| setup | in flight | requests | req/s | p50 ms | p99 ms |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['setup']} | {r['concurrency']} | {r['requests']} | {r['rps']:.1f} | "
        f"{r['p50']:.1f} | {r['p99']:.1f} |"
        for r in rows
    ]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
