"""Detectors side by side on held-out train-role data: each source's held-out split.

Usage:
    python benchmarks/bench_heldout.py [--per-source 40] [--previous FOLDER] [--llm-answers]
        [--removal] [--only GROUP ...] [--folder DIR ...]
        [--out benchmarks/results/heldout_bundled_detector.md]

Data: the report half of ``lab.training.realdata``'s held-out part (the half the calibration did
not see; at most ``--per-source`` examples per source, positives and negatives evened out),
``lab/training/data/hardcases_test.jsonl`` and, with ``--llm-answers``,
``lab/training/data/llm_answers_test.jsonl`` (paragraph answers a local LLM wrote over held-out
contexts, labelled by a planted change; ``llm_answers`` in the report) and, with
``--removal``, those answers' evidence-removal pairs (``lab.training.removal``: the clean answer
beside its whole context, and beside the context without the pieces that back one of its
sentences; ``removal`` in the report). Nothing here was
trained on, and nothing eval-only is read. Detectors: the bundled detector (evidence
selection, the default), the lexical reference, and with ``--previous`` an older detector
folder scanned by windows (the stage-3 detector: ``git show
e1b9da3:core/_bundled/detector/<file>`` for config.json, model.safetensors, tokenizer.json
and tokenizer_config.json). Reported per source: AP, AUROC, and the share of clean answers
flagged at the detector's own threshold.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.training.heldout import claim_input, heldout_claims
from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models.detection import load_detector
from truthlens_integrations.evaluation import auroc, average_precision, threshold_curve

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _settings import add_config_option, parse_settings


def _inputs(claims: list[Any]) -> list[DetectionInput]:
    return [claim_input(c) for c in claims]


def _scores(detector: Any, items: list[DetectionInput]) -> tuple[list[float], list[bool], float]:
    started = time.perf_counter()
    scores, flagged = [], []
    for first in range(0, len(items), 16):
        for r in detector.detect_batch(items[first : first + 16]):
            scores.append(r.score)
            flagged.append(r.detected)
    return scores, flagged, time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-source", type=int, default=40)
    ap.add_argument("--previous", type=Path)
    ap.add_argument("--multi-per-family", type=int, default=30)
    ap.add_argument(
        "--out", type=Path, default=Path("benchmarks/results/heldout_bundled_detector.md")
    )
    ap.add_argument(
        "--evidence-tokens",
        type=int,
        nargs="*",
        default=[],
        help="also score the bundled detector with these evidence budgets (default 192)",
    )
    ap.add_argument(
        "--llm-answers",
        action="store_true",
        help="also the LLM-written paragraph answers over held-out contexts (llm_answers_test)",
    )
    ap.add_argument(
        "--folder",
        type=Path,
        action="append",
        default=[],
        help="also a detector folder of the bundled format (a training run's output), with "
        "evidence selection and its calibrated response score, as the bundled one (repeatable)",
    )
    ap.add_argument(
        "--removal",
        action="store_true",
        help="also the evidence-removal pairs of the LLM test answers (lab.training.removal)",
    )
    ap.add_argument(
        "--only",
        nargs="+",
        default=None,
        metavar="GROUP",
        help="score only these groups (e.g. removal llm_answers); the rest is not read",
    )
    add_config_option(ap)
    args = ap.parse_args()
    claims = heldout_claims(
        args.per_source,
        args.multi_per_family,
        llm_answers=args.llm_answers,
        removal=args.removal,
    )
    if args.only:
        claims = [c for c in claims if c.source.split("/")[0] in args.only]
    items = _inputs(claims)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(claims):
        groups[c.source.split("/")[0]].append(i)
    groups["all"] = list(range(len(claims)))
    detectors = {"bundled (evidence)": load_detector(), "lexical": load_detector("lexical")}
    for budget in args.evidence_tokens:
        detectors[f"bundled, evidence {budget} tokens"] = load_detector(evidence_tokens=budget)
    for text in args.config:
        detectors[f"bundled, {text}"] = load_detector(**parse_settings(text))
    for folder in args.folder:
        detectors[f"{folder} (evidence)"] = load_detector(
            folder, strategy="evidence", aggregation="calibrated"
        )
    if args.previous:
        detectors["stage 3 (windows)"] = load_detector(args.previous, max_windows=1000)
    results = {name: _scores(d, items) for name, d in detectors.items()}
    header = "| source | n | unsupported | " + " | ".join(
        f"{name} AP | AUROC | clean flagged" for name in detectors
    )
    lines = [
        "# Held-out train-role data: bundled detector, lexical reference, previous detector",
        "",
        f"- command: `python benchmarks/bench_heldout.py {' '.join(sys.argv[1:])}`".rstrip(),
        f"- date: {time.strftime('%Y-%m-%d')}; 2-core CPU, fp32",
        "- data: realdata held-out part, the half the calibration did not see, at most "
        f"{args.per_source} per source (balanced), plus the 450 hard-case test records"
        + (
            ", the LLM-written paragraph answers over held-out contexts (`llm_answers`)"
            if args.llm_answers
            else ""
        )
        + (", their evidence-removal pairs (`removal`)" if args.removal else "")
        + (f" (only {', '.join(args.only)})" if args.only else "")
        + " and "
        f"{args.multi_per_family} multi-part answers per data set family (`multi/...`: 3-7 "
        "held-out answers of one data set joined, half with an unsupported part; "
        "`lab.training.calibrate_response`)",
        "- time: " + ", ".join(f"{name} {results[name][2]:.0f} s" for name in detectors),
        "",
        header + " |",
        "|---|---:|---:|" + "---:|---:|---:|" * len(detectors),
    ]
    for group, idx in sorted(groups.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        gold = [bool(claims[i].label) for i in idx]
        cells = [group if group != "all" else "**all**", str(len(idx)), str(sum(gold))]
        for name in detectors:
            scores, flagged, _ = results[name]
            s = [scores[i] for i in idx]
            ap_value = average_precision(threshold_curve(gold, s))
            auc = auroc(gold, s)
            clean = [flagged[i] for i, g in zip(idx, gold, strict=True) if not g]
            rate = sum(clean) / len(clean) if clean else float("nan")
            cells += [f"{ap_value:.3f}", f"{auc:.3f}", f"{rate:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
