"""Set the bundled detector's token scale so that the 0.5 token threshold marks spans well.

Candidate 8 of issue 27 (``lab/records/rag_selection/RULE_candidate8.md``). The
response score has its own map, which reads the largest token probability through its
logit, linearly; so the token calibration's remaining job is the span threshold. This
step reads the cached exact tokens of the select split of ``ragtruth_dev``
(``lab.training.rag_features``), measures the character F1 of the spans the runtime makes
(:func:`merge_spans`, the evaluation harness's :func:`char_span_metrics`) at each cut of
the rule's grid, picks the cut by the rule, and with ``--write`` adds the logit shift that
makes that cut the new 0.5 to the folder's span shift (applied after the runtime
rules). The default response map's bias
absorbs the shift, so its scores stay what they were (up to the rules' fixed
probabilities). Nothing eval-only is read.

    python -m lab.training.span_cut --out lab/records/rag_selection/span_cut.json [--write]
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import Any

from ._cli import emit_json, parse_logged, selection_parser
from .rag_features import cache_file, load_examples, read_cache

log = logging.getLogger("span_cut")

GRID = (0.50, 0.45, 0.40, 0.36, 0.34, 0.32, 0.30, 0.28, 0.26, 0.24, 0.22, 0.20)
TIE = 0.005
DATASET = "ragtruth_dev_select"


def span_f1(examples: Sequence[Any], rows: Sequence[dict[str, Any]], cut: float) -> dict[str, Any]:
    """Character precision, recall and F1 of the spans made at token probability ``> cut``."""
    from truthlens_integrations._lab_api import merge_spans
    from truthlens_integrations.core import TokenScore
    from truthlens_integrations.evaluation import char_span_metrics

    by_id = {e.id: e for e in examples}
    gold, predicted = [], []
    clean_with_span = 0
    for row in rows:
        example = by_id[row["id"]]
        answer = example.answer
        tokens = [
            TokenScore(text=answer[s:e], start=s, end=e, probability=p) for s, e, p in row["tokens"]
        ]
        spans = merge_spans(answer, tokens, token_threshold=cut)
        gold.append([(s.start, s.end) for s in example.gold_spans])
        predicted.append([(s.start, s.end) for s in spans])
        clean_with_span += bool(spans) and not example.hallucinated
    metrics = char_span_metrics(gold, predicted)
    clean = sum(1 for r in rows if not r["label"])
    return {
        "cut": cut,
        "precision": round(metrics.precision, 4),
        "recall": round(metrics.recall, 4),
        "f1": round(metrics.f1, 4),
        "clean_answers_with_a_span": round(clean_with_span / max(clean, 1), 4),
    }


def choose(table: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The rule's choice: the best F1, and among cuts within :data:`TIE` of it the highest."""
    best = max(row["f1"] for row in table)
    return max((row for row in table if row["f1"] >= best - TIE), key=lambda row: row["cut"])


def apply_cut(config: dict[str, Any], cut: float, note: str) -> dict[str, Any]:
    """``config`` with the token scale shifted so that ``cut`` becomes 0.5.

    The folder's span shift (applied after the rules, ``_transformer.shifted``) gains
    ``delta = -logit(cut)``; the response map's bias loses what its logit-linear terms
    (``max_logit``, ``sentence_peak``) gain, so its scores are unchanged.
    """
    delta = -math.log(cut / (1.0 - cut))
    extra = config["truthlens"]
    calibration = dict(extra["calibration"])
    calibration["span_shift"] = round(float(calibration.get("span_shift", 0.0)) + delta, 6)
    calibration["span_shift_fitted_on"] = note
    response = dict(extra["response_calibration"])
    linear = float(response.get("max_logit", 0.0)) + float(response.get("sentence_peak", 0.0))
    response["bias"] = round(float(response["bias"]) - linear * delta, 6)
    truthlens = {**extra, "calibration": calibration, "response_calibration": response}
    return {**config, "truthlens": truthlens}


def main(argv: Sequence[str] | None = None) -> None:
    parser = selection_parser(__doc__, "where to write the table and the choice (JSON)")
    parser.add_argument("--write", action="store_true", help="apply the chosen cut to the folder")
    args = parse_logged(parser, argv)
    rows = read_cache(cache_file(args.folder, DATASET))
    examples = load_examples(DATASET)
    table = [span_f1(examples, rows, cut) for cut in GRID]
    chosen = choose(table)
    result = {
        "data": f"{DATASET}: {len(rows)} answers, the cached exact tokens of {args.folder}",
        "rule": "lab/records/rag_selection/RULE_candidate8.md",
        "table": table,
        "chosen": chosen,
        "condition_1_above_current": chosen["f1"] > table[0]["f1"],
    }
    emit_json(result, args.out)
    if args.write and result["condition_1_above_current"]:
        path = args.folder / "config.json"
        note = (
            f"shifted so that the old {chosen['cut']} is 0.5: the cut with the best span "
            f"character F1 on the ragtruth_dev select split (lab/training/span_cut.py, "
            f"RULE_candidate8.md)"
        )
        config = apply_cut(json.loads(path.read_text()), chosen["cut"], note)
        path.write_text(json.dumps(config, indent=2) + "\n")
        log.info("wrote the token scale for cut %s into %s", chosen["cut"], path)


if __name__ == "__main__":
    main()
