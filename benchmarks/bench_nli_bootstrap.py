"""AUROC difference of two NLI branches on the rule's selection sets, with a bootstrap interval.

Usage:
    python benchmarks/bench_nli_bootstrap.py --baseline FOLDER --candidate FOLDER [--draws 1000]

The pairs of ``bench_nli_real.py``'s rule sets (AttributionBench, ``ragtruth_dev`` select),
P(entailment) of each branch, and the AUROC difference (candidate - baseline) with a 95%
paired bootstrap over sources (a question or RAGTruth source is drawn whole, seed 0).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_nli_real import RULE_SETS, pair_sets, score

from lab.training import data
from truthlens_integrations.evaluation import auroc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--candidate", type=Path, required=True)
    ap.add_argument("--draws", type=int, default=1000)
    args = ap.parse_args()
    sets = pair_sets(data.DATA_ROOT)
    for name in RULE_SETS:
        pairs = sets[name]
        old = [p["entailment"] for p in score(args.baseline, pairs)]
        new = [p["entailment"] for p in score(args.candidate, pairs)]
        gold = [p.entailed for p in pairs]
        groups: dict[str, list[int]] = defaultdict(list)
        for i, pair in enumerate(pairs):
            groups[pair.group].append(i)
        keys = list(groups)
        rng = random.Random(0)
        diffs = []
        for _ in range(args.draws):
            idx = [i for k in (rng.choice(keys) for _ in keys) for i in groups[k]]
            g = [gold[i] for i in idx]
            diffs.append(auroc(g, [new[i] for i in idx]) - auroc(g, [old[i] for i in idx]))
        diffs.sort()
        low, high = diffs[int(0.025 * args.draws)], diffs[int(0.975 * args.draws) - 1]
        point = auroc(gold, new) - auroc(gold, old)
        print(f"{name}: AUROC {point:+.3f} [{low:+.3f}, {high:+.3f}] ({len(keys)} sources)")


if __name__ == "__main__":
    main()
