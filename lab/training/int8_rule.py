"""Issue 41 item 6: the figures of ``lab/records/int8/RULE.md``, fp32 against int8.

Usage (from the repository root; every figure comes from the product's own commands)::

    for p in float32 int8; do
      truthlens eval --dataset ragtruth_dev_select --precision $p --out DIR/rt_$p --no-progress
      truthlens eval --dataset faithjudge_select --limit 800 --precision $p --out DIR/fj_$p
      truthlens eval --dataset attributionbench --limit 600 --precision $p --out DIR/ab_$p
      python -m lab.training.phenomena measure --precision $p --out DIR/ph_$p.json
      python benchmarks/bench_unrelated.py --limit 200 --precision $p --out DIR/un_$p.md
      python -m lab.training.int8_rule nli --precision $p --out DIR/nli_$p.json
    done
    python -m lab.training.int8_rule table DIR

``table`` prints each row of the rule with both figures and whether int8 holds it. (The
progress bars of ``truthlens eval`` can be hidden with ``--no-progress``.)
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PRECISIONS = ("float32", "int8")


def _eval(folder: Path) -> dict[str, Any]:
    (report,) = folder.glob("*.json")
    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return data


def _clean_flagged(example: dict[str, Any]) -> float:
    return float(example["fp"]) / max(1, example["fp"] + example["tn"])


def _unrelated(path: Path) -> float:
    match = re.search(r"verdicts changed \| (\d+) of (\d+)", path.read_text(encoding="utf-8"))
    if match is None:
        raise ValueError(f"{path}: no 'verdicts changed' row")
    return int(match[1]) / int(match[2])


def figures(root: Path, precision: str) -> dict[str, float]:
    """Every figure the rule reads, for one precision's outputs under ``root``."""
    rt = _eval(root / f"rt_{precision}")["overall"]
    fj = _eval(root / f"fj_{precision}")["overall"]
    ab = _eval(root / f"ab_{precision}")["overall"]
    phenomena = json.loads((root / f"ph_{precision}.json").read_text(encoding="utf-8"))
    nli = json.loads((root / f"nli_{precision}.json").read_text(encoding="utf-8"))
    return {
        "ragtruth_dev select AUROC": rt["auroc"],
        "ragtruth_dev select character F1": rt["char"]["f1"],
        "ragtruth_dev select clean flagged": _clean_flagged(rt["example"]),
        "FaithJudge select AUROC": fj["auroc"],
        "FaithJudge consistent flagged": _clean_flagged(fj["example"]),
        "FaithJudge inconsistent caught": fj["example"]["recall"],
        "AttributionBench AUROC": ab["auroc"],
        "phenomena wrong caught": phenomena["groups"]["all"]["caught"],
        "phenomena supported flagged": phenomena["groups"]["all"]["flagged"],
        "unrelated passages: verdicts changed": _unrelated(root / f"un_{precision}.md"),
        "NLI accuracy, SNLI dev": nli["accuracy"],
    }


# figure -> (the most int8 may fall below fp32, the most it may rise above), from RULE.md
_BOUNDS: dict[str, tuple[float, float]] = {
    "ragtruth_dev select AUROC": (0.005, float("inf")),
    "ragtruth_dev select character F1": (0.005, float("inf")),
    "ragtruth_dev select clean flagged": (float("inf"), 0.01),
    "FaithJudge select AUROC": (0.005, float("inf")),
    "FaithJudge consistent flagged": (float("inf"), 0.01),
    "FaithJudge inconsistent caught": (0.02, float("inf")),
    "AttributionBench AUROC": (0.005, float("inf")),
    "phenomena wrong caught": (0.02, float("inf")),
    "phenomena supported flagged": (float("inf"), 0.02),
    "unrelated passages: verdicts changed": (float("inf"), 0.01),
    "NLI accuracy, SNLI dev": (0.01, float("inf")),
}


def table(root: Path) -> str:
    """The rule's rows, fp32 beside int8, with whether each holds."""
    fp32, int8 = (figures(root, p) for p in PRECISIONS)
    lines = ["| figure | fp32 | int8 | change | holds |", "|---|---:|---:|---:|---|"]
    for name, (below, above) in _BOUNDS.items():
        change = int8[name] - fp32[name]
        holds = -below <= change + 1e-9 and change <= above + 1e-9
        lines.append(
            f"| {name} | {fp32[name]:.3f} | {int8[name]:.3f} | {change:+.3f} | "
            f"{'yes' if holds else '**no**'} |"
        )
    return "\n".join(lines)


def nli_accuracy(precision: str, limit: int) -> dict[str, Any]:
    """The bundled NLI explainer's accuracy on SNLI dev (train role, measured only)."""
    from truthlens_integrations._lab_api import default_data_dir, read_snli, subsample
    from truthlens_integrations.core.models.nli import BundledNLI
    from truthlens_integrations.evaluation import run_nli_evaluation

    pairs = subsample(read_snli(default_data_dir() / "esnli", split="dev"), limit)
    model = BundledNLI(device="cpu", dtype=None if precision == "auto" else precision)
    report = run_nli_evaluation(
        lambda batch: [p.label for p in model.predict(batch)],
        pairs,
        batch_size=32,
        progress=False,
        model_id=f"bundled-nli-{precision}",
        dataset_name="snli-dev",
    )
    return {"precision": precision, "n": len(pairs), "accuracy": report.metrics.accuracy}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.training.int8_rule")
    sub = parser.add_subparsers(dest="command", required=True)
    nli = sub.add_parser("nli")
    nli.add_argument("--precision", choices=PRECISIONS, required=True)
    nli.add_argument("--limit", type=int, default=2000)
    nli.add_argument("--out", type=Path, required=True)
    show = sub.add_parser("table")
    show.add_argument("root", type=Path)
    args = parser.parse_args(argv)
    if args.command == "nli":
        result = nli_accuracy(args.precision, args.limit)
        args.out.write_text(json.dumps(result) + "\n", encoding="utf-8")
        print(result)
        return
    print(table(args.root))


if __name__ == "__main__":
    main()
