"""NLI branches on pairs of real answers' claims and the evidence they were judged on.

Usage:
    python benchmarks/bench_nli_real.py [--branch NAME=FOLDER ...] [--baseline NAME]
        [--candidate NAME ...] [--snli-test] [--out lab/records/nli_real]

Pairs come from ``lab/training/nli_real.py`` (built as the engine builds them: the answer
sentence as hypothesis, the two context sentences sharing the most words as premise) and
are scored through ``BundledNLI``, the runtime path. Sets: AttributionBench (select role),
``ragtruth_dev``'s select sources, the held-out 20% of the train-role real pairs (ExpertQA
questions, ``ragtruth_dev`` train sources) and the SNLI dev pairs ``lab.training.train_nli``
holds out. Nothing eval-only is read unless ``--snli-test`` asks for SNLI test accuracy,
which is measured after the rule has decided and decides nothing.

Per set: AUROC of P(entailment) for entailed against not entailed pairs; binary accuracy
(labelled entailment or not); three-way accuracy where the labels allow it; how often an
entailed pair is labelled contradiction (shown as severity 4); how often a not entailed pair
is labelled entailment with confidence >= 0.9 (the engine drops such spans). With
``--candidate`` (repeatable) and ``--baseline`` the rule of
``lab/records/nli_real/RULE.md`` is applied to each candidate; of those that pass, the
one with the higher mean AUROC on the two rule sets ships. The new user's six cases
(``tests/data/user_cases.jsonl``) run through the whole engine with each branch. Writes
``measures.md`` and ``measures.json`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.training import data, nli_real
from truthlens_integrations.core.models.nli import BundledNLI, BundledNLIAdapter
from truthlens_integrations.evaluation import auroc

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "core" / "_bundled" / "nli"
USER_CASES = ROOT / "tests" / "data" / "user_cases.jsonl"
DROP = 0.9  # the default nli_model.confidence_threshold: an entailment this sure drops the span
RULE_SETS = ("attributionbench", "ragtruth_dev select")
SET_NOTES = {
    "attributionbench": "select role; binary labels",
    "ragtruth_dev select": "select sources of the committed split",
    "expertqa held-out": "train role, 20% of questions never trained on",
    "ragtruth_dev train held-out": "train role, 20% of train sources never trained on",
    "snli-dev held-out": "train role, the split train_nli holds out (seed 13)",
}


def pair_sets(root: Path) -> dict[str, list[nli_real.RealPair]]:
    """Every set this benchmark scores, by name."""
    snli = [
        nli_real.RealPair(e.premise, e.hypothesis, data.NLI_LABELS[e.label], "snli", "snli")  # type: ignore[arg-type]
        for e in data.nli_examples(random.Random(13))[1]
        if e.source == "snli"
    ]
    return {
        "attributionbench": nli_real.attributionbench_pairs(root / "attributionbench"),
        "ragtruth_dev select": nli_real.ragtruth_pairs(root / "ragtruth_dev", "select"),
        "expertqa held-out": [
            p for p in nli_real.expertqa_pairs(root / "expertqa") if nli_real.heldout_part(p.group)
        ],
        "ragtruth_dev train held-out": [
            p
            for p in nli_real.ragtruth_pairs(root / "ragtruth_dev", "train")
            if nli_real.heldout_part(p.group)
        ],
        "snli-dev held-out": snli,
    }


def measure(
    pairs: Sequence[nli_real.RealPair], probs: Sequence[dict[str, float]]
) -> dict[str, Any]:
    """The figures of one branch on one set."""
    predicted = [max(p, key=p.__getitem__) for p in probs]
    entailed = [p.entailed for p in pairs]
    supported = [lab for lab, e in zip(predicted, entailed, strict=True) if e]
    unsupported = [
        (lab, prob[lab]) for lab, prob, e in zip(predicted, probs, entailed, strict=True) if not e
    ]
    three_way = [
        (lab, p.label)
        for lab, p in zip(predicted, pairs, strict=True)
        if p.label != nli_real.NOT_ENTAILED
    ]
    conflicts = [lab for lab, p in zip(predicted, pairs, strict=True) if p.label == "contradiction"]
    n = len(pairs)
    return {
        "n": n,
        "gold": dict(Counter(p.label for p in pairs)),
        "auroc": auroc(entailed, [p["entailment"] for p in probs]),
        "binary_accuracy": sum(
            (lab == "entailment") == e for lab, e in zip(predicted, entailed, strict=True)
        )
        / n,
        "three_way_accuracy": (
            sum(a == b for a, b in three_way) / len(three_way) if len(three_way) == n else None
        ),
        "supported_to_contradiction": (
            supported.count("contradiction") / len(supported) if supported else None
        ),
        "unsupported_dropped": (
            sum(lab == "entailment" and c >= DROP for lab, c in unsupported) / len(unsupported)
            if unsupported
            else None
        ),
        "contradiction_recall": (
            conflicts.count("contradiction") / len(conflicts) if conflicts else None
        ),
        "predicted_on_supported": dict(Counter(supported)),
        "predicted_on_unsupported": dict(Counter(lab for lab, _ in unsupported)),
    }


def score(folder: Path, pairs: Sequence[nli_real.RealPair]) -> list[dict[str, float]]:
    """Class probabilities of each pair under the branch in ``folder``."""
    model = BundledNLI(branch_path=folder, device="cpu")
    preds = model.predict([(p.premise, p.hypothesis) for p in pairs])
    return [dict(p.probabilities) for p in preds]


def user_cases(folder: Path) -> list[dict[str, Any]]:
    """The engine's verdict on each of the new user's cases with this NLI branch."""
    from truthlens_integrations.core.engine import TruthLens

    engine = TruthLens.from_config(nli=BundledNLIAdapter(branch_path=folder, device="cpu"))
    out = []
    for line in USER_CASES.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        verdict = engine.guard(
            context=[case["context"]], question=case["question"], answer=case["answer"]
        )
        out.append(
            {
                "id": case["id"],
                "label": case["label"],
                "decision": str(verdict.decision),
                "score": verdict.score,
                "spans": [[s.text, s.nli_label, s.severity] for s in verdict.spans],
                "dropped": [s.text for s in verdict.dropped_spans],
            }
        )
    return out


def apply_rule(results: dict[str, dict[str, Any]], base: str, cand: str) -> list[tuple[str, bool]]:
    """The criteria of ``RULE.md``, each with whether the candidate meets it."""
    b, c = results[base], results[cand]
    checks = [
        (
            f"AUROC on {name}: {c[name]['auroc']:.3f} > {b[name]['auroc']:.3f}",
            c[name]["auroc"] > b[name]["auroc"],
        )
        for name in RULE_SETS
    ]
    for name in RULE_SETS:
        new, old = c[name]["supported_to_contradiction"], b[name]["supported_to_contradiction"]
        checks.append((f"supported -> contradiction on {name}: {new:.3f} <= {old:.3f}", new <= old))
    for name in RULE_SETS:
        new, old = c[name]["unsupported_dropped"], b[name]["unsupported_dropped"]
        checks.append(
            (f"unsupported -> dropped on {name}: {new:.3f} <= {old:.3f} + 0.05", new <= old + 0.05)
        )
    new, old = (
        c["snli-dev held-out"]["three_way_accuracy"],
        b["snli-dev held-out"]["three_way_accuracy"],
    )
    checks.append((f"SNLI-dev held-out accuracy: {new:.3f} >= {old:.3f} - 0.02", new >= old - 0.02))
    return checks


def decide(results: dict[str, dict[str, Any]], rules: dict[str, list[tuple[str, bool]]]) -> str:
    """Which candidate ships: of those meeting every criterion, the higher mean AUROC."""
    passing = [name for name, rule in rules.items() if all(ok for _, ok in rule)]
    if not passing:
        return "no candidate meets the rule; **the shipped branch stays**"
    best = max(passing, key=lambda n: sum(results[n][s]["auroc"] for s in RULE_SETS))
    return f"**{best} ships**"


def snli_test_accuracy(folder: Path) -> float:
    """Accuracy on the SNLI test pairs (eval-only): called after the decision."""
    from truthlens_integrations._lab_api import default_data_dir, read_snli

    pairs = read_snli(default_data_dir() / "esnli", split="test")
    model = BundledNLI(branch_path=folder, device="cpu")
    labels = [p.label for p in model.predict([(x.premise, x.hypothesis) for x in pairs])]
    return sum(a == x.label for a, x in zip(labels, pairs, strict=True)) / len(pairs)


def _cell(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def report(
    results: dict[str, dict[str, Any]],
    sets: dict[str, list[nli_real.RealPair]],
    cases: dict[str, list[dict[str, Any]]],
    rules: dict[str, list[tuple[str, bool]]],
    snli_test: dict[str, float],
    header: list[str],
) -> str:
    names = list(results)
    lines = ["# NLI branches on real answers' claims and their evidence", "", *header, ""]
    figures = [
        ("auroc", "AUROC entailed vs not (P(entailment))"),
        ("binary_accuracy", "binary accuracy (entailment or not)"),
        ("three_way_accuracy", "three-way accuracy"),
        ("supported_to_contradiction", "entailed pairs labelled contradiction (severity 4)"),
        ("unsupported_dropped", f"not entailed pairs labelled entailment >= {DROP} (dropped)"),
        ("contradiction_recall", "contradiction pairs labelled contradiction (recall)"),
    ]
    for set_name, pairs in sets.items():
        gold = ", ".join(f"{k} {v}" for k, v in sorted(Counter(p.label for p in pairs).items()))
        lines += [
            f"## {set_name} ({len(pairs)} pairs: {gold}; {SET_NOTES[set_name]})",
            "",
            "| | " + " | ".join(names) + " |",
            "|---|" + "---:|" * len(names),
        ]
        for key, title in figures:
            values = [results[n][set_name][key] for n in names]
            if all(v is None for v in values):
                continue
            lines.append(f"| {title} | " + " | ".join(_cell(v) for v in values) + " |")
        lines.append("")
        for n in names:
            r = results[n][set_name]
            lines.append(
                f"- {n}: labels given to the entailed pairs {r['predicted_on_supported']}, "
                f"to the others {r['predicted_on_unsupported']}"
            )
        lines.append("")
    lines += ["## The new user's six cases, through the whole engine", ""]
    lines += ["| case | gold | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for i, first in enumerate(cases[names[0]]):
        cells = []
        for n in names:
            c = cases[n][i]
            spans = ", ".join(f"'{t}' {lab} {sev}" for t, lab, sev in c["spans"]) or "no span"
            dropped = f"; dropped {c['dropped']}" if c["dropped"] else ""
            cells.append(f"{c['decision']} {c['score']:.2f}: {spans}{dropped}")
        gold = "error" if first["label"] else "correct"
        lines.append(f"| {first['id']} | {gold} | " + " | ".join(cells) + " |")
    for name, rule in rules.items():
        lines += ["", f"## The rule (RULE.md): {name}", ""]
        lines += [f"- {'pass' if ok else 'FAIL'}: {text}" for text, ok in rule]
    if rules:
        lines += ["", f"Decision: {decide(results, rules)}."]
    if snli_test:
        lines += [
            "",
            "## SNLI test (eval-only; measured after the decision, decides nothing)",
            "",
            "| | " + " | ".join(snli_test) + " |",
            "|---|" + "---:|" * len(snli_test),
            "| accuracy | " + " | ".join(f"{v:.4f}" for v in snli_test.values()) + " |",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--branch", action="append", default=[], metavar="NAME=FOLDER")
    ap.add_argument("--baseline", default=None)
    ap.add_argument("--candidate", action="append", default=[])
    ap.add_argument("--snli-test", action="store_true", help="also SNLI test (eval-only)")
    ap.add_argument("--out", type=Path, default=ROOT / "lab" / "records" / "nli_real")
    args = ap.parse_args()
    branches = {"shipped": SHIPPED}
    for item in args.branch:
        name, sep, folder = item.partition("=")
        if not sep:
            raise SystemExit(f"--branch wants NAME=FOLDER, got {item!r}")
        branches[name] = Path(folder)
    started = time.perf_counter()
    load_start = os.getloadavg()
    sets = pair_sets(data.DATA_ROOT)
    results: dict[str, dict[str, Any]] = {}
    cases: dict[str, list[dict[str, Any]]] = {}
    for name, folder in branches.items():
        results[name] = {s: measure(pairs, score(folder, pairs)) for s, pairs in sets.items()}
        cases[name] = user_cases(folder)
    rules = {}
    if args.baseline:
        rules = {c: apply_rule(results, args.baseline, c) for c in args.candidate}
    # only now, after the decision: eval-only data
    snli_test = {n: snli_test_accuracy(f) for n, f in branches.items()} if args.snli_test else {}
    load_end = os.getloadavg()
    header = [
        f"- command: `python benchmarks/bench_nli_real.py {' '.join(sys.argv[1:])}`".rstrip(),
        "- branches: " + ", ".join(f"{n} = `{f}`" for n, f in branches.items()),
        f"- date: {time.strftime('%Y-%m-%d')}; {platform.machine()}, {os.cpu_count()} CPUs, "
        f"fp32, torch threads from OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; "
        f"{time.perf_counter() - started:.0f} s in all",
        f"- load average (1/5/15 min) at the start {' / '.join(f'{x:.1f}' for x in load_start)}, "
        f"at the end {' / '.join(f'{x:.1f}' for x in load_end)} (the CPU was shared)",
        "- pairs: `lab/training/nli_real.py` (premise picked as the engine picks it); "
        "nothing eval-only is read",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    text = report(results, sets, cases, rules, snli_test, header)
    (args.out / "measures.md").write_text(text, encoding="utf-8")
    (args.out / "measures.json").write_text(
        json.dumps(
            {"results": results, "user_cases": cases, "rules": rules, "snli_test": snli_test},
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    print(text)


if __name__ == "__main__":
    main()
