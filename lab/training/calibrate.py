"""Calibrate a trained detector so that 0.5 is its best cut on held-out train data.

Run from the repository root after ``lab.training.train``::

    python -m lab.training.calibrate runs/stage3/detector

The runtime flags a token when its probability exceeds ``token_threshold`` (0.5 by
default, as LettuceDetect) and, with either aggregation, an answer is detected exactly
when some token is flagged. A model whose best example-level cut is, say, 0.35 is then
miscalibrated for every default and every policy threshold. Adding ``b`` to the
hallucinated class's logit bias turns every token probability ``p`` into
``sigmoid(logit(p) + b)``: the ranking is unchanged and the best cut ``t`` moves to 0.5
with ``b = -logit(t)``.

``t`` is chosen only on held-out **train-role** data (the last 10% of every HaluEval
file, and synthetic examples built from those held-out contexts, long answers included),
run through the real runtime detector (windows and all). Eval-only data is never read.
The shift and the held-out F1 before and after are recorded in
``training_metrics.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
from pathlib import Path
from typing import Any

import numpy as np

from . import data

log = logging.getLogger("lab.training.calibrate")


def heldout(seed: int, n_halueval: int, n_synthetic: int) -> list[Any]:
    """Held-out detector examples: HaluEval's last tenth and synthetic ones from it."""
    halu = data.halueval_examples("heldout", random.Random(seed + 1))
    random.Random(seed + 2).shuffle(halu)
    synthetic = data.synthetic_examples("heldout", random.Random(seed + 5), n_synthetic, 0.4)
    return halu[:n_halueval] + synthetic


def max_probabilities(folder: Path, examples: list[Any]) -> np.ndarray:
    """Each example's largest token probability under the runtime detector."""
    from truthlens_integrations.core import DetectionInput
    from truthlens_integrations.core.models.detection import load_detector

    detector = load_detector(folder, batch_size=16, early_exit=False)
    inputs = [
        DetectionInput.create(context=e.context, question=e.question, answer=e.answer)
        for e in examples
    ]
    results = detector.detect_batch(inputs)
    return np.array([max((t.probability for t in r.tokens), default=0.0) for r in results])


def f1_score(pred: np.ndarray, gold: np.ndarray) -> float:
    """Example-level F1 of boolean predictions against boolean gold labels."""
    tp = float((pred & gold).sum())
    return 2 * tp / max(float(pred.sum() + gold.sum()), 1.0)


def best_cut(scores: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    """The cut with the best example-level F1 (ties: the one nearest 0.5), and that F1."""
    best = (0.0, 0.5)
    for cut in np.round(np.arange(0.05, 0.96, 0.01), 2):
        f1 = f1_score(scores > cut, gold)
        if f1 > best[0] + 1e-9 or (
            abs(f1 - best[0]) <= 1e-9 and abs(cut - 0.5) < abs(best[1] - 0.5)
        ):
            best = (f1, float(cut))
    return best[1], best[0]


def shift_bias(folder: Path, shift: float) -> None:
    """Add ``shift`` to the hallucinated class's bias of the token head, in place."""
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    weights = load_file(str(path))
    bias = weights["classifier.bias"].float()
    bias[1] += shift
    weights["classifier.bias"] = bias.to(weights["classifier.bias"].dtype)
    save_file({k: v.contiguous() for k, v in weights.items()}, str(path), metadata={"format": "pt"})


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("folder", type=Path)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--halueval", type=int, default=400)
    p.add_argument("--synthetic", type=int, default=400)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    examples = heldout(args.seed, args.halueval, args.synthetic)
    gold = np.array([bool(e.spans) for e in examples])
    scores = max_probabilities(args.folder, examples)
    cut, f1 = best_cut(scores, gold)
    shift = -math.log(cut / (1.0 - cut))
    log.info(
        "held-out: %d examples, best cut %.2f (F1 %.3f), bias shift %+.3f",
        len(gold),
        cut,
        f1,
        shift,
    )
    shift_bias(args.folder, shift)
    # the same shift applied to the measured probabilities (the loaded model is cached)
    clipped = np.clip(scores, 1e-6, 1 - 1e-6)
    after = 1.0 / (1.0 + np.exp(-(np.log(clipped / (1 - clipped)) + shift)))
    f1_half = f1_score(after > 0.5, gold)
    log.info("after: F1 at 0.5 = %.3f (best cut now %.2f)", f1_half, best_cut(after, gold)[0])

    metrics_path = args.folder / "training_metrics.json"
    saved = json.loads(metrics_path.read_text())
    saved["calibration"] = {
        "heldout_examples": len(gold),
        "heldout_hallucinated": int(gold.sum()),
        "best_cut_before": cut,
        "f1_at_best_cut_before": round(f1, 4),
        "bias_shift": round(shift, 4),
        "f1_at_0.5_after": round(f1_half, 4),
        "command": f"python -m lab.training.calibrate {args.folder} --seed {args.seed} "
        f"--halueval {args.halueval} --synthetic {args.synthetic}",
    }
    metrics_path.write_text(json.dumps(saved, indent=1))
    from .card import write_cards

    write_cards(args.folder)


if __name__ == "__main__":
    main()
