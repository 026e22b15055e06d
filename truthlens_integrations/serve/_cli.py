"""``truthlens serve``: the command-line front of :mod:`truthlens_integrations.serve`.

Building the parser imports nothing heavy; Ray loads only when the command runs.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any

__all__ = ["add_serve_parser", "run_serve"]


def add_serve_parser(sub: Any) -> None:
    """Add the ``serve`` subcommand to the ``truthlens`` parser."""
    p = sub.add_parser(
        "serve",
        help="run the guard pipeline as a Ray Serve service",
        description="""Serve the prompt classifier, detector and NLI model over HTTP (GET /healthz,
        POST /v1/detect, /v1/guard, /v1/nli, /v1/classify). Without --address it starts Ray on this
        machine and stops it on SIGTERM or Ctrl-C; with --address it deploys to that Ray cluster and
        exits.""",
    )
    p.add_argument("--config", type=Path, help="policy file (its 'service' block is used)")
    p.add_argument("--host", help="address to listen on (default: service.host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default: service.port, 8000)")
    p.add_argument("--replicas", type=int, help="model replicas (default: service.replicas)")
    p.add_argument("--address", help="existing Ray cluster: auto, HOST:6379 or ray://HEAD:10001")
    p.add_argument("--num-cpus", type=int, help="CPUs the local Ray may use (default: all)")
    p.add_argument(
        "--metrics-port", type=int, help="port of the local Ray's Prometheus /metrics endpoint"
    )
    p.add_argument("--max-batch-size", type=int, help="answers per dynamic batch (1: no batching)")
    p.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """Start (or deploy) the service; locally, block until SIGTERM / SIGINT."""
    from truthlens_integrations.core import InvalidInputError

    from ._runner import deploy, start_local

    if args.config is not None and not args.config.is_file():
        raise InvalidInputError(f"no such policy file: {args.config}")
    policy = args.config  # read once, where the options are applied: errors name the file
    overrides: dict[str, Any] = {}
    if args.replicas is not None:
        overrides["replicas"] = args.replicas
    if args.max_batch_size is not None:
        overrides["max_batch_size"] = args.max_batch_size
    if args.address:
        service = deploy(policy, address=args.address, host=args.host, port=args.port, **overrides)
        print(f"TruthLens service deployed at {service.url} (Ray cluster {args.address})")
        return 0
    service = start_local(
        policy,
        host=args.host,
        port=args.port,
        num_cpus=args.num_cpus,
        metrics_port=args.metrics_port,
        **overrides,
    )
    stop = threading.Event()
    # Installed after Ray started: ray.init replaces SIGTERM's handler with its own.
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in _SIGNALS}
    try:
        print(f"TruthLens service ready at {service.url}", flush=True)
        if service.metrics_url:
            print(f"Prometheus metrics at {service.metrics_url}", flush=True)
        while not stop.wait(timeout=1.0):
            pass
        print("stopping", file=sys.stderr, flush=True)
    finally:
        service.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


_SIGNALS = (signal.SIGTERM, signal.SIGINT)
