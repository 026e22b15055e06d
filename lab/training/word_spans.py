"""Candidate 32 of issue 27: spans that never split a word, decided by its rule.

``lab/records/rag_selection/RULE_candidate32.md`` (committed before the candidate)
compares the spans drawn from word pieces ("before") with 32b, which ships: a word is
marked by the mean probability of its pieces (``core._scoring._word_votes``). 32a (each
span widened to the words it touches) was measured by this script at commit 8112f04 and
did not pass; its code is gone. On the ``ragtruth_dev`` select split
(the shipped detector's cached tokens, ``lab.training.rag_features``): character precision,
recall and F1 against RAGTruth's spans and the share of clean answers with a span; on the
hard-case test set, whether any guard response score or decision moves.

    python -m lab.training.word_spans --out lab/records/rag_selection/candidate32.json
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from ._cli import emit_json, parse_logged, selection_parser
from .rag_features import cache_file, hard_case_examples, load_examples, read_cache
from .rule_switches import before_only
from .span_cut import span_f1

log = logging.getLogger("word_spans")

DATASET = "ragtruth_dev_select"
SIDES = ("before", "32b_vote")


def piece_votes(_answer: str, tokens: Sequence[Any], threshold: float) -> list[tuple[Any, bool]]:
    """``_word_votes`` switched off: each piece marked by its own probability (before 32)."""
    return [(t, t.probability > threshold) for t in tokens]


def word_spans(side: str) -> contextlib.AbstractContextManager[Any]:
    """The runtime's spans as ``side`` draws them."""
    from truthlens_integrations._lab_api import scoring_module as _scoring

    return before_only(side, _scoring, "_word_votes", piece_votes)


def guard_outcomes(items: Sequence[Any]) -> list[tuple[str, float, int]]:
    """Each hard case's guard decision, score and number of spans (default settings)."""
    from truthlens_integrations import TruthLens

    engine = TruthLens.from_config()
    out = []
    for item in items:
        v = engine.guard(context=list(item.context), question=item.question, answer=item.answer)
        out.append((str(v.decision), round(v.score, 6), len(v.spans)))
    return out


def decide(result: dict[str, Any], side: str) -> dict[str, Any]:
    """Conditions 1-3 of the rule (the suite's part of 3 apart)."""
    now, mine = result["select"]["before"], result["select"][side]
    hard = result["hard_cases"][side]
    conditions = {
        "1_char_f1_not_lower": mine["f1"] >= now["f1"],
        "2_clean_with_a_span_not_higher": mine["clean_answers_with_a_span"]
        <= now["clean_answers_with_a_span"],
        "3_hard_case_scores_and_decisions_unchanged": hard["moved"] == 0,
    }
    return {**conditions, "passes": all(conditions.values())}


def main(argv: Sequence[str] | None = None) -> None:
    parser = selection_parser(__doc__, "where to write the figures and the decision")
    args = parse_logged(parser, argv)
    examples = load_examples(DATASET)
    rows = read_cache(cache_file(args.folder, DATASET))
    result: dict[str, Any] = {
        "rule": "lab/records/rag_selection/RULE_candidate32.md",
        "select": {},
        "hard_cases": {},
    }
    for side in SIDES:
        with word_spans(side):
            result["select"][side] = span_f1(examples, rows, 0.5)
    cases = [c.to_input() for c in hard_case_examples("test")]
    outcomes = {}
    for side in SIDES:
        with word_spans(side):
            outcomes[side] = guard_outcomes(cases)
        log.info("hard cases read with %s", side)
    for side, got in outcomes.items():
        base = outcomes["before"]
        result["hard_cases"][side] = {
            "n": len(got),
            "moved": sum(a[:2] != b[:2] for a, b in zip(got, base, strict=True)),
            "spans": sum(g[2] for g in got),
        }
    result["decision"] = {side: decide(result, side) for side in SIDES if side != "before"}
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
