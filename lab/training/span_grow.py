"""Candidate 13 of issue 27: spans that grow into their phrase, decided by its rule.

``lab/records/rag_selection/RULE_candidate13.md`` (committed before any figure of
it): a span starts at a token above ``token_threshold`` and grows into its neighbours while
they stay above ``sigmoid(logit(token_threshold) - m)`` (:func:`grown_spans`). For each
margin ``m`` of the rule's grid, the character F1 of the
spans made from the cached exact tokens of the select split of ``ragtruth_dev``
(``lab.training.rag_features``), against ``m`` = 0 with a paired bootstrap by source. No
margin passed (``span_grow.json``), so the runtime has no such setting. Nothing eval-only
is read.

    python -m lab.training.span_grow --out lab/records/rag_selection/span_grow.json
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._cli import emit_json, parse_logged, selection_parser
from .rag_features import cache_file, load_examples, read_cache
from .rag_response import source_bootstrap

log = logging.getLogger("span_grow")

MARGINS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
TIE = 0.005
THRESHOLD = 0.5
DATASET = "ragtruth_dev_select"


def extend_cut(threshold: float, margin: float) -> float:
    """The extension cut ``margin`` logits below ``threshold``."""
    return 1.0 / (1.0 + math.exp(-(math.log(threshold / (1.0 - threshold)) - margin)))


def grown_spans(
    tokens: Sequence[tuple[int, int, float]], threshold: float, low: float
) -> list[tuple[int, int]]:
    """Runs of tokens above ``low`` that hold a token above ``threshold``, as ``(start, end)``.

    With ``low == threshold`` these are the runtime's spans (``merge_spans``).
    """
    spans: list[tuple[int, int]] = []
    run: list[tuple[int, int, float]] = []
    for token in [*tokens, (0, 0, 0.0)]:  # the sentinel closes the last run
        if token[2] > low:
            run.append(token)
            continue
        if run and max(p for _, _, p in run) > threshold:
            spans.append((run[0][0], run[-1][1]))
        run = []
    return spans


def span_counts(examples: Sequence[Any], rows: Sequence[dict[str, Any]], margin: float) -> Any:
    """Per answer: (overlap, predicted, gold) characters, and whether it has a span."""
    by_id = {e.id: e for e in examples}
    counts, with_span = [], []
    for row in rows:
        tokens = [(s, e, p) for s, e, p in row["tokens"]]
        spans = grown_spans(tokens, THRESHOLD, extend_cut(THRESHOLD, margin))
        predicted = {i for s, e in spans for i in range(s, e)}
        gold = {i for s in by_id[row["id"]].gold_spans for i in range(s.start, s.end)}
        counts.append((len(predicted & gold), len(predicted), len(gold)))
        with_span.append(bool(spans))
    return np.array(counts, dtype=float), np.array(with_span)


def f1(counts: np.ndarray) -> tuple[float, float, float]:
    """Pooled character precision, recall and F1 (``char_span_metrics``'s)."""
    overlap, predicted, gold = counts.sum(axis=0)
    precision = overlap / predicted if predicted else 0.0
    recall = overlap / gold if gold else 0.0
    both = precision + recall
    return precision, recall, (2 * precision * recall / both if both else 0.0)


def f1_bootstrap(a: np.ndarray, b: np.ndarray, sources: np.ndarray) -> dict[str, float]:
    """F1(a) - F1(b) with a 95% interval, resampling sources (2,000 draws, seed 0)."""
    return source_bootstrap(lambda rows: f1(a[rows])[2] - f1(b[rows])[2], sources)


def main(argv: Sequence[str] | None = None) -> None:
    parser = selection_parser(__doc__, "where to write the table and the choice (JSON)")
    args = parse_logged(parser, argv)
    rows = read_cache(cache_file(args.folder, DATASET))
    examples = load_examples(DATASET)
    source = {e.id: e.source_id for e in examples}
    sources = np.array([source[r["id"]] for r in rows])
    clean = np.array([not r["label"] for r in rows])
    measured = {m: span_counts(examples, rows, m) for m in MARGINS}
    table = []
    for m, (counts, with_span) in measured.items():
        precision, recall, score = f1(counts)
        table.append(
            {
                "margin": m,
                "extend_cut": round(extend_cut(THRESHOLD, m), 4),
                "precision": round(precision, 4),
                "recall": round(recall, 4),
                "f1": round(score, 4),
                "clean_answers_with_a_span": round(float(with_span[clean].mean()), 4),
            }
        )
    best = max(row["f1"] for row in table)
    chosen = min((row for row in table if row["f1"] >= best - TIE), key=lambda r: r["margin"])
    boot = f1_bootstrap(measured[chosen["margin"]][0], measured[0.0][0], sources)
    conditions = {
        "1_f1_above_m0_with_interval_above_0": chosen["margin"] > 0 and boot["low"] > 0,
        "2_clean_answers_with_a_span_unchanged": chosen["clean_answers_with_a_span"]
        == table[0]["clean_answers_with_a_span"],
    }
    result = {
        "data": f"{DATASET}: {len(rows)} answers, the cached exact tokens of {args.folder}",
        "rule": "lab/records/rag_selection/RULE_candidate13.md",
        "token_threshold": THRESHOLD,
        "table": table,
        "chosen": chosen,
        "bootstrap_chosen_minus_m0": boot,
        "conditions": conditions,
        "passes_figures": all(conditions.values()),
    }
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
