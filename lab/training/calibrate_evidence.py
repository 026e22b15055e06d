"""Calibrate a detector folder so that its response score is a probability.

The runtime :class:`EvidenceDetector` (evidence selection, the bundled input format) runs
over held-out **train-role** examples: realdata's held-out part and the hard-case test
file are *not* used here; the calibration set is the first half (by a hash of the
context) of realdata's held-out part, the second half is kept for the report. The
largest token logit margin of each answer is fitted to its label by Platt scaling
(``p = sigmoid(scale * margin + shift)``); ``scale`` and ``shift`` are written to the
folder's ``config.json`` (``truthlens.calibration``), where the runtime applies them to
every token, so the response score (the largest token probability) and each span's
confidence are calibrated together and threshold 0.5 means 50%.

The fitted map holds for the mix of sources it was fitted on (about half the held-out
answers are unsupported); on data with another share of hallucinated answers the same
score means a different rate.

    python -m lab.training.calibrate_evidence runs/evidence
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from truthlens_integrations._lab_api import reliability_bins
from truthlens_integrations.evaluation import expected_calibration_error

from . import realdata
from ._cli import folder_args
from .train_evidence import balanced

log = logging.getLogger("calibrate_evidence")


def _half(claim: Any) -> int:
    return hashlib.sha1(f"cal:{claim.context[:400]}".encode()).digest()[0] % 2


def margins(folder: Path, claims: list[Any], batch: int = 16) -> np.ndarray:
    """Largest token logit margin of each claim through the runtime detector, uncalibrated."""
    from truthlens_integrations.core import DetectionConfig, DetectionInput
    from truthlens_integrations.core.models.detection import EvidenceDetector

    detector = EvidenceDetector(
        folder, config=DetectionConfig(aggregation="span_max"), device="cpu", dtype="float32"
    )
    detector._scale, detector._shift = 1.0, 0.0  # raw probabilities: fit from scratch
    out = []
    for first in range(0, len(claims), batch):
        items = [
            DetectionInput.create(
                context=[p for p in c.context.split("\n") if p.strip()],
                question=c.question or None,
                answer=c.answer,
            )
            for c in claims[first : first + batch]
        ]
        for result in detector.detect_batch(items):
            p = max((t.probability for t in result.tokens), default=0.0)
            p = min(max(p, 1e-6), 1 - 1e-6)
            out.append(math.log(p / (1 - p)))
    return np.array(out)


def fit_logistic(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray, steps: int = 100
) -> tuple[np.ndarray, float]:
    """Weighted logistic regression (coefficients, bias) by damped Newton steps."""
    z = np.c_[x, np.ones(len(x))]

    def loss(b: np.ndarray) -> float:
        s = z @ b
        return float(np.sum(weights * (np.logaddexp(0, s) - y * s)))

    b = np.zeros(z.shape[1])
    current = loss(b)
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(z @ b, -40, 40)))
        grad = z.T @ (weights * (p - y))
        hess = (z * (weights * p * (1 - p))[:, None]).T @ z + 1e-6 * np.eye(len(b))
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-6 and loss(b - t * step) > current:
            t /= 2
        if t <= 1e-6:
            break
        b = b - t * step
        previous, current = current, loss(b)
        if previous - current < 1e-10:
            break
    return b[:-1], float(b[-1])


def fit_platt(x: np.ndarray, y: np.ndarray, steps: int = 200) -> tuple[float, float]:
    """Logistic regression of ``y`` on ``x`` (two parameters: scale and shift)."""
    coef, shift = fit_logistic(x[:, None], y, np.ones(len(x)), steps)
    return float(coef[0]), shift


def ece(p: np.ndarray, y: np.ndarray) -> float:
    """Expected calibration error over 10 equal-width bins (the eval harness's)."""
    return expected_calibration_error(reliability_bins(y.astype(bool).tolist(), p.tolist()))


def main(argv: list[str] | None = None) -> None:
    args = folder_args(__doc__, argv, per_source=60)
    started = time.time()
    held = realdata.load_real(part="heldout", seed=args.seed)
    rng = random.Random(args.seed)
    parts: dict[int, list[Any]] = defaultdict(list)
    for c in held:
        parts[_half(c)].append(c)
    fit_set = balanced(parts[0], args.per_source, rng)
    report_set = balanced(parts[1], args.per_source, rng)
    x_fit = margins(args.folder, fit_set)
    y_fit = np.array([c.label for c in fit_set], dtype=float)
    x_rep = margins(args.folder, report_set)
    np.savez(args.folder / "calibration_margins.npz", x_fit=x_fit, x_rep=x_rep)
    y_rep = np.array([c.label for c in report_set], dtype=float)
    scale, shift = fit_platt(x_fit, y_fit)

    def cal(x: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-np.clip(scale * x + shift, -40, 40)))

    raw_rep = 1 / (1 + np.exp(-np.clip(x_rep, -40, 40)))
    metrics = {
        "scale": scale,
        "shift": shift,
        "fit_examples": len(fit_set),
        "report_examples": len(report_set),
        "report_ece_before": ece(raw_rep, y_rep),
        "report_ece_after": ece(cal(x_rep), y_rep),
        "report_flagged_clean_before": float((raw_rep[y_rep == 0] > 0.5).mean()),
        "report_flagged_clean_after": float((cal(x_rep)[y_rep == 0] > 0.5).mean()),
        "report_recall_after": float((cal(x_rep)[y_rep == 1] > 0.5).mean()),
        "minutes": round((time.time() - started) / 60, 1),
    }
    log.info("calibration: %s", json.dumps(metrics, indent=1))
    config_path = args.folder / "config.json"
    config = json.loads(config_path.read_text())
    config.setdefault("truthlens", {})["calibration"] = {
        "method": "platt",
        "scale": round(scale, 6),
        "shift": round(shift, 6),
        "fitted_on": "realdata held-out part, first half by context hash (train-role data)",
    }
    config_path.write_text(json.dumps(config, indent=2) + "\n")
    (args.folder / "calibration_metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")


if __name__ == "__main__":
    main()
