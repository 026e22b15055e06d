"""Candidate 33 of issue 27: the response map reads words, not word pieces.

``lab/records/rag_selection/RULE_candidate33.md`` (committed before the change)
compares the map reading each token's own probability ("before") with it reading the mean
of the token's word (``calibration._signals._by_word``, the words of candidate 32's spans). No token
changes, so every answer keeps its tokens (the select split, AttributionBench and 1,500
FaithJudge answers from the ``lab.training.rag_features`` caches; the hard-case test set, the
padded Eiffel answer and the held-out train-role draws read once by the runtime), and each
side scores them with the shipped map.

    python -m lab.training.word_max --out lab/records/rag_selection/candidate33.json
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from truthlens_integrations.evaluation import auroc

from ._cli import emit_json, parse_logged, selection_parser
from .free_length_map import cached_answers, runtime_answers, scores
from .rag_features import hard_case_examples
from .rag_response import folder_map, load_set, padded_answers, report
from .rule_change import MARGIN, SETS, heldout_aurocs, heldout_items
from .rule_switches import before_only

log = logging.getLogger("word_max")

SIDES = ("before", "33")


def pieces(_answer: str, tokens: Sequence[Any]) -> Sequence[Any]:
    """``_by_word`` switched off: each token keeps its own probability (before 33)."""
    return tokens


def map_reads(side: str) -> contextlib.AbstractContextManager[Any]:
    """The map reading tokens as ``side`` does."""
    from truthlens_integrations._lab_api import calibration_signals_module as _response

    return before_only(side, _response, "_by_word", pieces)


def side_scores(response: Any, answers: Sequence[Any], side: str) -> np.ndarray:
    with map_reads(side):
        return scores(response, answers)


def main(argv: Sequence[str] | None = None) -> None:
    parser = selection_parser(__doc__, "where to write the figures and the decision")
    args = parse_logged(parser, argv)
    shipped = folder_map(args.folder)
    result: dict[str, Any] = {
        "folder": str(args.folder),
        "rule": "lab/records/rag_selection/RULE_candidate33.md",
    }
    for dataset, limit in SETS:
        data = load_set(args.folder, dataset, limit)
        answers = cached_answers(data)
        result[dataset] = {
            side: report(side_scores(shipped, answers, side), data.y) for side in SIDES
        }
        log.info("%s done", dataset)
    cases = hard_case_examples("test")
    gold = [c.hallucinated for c in cases]
    flips = [i for i, c in enumerate(cases) if c.hallucinated and "negation" in c.task_type]
    items, gold_held, groups = heldout_items()
    hard = runtime_answers(args.folder, [c.to_input() for c in cases])
    padding = runtime_answers(args.folder, padded_answers())
    held = runtime_answers(args.folder, items)
    result["hard_cases_auroc"], result["negation_flips_caught"] = {}, {}
    result["padding"], result["heldout_auroc"] = {}, {}
    for side in SIDES:
        values = side_scores(shipped, hard, side)
        result["hard_cases_auroc"][side] = round(auroc(gold, values.tolist()), 4)
        result["negation_flips_caught"][side] = int((values[flips] >= 0.5).sum())
        result["padding"][side] = [round(float(v), 4) for v in side_scores(shipped, padding, side)]
        result["heldout_auroc"][side] = heldout_aurocs(
            side_scores(shipped, held, side), gold_held, groups
        )
    result["negation_flips"] = len(flips)
    result["decision"] = decide(result)
    emit_json(result, args.out)


def decide(result: dict[str, Any]) -> dict[str, Any]:
    """Conditions 1-6 of the rule (the suite's part of 4 apart)."""
    fj, select = result["faithjudge_select"], result["ragtruth_dev_select"]
    ab, hard, held = result["attributionbench"], result["hard_cases_auroc"], result["heldout_auroc"]
    flips = result["negation_flips_caught"]
    conditions = {
        "1_faithjudge_clean_flagged_lower": fj["33"]["clean_flagged"]
        < fj["before"]["clean_flagged"],
        "2_select_auroc_at_most_0.005_below": select["33"]["auroc"]
        >= select["before"]["auroc"] - MARGIN,
        "3_attributionbench_at_most_0.005_below": ab["33"]["auroc"]
        >= ab["before"]["auroc"] - MARGIN,
        "4_hard_cases_at_most_0.005_below_and_flips_kept": hard["33"] >= hard["before"] - MARGIN
        and flips["33"] >= flips["before"],
        "5_heldout_all_and_multi_at_most_0.005_below": all(
            held["33"][g] >= held["before"][g] - MARGIN for g in ("all", "multi")
        ),
        "6_padded_wrong_answer_still_flagged": all(v >= 0.5 for v in result["padding"]["33"]),
    }
    return {**conditions, "passes": all(conditions.values())}


if __name__ == "__main__":
    main()
