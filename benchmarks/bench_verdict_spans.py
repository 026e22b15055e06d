"""The spans a user sees: the guard's verdict spans against people's marks.

Usage:
    python benchmarks/bench_verdict_spans.py [--dataset ragtruth] [--limit N]
        [--out benchmarks/results/verdict_spans.md]

``truthlens eval`` scores the detector's spans: every token at or above the token
threshold, on every answer, flagged or not. A user of the guard engine sees fewer: a
verdict shows spans only for an answer whose score reaches the route's threshold, and the
NLI explainer drops the spans it finds confidently entailed. This benchmark runs the
engine with its defaults (``TruthLens.from_config(None)``: the prompt classifier, the
bundled detector, then the NLI explainer; no LLM is called) over a labelled data set with
span labels and reports the character precision, recall and F1 of three sets of spans, by
task type and overall:

* the detector's spans on every answer (what ``truthlens eval`` measures);
* the detector's spans on the answers whose score reaches the threshold;
* the verdict's spans (those, after NLI).

It also reports, for each NLI label a verdict span carries (contradiction: severity 4,
neutral: 2), how many of those spans overlap a span people marked.

Measures only: nothing is tuned or chosen here, so it may read eval-only data.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from truthlens_integrations import TruthLens
from truthlens_integrations.evaluation import char_span_metrics, load_detection_dataset

BATCH = 16
Spans = list[tuple[int, int]]


def guard_all(engine: Any, items: Sequence[Any]) -> list[Any]:
    """The engine's verdicts, ``BATCH`` answers per call, in input order."""
    return [
        verdict
        for first in range(0, len(items), BATCH)
        for verdict in engine.guard_batch(list(items[first : first + BATCH]))
    ]


def span_sets(engine: Any, items: Sequence[Any], verdicts: Sequence[Any]) -> dict[str, list[Spans]]:
    """Per answer, the three sets of spans the module docstring names."""
    results = engine.detector.detect_batch(list(items))
    threshold = verdicts[0].threshold
    return {
        "detector, every answer": [[(s.start, s.end) for s in r.spans] for r in results],
        "detector, flagged answers": [
            [(s.start, s.end) for s in r.spans] if r.score >= threshold else [] for r in results
        ],
        "verdict (flagged, after NLI)": [[(s.start, s.end) for s in v.spans] for v in verdicts],
    }


def table(examples: Sequence[Any], sets: dict[str, list[Spans]]) -> list[str]:
    """Character precision / recall / F1 of each set, by task type and overall."""
    groups = sorted({e.task_type or "all" for e in examples})
    lines = [
        "| group | n | " + " | ".join(f"{name}: P / R / F1" for name in sets) + " |",
        "|---|---:|" + "---:|" * len(sets),
    ]
    for group in [*groups, "overall"]:
        rows = [
            i
            for i, e in enumerate(examples)
            if group == "overall" or (e.task_type or "all") == group
        ]
        gold = [[(s.start, s.end) for s in examples[i].gold_spans] for i in rows]
        cells = []
        for spans in sets.values():
            m = char_span_metrics(gold, [spans[i] for i in rows])
            cells.append(f"{m.precision:.3f} / {m.recall:.3f} / {m.f1:.3f}")
        name = f"**{group}**" if group == "overall" else group
        lines.append(f"| {name} | {len(rows)} | " + " | ".join(cells) + " |")
    return lines


def label_table(examples: Sequence[Any], verdicts: Sequence[Any]) -> list[str]:
    """Per NLI label of the verdict spans: how many, and the share inside a marked span."""
    counts: dict[str, list[int]] = {}
    for example, verdict in zip(examples, verdicts, strict=True):
        gold = [(g.start, g.end) for g in example.gold_spans]
        for span in verdict.spans:
            inside = any(a < span.end and span.start < b for a, b in gold)
            tally = counts.setdefault(str(span.nli_label), [0, 0])
            tally[0] += 1
            tally[1] += int(inside)
    lines = ["| NLI label (severity) | spans | inside a marked span |", "|---|---:|---:|"]
    for label, (n, inside) in sorted(counts.items()):
        lines.append(f"| {label} | {n} | {inside / n:.1%} |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="ragtruth")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    examples = [
        e for e in load_detection_dataset(args.dataset, limit=args.limit) if e.has_span_labels
    ]
    items = [e.to_input() for e in examples]
    engine = TruthLens.from_config(None)
    started = time.perf_counter()
    verdicts = guard_all(engine, items)
    sets = span_sets(engine, items, verdicts)
    seconds = time.perf_counter() - started
    unchecked = sum(v.score is None for v in verdicts)
    dropped = sum(len(v.dropped_spans) for v in verdicts)
    shown = sum(len(v.spans) for v in verdicts)
    command = "python benchmarks/bench_verdict_spans.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    lines = [
        f"# The spans a user sees: {args.dataset}",
        "",
        f"- command: `{command.strip()}`",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.platform()}, "
        f"{platform.machine()}; {seconds:.0f} s",
        f"- data: {len(examples)} answers with span labels; the engine's defaults (threshold "
        f"{verdicts[0].threshold}); {unchecked} answers not checked; NLI dropped {dropped} "
        f"of {dropped + shown} spans of flagged answers as entailed",
        "",
        *table(examples, sets),
        "",
        *label_table(examples, verdicts),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
