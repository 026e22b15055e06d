"""Runtime-rule candidates of issue 27 (16-40, the runtime ones), each by its rule.

Each candidate changes one of the rules that adjust token probabilities, and its rule
(``lab/records/rag_selection/RULE_candidate16.md``, ``RULE_candidate17.md``,
``RULE_candidate19.md`` to ``RULE_candidate26.md``, ``RULE_candidate28.md``, 29, 34-39b and 40,
committed before the candidate existed)
compares the shipped detector with the change on ("after") and switched off ("before"),
same code otherwise, same default map:

- 16: ``_rules._negated_words`` denies the first content word after a negation and the
  next only when it follows at once ("not dishwasher safe"); before, the first two content
  words (:func:`two_words`; "not familiar with the for-profit college" denied "profit");
- 17: clock times are one quantity, a time of day (``_quantities._TIME``); before, "9 PM"
  was the number 9 and "11:00 AM" the numbers 11 and 0;
- 19: a number that cites a source ("Passage 3", "[1]") is not a quantity and not an
  absent word (``_quantities.citation_numbers``); before, it was an "unseen" number.
  Candidate 18 (list-item numbers too, in two variants) was measured by this script at
  commit ab2c2d9;
- 20: a half written in words is one amount with its unit (``_quantities._halves``:
  "five and half years" is 5.5 years, "half an hour" 0.5 hour); before, "five" was read
  alone and "half an hour" not at all;
- 21: a half written as a fraction is one amount (``_quantities._fraction_halves``: "6 1/2
  months" is 6.5 months); before, the numbers 6, 1 and "2 months";
- 22 (the evidence index reads glued record keys by their parts; not shipped) was measured
  by this script at commit d7695fa, which also read an answer afresh when its evidence
  prompts changed;
- 23 and 24 (temperatures read as amounts with their scale; 24 also reads a context's
  bare "325 degrees" in either scale; neither shipped) were measured by this script at
  commits 4fccaa4 and 4622265;
- 25: the absent-word count the map reads leaves out clock times, which the unit rule
  judges (``_rules.clock_time_spans``); before, "9 PM" counted "9" and "pm" as absent;
- 26: a citation-shaped number with a measurement unit after it is an amount
  (``_quantities._is_amount_unit``: "[50] metres", "Passage 5 km"); before, a citation;
- 28: the absent-word count leaves out the phrases that say where the answer comes from
  (``_rules.source_framing``: "Based on the provided passages"); before, they counted;
- 29: the absent-word count leaves out discourse connectives (``_rules.connectives``:
  "However", "In summary"); before, they counted;
- 34: more source framings (``_rules.source_framing``: a "Summary:" header, "This passage
  describes", "Based on the data provided"); before, 28's forms (:func:`framing_28`);
- 35: the absent-word count leaves out a whole citation (``_rules.citations``: "passage"
  of "(passage 1)" too); before, its numbers only (``_quantities.citation_numbers``);
- 36: a number with a glued unit is an amount (``_quantities._glued_amounts``: "500m",
  "20kg", "$9.8m"); before, "500m" was no number and "9.8m" the number 9;
- 37: a decade is a span of years (``_quantities._decades``: "the 1950s" against 1887 is
  a conflict, "the 1880s" present); before, "1950s" was no number;
- 38: any unit of two to four letters glued to its number is read as its spaced twin
  (``_quantities._glued_word``: "16GB" is 16 "gb"), and "3.5GHz" is no longer the number 3
  (``_quantities._NUMBER``); before, 36's closed list of glued units (:data:`NUMBER_37`);
- 39 and 39b: a century is a span of years (``_quantities._centuries``: "the 19th
  century" is 1800-1900); 39b also keeps a context's span from hiding a wrong year where
  the context holds single years (``_quantities._judge_years``); 39 is 39b with 37's judge
  (:func:`judge_years_37`; it failed its rule by the suite); before, "19th" was no number,
  and 37's judge;
- 40: a unit word glued to a conflicting or unseen number is marked with it
  (``_rules._marked_end``: "32GB"); before, its digits only (:func:`marked_end_39b`).

Every score is the runtime's ``calibrated_score`` over exact tokens (rules on, ONNX fp32):

- select split, AttributionBench and the 1,500 FaithJudge answers: an answer whose number
  and negation verdicts are the same either way reads the same, so both sides take its
  cached tokens (``lab.training.rag_features``, which must be built with the rules before the
  candidate, i.e. before its code), and each side reads their absent words and conflict
  marks with its own code; the others are scored afresh on the candidate's side;
- the hard-case test set, the padded Eiffel answer and the held-out train-role answers of
  ``bench_heldout.py --per-source 30`` (same draws) afresh on both sides.

(Candidate 15's three changes were measured the same way at commit 6cef7cc, by this script's
first form, ``training.negation_rule``.)

    python -m lab.training.rule_change --candidate 16 \
        --out lab/records/rag_selection/candidate16.json
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from truthlens_integrations.evaluation import auroc

from ._cli import emit_json, parse_logged, selection_parser
from .free_length_map import Answer, answer_of, cached_answers, runtime_answers, scores
from .rag_features import hard_case_examples
from .rag_response import folder_map, load_set, padded_answers, report
from .rule_switches import rule_change

log = logging.getLogger("rule_change")

MARGIN = 0.005
SETS = (("ragtruth_dev_select", None), ("attributionbench", None), ("faithjudge_select", 1500))
# Each candidate's variants, measured against the rules with the candidate switched off.
CANDIDATES = {c: (c,) for c in "16 17 19 20 21 25 26 28 29 34 35 36 37 38 40".split()}
CANDIDATES["39b"] = ("39", "39b")  # 39: 39b with 37's judge of years


def verdicts(items: Sequence[Any], variant: str) -> list[Any]:
    """Each input's number and negation verdicts under ``variant`` (the rules' own memo)."""
    from truthlens_integrations._lab_api import rule_verdicts

    with rule_change(variant):
        return [rule_verdicts(i.answer, tuple(i.context)) for i in items]


def reading(
    folder: Path, items: Sequence[Any], base: list[Answer], variant: str, base_variant: str
) -> tuple[list[Answer], int]:
    """The reading under ``variant``, from ``base`` (the reading under ``base_variant``).

    The inputs whose verdicts differ between the two are read afresh; the others keep
    their ``base`` reading, which is exact for them.
    """
    mine = verdicts(items, variant)
    known = mine if variant == base_variant else verdicts(items, base_variant)
    touched = [i for i, (a, b) in enumerate(zip(known, mine, strict=True)) if a != b]
    with rule_change(variant):
        # The others keep their tokens; what the map reads besides them (absent words,
        # conflict marks) is read by this side's code (candidate 19 changes the former).
        out = [answer_of(item, b.tokens) for item, b in zip(items, base, strict=True)]
        if touched:
            fresh = runtime_answers(folder, [items[i] for i in touched])
            for i, answer in zip(touched, fresh, strict=True):
                out[i] = answer
    return out, len(touched)


def heldout_items() -> tuple[list[Any], list[bool], list[str]]:
    """The inputs, labels and groups of ``bench_heldout.py --per-source 30``."""
    from .heldout import claim_input, heldout_claims

    claims = heldout_claims(30, 30)
    return (
        [claim_input(c) for c in claims],
        [bool(c.label) for c in claims],
        [c.source.split("/")[0] for c in claims],
    )


def heldout_aurocs(values: np.ndarray, gold: list[bool], groups: list[str]) -> dict[str, float]:
    multi = [i for i, g in enumerate(groups) if g == "multi"]
    return {
        "all": round(auroc(gold, values.tolist()), 4),
        "multi": round(auroc([gold[i] for i in multi], values[multi].tolist()), 4),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = selection_parser(__doc__, "where to write the figures and the decision")
    parser.add_argument("--candidate", choices=CANDIDATES, required=True)
    args = parse_logged(parser, argv)
    shipped = folder_map(args.folder)
    sides = {"before": f"off!{args.candidate}"}
    sides.update({v: v for v in CANDIDATES[args.candidate]})
    result: dict[str, Any] = {
        "folder": str(args.folder),
        "rule": f"lab/records/rag_selection/RULE_candidate{args.candidate}.md",
        "touched": {side: {} for side in sides},
    }
    for dataset, limit in SETS:
        data = load_set(args.folder, dataset, limit)
        items = [e.to_input() for e in data.examples]
        # The caches hold the tokens of the rules before the candidate (built before its
        # code): read their conflict marks the same way.
        with rule_change(sides["before"]):
            cached = cached_answers(data)
        result[dataset] = {}
        for side, variant in sides.items():
            read, touched = reading(args.folder, items, cached, variant, sides["before"])
            result[dataset][side] = report(scores(shipped, read), data.y)
            result["touched"][side][dataset] = touched
        log.info("%s done", dataset)
    cases = hard_case_examples("test")
    gold = [c.hallucinated for c in cases]
    flips = [i for i, c in enumerate(cases) if c.hallucinated and "negation" in c.task_type]
    items, gold_held, groups = heldout_items()
    parts = {
        "hard": [c.to_input() for c in cases],
        "padding": padded_answers(),
        "heldout": items,
    }
    with rule_change(sides["before"]):
        now = {name: runtime_answers(args.folder, got) for name, got in parts.items()}
    readings = {
        side: {
            name: reading(args.folder, got, now[name], variant, sides["before"])[0]
            for name, got in parts.items()
        }
        for side, variant in sides.items()
    }
    result["hard_cases_auroc"], result["negation_flips_caught"] = {}, {}
    result["padding"], result["heldout_auroc"] = {}, {}
    for side, read in readings.items():
        hard = scores(shipped, read["hard"])
        result["hard_cases_auroc"][side] = round(auroc(gold, hard.tolist()), 4)
        result["negation_flips_caught"][side] = int((hard[flips] >= 0.5).sum())
        result["padding"][side] = [round(float(v), 4) for v in scores(shipped, read["padding"])]
        result["heldout_auroc"][side] = heldout_aurocs(
            scores(shipped, read["heldout"]), gold_held, groups
        )
    result["negation_flips"] = len(flips)
    result["decision"] = {v: decide(result, v) for v in CANDIDATES[args.candidate]}
    emit_json(result, args.out)


def decide(result: dict[str, Any], v: str) -> dict[str, Any]:
    """The conditions 1-6 of RULE_candidate16.md to 26, 28 and 29 (the suite's part of 4 apart).

    Candidates 21, 26 and 36-40 ask "not higher" in condition 1 (a repair, a hardening); 21's
    condition 7 is read from ``bench_rules.py``.
    """
    fj, select = result["faithjudge_select"], result["ragtruth_dev_select"]
    ab, hard, held = result["attributionbench"], result["hard_cases_auroc"], result["heldout_auroc"]
    flips = result["negation_flips_caught"]
    flagged, before = fj[v]["clean_flagged"], fj["before"]["clean_flagged"]
    first = (
        {"1_faithjudge_clean_flagged_not_higher": flagged <= before}
        if v in ("21", "26", "36", "37", "38", "39", "39b", "40")
        else {"1_faithjudge_clean_flagged_lower": flagged < before}
    )
    conditions = {
        **first,
        "2_select_auroc_at_most_0.005_below": select[v]["auroc"]
        >= select["before"]["auroc"] - MARGIN,
        "3_attributionbench_at_most_0.005_below": ab[v]["auroc"] >= ab["before"]["auroc"] - MARGIN,
        "4_hard_cases_at_most_0.005_below_and_flips_kept": hard[v] >= hard["before"] - MARGIN
        and flips[v] >= flips["before"],
        "5_heldout_all_and_multi_at_most_0.005_below": all(
            held[v][g] >= held["before"][g] - MARGIN for g in ("all", "multi")
        ),
        "6_padding_unchanged": result["padding"][v] == result["padding"]["before"],
    }
    return {**conditions, "passes": all(conditions.values())}


if __name__ == "__main__":
    main()
