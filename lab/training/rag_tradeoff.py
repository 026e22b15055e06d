"""How much weight the short answers may take in the RAG map: a train-role diagnostic.

Candidate 5 (``lab/records/rag_selection/RULE_candidate5.md``) fitted the response
map on the select split of ``ragtruth_dev`` together with the 1,400 train-role hard cases,
the two weighing the same; the hard cases then carried the fit (select AUROC below the
shipped map's, hard cases above it). This asks, on **train-role data only**, how the two
rankings move with the hard cases' share of the fit, so that a later rule can fix that
share before its candidate is measured. It is not a candidate and decides nothing.

Data: the ``ragtruth_dev`` **train** split (100 sources) and ``hardcases_train``, both
from the cache of ``lab.training.rag_features``; nothing of the select split, the hard-case
test file or any eval-only set is read. For each ratio ``r`` of the hard cases' total
weight to the RAG answers', candidate 5a's map (the eight signals, every coefficient but
the bias >= 0) is cross-fitted: 5 folds of the RAG answers by source and 5 folds of the
hard cases by context, fold k's map fitted on the other folds of both and scoring fold k of both.
The shipped map is scored on the same answers for reference. Caveat: the bundled token
model was trained on these hard cases, so their token probabilities are sharper than on
new text, and the hard-case AUROC here is optimistic.

    python -m lab.training.rag_features --dataset ragtruth_dev_train --dataset hardcases_train
    python -m lab.training.rag_tradeoff --out lab/records/rag_selection
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from truthlens_integrations.evaluation import auroc

from ._cli import emit_json, parse_logged, selection_parser
from .rag_features import HARD_CASES
from .rag_response import (
    FOLDS,
    Short,
    fit_candidate,
    folder_map,
    load_set,
    rag_scores,
    source_folds,
)

log = logging.getLogger("rag_tradeoff")

RATIOS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
"""The hard cases' total weight over the RAG answers' (1: candidate 5's equal weight)."""


def _auroc(y: np.ndarray, scores: np.ndarray) -> float:
    return round(auroc(y.astype(bool).tolist(), scores.tolist()), 4)


def tradeoff(
    rag: Any, hard: Any, ratios: Sequence[float] = RATIOS, seed: int = 0
) -> dict[str, dict[str, float]]:
    """Cross-fitted AUROC on both sets, per ratio (see the module docstring)."""
    rag_folds = source_folds(rag.sources.tolist(), seed=seed)
    rag_fold = np.array([rag_folds[s] for s in rag.sources])
    # hard cases written over the same context share a fold
    contexts = ["\n".join(e.context) for e in hard.examples]
    hard_folds = source_folds(contexts, seed=seed)
    hard_fold = np.array([hard_folds[c] for c in contexts])
    out = {}
    for ratio in ratios:
        rag_scores_ = np.zeros(len(rag.y))
        hard_scores = np.zeros(len(hard.y))
        for k in range(FOLDS):
            seen = [s for s, f in zip(rag.signals, rag_fold, strict=True) if f != k]
            short = Short(
                [s for s, f in zip(hard.signals, hard_fold, strict=True) if f != k],
                hard.y[hard_fold != k],
            )
            if ratio > 0:
                fitted = fit_candidate(
                    "short", seen, rag.y[rag_fold != k], short, short_weight=ratio
                )
            else:
                fitted = fit_candidate("rules", seen, rag.y[rag_fold != k])
            rag_scores_[rag_fold == k] = rag_scores(
                fitted, [s for s, f in zip(rag.signals, rag_fold, strict=True) if f == k]
            )
            hard_scores[hard_fold == k] = rag_scores(
                fitted, [s for s, f in zip(hard.signals, hard_fold, strict=True) if f == k]
            )
        out[str(ratio)] = {
            "ragtruth_dev_train": _auroc(rag.y, rag_scores_),
            "hardcases_train": _auroc(hard.y, hard_scores),
        }
        log.info("ratio %s: %s", ratio, out[str(ratio)])
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = selection_parser(__doc__, "folder for short_weight_tradeoff.json")
    args = parse_logged(parser, argv)
    current = folder_map(args.folder)
    rag = load_set(args.folder, "ragtruth_dev_train")
    hard = load_set(args.folder, HARD_CASES)
    result = {
        "data": "ragtruth_dev train split (100 sources) and hardcases_train (1,400); train role",
        "shipped": {
            "ragtruth_dev_train": _auroc(rag.y, rag_scores(current, rag.signals)),
            "hardcases_train": _auroc(hard.y, rag_scores(current, hard.signals)),
        },
        "candidate_5a_by_ratio": tradeoff(rag, hard),
    }
    emit_json(result, None if args.out is None else args.out / "short_weight_tradeoff.json")


if __name__ == "__main__":
    main()
