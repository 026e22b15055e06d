"""Per-example agreement of two ``truthlens eval`` reports of the same data set.

Usage:
    python benchmarks/compare_predictions.py A.json B.json

For example the same detector on the CPU in fp32 and on a GPU in bf16: the largest,
median and mean difference of the response score, how many verdicts flip, and how many
answers get exactly the same spans.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def _predictions(path: Path) -> dict[str, dict[str, object]]:
    report = json.loads(path.read_text(encoding="utf-8"))
    return {str(p["id"]): p for p in report["predictions"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("first", type=Path)
    ap.add_argument("second", type=Path)
    args = ap.parse_args()
    first, second = _predictions(args.first), _predictions(args.second)
    if set(first) != set(second):
        raise SystemExit(f"the reports hold different examples ({len(first)} / {len(second)})")
    diffs = [abs(float(first[i]["score"]) - float(second[i]["score"])) for i in first]  # type: ignore[arg-type]
    flips = sum(first[i]["detected"] != second[i]["detected"] for i in first)
    same_spans = sum(first[i]["spans"] == second[i]["spans"] for i in first)
    print(
        f"{len(first)} examples: score difference max {max(diffs):.4f}, "
        f"median {statistics.median(diffs):.4f}, mean {statistics.mean(diffs):.4f}; "
        f"{flips} verdicts differ; {same_spans} answers have the same spans"
    )


if __name__ == "__main__":
    main()
