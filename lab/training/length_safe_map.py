"""Candidate 9 of issue 27: a length-safe default response map, decided by its rule.

``lab/records/rag_selection/RULE_candidate9.md`` (committed before any figure of
it): candidate 5a's map (every signal, every coefficient but the bias >= 0) fitted on the
502 select answers of ``ragtruth_dev`` together with the 1,400 train-role hard cases, the
hard cases weighing ``w`` times the select answers in all, for each ``w`` of the rule's
grid. Select figures are cross-fitted (5 folds by source, every fold's fit sees all the
hard cases), FaithJudge answers are scored by their source's fold map; AttributionBench,
the hard-case **test** file and the padded Eiffel answer by the map fitted on all of it.
The shipped map is the folder's current default. Reads the caches of
``lab.training.rag_features`` (same ``--folder``); nothing eval-only is read.

    python -m lab.training.length_safe_map --out lab/records/rag_selection/candidate9.json \
        [--write]
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from ._cli import emit_json, parse_logged, selection_parser
from .rag_features import HARD_CASES
from .rag_response import (
    Scored,
    Short,
    fit_candidate,
    folder_map,
    hard_case_aurocs,
    lexical_scores,
    load_set,
    padding_scores,
    paired_bootstrap,
    rag_scores,
    report,
    source_folds,
)

log = logging.getLogger("length_safe_map")

WEIGHTS = (0.1, 0.2, 0.35, 0.5, 0.75)
FOLDS = 5


def fitted_on(weight: float) -> str:
    """The ``fitted_on`` entry of the map fitted with hard-case weight ``weight``."""
    return (
        "ragtruth_dev select split (85 sources, ragtruth_dev_split.json) and the "
        f"1,400 train-role hard cases (lab/training/data/hardcases_train.jsonl) weighing {weight} "
        "of the select answers in all; length-safe logistic map, candidate 9 "
        "(lab/training/length_safe_map.py)"
    )


def name_of(weight: float) -> str:
    return f"w={weight}"


def fit(select: Scored, rows: np.ndarray, short: Short, weight: float) -> Any:
    """The candidate's map fitted on the select answers ``rows`` (a mask) and all hard cases."""
    signals = [s for s, keep in zip(select.signals, rows, strict=True) if keep]
    return fit_candidate("short", signals, select.y[rows], short, short_weight=weight)


def cross_fitted(
    select: Scored, faith: Scored, short: Short, weight: float
) -> tuple[np.ndarray, np.ndarray]:
    """Select and FaithJudge scores, each answer scored by the map of a fold without its source."""
    folds = source_folds(select.sources.tolist())
    fold = np.array([folds[s] for s in select.sources])
    faith_fold = np.array([folds.get(s, -1) for s in faith.sources])
    out, faith_out = np.zeros(len(select.y)), np.zeros(len(faith.y))
    for k in range(FOLDS):
        fitted = fit(select, fold != k, short, weight)
        held = [s for s, f in zip(select.signals, fold, strict=True) if f == k]
        out[fold == k] = rag_scores(fitted, held)
        theirs = [s for s, f in zip(faith.signals, faith_fold, strict=True) if f == k]
        faith_out[faith_fold == k] = rag_scores(fitted, theirs)
    return out, faith_out


def padding_never_falls(scores: dict[str, float]) -> bool:
    values = [scores[k] for k in sorted(scores, key=int)]
    return all(b >= a for a, b in pairwise(values))


def decide(result: dict[str, Any], name: str) -> dict[str, Any]:
    """RULE_candidate9.md's conditions 1-5 (the suite's part of condition 4 is run apart)."""
    select, ab = result["select_crossfitted"], result["attributionbench"]
    fj, hard = result["faithjudge_select_crossfitted"], result["hard_cases_auroc"]
    conditions = {
        "1_select_auroc_not_lower": select[name]["auroc"] >= select["shipped"]["auroc"],
        "2_attributionbench_at_most_0.02_below": ab[name]["auroc"] >= ab["shipped"]["auroc"] - 0.02,
        "3_faithjudge_clean_flagged_not_higher": fj[name]["clean_flagged"]
        <= fj["shipped"]["clean_flagged"],
        "4_hard_cases_at_most_0.02_below": hard[name] >= hard["shipped"] - 0.02,
        "5_length_safe": result["length_safe"][name]
        and padding_never_falls(result["padding"][name]),
    }
    return {**conditions, "passes": all(conditions.values())}


def candidate_args(doc: str | None, argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line of a map candidate's script (``--folder``, ``--out``, ``--write``)."""
    parser = selection_parser(doc, "where to write the figures and the decision")
    parser.add_argument("--faithjudge-limit", type=int, default=1500)
    parser.add_argument("--write", action="store_true", help="write the chosen map, if any")
    return parse_logged(parser, argv)


def finish(result: dict[str, Any], args: argparse.Namespace, entries: dict[str, Any]) -> None:
    """Choose by the rule, print and write the figures, and with ``--write`` the chosen map.

    Among the candidates whose ``result["decision"]`` passes, the highest cross-fitted
    select AUROC; ``entries`` holds each candidate's ``response_calibration`` entry.
    """
    passing = [n for n, d in result["decision"].items() if d["passes"]]
    chosen = max(passing, key=lambda n: result["select_crossfitted"][n]["auroc"], default=None)
    result["chosen"] = chosen
    emit_json(result, args.out)
    if args.write and chosen is not None:
        path = args.folder / "config.json"
        config = json.loads(path.read_text())
        config["truthlens"]["response_calibration"] = entries[chosen]
        path.write_text(json.dumps(config, indent=2) + "\n")
        log.info("wrote %s of %s into %s", chosen, result["rule"], path)


def main(argv: Sequence[str] | None = None) -> None:
    args = candidate_args(__doc__, argv)
    shipped = folder_map(args.folder)
    select = load_set(args.folder, "ragtruth_dev_select")
    hard = load_set(args.folder, HARD_CASES)
    short = Short(hard.signals, hard.y)
    ab = load_set(args.folder, "attributionbench")
    faith = load_set(args.folder, "faithjudge_select", args.faithjudge_limit)

    names = [name_of(w) for w in WEIGHTS]
    everything = np.ones(len(select.y), dtype=bool)
    final = {name_of(w): fit(select, everything, short, w) for w in WEIGHTS}
    crossed = {name_of(w): cross_fitted(select, faith, short, w) for w in WEIGHTS}
    shipped_select = rag_scores(shipped, select.signals)
    lexical_select = lexical_scores(select)
    result: dict[str, Any] = {
        "folder": str(args.folder),
        "rule": "lab/records/rag_selection/RULE_candidate9.md",
        "shipped_map": shipped.to_config("the folder's default map"),
        "maps": {name_of(w): final[name_of(w)].to_config(fitted_on(w)) for w in WEIGHTS},
        "length_safe": {"shipped": shipped.length_safe}
        | {n: m.length_safe for n, m in final.items()},
    }
    result["select_crossfitted"] = {
        "shipped": report(shipped_select, select.y),
        **{n: report(crossed[n][0], select.y) for n in names},
        "lexical": report(lexical_select, select.y),
    }
    result["select_bootstrap_minus_shipped"] = {
        n: paired_bootstrap(crossed[n][0], shipped_select, select.y, select.sources) for n in names
    }
    result["faithjudge_select_crossfitted"] = {
        "shipped": report(rag_scores(shipped, faith.signals), faith.y),
        **{n: report(crossed[n][1], faith.y) for n in names},
    }
    result["attributionbench"] = {
        "shipped": report(rag_scores(shipped, ab.signals), ab.y),
        **{n: report(rag_scores(m, ab.signals), ab.y) for n, m in final.items()},
    }
    maps = {"shipped": shipped, **final}
    result["hard_cases_auroc"], result["hard_cases_flagged_by_kind"] = hard_case_aurocs(
        args.folder, maps
    )
    result["padding"] = padding_scores(args.folder, maps)
    result["decision"] = {n: decide(result, n) for n in names}
    finish(result, args, {name_of(w): final[name_of(w)].to_config(fitted_on(w)) for w in WEIGHTS})


if __name__ == "__main__":
    main()
