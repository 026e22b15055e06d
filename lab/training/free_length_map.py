"""Candidate 11 of issue 27: the default map refitted with a free length term, by its rule.

``lab/records/rag_selection/RULE_candidate11.md`` (committed before any figure of
it): the map over every signal, ``log_sentences`` of any sign and every other coefficient
>= 0, fitted on the 502 select answers of ``ragtruth_dev`` together with the 1,400
train-role hard cases (weighing ``w`` times the select answers in all), with the rule
sentence floor on. Every score is the runtime's ``calibrated_score`` (the floor included).
Select figures cross-fitted (5 folds by source, every fold's fit sees all the hard cases),
FaithJudge answers by their source's fold map; AttributionBench, the hard-case **test**
file and the padded Eiffel answer by the map fitted on all. Reads the caches of
``lab.training.rag_features``; nothing eval-only is read.

    python -m lab.training.free_length_map --out lab/records/rag_selection/candidate11.json \
        [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from truthlens_integrations.evaluation import auroc

from . import rag_response as rr
from .length_safe_map import candidate_args, finish
from .rag_features import HARD_CASES, hard_case_examples

log = logging.getLogger("free_length_map")

WEIGHTS = (0.1, 0.2, 0.35, 0.5, 1.0)
FOLDS = 5


class Answer(NamedTuple):
    """What ``calibrated_score`` reads of one answer besides the map."""

    answer: str
    tokens: list[Any]
    absent: list[tuple[int, str]]
    marks: tuple[list[int], list[int]]


def answer_of(item: Any, tokens: Sequence[Any]) -> Answer:
    from truthlens_integrations._lab_api import answer_evidence

    absent, marks = answer_evidence(item)
    return Answer(item.answer, list(tokens), absent, marks)


def cached_answers(data: rr.Scored) -> list[Answer]:
    return [
        answer_of(e.to_input(), [rr.CachedToken(*t) for t in r["tokens"]])
        for e, r in zip(data.examples, data.rows, strict=True)
    ]


def runtime_answers(folder: Path, items: Sequence[Any]) -> list[Answer]:
    """The runtime detector's exact tokens (rules on) for each input."""
    results = rr.exact_results(folder, items)
    return [answer_of(i, r.tokens) for i, r in zip(items, results, strict=True)]


def scores(response: Any, answers: Sequence[Answer]) -> np.ndarray:
    from truthlens_integrations._lab_api import calibrated_score

    return np.array(
        [
            calibrated_score(
                response, a.answer, a.tokens, a.absent, token_threshold=0.5, conflicts=a.marks
            )
            for a in answers
        ]
    )


def fit(select: rr.Scored, rows: np.ndarray, hard: rr.Scored, weight: float) -> Any:
    """The candidate's map on the select answers ``rows`` (a mask) and all hard cases."""
    from truthlens_integrations._lab_api import SIGNALS, fit_response_map

    signals = [s for s, keep in zip(select.signals, rows, strict=True) if keep]
    share = weight * len(signals) / len(hard.signals)
    fitted = fit_response_map(
        [*signals, *hard.signals],
        [*select.y[rows].astype(bool).tolist(), *hard.y.astype(bool).tolist()],
        columns=SIGNALS,
        weights=[1.0] * len(signals) + [share] * len(hard.signals),
        free=("log_sentences",),
    )
    return dataclasses.replace(fitted, rule_sentence_floor=1.0)


def fitted_on(weight: float) -> str:
    return (
        "ragtruth_dev select split (85 sources, ragtruth_dev_split.json) and the "
        f"1,400 train-role hard cases (lab/training/data/hardcases_train.jsonl) weighing {weight} "
        "of the select answers in all; free length term, rule sentence floor; candidate 11 "
        "(lab/training/free_length_map.py)"
    )


def decide(result: dict[str, Any], name: str) -> dict[str, Any]:
    """RULE_candidate11.md's conditions 1-5 (the suite's part of condition 4 is run apart)."""
    _select, ab = result["select_crossfitted"], result["attributionbench"]
    fj, hard = result["faithjudge_select_crossfitted"], result["hard_cases_auroc"]
    padding = [result["padding"][name][k] for k in sorted(result["padding"][name], key=int)]
    conditions = {
        "1_select_auroc_above_with_interval_above_0": result["select_bootstrap_minus_shipped"][
            name
        ]["low"]
        > 0,
        "2_attributionbench_at_most_0.02_below": ab[name]["auroc"] >= ab["shipped"]["auroc"] - 0.02,
        "3_faithjudge_clean_flagged_not_higher": fj[name]["clean_flagged"]
        <= fj["shipped"]["clean_flagged"],
        "4_hard_cases_at_most_0.02_below": hard[name] >= hard["shipped"] - 0.02,
        "5_padding_never_lower_than_alone": all(p >= padding[0] for p in padding),
    }
    return {**conditions, "passes": all(conditions.values())}


class Candidates(NamedTuple):
    """A grid of candidate maps, as :func:`evaluate` reads it."""

    rule: str
    names: list[str]
    fit: Callable[[str, np.ndarray], Any]  # (name, select rows mask) -> map
    fitted_on: dict[str, str]


def value_grid(
    rule: str,
    label: str,
    values: Sequence[Any],
    fit_one: Callable[[Any, np.ndarray], Any],
    fitted_on_one: Callable[[Any], str],
) -> Candidates:
    """One candidate per value ("label=value"): fitted by ``fit_one(value, select rows)``."""
    names = [f"{label}={v}" for v in values]
    value = dict(zip(names, values, strict=True))
    return Candidates(
        rule=rule,
        names=names,
        fit=lambda name, rows: fit_one(value[name], rows),
        fitted_on={n: fitted_on_one(value[n]) for n in names},
    )


def read_sets(args: argparse.Namespace) -> dict[str, Any]:
    """The selection sets (cached tokens) and the runtime tokens of the hard cases and padding."""
    select = rr.load_set(args.folder, "ragtruth_dev_select")
    ab = rr.load_set(args.folder, "attributionbench")
    faith = rr.load_set(args.folder, "faithjudge_select", args.faithjudge_limit)
    cases = hard_case_examples("test")
    return {
        "data": {"select": select, "attributionbench": ab, "faithjudge": faith},
        "select": cached_answers(select),
        "attributionbench": cached_answers(ab),
        "faithjudge": cached_answers(faith),
        "cases": cases,
        "hard": runtime_answers(args.folder, [c.to_input() for c in cases]),
        "padding": runtime_answers(args.folder, rr.padded_answers()),
    }


def evaluate(args: argparse.Namespace, read: dict[str, Any], grid: Candidates) -> dict[str, Any]:
    """Every figure a map rule reads, for the shipped map and each candidate of ``grid``.

    Select figures cross-fitted (5 folds by source), FaithJudge answers by their source's
    fold map; AttributionBench, the hard-case test file and the padded Eiffel answer by the
    map fitted on all select answers. Every score is the runtime's ``calibrated_score``.
    """
    shipped = rr.folder_map(args.folder)
    select, faith = read["data"]["select"], read["data"]["faithjudge"]
    ab = read["data"]["attributionbench"]
    names = grid.names
    everything = np.ones(len(select.y), dtype=bool)
    final = {n: grid.fit(n, everything) for n in names}
    folds = rr.source_folds(select.sources.tolist())
    fold = np.array([folds[s] for s in select.sources])
    faith_fold = np.array([folds.get(s, -1) for s in faith.sources])
    crossed = {n: np.zeros(len(select.y)) for n in names}
    faith_crossed = {n: np.zeros(len(faith.y)) for n in names}
    for k in range(FOLDS):
        for n in names:
            fitted = grid.fit(n, fold != k)
            crossed[n][fold == k] = scores(
                fitted, [a for a, f in zip(read["select"], fold, strict=True) if f == k]
            )
            theirs = [a for a, f in zip(read["faithjudge"], faith_fold, strict=True) if f == k]
            faith_crossed[n][faith_fold == k] = scores(fitted, theirs)
    maps = {"shipped": shipped, **final}
    shipped_select = scores(shipped, read["select"])
    gold = [c.hallucinated for c in read["cases"]]
    result: dict[str, Any] = {
        "folder": str(args.folder),
        "rule": grid.rule,
        "shipped_map": shipped.to_config("the folder's default map"),
        "maps": {n: final[n].to_config(grid.fitted_on[n]) for n in names},
        "select_crossfitted": {
            "shipped": rr.report(shipped_select, select.y),
            **{n: rr.report(crossed[n], select.y) for n in names},
            "lexical": rr.report(rr.lexical_scores(select), select.y),
        },
        "select_bootstrap_minus_shipped": {
            n: rr.paired_bootstrap(crossed[n], shipped_select, select.y, select.sources)
            for n in names
        },
        "faithjudge_select_crossfitted": {
            "shipped": rr.report(scores(shipped, read["faithjudge"]), faith.y),
            **{n: rr.report(faith_crossed[n], faith.y) for n in names},
        },
        "attributionbench": {
            n: rr.report(scores(m, read["attributionbench"]), ab.y) for n, m in maps.items()
        },
        "hard_cases_auroc": {
            n: round(auroc(gold, scores(m, read["hard"]).tolist()), 4) for n, m in maps.items()
        },
        "padding": {
            n: {
                str(k): round(float(v), 4)
                for k, v in zip((0, 10, 20), scores(m, read["padding"]), strict=True)
            }
            for n, m in maps.items()
        },
    }
    kinds: dict[str, list[int]] = {}
    for i, case in enumerate(read["cases"]):
        kinds.setdefault(case.task_type, []).append(i)
    result["hard_cases_flagged_by_kind"] = {
        n: {
            k: round(float((scores(m, [read["hard"][i] for i in idx]) >= 0.5).mean()), 4)
            for k, idx in sorted(kinds.items())
        }
        for n, m in maps.items()
    }
    return result


def main(argv: Sequence[str] | None = None) -> None:
    args = candidate_args(__doc__, argv)
    read = read_sets(args)
    select = read["data"]["select"]
    hard = rr.load_set(args.folder, HARD_CASES)
    rule = "lab/records/rag_selection/RULE_candidate11.md"
    grid = value_grid(rule, "w", WEIGHTS, lambda w, rows: fit(select, rows, hard, w), fitted_on)
    result = evaluate(args, read, grid)
    result["decision"] = {n: decide(result, n) for n in grid.names}
    finish(result, args, result["maps"])


if __name__ == "__main__":
    main()
