"""Detectors on held-out *natural* train-role data: real outputs judged by people.

Usage:
    python benchmarks/bench_natural.py [--folder DIR ...] [--boot 2000]
        [--engine] [--out benchmarks/results/natural.md]

The brief says to train and judge on real outputs. ``bench_heldout.py`` mixes them with
data whose labels come from a construction: planted edits (SummEdits, PAWS, FactCC,
DialFact's rewritten claims), hallucinations written on instruction (HaluEval), and this
repository's generated hard cases, LLM answers and evidence removals. A model that fits
a construction more closely ranks its held-out part better, and that has pointed away
from real data before (lab/training/README.md, stage 7). This benchmark keeps only texts a
system or person wrote freely, judged afterwards by people, in seven families:

* ``begin``: BEGIN and TRUE's copy of it (dialogue responses of several systems);
* ``faithdial``: the FaithDial audit of Wizard-of-Wikipedia responses;
* ``factcheck_gpt``: ChatGPT answers, claim by claim;
* ``wice``: Wikipedia sentences against their cited pages;
* ``xsumfaith``: system summaries of XSum articles;
* ``summaries``: system summaries of CNN/DM and XSum articles (TRUE's FRANK, QAGS and
  SummEval, SummaC's Polytope and SummEval);
* ``q2``: knowledge-grounded dialogue responses (TRUE's Q²).

``--engine`` also runs the guard engine with its defaults (``TruthLens.from_config(None)``:
the prompt classifier, the bundled detector, then the NLI explainer, which drops a flagged
span it finds confidently entailed) and compares its decision with the detector's alone at
the same threshold: what a user of the engine gets.

Every example of the report half (``_half == 1``, the half no calibration saw) of
``lab.training.realdata``'s held-out part is scored. The headline is the mean of the seven
families' AUROC (each family weighs the same, whatever its size), with a 95% bootstrap
interval (families resampled within themselves) for each detector's difference from the
first one. Nothing here was trained on, and nothing eval-only is read.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.training import realdata
from lab.training.calibrate_evidence import _half
from truthlens_integrations.core.models.detection import load_detector
from truthlens_integrations.evaluation import auroc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_heldout import _inputs, _scores

FAMILIES = realdata.NATURAL_FAMILIES


def natural_claims() -> list[Any]:
    """The report half of the held-out part, natural sources only, in a fixed order."""
    held = realdata.load_real(part="heldout")
    return sorted(
        (c for c in held if _half(c) == 1 and c.source in FAMILIES),
        key=lambda c: (c.source, c.uid),
    )


def family_aurocs(
    gold: np.ndarray, scores: np.ndarray, rows: dict[str, np.ndarray]
) -> dict[str, float]:
    """AUROC per family over the given row indices of each family."""
    return {
        f: auroc(gold[idx].tolist(), scores[idx].tolist())
        for f, idx in rows.items()
        if 0 < gold[idx].sum() < len(idx)
    }


def bootstrap_difference(
    gold: np.ndarray,
    first: np.ndarray,
    other: np.ndarray,
    families: np.ndarray,
    boot: int,
    seed: int = 13,
) -> tuple[float, float]:
    """95% interval of ``mean family AUROC(other) - mean family AUROC(first)``.

    Rows are resampled with replacement within each family, the same rows for both
    detectors (a paired interval).
    """
    rng = np.random.default_rng(seed)
    index = {f: np.flatnonzero(families == f) for f in sorted(set(families.tolist()))}
    diffs = []
    for _ in range(boot):
        rows = {f: rng.choice(idx, size=len(idx), replace=True) for f, idx in index.items()}
        a = family_aurocs(gold, first, rows)
        b = family_aurocs(gold, other, rows)
        shared = sorted(set(a) & set(b))
        diffs.append(np.mean([b[f] for f in shared]) - np.mean([a[f] for f in shared]))
    low, high = np.percentile(diffs, [2.5, 97.5])
    return float(low), float(high)


def engine_section(
    items: list[Any], gold: np.ndarray, families: np.ndarray, detected: list[bool]
) -> list[str]:
    """The engine's decision (detector, then NLI) beside the detector's, by family."""
    from truthlens_integrations import TruthLens

    engine = TruthLens.from_config(None)
    verdicts = [v for first in range(0, len(items), 16)
                for v in engine.guard_batch(items[first : first + 16])]  # fmt: skip
    unchecked = sum(v.score is None for v in verdicts)
    decisions = {
        "detector alone": np.array(detected),
        "engine (detector, then NLI)": np.array([v.decision == "MITIGATE" for v in verdicts]),
    }
    dropped = sum(len(v.dropped_spans) for v in verdicts)
    kept = sum(len(v.spans) for v in verdicts)
    lines = [
        "",
        "## The guard engine's decision (`--engine`)",
        "",
        f"Defaults: threshold {verdicts[0].threshold}; {unchecked} answers not checked; the "
        f"NLI explainer dropped {dropped} of {dropped + kept} flagged spans as entailed.",
        "",
        "| family | " + " | ".join(f"{n}: clean flagged / recall" for n in decisions) + " |",
        "|---|" + "---:|" * len(decisions),
    ]
    for f in [*sorted(set(families.tolist())), "all"]:
        rows = families == f if f != "all" else np.ones_like(gold)
        cells = [
            f"{d[rows & ~gold].mean():.0%} / {d[rows & gold].mean():.0%}"
            for d in decisions.values()
        ]
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--folder",
        type=Path,
        action="append",
        default=[],
        help="also a detector folder of the bundled format, with evidence selection and its "
        "calibrated response score, as the bundled one (repeatable)",
    )
    ap.add_argument("--boot", type=int, default=2000, help="bootstrap resamples")
    ap.add_argument(
        "--engine",
        action="store_true",
        help="also the guard engine's decision (detector, then NLI) beside the detector's",
    )
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/natural.md"))
    args = ap.parse_args()
    claims = natural_claims()
    items = _inputs(claims)
    gold = np.array([bool(c.label) for c in claims])
    families = np.array([FAMILIES[c.source] for c in claims])
    detectors = {"bundled": load_detector()}
    for folder in args.folder:
        detectors[str(folder)] = load_detector(
            folder, strategy="evidence", aggregation="calibrated"
        )
    detectors["lexical"] = load_detector("lexical")
    results = {name: _scores(d, items) for name, d in detectors.items()}
    scores = {name: np.array(r[0]) for name, r in results.items()}
    every = {f: np.flatnonzero(families == f) for f in sorted(set(families.tolist()))}
    per_family = {name: family_aurocs(gold, s, every) for name, s in scores.items()}
    names = list(detectors)
    lines = [
        "# Held-out natural train-role data: real outputs judged by people",
        "",
        f"- command: `python benchmarks/bench_natural.py {' '.join(sys.argv[1:])}`".rstrip(),
        f"- date: {time.strftime('%Y-%m-%d')}; 2-core CPU, fp32",
        "- data: every example of the report half of realdata's held-out part from the "
        "natural sources (see the script's docstring), seven families",
        "- time: " + ", ".join(f"{n} {results[n][2]:.0f} s" for n in names),
        "",
        "| family | n | unsupported | " + " | ".join(f"{n} AUROC" for n in names) + " |",
        "|---|---:|---:|" + "---:|" * len(names),
    ]
    for f, idx in every.items():
        cells = [f, str(len(idx)), str(int(gold[idx].sum()))]
        cells += [f"{per_family[n][f]:.3f}" if f in per_family[n] else "–" for n in names]
        lines.append("| " + " | ".join(cells) + " |")
    means = {n: float(np.mean(list(per_family[n].values()))) for n in names}
    lines.append(
        "| **mean of families** | "
        + f"{len(gold)} | {int(gold.sum())} | "
        + " | ".join(f"**{means[n]:.3f}**" for n in names)
        + " |"
    )
    lines += [
        "",
        f"Difference from `{names[0]}` (mean of families; 95% paired bootstrap, "
        f"{args.boot} resamples within families):",
        "",
    ]
    for n in names[1:]:
        low, high = bootstrap_difference(gold, scores[names[0]], scores[n], families, args.boot)
        lines.append(f"- {n}: {means[n] - means[names[0]]:+.3f} [{low:+.3f}, {high:+.3f}]")
    if args.engine:
        lines += engine_section(items, gold, families, results["bundled"][1])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
