"""The phenomena suite: held-out checks of meaning, built before any model of issue 41.

A detector that reads words, not meaning, passes negation flips and swapped roles and
flags correct restatements. This suite measures exactly that, on pairs no model of the
lab trains on:

- the **validation** files of chosen ``curriculum_nli`` tasks (train role; the chosen
  tasks' ``val.jsonl`` are held out from every training run that reads this data set),
  a fixed stratified sample per task;
- hand-written cases of the kinds a new user tried (``lab/records/phenomena/hand_cases.jsonl``):
  negation flips, swapped roles, numbers restated wrongly, added claims, correct
  restatements.

Labels: ``supported`` (entailed), ``contradicted``, ``unsupported`` (neutral / not
entailed). A detector *catches* an item when its response score reaches the threshold;
the suite reports, per group, the share of wrong items caught and of supported items
flagged (false alarms), beside the lexical reference.

    python -m lab.training.phenomena build     # writes lab/records/phenomena/suite.jsonl
    python -m lab.training.phenomena measure --model bundled \
        --out lab/records/phenomena/bundled.json
"""

from __future__ import annotations

import argparse
import json
import random
import zipfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "lab" / "records" / "phenomena"
CURRICULUM = ROOT.parent / "shared" / "benchdata" / "curriculum_nli"

#: The tasks whose validation files form the suite, chosen before any candidate exists:
#: the phenomena issue 41 names (negation, roles, numbers, restatements) and passages.
TASKS = (
    "negation",
    "boolean",
    "quantifier",
    "counting",
    "comparative",
    "syntactic_alternation",
    "syntactic_variation",
    "coreference",
    "temporal",
    "drop",
    "control",
)
PER_TASK = 60
SEED = 41
LABELS = {
    "entailment": "supported",
    "entailed": "supported",
    "contradiction": "contradicted",
    "neutral": "unsupported",
    "not-entailed": "unsupported",
}


def _val_rows(task: str, curriculum: Path) -> list[dict[str, Any]]:
    with zipfile.ZipFile(curriculum / f"{task}.zip") as archive:
        (name,) = [n for n in archive.namelist() if n.endswith("val.jsonl") and "__MACOSX" not in n]
        lines = archive.read(name).decode("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _item(task: str, label: str, row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"{task}-{row['idx']}",
        "group": task,
        "label": label,
        "context": [row["premise"]],
        "question": None,
        "answer": row["hypothesis"],
    }


def sample_task(
    task: str, rows: Sequence[dict[str, Any]], per_task: int, seed: int
) -> list[dict[str, Any]]:
    """``per_task`` items of ``task``, as even across its labels as the rows allow."""
    by_label: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_label[LABELS[row["gold_label"]]].append(row)
    rng = random.Random(f"{seed}:{task}")
    share = per_task // len(by_label)
    items = []
    for label in sorted(by_label):
        chosen = rng.sample(by_label[label], min(share, len(by_label[label])))
        items += [_item(task, label, row) for row in chosen]
    return items


def build(
    curriculum: Path = CURRICULUM, out: Path = RECORDS / "suite.jsonl"
) -> list[dict[str, Any]]:
    """Write the suite: the curriculum sample, then the hand cases."""
    items = [it for t in TASKS for it in sample_task(t, _val_rows(t, curriculum), PER_TASK, SEED)]
    hand = RECORDS / "hand_cases.jsonl"
    items += [json.loads(line) for line in hand.read_text(encoding="utf-8").splitlines() if line]
    out.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items), "utf-8")
    return items


def summarise(
    items: Sequence[dict[str, Any]], scores: Sequence[float], threshold: float
) -> dict[str, Any]:
    """Per group: wrong items caught and supported items flagged, at ``threshold``."""
    from truthlens_integrations.evaluation import auroc

    groups: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for item, score in zip(items, scores, strict=True):
        flagged = score >= threshold
        kind = "supported" if item["label"] == "supported" else "wrong"
        groups[item["group"]][kind].append(flagged)
        groups["all"][kind].append(flagged)
    table = {
        group: {
            "wrong": len(parts["wrong"]),
            "caught": round(sum(parts["wrong"]) / len(parts["wrong"]), 3)
            if parts["wrong"]
            else None,
            "supported": len(parts["supported"]),
            "flagged": round(sum(parts["supported"]) / len(parts["supported"]), 3)
            if parts["supported"]
            else None,
        }
        for group, parts in sorted(groups.items())
    }
    gold = [item["label"] != "supported" for item in items]
    return {"threshold": threshold, "auroc": round(auroc(gold, list(scores)), 4), "groups": table}


def measure(
    model: str,
    suite: Path,
    threshold: float,
    precision: str = "auto",
    calibration: str | None = None,
) -> dict[str, Any]:
    """Score every item of the suite with ``model`` (``bundled``, ``lexical`` or a folder).

    ``calibration`` (a bundled name or a file) rescores each result with that map, as a
    route with ``calibration:`` does, at the file's threshold.
    """
    from truthlens_integrations import load_detector
    from truthlens_integrations.core import DetectionInput

    items = [json.loads(line) for line in suite.read_text(encoding="utf-8").splitlines() if line]
    options = {} if precision == "auto" else {"dtype": precision}
    detector = load_detector(None if model == "bundled" else model, **options)  # type: ignore[arg-type]
    inputs = [
        DetectionInput.create(context=it["context"], question=it["question"], answer=it["answer"])
        for it in items
    ]
    results = detector.detect_batch(inputs)
    if calibration is not None:
        from truthlens_integrations._lab_api import RouteCalibration, read_calibration_file

        file = read_calibration_file(calibration)
        route, threshold = RouteCalibration.of(file), file.threshold
        results = [
            route.rescore(item, result, file.threshold)
            for item, result in zip(inputs, results, strict=True)
        ]
    scores = [r.score for r in results]
    report = summarise(items, scores, threshold)
    report["model"] = model
    report["precision"] = precision
    report["calibration"] = calibration
    report["items"] = len(items)
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.training.phenomena")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build")
    run = sub.add_parser("measure")
    run.add_argument("--model", default="bundled")
    run.add_argument("--suite", type=Path, default=RECORDS / "suite.jsonl")
    run.add_argument("--threshold", type=float, default=0.5)
    run.add_argument("--precision", default="auto", help="auto, float32 or int8")
    run.add_argument("--calibration", default=None, help="a bundled name ('rag') or a file")
    run.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "build":
        print(f"{len(build())} items -> {RECORDS / 'suite.jsonl'}")
        return
    report = measure(args.model, args.suite, args.threshold, args.precision, args.calibration)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report["groups"]["all"]), "auroc", report["auroc"])


if __name__ == "__main__":
    main()
