"""Verdicts before and after a refactor: identical on the answers of the ragtruth_dev select split.

Usage:
    python benchmarks/bench_verdict_identity.py --out FILE.jsonl [--limit N] [--precision float32]
    python benchmarks/bench_verdict_identity.py --compare BEFORE.jsonl AFTER.jsonl

The first form runs the engine's guard with the default policy on each answer of the
``ragtruth_dev`` select split (select role: measured, never trained on) and writes, per
answer, what a user sees: the decision, the score, the threshold and the spans (offsets,
text, NLI label, severity). Run it on the commit before a change that should not change
behaviour and on the commit after; the second form prints how many answers differ and the
first differences. Scores are compared to 1e-9: a refactor may not move them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from truthlens_integrations import TruthLens
from truthlens_integrations.evaluation import load_detection_dataset


def _row(ex_id: str, verdict: Any) -> dict[str, Any]:
    out = verdict.to_dict()
    return {
        "id": ex_id,
        "decision": out.get("decision"),
        "score": out.get("score"),
        "threshold": out.get("threshold"),
        "spans": [
            {k: s.get(k) for k in ("start", "end", "text", "nli_label", "severity", "confidence")}
            for s in out.get("spans", [])
        ],
    }


def run(out: Path, limit: int | None, precision: str) -> None:
    examples = load_detection_dataset("ragtruth_dev_select")
    if limit:
        examples = examples[:limit]
    engine = TruthLens.from_config({"hallucination": {"precision": precision}})
    started = time.perf_counter()
    with out.open("w", encoding="utf-8") as fh:
        for ex in examples:
            verdict = engine.guard(context=list(ex.context), question=ex.question, answer=ex.answer)
            fh.write(json.dumps(_row(ex.id, verdict)) + "\n")
    print(f"{len(examples)} answers in {time.perf_counter() - started:.0f} s -> {out}")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=0, abs_tol=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def compare(before: Path, after: Path) -> int:
    rows_a = [json.loads(line) for line in before.read_text(encoding="utf-8").splitlines()]
    rows_b = [json.loads(line) for line in after.read_text(encoding="utf-8").splitlines()]
    if [r["id"] for r in rows_a] != [r["id"] for r in rows_b]:
        print("the two files hold different answers")
        return 2
    differ = [(a, b) for a, b in zip(rows_a, rows_b, strict=True) if not _same(a, b)]
    print(f"{len(rows_a)} answers, {len(differ)} differ")
    for a, b in differ[:5]:
        print(json.dumps(a)[:300], "\n  ->", json.dumps(b)[:300])
    return 1 if differ else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--precision", default="float32", help="the policy's precision")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = p.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        p.error("--out or --compare is required")
    run(args.out, args.limit, args.precision)
    return 0


if __name__ == "__main__":
    sys.exit(main())
