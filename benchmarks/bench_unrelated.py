"""Unrelated passages do not move a verdict.

Usage:
    python benchmarks/bench_unrelated.py [--model bundled|lexical|FOLDER] [--limit 200]
        [--out benchmarks/results/unrelated.md]

A retriever returns passages about other things beside the one that matters. A detector
that reads meaning judges an answer by the evidence for it, so adding such passages to
the context should not change its verdict. This benchmark takes answers of the
``ragtruth_dev`` select split (select role: measured, never trained on), a seeded sample
of ``--limit``, and scores each twice: with its own context, and with three passages of
other sources appended (sources of another task, drawn with a fixed seed; the passage
that matters stays first). It reports the share of verdicts (flagged or not at the
default threshold) that change, and how far the response scores move.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from truthlens_integrations._lab_api import default_data_dir
from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models import load_detector
from truthlens_integrations.evaluation import load_detection_dataset

ADDED = 3
SEED = 41


def _cases(limit: int) -> list[tuple[DetectionInput, DetectionInput]]:
    examples = load_detection_dataset("ragtruth_dev_select", default_data_dir())
    rng = random.Random(SEED)
    picked = rng.sample(examples, min(limit, len(examples)))
    out = []
    for ex in picked:
        others = [o for o in examples if o.task_type != ex.task_type and o.context]
        passages = [rng.choice(rng.choice(others).context) for _ in range(ADDED)]
        own = DetectionInput(context=list(ex.context), question=ex.question, answer=ex.answer)
        more = DetectionInput(
            context=[*ex.context, *passages], question=ex.question, answer=ex.answer
        )
        out.append((own, more))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", default=None)
    p.add_argument("--limit", type=int, default=200)
    p.add_argument("--precision", default="auto", help="auto, float32 or int8")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    options = {} if args.precision == "auto" else {"dtype": args.precision}
    detector = load_detector(args.model, **options)  # type: ignore[arg-type]
    cases = _cases(args.limit)
    started = time.perf_counter()
    before = detector.detect_batch([own for own, _ in cases])
    after = detector.detect_batch([more for _, more in cases])
    seconds = time.perf_counter() - started
    changed = sum(1 for a, b in zip(before, after, strict=True) if a.detected != b.detected)
    moves = [abs(a.score - b.score) for a, b in zip(before, after, strict=True)]
    lines = [
        "# Unrelated passages and the verdict",
        "",
        f"`python benchmarks/bench_unrelated.py --model {args.model or 'bundled'} "
        f"--limit {args.limit} --precision {args.precision}` ({len(cases)} `ragtruth_dev` "
        f"select answers, {ADDED} passages of other tasks' sources added, seed {SEED}; run by "
        f"{getattr(detector, 'backend', 'no model')}; {seconds:.0f} s on this machine)",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| verdicts changed | {changed} of {len(cases)} ({changed / len(cases):.1%}) |",
        f"| flagged with own context | {sum(r.detected for r in before)} |",
        f"| flagged with passages added | {sum(r.detected for r in after)} |",
        f"| response score moved, median | {statistics.median(moves):.3f} |",
        f"| response score moved, 95th percentile | "
        f"{sorted(moves)[int(0.95 * (len(moves) - 1))]:.3f} |",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
