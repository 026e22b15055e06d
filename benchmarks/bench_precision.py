"""Does the bundled detector lose anything in bfloat16? Held-out train-role data, both precisions.

Usage (from the repository root, with the training data beside the checkout)::

    python benchmarks/bench_precision.py [--halueval 400] [--synthetic 400]

Runs the held-out examples that calibration uses (``lab.training.calibrate.heldout``: the last
tenth of every HaluEval file plus synthetic examples from those contexts; never eval-only
data) through the runtime detector in float32 and in bfloat16, and prints the time, the
example-level AP and F1 at 0.5 of each, and how far the token probabilities moved.
Results are summed up in ``benchmarks/results/detector_bf16.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.training.calibrate import f1_score, heldout
from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models.detection import load_detector
from truthlens_integrations.evaluation import average_precision, threshold_curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--halueval", type=int, default=400)
    parser.add_argument("--synthetic", type=int, default=400)
    args = parser.parse_args()

    examples = heldout(args.seed, args.halueval, args.synthetic)
    gold = np.array([bool(e.spans) for e in examples])
    inputs = [
        DetectionInput.create(context=e.context, question=e.question, answer=e.answer)
        for e in examples
    ]
    tokens: dict[str, list[list[float]]] = {}
    best: dict[str, np.ndarray] = {}
    for dtype in ("float32", "bfloat16"):
        detector = load_detector(None, batch_size=16, dtype=dtype, early_exit=False)
        start = time.perf_counter()
        results = detector.detect_batch(inputs)
        seconds = time.perf_counter() - start
        tokens[dtype] = [[t.probability for t in r.tokens] for r in results]
        best[dtype] = np.array([max(p, default=0.0) for p in tokens[dtype]])
        print(
            f"{dtype}: {seconds:.0f} s for {len(inputs)}, AP "
            f"{average_precision(threshold_curve(gold.tolist(), best[dtype].tolist())):.4f}, "
            "F1 at 0.5 "
            f"{f1_score(best[dtype] > 0.5, gold):.4f}"
        )
    moved = np.concatenate(
        [
            np.abs(np.array(a) - np.array(b))
            for a, b in zip(tokens["float32"], tokens["bfloat16"], strict=True)
            if a
        ]
    )
    changed = int(((best["float32"] > 0.5) != (best["bfloat16"] > 0.5)).sum())
    print(
        f"token probability moved: mean {moved.mean():.4f}, p99 {np.quantile(moved, 0.99):.4f}, "
        f"max {moved.max():.4f}; decisions at 0.5 changed: {changed} of {len(gold)}"
    )


if __name__ == "__main__":
    main()
