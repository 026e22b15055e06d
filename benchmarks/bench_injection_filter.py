"""The instruction filter on ordinary passages: false flags and cost per context.

Reproduces the measurement of ``benchmarks/results/hardening.md`` ("the instruction filter
on ordinary passages, and its cost"): the held-out train-role contexts
(``lab.training.realdata``, part ``heldout``), each split into passages at line breaks as
the benchmarks feed them, every unique context once. Also the ragtruth_dev and HaluEval
passages (the round-3 count). Run it with the interpreter of each branch to compare
(``python`` imports the package it is installed from).

    python benchmarks/bench_injection_filter.py --out flags.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from truthlens_integrations._lab_api import find_instructions

DATA = Path("/work/shared/benchdata")


def heldout_contexts() -> list[list[str]]:
    from lab.training import realdata

    seen: dict[str, list[str]] = {}
    for claim in realdata.load_real(part="heldout"):
        context = claim.context
        text = "\n".join(context) if isinstance(context, list) else context
        if text not in seen:
            seen[text] = [p for p in text.split("\n") if p.strip()]
    return list(seen.values())


def benchmark_passages() -> list[list[str]]:
    contexts: list[list[str]] = []
    for name in ("qa", "summary", "data2txt"):
        for line in (DATA / f"ragtruth_dev/ragtruth_dev_{name}.jsonl").open():
            source = json.loads(line)["source"]
            text = source.get("passages") if isinstance(source, dict) else source
            text = text if isinstance(text, str) else json.dumps(source, ensure_ascii=False)
            contexts.append([p for p in text.split("\n") if p.strip()])
    for name, key in (
        ("qa", "knowledge"),
        ("summarization", "document"),
        ("dialogue", "knowledge"),
    ):
        lines = (DATA / f"halueval/dataset_halueval_{name}.jsonl").open()
        contexts.extend(
            [p for p in json.loads(line)[key].split("\n") if p.strip()] for line in lines
        )
    return contexts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--timed", type=int, default=400, help="contexts timed")
    args = parser.parse_args()
    report: dict[str, object] = {}
    for name, contexts in (
        ("heldout", heldout_contexts()),
        ("ragtruth_halueval", benchmark_passages()),
    ):
        flags = [
            (i, f.index, f.reason, f.excerpt)
            for i, context in enumerate(contexts)
            for f in find_instructions(context)
        ]
        timed = contexts[: args.timed]
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            for context in timed:
                find_instructions(context)
            runs.append((time.perf_counter() - started) / len(timed) * 1000)
        report[name] = {
            "contexts": len(contexts),
            "passages": sum(len(c) for c in contexts),
            "characters": sum(len(p) for c in contexts for p in c),
            "flagged": flags,
            "timed_contexts": len(timed),
            "timed_chars_mean": statistics.mean(sum(len(p) for p in c) for c in timed),
            "ms_per_context": [round(r, 2) for r in runs],
        }
        print(
            name, {k: v for k, v in report[name].items() if k != "flagged"}, len(flags), "flagged"
        )
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
