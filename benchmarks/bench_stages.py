"""Where a detector call spends its time, stage by stage (exclusive times).

Usage (from the repository root)::

    python benchmarks/bench_stages.py [--contexts 1000 8000 20000] [--answer-tokens 100]
        [--items 5] [--repeats 10] [--backend torch] [--dtype float32]

Inputs are those of ``bench_evidence.py``. Each stage's function is wrapped with a timer;
a stage's time excludes the stages it calls, so the columns add up to the whole call
(``other`` is what no wrapper covers: result objects, spans, the base class). Timers
cost about a microsecond per wrapped call. Prints one markdown row per context size.
``--clock cpu`` reads the process's CPU time instead of the wall clock: on a machine
shared with other work, run single-threaded (``OMP_NUM_THREADS=1
TRUTHLENS_ONNX_THREADS=1``), it counts the work done and not the time spent waiting
for a core.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evidence import _sentences, _triple

from truthlens_integrations._lab_api import evidence_detector_module as _evidence_detector
from truthlens_integrations._lab_api import onnx_threads
from truthlens_integrations.core.models.detection import (
    BaseDetector,
    EvidenceDetector,
    TransformerDetector,
    load_detector,
)

# stage name -> (owner, attribute); the owner's attribute is replaced by a timed wrapper
_STAGES: dict[str, list[tuple[Any, str]]] = {
    "tokenise: counts": [
        (TransformerDetector, "_count"),
        (TransformerDetector, "_count_many"),
    ],
    "tokenise: rows": [(TransformerDetector, "_encode")],
    "context index": [(_evidence_detector, "ContextIndex")],
    "evidence selection": [(_evidence_detector, "plan_rows")],
    "row building": [(EvidenceDetector, "_evidence_plans")],
    "forward pass": [(TransformerDetector, "_margins")],
    "padding + probabilities": [(TransformerDetector, "_forward")],
    "token assembly": [(TransformerDetector, "_assemble")],
    "rules (numbers, negation, hedges)": [(_evidence_detector, "adjust_tokens")],
    "response score": [(TransformerDetector, "_response_score")],
    "total": [(BaseDetector, "detect_batch")],
}

_clock: list[Callable[[], float]] = [time.perf_counter]
_spent: dict[str, float] = defaultdict(float)
_stack: list[list[float]] = []  # per active stage: [children's time]


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _stack.append([0.0])
        t0 = _clock[0]()
        try:
            return fn(*args, **kwargs)
        finally:
            took = _clock[0]() - t0
            children = _stack.pop()[0]
            _spent[name] += took - children
            if _stack:
                _stack[-1][0] += took
            if name == "total":
                _spent["total (inclusive)"] += took

    return wrapper


_installed: list[bool] = []


def _install() -> None:
    if _installed:
        return
    _installed.append(True)
    for name, targets in _STAGES.items():
        for owner, attr in targets:
            if attr in vars(owner) or not isinstance(owner, type):
                setattr(owner, attr, _timed(name, getattr(owner, attr)))


def stage_table(
    detector: Any, inputs: dict[int, list[Any]], repeats: int, clock: str = "wall"
) -> list[str]:
    """Markdown rows (header included) of the stage times of ``detector`` per context size.

    The timers stay installed afterwards (every detector in the process pays their few
    microseconds): call this after any other timing.
    """
    _clock[0] = time.process_time if clock == "cpu" else time.perf_counter
    _install()
    names = [n for n in _STAGES if n != "total"]
    rows = [
        "| context tokens | " + " | ".join(names) + " | other | total ms |",
        "|---:|" + "---:|" * (len(names) + 2),
    ]
    print("\n".join(rows), flush=True)
    for size, items in inputs.items():
        for item in items:
            detector.detect_batch([item])  # warm-up
        _spent.clear()
        calls = 0
        for _ in range(repeats):
            for item in items:
                detector.detect_batch([item])
                calls += 1
        total = _spent["total (inclusive)"] * 1000 / calls
        cells = [_spent[n] * 1000 / calls for n in names]
        other = _spent["total"] * 1000 / calls
        rows.append(
            f"| {size} | "
            + " | ".join(f"{c:.1f}" for c in cells)
            + f" | {other:.1f} | {total:.1f} |"
        )
        print(rows[-1], flush=True)
    return rows


def add_input_options(ap: argparse.ArgumentParser, repeats: int) -> None:
    """The options that pick the inputs of ``bench_evidence.py`` and how often each runs."""
    ap.add_argument("--contexts", type=int, nargs="+", default=[1000, 8000, 20000])
    ap.add_argument("--answer-tokens", type=int, default=100)
    ap.add_argument("--items", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=repeats)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_input_options(ap, repeats=10)
    ap.add_argument("--backend", default="torch", choices=["torch", "onnx"])
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--clock", default="wall", choices=["wall", "cpu"])
    args = ap.parse_args()
    import torch

    torch.set_num_threads(onnx_threads())
    root = Path(
        os.environ.get("TRUTHLENS_BENCHDATA", Path(__file__).parents[2] / "shared" / "benchdata")
    )
    detector = load_detector(backend=args.backend, dtype=args.dtype, device="cpu")
    tokenizer = detector._loaded.tokenizer  # type: ignore[attr-defined]
    sentences = _sentences(root)
    rng = random.Random(5)
    inputs = {
        size: [
            _triple(tokenizer, sentences, size, args.answer_tokens, rng) for _ in range(args.items)
        ]
        for size in args.contexts
    }
    print(f"{args.clock} clock, load average before: {os.getloadavg()}")
    stage_table(detector, inputs, args.repeats, args.clock)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
