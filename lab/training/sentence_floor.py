"""Candidate 10 of issue 27: a sentence floor on the default response map, decided by its rule.

``lab/records/rag_selection/RULE_candidate10.md`` (committed before any of these
scores): the default map ``M`` scores the answer, and each sentence read alone
(:func:`sentence_signals`); **10a** takes the largest of them all, **10b** the answer's
score and those of the sentences in which the unit or negation rule finds a conflict.
Nothing is fitted. The select split, AttributionBench and FaithJudge answers (select
sources) are read from the caches of ``lab.training.rag_features``; the hard-case **test**
file and the padded Eiffel answer are scored by the runtime detector here. Nothing
eval-only is read.

    python -m lab.training.sentence_floor --out lab/records/rag_selection/candidate10.json
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from truthlens_integrations.evaluation import auroc

from . import rag_response as rr
from ._cli import emit_json, parse_logged, selection_parser
from .rag_features import hard_case_examples

log = logging.getLogger("sentence_floor")

CANDIDATES = ("10a", "10b")


def floored_scores(response: Any, item: Any, tokens: Sequence[Any]) -> dict[str, float]:
    """The default map's score of one answer, and 10a's and 10b's floors on it.

    10b is the runtime's own ``calibrated_score`` with the map's ``rule_sentence_floor``
    on; 10a, every sentence's score alone, is not a runtime mode.
    """
    from truthlens_integrations._lab_api import answer_evidence, calibrated_score, sentence_signals

    absent, marks = answer_evidence(item)
    off = dataclasses.replace(response, rule_sentence_floor=0.0)
    on = dataclasses.replace(response, rule_sentence_floor=1.0)
    shipped = calibrated_score(
        off, item.answer, tokens, absent, token_threshold=0.5, conflicts=marks
    )
    alone = [
        response.score(a) for _, a in sentence_signals(item.answer, tokens, absent, conflicts=marks)
    ]
    return {
        "shipped": shipped,
        "10a": max([shipped, *alone]),
        "10b": calibrated_score(
            on, item.answer, tokens, absent, token_threshold=0.5, conflicts=marks
        ),
    }


def cached_scores(response: Any, data: rr.Scored) -> dict[str, np.ndarray]:
    """Each answer of a cached set scored by the default map and by 10a and 10b."""
    rows = [
        floored_scores(response, e.to_input(), [rr.CachedToken(*t) for t in r["tokens"]])
        for e, r in zip(data.examples, data.rows, strict=True)
    ]
    return {name: np.array([r[name] for r in rows]) for name in ("shipped", *CANDIDATES)}


def runtime_scores(folder: Path, response: Any, items: Sequence[Any]) -> list[dict[str, float]]:
    """The same scores from the runtime detector's exact tokens (rules on)."""
    results = rr.exact_results(folder, items)
    return [floored_scores(response, i, r.tokens) for i, r in zip(items, results, strict=True)]


def decide(result: dict[str, Any], name: str) -> dict[str, Any]:
    """RULE_candidate10.md's conditions 1-5 (the suite's part of condition 4 is run apart)."""
    select, ab = result["select"], result["attributionbench"]
    fj, hard = result["faithjudge_select"], result["hard_cases_auroc"]
    padding = [result["padding"][name][k] for k in sorted(result["padding"][name], key=int)]
    conditions = {
        "1_select_auroc_at_most_0.01_below": select[name]["auroc"]
        >= select["shipped"]["auroc"] - 0.01,
        "2_attributionbench_at_most_0.02_below": ab[name]["auroc"] >= ab["shipped"]["auroc"] - 0.02,
        "3_faithjudge_clean_flagged_at_most_2_points_higher": fj[name]["clean_flagged"]
        <= fj["shipped"]["clean_flagged"] + 0.02,
        "4_hard_cases_at_most_0.02_below": hard[name] >= hard["shipped"] - 0.02,
        "5_padding_never_lower_than_alone": all(p >= padding[0] for p in padding),
    }
    return {**conditions, "passes": all(conditions.values())}


def choose(result: dict[str, Any]) -> str | None:
    """The rule's choice among the passing candidates (ties within 0.005: fewer FJ flagged)."""
    passing = [n for n in CANDIDATES if result["decision"][n]["passes"]]
    if not passing:
        return None
    best = max(result["select"][n]["auroc"] for n in passing)
    tied = [n for n in passing if result["select"][n]["auroc"] >= best - 0.005]
    flagged: Callable[[str], float] = lambda n: result["faithjudge_select"][n]["clean_flagged"]  # noqa: E731
    return min(tied, key=flagged)


def main(argv: Sequence[str] | None = None) -> None:
    parser = selection_parser(__doc__, "where to write the figures and the decision")
    parser.add_argument("--faithjudge-limit", type=int, default=1500)
    args = parse_logged(parser, argv)
    response = rr.folder_map(args.folder)
    result: dict[str, Any] = {
        "folder": str(args.folder),
        "rule": "lab/records/rag_selection/RULE_candidate10.md",
        "map": response.to_config("the folder's default map"),
    }
    sets = {
        "select": rr.load_set(args.folder, "ragtruth_dev_select"),
        "attributionbench": rr.load_set(args.folder, "attributionbench"),
        "faithjudge_select": rr.load_set(args.folder, "faithjudge_select", args.faithjudge_limit),
    }
    scored = {name: cached_scores(response, data) for name, data in sets.items()}
    for name, data in sets.items():
        result[name] = {c: rr.report(s, data.y) for c, s in scored[name].items()}
    select = sets["select"]
    result["select"]["lexical"] = rr.report(rr.lexical_scores(select), select.y)
    result["select_bootstrap_minus_shipped"] = {
        c: rr.paired_bootstrap(
            scored["select"][c], scored["select"]["shipped"], select.y, select.sources
        )
        for c in CANDIDATES
    }
    cases = hard_case_examples("test")
    hard = runtime_scores(args.folder, response, [c.to_input() for c in cases])
    gold = [c.hallucinated for c in cases]
    result["hard_cases_auroc"] = {
        n: round(auroc(gold, [h[n] for h in hard]), 4) for n in ("shipped", *CANDIDATES)
    }
    kinds: dict[str, list[int]] = {}
    for i, case in enumerate(cases):
        kinds.setdefault(case.task_type, []).append(i)
    result["hard_cases_flagged_by_kind"] = {
        n: {k: round(sum(hard[i][n] >= 0.5 for i in idx) / len(idx), 4) for k, idx in kinds.items()}
        for n in ("shipped", *CANDIDATES)
    }
    padded = runtime_scores(args.folder, response, rr.padded_answers())
    result["padding"] = {
        n: {str(k): round(p[n], 4) for k, p in zip((0, 10, 20), padded, strict=True)}
        for n in ("shipped", *CANDIDATES)
    }
    result["decision"] = {n: decide(result, n) for n in CANDIDATES}
    result["chosen"] = choose(result)
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
