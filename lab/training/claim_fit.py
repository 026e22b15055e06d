"""Fit the claim term of the response map, and read candidates on the select-role sets.

The claim check (``core/models/detection/_claims.py``) gives each answer the largest logit
of *not entailed* over its checked sentences. This script

1. ``signals``: runs the shipped detector (its map without the claim term) and a claim
   check (an NLI branch folder) over one answer set, and stores per answer the label, the
   detector's response score and the claim check's per-sentence logits;
2. ``fit``: fits ``z = a * logit(detector score) + b * claim + c`` on **train-role**
   signal files only (FaithJudge answers to the held-out 10% of the train sources that
   the branch did not train on, and the held-out 20% of ``ragtruth_dev`` train sources
   of ``nli_real``), every source and label weighing the same, and writes the map into a
   detector folder's ``config.json`` (the shipped coefficients times ``a``, ``claim = b``,
   the bias ``a * bias + c``);
3. ``measure``: reads signal files of select-role sets under a fitted map (the floors
   approximated by the detector score they already hold) for a first look; the figures
   the rule decides on come from ``truthlens eval`` with the map installed.

    python -m lab.training.claim_fit signals --set faithjudge_train_heldout \\
        --branch /tmp/branch --out /tmp/sig/fj_train.jsonl
    python -m lab.training.claim_fit fit /tmp/sig/fj_train.jsonl /tmp/sig/rt_train.jsonl \\
        --detector core/_bundled/detector
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from truthlens_integrations._lab_api import (
    claim_logits,
    ragtruth_dev_split,
    read_faithjudge,
    read_ragtruth_dev,
)
from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models import load_detector
from truthlens_integrations.core.models.nli import BundledNLI
from truthlens_integrations.evaluation import EvalExample, auroc, load_detection_dataset

from . import claims, nli_real

BENCHDATA = claims.BENCHDATA
SETS = (
    "faithjudge_train_heldout",
    "ragtruth_train_heldout",
    "ragtruth_dev_select",
    "attributionbench",
    "faithjudge_select",
)
FITTED_ON = (
    "claim term: FaithJudge answers to the held-out tenth of the ragtruth_dev train sources "
    "and ragtruth_dev answers of the held-out fifth of its train sources (train-role data "
    "the NLI branch did not train on); every source and label weighs the same"
)


def examples(name: str, limit: int | None) -> list[EvalExample]:
    """The answers of one named set (train-role held-out parts or select-role sets)."""
    if name == "faithjudge_train_heldout":
        sources = {s for s in ragtruth_dev_split()["train"] if claims.heldout_source(s)}
        xs = read_faithjudge(BENCHDATA, sources=sources)
    elif name == "ragtruth_train_heldout":
        xs = [
            ex
            for ex in read_ragtruth_dev(BENCHDATA / "ragtruth_dev", part="train")
            if nli_real.heldout_part(str(ex.source_id))
        ]
    else:
        xs = load_detection_dataset(name, BENCHDATA)
    if limit is not None and len(xs) > limit:
        xs = random.Random(41).sample(xs, limit)
    return xs


def _reused(file: Path | None, name: str) -> dict[str, Any]:
    """The detector's results of an earlier signals file for set ``name``, by answer id."""
    if file is None:
        return {}
    rows = [r for r in _read([file]) if r["set"] == name]
    return {r["id"]: type("Reused", (), {"score": r["score"], "status": r["status"]}) for r in rows}


def signals(args: argparse.Namespace) -> None:
    reused = _reused(args.reuse_detector, args.set)
    detector = None if reused else load_detector()
    check = BundledNLI(branch_path=args.branch) if args.branch else BundledNLI()
    xs = examples(args.set, args.limit)
    if reused:  # the same answers the earlier file read, no others
        xs = [x for x in xs if x.id in reused]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for i in range(0, len(xs), 16):
            batch = xs[i : i + 16]
            if detector is None:
                results: list[Any] = [reused[x.id] for x in batch]
            else:
                results = detector.detect_batch(
                    [
                        DetectionInput(
                            context=list(x.context), question=x.question, answer=x.answer
                        )
                        for x in batch
                    ]
                )
            for x, r in zip(batch, results, strict=True):
                logits = claim_logits(check, x.answer, list(x.context))
                row = {
                    "id": x.id,
                    "source": x.source_id or x.dataset,
                    "dataset": x.dataset,
                    "label": int(bool(x.hallucinated)),
                    "score": r.score,
                    "status": str(r.status),
                    "claims": [round(v, 4) for _, v in logits],
                }
                fh.write(json.dumps(row) + "\n")
            print(f"{min(i + 16, len(xs))}/{len(xs)}", flush=True)


def _read(files: Sequence[Path]) -> list[dict[str, Any]]:
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line]


def _features(rows: list[dict[str, Any]]) -> np.ndarray:
    def logit(p: float) -> float:
        p = min(max(p, 1e-6), 1 - 1e-6)
        return math.log(p / (1 - p))

    return np.array([[logit(r["score"]), max(r["claims"], default=0.0)] for r in rows])


def _weights(rows: list[dict[str, Any]]) -> np.ndarray:
    """Each (set, label) cell weighs the same in the fit."""
    keys = [(r["dataset"], r["label"]) for r in rows]
    counts = {k: keys.count(k) for k in set(keys)}
    return np.array([len(rows) / (len(counts) * counts[k]) for k in keys])


def fit(args: argparse.Namespace) -> None:
    from .calibrate_evidence import fit_logistic

    rows = [r for r in _read(args.files) if r["status"] != "unverifiable"]
    x, y = _features(rows), np.array([r["label"] for r in rows], dtype=float)
    (a, b), c = fit_logistic(x, y, _weights(rows))
    print(json.dumps({"a": a, "b": b, "c": c, "n": len(rows), "positives": int(y.sum())}))
    if args.detector is None:
        return
    config_file = args.detector / "config.json"
    config = json.loads(config_file.read_text())
    entry = config["truthlens"]["response_calibration"]
    for key, value in list(entry.items()):
        if isinstance(value, int | float) and key not in ("rule_sentence_floor", "rule_floor"):
            entry[key] = round(value * a, 6)
    entry["bias"] = round(entry["bias"] + c, 6)
    entry["claim"] = round(float(b), 6)
    entry["fitted_on"] = f"{entry['fitted_on']}; then {FITTED_ON}"
    config_file.write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote the map into {config_file}")


def measure(args: argparse.Namespace) -> None:
    a, b, c = args.map
    for file in args.files:
        rows = _read([file])
        x = _features(rows)
        y = [r["label"] for r in rows]
        z = a * x[:, 0] + b * x[:, 1] + c
        score = 1 / (1 + np.exp(-z))
        flagged = score >= 0.5
        clean = [f for f, t in zip(flagged, y, strict=True) if not t]
        wrong = [f for f, t in zip(flagged, y, strict=True) if t]
        print(
            f"{file.name}: n={len(rows)} AUROC {auroc(y, list(score)):.3f} "
            f"(detector {auroc(y, list(x[:, 0])):.3f}, claim {auroc(y, list(x[:, 1])):.3f}) "
            f"clean flagged {np.mean(clean):.3f} wrong caught {np.mean(wrong):.3f}"
        )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("signals")
    s.add_argument("--set", choices=SETS, required=True)
    s.add_argument("--branch", type=Path, default=None)
    s.add_argument("--limit", type=int, default=None)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument(
        "--reuse-detector",
        type=Path,
        default=None,
        help="a signals file whose detector scores to reuse (only the claim check runs)",
    )
    f = sub.add_parser("fit")
    f.add_argument("files", type=Path, nargs="+")
    f.add_argument("--detector", type=Path, default=None, help="folder whose map to extend")
    m = sub.add_parser("measure")
    m.add_argument("files", type=Path, nargs="+")
    m.add_argument("--map", type=float, nargs=3, metavar=("A", "B", "C"), default=(1, 0, 0))
    args = p.parse_args(argv)
    {"signals": signals, "fit": fit, "measure": measure}[args.command](args)


if __name__ == "__main__":
    main()
