"""Candidate 16 of issue 27: a context negation denies a compound, not the next phrase.

``benchmarks/results/rag_selection/RULE_candidate16.md`` (committed before the candidate
existed): ``_adjust._negated_words`` denies the first content word after a negation and the
next word only when it follows at once ("not dishwasher safe"), where it denied the first
two content words ("not familiar with the for-profit college" denied "profit"). The shipped
detector is measured with the change on ("after") and with the function as it was
(:func:`two_words`, "before"), same code otherwise, same default map, every score the
runtime's ``calibrated_score`` over exact tokens (rules on, ONNX fp32):

- select split, AttributionBench and the 1,500 FaithJudge answers: an answer whose
  negation verdicts are the same either way reads the same, so both sides take its cached
  tokens (``training.rag_features``); the others are scored afresh on both sides;
- the hard-case test set, the padded Eiffel answer and the held-out train-role answers of
  ``bench_heldout.py --per-source 30`` (same draws) afresh on both sides.

(Candidate 15's three changes were measured the same way by this script at commit 6cef7cc.)

    python -m training.negation_rule --out benchmarks/results/rag_selection/candidate16.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import random
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from truthlens_integrations.evaluation import auroc

from .free_length_map import Answer, cached_answers, runtime_answers, scores
from .rag_features import ROOT, hard_case_examples
from .rag_response import folder_map, load_set, padded_answers, report

log = logging.getLogger("negation_rule")

MARGIN = 0.005
SETS = (("ragtruth_dev_select", None), ("attributionbench", None), ("faithjudge_select", 1500))
VARIANTS = ("16",)


def two_words(sentence: str) -> list[str]:
    """``_negated_words`` as it was before candidate 16: the first two content words."""
    from truthlens_integrations.core._text import STOP_WORDS, words
    from truthlens_integrations.core.models.detection._adjust import _negations

    out: list[str] = []
    for _, end in _negations(sentence):
        clause = re.split(r"[,;:.!?]|\bby\b", sentence[end:], maxsplit=1)[0]
        out += [w for w in words(clause) if w not in STOP_WORDS][:2]
    return out


@contextlib.contextmanager
def negation_rule(variant: str) -> Iterator[None]:
    """The rule with candidate 16 on (``variant`` "16") or off ("") (the rules' memo cleared)."""
    from truthlens_integrations.core.models.detection import _adjust

    function = _adjust._negated_words if variant else two_words
    _adjust._rule_verdicts.cache_clear()
    with mock.patch.object(_adjust, "_negated_words", function):
        try:
            yield
        finally:
            _adjust._rule_verdicts.cache_clear()


def verdicts(items: Sequence[Any], variant: str) -> list[Any]:
    from truthlens_integrations.core.models.detection._adjust import negation_verdicts

    with negation_rule(variant):
        return [negation_verdicts(i.answer, list(i.context)) for i in items]


def after(
    folder: Path, items: Sequence[Any], before: list[Answer], variant: str
) -> tuple[list[Answer], int]:
    """The reading with ``variant`` on: the inputs whose negation verdicts change read afresh."""
    touched = [
        i
        for i, (b, a) in enumerate(zip(verdicts(items, ""), verdicts(items, variant), strict=True))
        if a != b
    ]
    reading = list(before)
    if touched:
        with negation_rule(variant):
            fresh = runtime_answers(folder, [items[i] for i in touched])
        for i, answer in zip(touched, fresh, strict=True):
            reading[i] = answer
    return reading, len(touched)


def heldout_items() -> tuple[list[Any], list[bool], list[str]]:
    """The inputs, labels and groups of ``bench_heldout.py --per-source 30``."""
    from truthlens_integrations.core import DetectionInput

    from . import realdata
    from .calibrate_evidence import _half
    from .calibrate_response import multi_part_answers
    from .train_evidence import _hard_cases, balanced

    held = [c for c in realdata.load_real(part="heldout") if _half(c) == 1]
    claims = balanced(held, 30, random.Random(13)) + _hard_cases("test")
    claims += multi_part_answers(held, 30, random.Random(17))
    items = [
        DetectionInput.create(
            context=c.context
            if isinstance(c.context, list)
            else [p for p in c.context.split("\n") if p.strip()],
            question=c.question or None,
            answer=c.answer,
        )
        for c in claims
    ]
    return items, [bool(c.label) for c in claims], [c.source.split("/")[0] for c in claims]


def heldout_aurocs(values: np.ndarray, gold: list[bool], groups: list[str]) -> dict[str, float]:
    multi = [i for i, g in enumerate(groups) if g == "multi"]
    return {
        "all": round(auroc(gold, values.tolist()), 4),
        "multi": round(auroc([gold[i] for i in multi], values[multi].tolist()), 4),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=ROOT / "core" / "_bundled" / "detector")
    parser.add_argument("--out", type=Path, help="where to write the figures and the decision")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    shipped = folder_map(args.folder)
    result: dict[str, Any] = {
        "folder": str(args.folder),
        "rule": "benchmarks/results/rag_selection/RULE_candidate16.md",
        "touched": {v: {} for v in VARIANTS},
    }
    for dataset, limit in SETS:
        data = load_set(args.folder, dataset, limit)
        items = [e.to_input() for e in data.examples]
        with negation_rule(""):
            before = cached_answers(data)
        result[dataset] = {"before": report(scores(shipped, before), data.y)}
        for v in VARIANTS:
            reading, touched = after(args.folder, items, before, v)
            result[dataset][v] = report(scores(shipped, reading), data.y)
            result["touched"][v][dataset] = touched
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
    with negation_rule(""):
        before_parts = {name: runtime_answers(args.folder, got) for name, got in parts.items()}
    readings = {"before": before_parts}
    for v in VARIANTS:
        readings[v] = {
            name: after(args.folder, got, before_parts[name], v)[0] for name, got in parts.items()
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
    result["decision"] = {v: decide(result, v) for v in VARIANTS}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


def decide(result: dict[str, Any], v: str) -> dict[str, Any]:
    """RULE_candidate16.md's conditions 1-6 (the suite's part of condition 4 is run apart)."""
    fj, select = result["faithjudge_select"], result["ragtruth_dev_select"]
    ab, hard, held = result["attributionbench"], result["hard_cases_auroc"], result["heldout_auroc"]
    flips = result["negation_flips_caught"]
    conditions = {
        "1_faithjudge_clean_flagged_lower": fj[v]["clean_flagged"] < fj["before"]["clean_flagged"],
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
