"""Do the ONNX graphs keep the torch fp32 verdicts? Per-answer agreement on real answers.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 TRUTHLENS_ONNX_THREADS=1 python benchmarks/bench_onnx_agreement.py \\
        [--sets ragtruth faithbench ragtruth_dev] [--limit N] [--nli 1000] [--prompts 1000] \\
        [--out benchmarks/results/onnx_agreement.json]

Runs the bundled detector (evidence selection, its defaults) on every answer of each set
with torch fp32, ONNX fp32 and ONNX int8 and compares each ONNX path with torch:

* **spans equal**: share of answers whose flagged spans (start, end) are exactly torch's;
* **verdict equal**: share whose detected/not-detected call at the default threshold is;
* **AUROC** of the response score against the gold labels, per backend;
* the largest and the 99th-percentile change of the response score.

``ragtruth`` (913 RAGTruth test responses) and ``faithbench`` are eval-only: they are
measured here, nothing is tuned on them. ``ragtruth_dev`` (train role) is read whole.
The NLI branch is compared on e-SNLI test pairs (labels equal) and the prompt head on
TruthfulQA questions and Self-Instruct prompts (decisions equal). Nothing is timed here:
see ``bench_onnx.py`` for latency.

Two checkouts (a change that must not move any output)::

    python benchmarks/bench_onnx_agreement.py --backends "torch fp32" --sets ragtruth_dev \
        --nli 0 --prompts 0 --out /tmp/a.json --save /tmp/before.jsonl     # old checkout
    python benchmarks/bench_onnx_agreement.py --backends "torch fp32" --sets ragtruth_dev \
        --nli 0 --prompts 0 --out /tmp/b.json --against /tmp/before.jsonl  # new one

``--save`` writes every answer's torch fp32 result (spans, score, verdict, token
probabilities); ``--against`` compares this checkout's with them and exits 1 unless every
record is identical.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from truthlens_integrations._lab_api import default_data_dir, ragtruth_context, read_snli
from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models.classifier import BundledPromptClassifier
from truthlens_integrations.core.models.detection import load_detector
from truthlens_integrations.core.models.nli import BundledNLI
from truthlens_integrations.evaluation import auroc, load_detection_dataset

BACKENDS = {
    "torch fp32": {"backend": "torch"},
    "onnx fp32": {"backend": "onnx", "dtype": "float32"},
    "onnx int8": {"backend": "onnx", "dtype": "int8"},
}
_DEV_TASKS = {"qa": "QA", "summary": "Summary", "data2txt": "Data2txt"}


def _ragtruth_dev(root: Path) -> list[tuple[DetectionInput, bool]]:
    out = []
    for stem, task in _DEV_TASKS.items():
        with (root / "ragtruth_dev" / f"ragtruth_dev_{stem}.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                row = json.loads(line)
                passages, question = ragtruth_context(task, row["source"])
                for response in row["responses"]:
                    answer = response["response"]
                    if answer.strip():
                        item = DetectionInput.create(
                            context=passages, question=question, answer=answer
                        )
                        out.append((item, bool(response.get("labels"))))
    return out


def _examples(name: str, root: Path, limit: int | None) -> list[tuple[DetectionInput, bool]]:
    if name == "ragtruth_dev":
        items = _ragtruth_dev(root)
        if limit:
            items = [items[i * len(items) // limit] for i in range(min(limit, len(items)))]
        return items
    return [
        (
            DetectionInput.create(context=list(e.context), question=e.question, answer=e.answer),
            e.hallucinated,
        )
        for e in load_detection_dataset(name, root, limit=limit)
    ]


def _run(detector: Any, items: list[DetectionInput]) -> list[dict[str, Any]]:
    out = []
    for start in range(0, len(items), 8):
        out.extend(
            {
                "spans": [[s.start, s.end] for s in r.spans],
                "score": r.score,
                "detected": r.detected,
                "tokens": [[t.start, t.end, t.probability] for t in r.tokens],
            }
            for r in detector.detect_batch(items[start : start + 8])
        )
    return out


def _compare(ref: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, float]:
    n = len(ref)
    diffs = np.abs(np.array([a["score"] for a in ref]) - np.array([b["score"] for b in other]))
    return {
        "spans_equal": sum(a["spans"] == b["spans"] for a, b in zip(ref, other, strict=True)) / n,
        "verdict_equal": sum(
            a["detected"] == b["detected"] for a, b in zip(ref, other, strict=True)
        )
        / n,
        "score_diff_max": float(diffs.max()),
        "score_diff_p99": float(np.quantile(diffs, 0.99)),
    }


def _detector_agreement(
    root: Path, sets: list[str], limit: int | None, backends: list[str], saved: list[Any]
) -> list[dict[str, Any]]:
    detectors = {name: load_detector(**BACKENDS[name]) for name in backends}
    rows = []
    for name in sets:
        examples = _examples(name, root, limit)
        items = [item for item, _ in examples]
        gold = [label for _, label in examples]
        results = {}
        for backend, detector in detectors.items():
            t0 = time.perf_counter()
            results[backend] = _run(detector, items)
            seconds = time.perf_counter() - t0
            print(f"{name}: {backend} {len(items)} answers in {seconds:.0f} s", flush=True)
        if "torch fp32" in results:
            saved.extend({"set": name, **r} for r in results["torch fp32"])
        for backend, res in results.items():
            row = {
                "set": name,
                "answers": len(items),
                "backend": backend,
                "auroc": auroc(gold, [r["score"] for r in res]),
            }
            if backend != "torch fp32" and "torch fp32" in results:
                row |= _compare(results["torch fp32"], res)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _nli_agreement(root: Path, n: int) -> list[dict[str, Any]]:
    pairs = [(e.premise, e.hypothesis) for e in read_snli(root / "esnli", split="test")]
    pairs = [pairs[i * len(pairs) // n] for i in range(min(n, len(pairs)))]
    labels = {}
    for backend, opts in BACKENDS.items():
        labels[backend] = [p.label for p in BundledNLI(**opts).predict(pairs)]
    return [
        {
            "model": "NLI branch (e-SNLI test pairs)",
            "pairs": len(pairs),
            "backend": backend,
            "labels_equal": sum(a == b for a, b in zip(labels["torch fp32"], got, strict=True))
            / len(pairs),
        }
        for backend, got in labels.items()
        if backend != "torch fp32"
    ]


def _prompts(root: Path, n: int) -> list[str]:
    prompts = []
    with (root / "truthfulqa" / "TruthfulQA.csv").open(encoding="utf-8") as fh:
        import csv

        prompts += [row["Question"] for row in csv.DictReader(fh)]
    for path in sorted((root / "self_instruct").glob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                text = row.get("instruction") or ""
                if text.strip():
                    prompts.append(text)
    return [prompts[i * len(prompts) // n] for i in range(min(n, len(prompts)))]


def _prompt_agreement(root: Path, n: int) -> list[dict[str, Any]]:
    prompts = _prompts(root, n)
    decisions = {}
    for backend, opts in BACKENDS.items():
        decisions[backend] = [
            p.needs_fact_check for p in BundledPromptClassifier(**opts).predict(prompts)
        ]
    return [
        {
            "model": "prompt head (TruthfulQA + Self-Instruct prompts)",
            "pairs": len(prompts),
            "backend": backend,
            "labels_equal": sum(a == b for a, b in zip(decisions["torch fp32"], got, strict=True))
            / len(prompts),
        }
        for backend, got in decisions.items()
        if backend != "torch fp32"
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", nargs="+", default=["ragtruth", "faithbench", "ragtruth_dev"])
    ap.add_argument("--limit", type=int, help="answers per set, spread evenly (default: all)")
    ap.add_argument("--nli", type=int, default=1000, help="e-SNLI test pairs (0: skip)")
    ap.add_argument("--prompts", type=int, default=1000, help="prompts (0: skip)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/onnx_agreement.json"))
    ap.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    ap.add_argument("--save", type=Path, help="write torch fp32's per-answer results here")
    ap.add_argument("--against", type=Path, help="compare torch fp32 with a --save file")
    args = ap.parse_args()
    root = default_data_dir()
    saved: list[Any] = []
    report: dict[str, Any] = {
        "command": "python benchmarks/bench_onnx_agreement.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.platform()}, {os.cpu_count()} CPU cores",
        "detector": _detector_agreement(root, args.sets, args.limit, args.backends, saved),
    }
    lines = [json.dumps(r) for r in saved]
    if args.save:
        args.save.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {len(lines)} torch fp32 results to {args.save}")
    if args.against:
        before = args.against.read_text(encoding="utf-8").splitlines()
        same = sum(a == b for a, b in zip(before, lines, strict=False))
        spans = sum(
            json.loads(a)["spans"] == json.loads(b)["spans"]
            for a, b in zip(before, lines, strict=False)
        )
        print(
            f"against {args.against}: {len(lines)} answers here, {len(before)} there; "
            f"identical records {same}, spans equal {spans}"
        )
        if same != len(lines) or len(before) != len(lines):
            raise SystemExit(1)
    if args.nli and "torch fp32" in args.backends:
        report["nli"] = _nli_agreement(root, args.nli)
        print(json.dumps(report["nli"]), flush=True)
    if args.prompts and "torch fp32" in args.backends:
        report["prompt"] = _prompt_agreement(root, args.prompts)
        print(json.dumps(report["prompt"]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
