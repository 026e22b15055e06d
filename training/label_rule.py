"""Candidate 14 of issue 27: a number after a name is an identifier, decided by its rule.

``benchmarks/results/rag_selection/RULE_candidate14.md`` (committed before the candidate
existed): the unit rule reads "Form 1040" as an identifier labelled "form", not as the year
1040 (``_quantities._label``). The shipped detector is measured with the labels on (after)
and switched off (before), same code, same default map, every score the runtime's
``calibrated_score`` over exact tokens (rules on, ONNX fp32):

- select split, AttributionBench and the 1,500 FaithJudge answers: an answer whose answer
  and context hold no labelled number reads the same either way, so both sides take its
  cached tokens (``training.rag_features``); the others are scored afresh on both sides;
- the hard-case test set, the padded Eiffel answer and the held-out train-role answers of
  ``bench_heldout.py --per-source 30`` (same draws) afresh on both sides.

    python -m training.label_rule --out benchmarks/results/rag_selection/candidate14.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from truthlens_integrations.evaluation import auroc

from .free_length_map import Answer, cached_answers, runtime_answers, scores
from .rag_features import ROOT, hard_case_examples
from .rag_response import folder_map, load_set, padded_answers, report

log = logging.getLogger("label_rule")

MARGIN = 0.005
SETS = (("ragtruth_dev_select", None), ("attributionbench", None), ("faithjudge_select", 1500))


@contextlib.contextmanager
def labels(*, on: bool) -> Iterator[None]:
    """The unit rule with its identifier labels on or off (the rules' memo cleared)."""
    from truthlens_integrations.core import _quantities
    from truthlens_integrations.core.models.detection import _adjust

    _adjust._rule_verdicts.cache_clear()
    with mock.patch.object(_quantities, "_label", _quantities._label if on else lambda *_: None):
        try:
            yield
        finally:
            _adjust._rule_verdicts.cache_clear()


def labelled(item: Any) -> bool:
    """Whether the answer or its context holds a number the labels read differently."""
    from truthlens_integrations.core._quantities import extract_quantities

    texts = [item.answer, *item.context]
    return any(q.label is not None for text in texts for q in extract_quantities(text))


def both_sides(folder: Path, items: Sequence[Any], cached: list[Answer] | None) -> dict[str, Any]:
    """Each input read before and after; inputs without a label keep their cached reading."""
    touched = [i for i, item in enumerate(items) if labelled(item)]
    out: dict[str, Any] = {"touched": len(touched)}
    for name, on in (("before", False), ("after", True)):
        with labels(on=on):
            if cached is None:
                out[name] = runtime_answers(folder, items)
                continue
            fresh = runtime_answers(folder, [items[i] for i in touched]) if touched else []
            reading = list(cached)
            for i, answer in zip(touched, fresh, strict=True):
                reading[i] = answer
            out[name] = reading
    return out


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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=ROOT / "core" / "_bundled" / "detector")
    parser.add_argument("--out", type=Path, help="where to write the figures and the decision")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    shipped = folder_map(args.folder)
    result: dict[str, Any] = {
        "folder": str(args.folder),
        "rule": "benchmarks/results/rag_selection/RULE_candidate14.md",
        "touched": {},
    }
    for dataset, limit in SETS:
        data = load_set(args.folder, dataset, limit)
        with labels(on=False):
            cached = cached_answers(data)
        items = [e.to_input() for e in data.examples]
        read = both_sides(args.folder, items, cached)
        result["touched"][dataset] = read["touched"]
        result[dataset] = {
            side: report(scores(shipped, read[side]), data.y) for side in read if side != "touched"
        }
        log.info("%s: %d of %d answers touched", dataset, read["touched"], len(items))
    cases = hard_case_examples("test")
    read = both_sides(args.folder, [c.to_input() for c in cases], None)
    gold = [c.hallucinated for c in cases]
    result["hard_cases_auroc"] = {
        side: round(auroc(gold, scores(shipped, read[side]).tolist()), 4)
        for side in ("before", "after")
    }
    read = both_sides(args.folder, padded_answers(), None)
    result["padding"] = {
        side: [round(float(v), 4) for v in scores(shipped, read[side])]
        for side in ("before", "after")
    }
    items, gold_held, groups = heldout_items()
    read = both_sides(args.folder, items, None)
    result["heldout_auroc"] = {}
    for side in ("before", "after"):
        values = scores(shipped, read[side])
        multi = np.array([g == "multi" for g in groups])
        result["heldout_auroc"][side] = {
            "all": round(auroc(gold_held, values.tolist()), 4),
            "multi": round(
                auroc(
                    [g for g, m in zip(gold_held, multi, strict=True) if m], values[multi].tolist()
                ),
                4,
            ),
        }
    result["decision"] = decide(result)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


def decide(result: dict[str, Any]) -> dict[str, Any]:
    """RULE_candidate14.md's conditions 1-6 (the suite's part of condition 4 is run apart)."""
    fj, select = result["faithjudge_select"], result["ragtruth_dev_select"]
    ab, hard, held = result["attributionbench"], result["hard_cases_auroc"], result["heldout_auroc"]
    conditions = {
        "1_faithjudge_clean_flagged_lower": fj["after"]["clean_flagged"]
        < fj["before"]["clean_flagged"],
        "2_select_auroc_at_most_0.005_below": select["after"]["auroc"]
        >= select["before"]["auroc"] - MARGIN,
        "3_attributionbench_at_most_0.005_below": ab["after"]["auroc"]
        >= ab["before"]["auroc"] - MARGIN,
        "4_hard_cases_at_most_0.005_below": hard["after"] >= hard["before"] - MARGIN,
        "5_heldout_all_and_multi_at_most_0.005_below": all(
            held["after"][g] >= held["before"][g] - MARGIN for g in ("all", "multi")
        ),
        "6_padding_unchanged": result["padding"]["after"] == result["padding"]["before"],
    }
    return {**conditions, "passes": all(conditions.values())}


if __name__ == "__main__":
    main()
