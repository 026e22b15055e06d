"""Per-stage latency of the guard pipeline with the bundled models (HaluGate-style table).

Usage:
    python benchmarks/bench_pipeline.py [--repeats 30] [--out benchmarks/results/pipeline.md]

Three request shapes, each guarded ``--repeats`` times after a warm-up:
- non-factual: a creative prompt, so only the prompt classifier runs;
- factual, short: the Eiffel tool record, question and a wrong answer (two spans);
- factual, ~1k tokens: the same answer against a ~1,000-token context.

Per stage (classifier, routing, detector, context = premise selection, nli, action,
total) it reports p50 / p99 in ms, and the pipeline's own overhead: the time of a call
spent outside the model calls (classifier, detector, NLI forward passes). The overhead
is measured inside the same call, so other load on the machine slows both parts alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from truthlens_integrations import TruthLens
from truthlens_integrations._lab_api import machine_info

EIFFEL_CONTEXT = (
    '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters", '
    '"location": "Paris, France"}'
)
EIFFEL_QUESTION = "When was the Eiffel Tower built?"
EIFFEL_ANSWER = "The Eiffel Tower was built in 1950 and is 500 meters tall."
FILLER = (
    "The tower has three levels for visitors, with restaurants on the first and second "
    "levels. Tickets can be bought online or at the entrance, and the lifts run every "
    "few minutes during opening hours. "
)
MODEL_STAGES = ("classifier", "detector", "nli")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def _requests() -> dict[str, dict[str, Any]]:
    long_context = [EIFFEL_CONTEXT, *([FILLER] * 24)]
    return {
        "non-factual": {
            "context": None,
            "question": "Write a short poem about autumn leaves.",
            "answer": "Leaves of amber drift and fall, / whispering softly to us all.",
        },
        "factual, short": {
            "context": [EIFFEL_CONTEXT],
            "question": EIFFEL_QUESTION,
            "answer": EIFFEL_ANSWER,
        },
        "factual, ~1k tokens": {
            "context": long_context,
            "question": EIFFEL_QUESTION,
            "answer": EIFFEL_ANSWER,
        },
    }


def _run(engine: TruthLens, request: dict[str, Any], repeats: int) -> list[dict[str, float]]:
    engine.guard(**request)  # warm-up
    rows = []
    for _ in range(repeats):
        start = time.perf_counter()
        verdict = engine.guard(**request)
        wall = (time.perf_counter() - start) * 1000.0
        row = dict(verdict.latency_ms)
        row["wall"] = wall
        row["overhead"] = wall - sum(row.get(stage, 0.0) for stage in MODEL_STAGES)
        rows.append(row)
    return rows


def _table_rows(
    engine: TruthLens,
    name: str,
    request: dict[str, Any],
    repeats: int,
    stages: tuple[str, ...],
) -> list[str]:
    rows = _run(engine, request, repeats)
    out = []
    for stage in (*stages, "overhead"):
        values = [r[stage] for r in rows if stage in r]
        if values:
            out.append(
                f"| {name} | {stage} | {statistics.median(values):.2f} | {_pct(values, 0.99):.2f} |"
            )
    last = engine.guard(**request)
    spans = [(s.text, s.nli_label) for s in last.spans]
    out.append(f"| {name} | (verdict) | {last.decision.value}, spans {spans} | |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/pipeline.md"))
    args = parser.parse_args()

    engine = TruthLens.from_config(None)
    stages = ("classifier", "routing", "detector", "context", "nli", "action", "total")
    body: list[str] = []
    for name, request in _requests().items():
        body += _table_rows(engine, name, request, args.repeats, stages)
    info = machine_info()  # after the runs, so that torch's version and threads are known
    lines = [
        "# Guard pipeline: latency per stage",
        "",
        f"- machine: {info['machine']}, {info['cpu_count']} cores, Python {info['python']}, "
        f"torch {info.get('torch', '?')} ({info.get('torch_threads', '?')} threads), CPU",
        f"- load average during the run (1/5/15 min): {_load()}",
        "- models: the bundled detector, NLI explainer and prompt classifier (MiniLM-L6)",
        f"- command: `python benchmarks/bench_pipeline.py --repeats {args.repeats}`",
        "- overhead = wall time of `guard` minus the classifier, detector and NLI stages "
        "(routing, premise selection, decision, action, metadata, validation)",
        "",
        "| request | stage | p50 ms | p99 ms |",
        "|---|---|---|---|",
    ]
    lines += body
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
