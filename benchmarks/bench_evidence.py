"""Latency of the bundled detector with evidence selection, beside the full-window scan.

Usage:
    python benchmarks/bench_evidence.py [--contexts 1000 8000 20000] [--answer-tokens 100]
        [--items 5] [--repeats 20] [--device auto] [--dtype float32] [--gc-freeze]
        [--out benchmarks/results/detector_evidence.md]

Contexts are real news sentences (HaluEval summarization documents, train-role data;
``$TRUTHLENS_BENCHDATA`` or ``../shared/benchdata``) joined into passages of about 120
words until the context has the asked number of tokens; the answer restates sentences of
the context, cut at a word so that it has at most ``--answer-tokens`` tokens, with one
changed number, so every unit is scored. Each context size draws ``--items`` such
inputs (how an answer falls into units changes the cost); fp32 on the CPU, single
calls, p50 / p99 over ``--repeats`` calls of each input after one warm-up call each.
``--device`` and ``--dtype`` measure another device or precision (the target is the CPU
in fp32). ``--gc-freeze`` calls ``gc.freeze()`` once the models are loaded, as a service
replica does: Python's full collections then skip the long-lived objects.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

import torch

from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models.detection import load_detector

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _settings import add_config_option, parse_settings


def _sentences(root: Path) -> list[str]:
    path = root / "halueval" / "dataset_halueval_summarization.jsonl"
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if n >= 400:
                break
            doc = json.loads(line)["document"]
            out += [s.strip() + "." for s in doc.split(". ") if 40 <= len(s) <= 300]
    return out


def _draw(tokenizer, pool: list[str], tokens: int, rng: random.Random) -> list[str]:  # type: ignore[no-untyped-def]
    """Sentences drawn from ``pool`` (with replacement) until they hold ``tokens`` tokens."""
    out: list[str] = []
    count = 0
    while count < tokens:
        s = rng.choice(pool)
        out.append(s)
        count += len(tokenizer(s, add_special_tokens=False)["input_ids"])
    return out


def _triple(tokenizer, sentences: list[str], tokens: int, answer_tokens: int,  # type: ignore[no-untyped-def]
            rng: random.Random) -> DetectionInput:  # fmt: skip
    chosen = _draw(tokenizer, sentences, tokens, rng)
    passages = [" ".join(chosen[i : i + 5]) for i in range(0, len(chosen), 5)]
    answer = _cut(tokenizer, " ".join(_draw(tokenizer, chosen, answer_tokens, rng)), answer_tokens)
    return DetectionInput.create(
        context=passages, question=None, answer=answer.replace("1", "7", 1)
    )


def _cut(tokenizer, text: str, tokens: int) -> str:  # type: ignore[no-untyped-def]
    """``text`` without its last words, down to at most ``tokens`` tokens."""
    words = text.split()
    while len(tokenizer(" ".join(words), add_special_tokens=False)["input_ids"]) > tokens:
        words.pop()
    return " ".join(words)


def _time(detector, items: list[DetectionInput], repeats: int):  # type: ignore[no-untyped-def]
    """Milliseconds of every timed call, and each input's result."""
    times: list[float] = []
    results = []
    for item in items:
        results.append(detector.detect_batch([item])[0])  # warm-up
        for _ in range(repeats):
            t0 = time.perf_counter()
            detector.detect_batch([item])
            times.append((time.perf_counter() - t0) * 1000)
    return times, results


def _span(values: list[int]) -> str:
    return str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(round(q / 100 * (len(ordered) - 1)), len(ordered) - 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--contexts", type=int, nargs="+", default=[1000, 8000, 20000])
    ap.add_argument("--answer-tokens", type=int, default=100)
    ap.add_argument("--items", type=int, default=5, help="inputs drawn per context size")
    ap.add_argument("--repeats", type=int, default=20, help="timed calls per input")
    ap.add_argument(
        "--evidence-tokens",
        type=int,
        nargs="*",
        default=[],
        help="also time evidence selection with these budgets (default 192)",
    )
    ap.add_argument("--device", default="auto", help="cpu, cuda, mps or auto (the default)")
    ap.add_argument("--dtype", default="float32", help="float32 (the default), bfloat16, float16")
    ap.add_argument("--gc-freeze", action="store_true", help="gc.freeze() after loading")
    add_config_option(ap)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/detector_evidence.md"))
    args = ap.parse_args()
    root = Path(
        os.environ.get("TRUTHLENS_BENCHDATA", Path(__file__).parents[2] / "shared" / "benchdata")
    )
    torch.set_num_threads(os.cpu_count() or 1)
    on = {"device": args.device, "dtype": args.dtype}
    evidence = load_detector(**on)
    windows = load_detector(**on, strategy="windows", max_windows=1000)
    budgets = {
        f"evidence ({n} tokens)": load_detector(**on, evidence_tokens=n)
        for n in args.evidence_tokens
    }
    for text in args.config:
        budgets[f"evidence ({text})"] = load_detector(**on, **parse_settings(text))
    if args.gc_freeze:
        gc.freeze()
    tokenizer = evidence._loaded.tokenizer  # type: ignore[attr-defined]
    sentences = _sentences(root)
    rng = random.Random(5)
    rows = []
    for size in args.contexts:
        items = [
            _triple(tokenizer, sentences, size, args.answer_tokens, rng) for _ in range(args.items)
        ]
        for name, detector in [
            ("evidence (default)", evidence),
            *budgets.items(),
            ("windows", windows),
        ]:
            if name == "windows" and size > 8000:
                continue  # minutes per call; the point is made at 8k
            repeats = args.repeats if name.startswith("evidence") else max(3, args.repeats // 5)
            times, results = _time(detector, items, repeats)
            pieces = sorted({r.coverage.answer_pieces for r in results})
            windows_per = sorted({r.coverage.context_windows for r in results})
            rows.append(
                f"| {size} | {args.answer_tokens} | {name} | {_pct(times, 50):.0f} | "
                f"{_pct(times, 99):.0f} | {_span(pieces)} | {_span(windows_per)} | "
                f"{sum(r.detected for r in results)} of {len(results)} |"
            )
            print(rows[-1], flush=True)
    device = evidence.device  # type: ignore[attr-defined]
    gpu = f", {torch.cuda.get_device_name(device)}" if device.type == "cuda" else ""
    machine = (
        f"{platform.platform()}, {os.cpu_count()} CPU cores, Python {sys.version.split()[0]}, "
        f"torch {torch.__version__}, device {device}{gpu}, {args.dtype}, "
        f"{torch.get_num_threads()} threads"
        + (", gc.freeze() after loading" if args.gc_freeze else "")
    )
    text = "\n".join(
        [
            "# Detector latency: evidence selection vs the full-window scan",
            "",
            f"- machine: {machine}",
            f"- command: `python benchmarks/bench_evidence.py {' '.join(sys.argv[1:])}`".rstrip(),
            f"- date: {time.strftime('%Y-%m-%d')}",
            "- model: the bundled detector (same weights for both strategies)",
            "- data: news sentences from HaluEval summarization documents (train-role), answer"
            " restating context sentences (cut to at most the answer tokens) with one changed"
            f" digit; {args.items} inputs per context size, {args.repeats} timed calls each",
            "",
            "| context tokens | answer tokens | strategy | p50 ms | p99 ms | answer units / pieces "
            "| windows per piece | inputs detected |",
            "|---:|---:|---|---:|---:|---:|---:|---|",
            *rows,
            "",
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
