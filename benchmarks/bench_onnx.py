"""Latency and memory of the encoder models on torch fp32, ONNX fp32 and ONNX int8, side by side.

Usage (from the repository root, on a quiet machine)::

    python benchmarks/bench_onnx.py [--contexts 1000 8000 20000] [--answer-tokens 100]
        [--items 5] [--repeats 20] [--guard-repeats 20] [--stage-repeats 5]
        [--agreement benchmarks/results/onnx_agreement.json]
        [--out benchmarks/results/onnx_backend.md]

The measured part of ``--out`` is written between the markers
``<!-- bench_onnx.py: begin -->`` and ``<!-- bench_onnx.py: end -->``; the text around
them (what the numbers decide) is kept. A file without the markers is replaced whole.

The detector timings use the inputs of ``bench_evidence.py`` (real news sentences, an
answer restating them with one changed digit, ``--items`` inputs per context size, p50 /
p99 over ``--repeats`` single calls of each after one warm-up call). The whole guard is
``TruthLens.guard`` on a 1k-token context (prompt classifier, detector, NLI on flagged
spans; no LLM), with the policy's ``hallucination.backend`` / ``precision`` set per row.
Resident memory (VmRSS) is read in a fresh process per backend after loading the three
bundled models and running one guard call. All rows run in one process per backend,
one after another, with the same threads (``torch.set_num_threads`` and ONNX Runtime's
intra-op threads both the cores this process may use). ``--agreement`` adds the figures
of ``bench_onnx_agreement.py`` to the report. The load average is written beside the
numbers: other processes on the machine slow every row alike but widen p99. Last, the
stage breakdown of ``bench_stages.py`` (tokenising, evidence selection, forward pass,
rules, ...) for torch fp32 and ONNX fp32 at each context size (``--stage-repeats``
calls of each input; 0 skips it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evidence import _pct, _sentences, _time, _triple
from bench_stages import add_input_options, stage_table

from truthlens_integrations._lab_api import onnx_threads

BACKENDS = {
    "torch fp32": {"backend": "torch", "precision": "float32"},
    "onnx fp32": {"backend": "onnx", "precision": "float32"},
    "onnx int8": {"backend": "onnx", "precision": "int8"},
}


_BEGIN = "<!-- bench_onnx.py: begin -->"
_END = "<!-- bench_onnx.py: end -->"


def _policy(settings: dict[str, str]) -> Any:
    from truthlens_integrations.core.policy import load_policy

    return load_policy(
        "hallucination:\n"
        f"  backend: {settings['backend']}\n"
        f"  precision: {settings['precision']}\n"
        "  use_cpu: true\n"
    )


def _lettuce(tokenizer: Any) -> Any:
    """lettucedetect's detector on the bundled weights (fp32), or ``None`` when not installed.

    It reads every window of the context (its chunks, 512 tokens) and takes each token's
    maximum over them; the bundled folder's config says float16, which it would load on
    the CPU, so its model is cast to fp32 like ours.
    """
    try:
        from lettucedetect.detectors.transformer import TransformerDetector as Lettuce
    except ImportError:
        return None
    from truthlens_integrations.core.models import bundled_detector_path

    window = min(tokenizer.model_max_length, 512)
    detector = Lettuce(model_path=str(bundled_detector_path()), max_length=window, device="cpu")
    detector.model.to(torch.float32)

    def run(item: Any) -> Any:
        return detector.predict(
            context=list(item.context),
            question=item.question,
            answer=item.answer,
            output_format="spans",
        )

    return run


def _memory(settings: dict[str, str]) -> float:
    """MiB resident in a fresh process that loaded the three models and guarded once."""
    code = (
        "import sys, json; sys.path.insert(0, 'benchmarks');"
        "from bench_onnx import _policy;"
        "from truthlens_integrations.core.engine import TruthLens;"
        f"engine = TruthLens(_policy(json.loads({json.dumps(json.dumps(settings))})));"
        "engine.guard(context=['The tower was built in 1889.'], question='When was the "
        "tower built?', answer='It was built in 1950.');"
        "print([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def _guard_times(engine: Any, items: list[Any], repeats: int) -> list[float]:
    times: list[float] = []
    for item in items:
        # a question, so the prompt classifier runs too
        args = {
            "context": list(item.context),
            "question": "Summarize the news.",
            "answer": item.answer,
        }
        engine.guard(**args)  # warm-up
        for _ in range(repeats):
            t0 = time.perf_counter()
            engine.guard(**args)
            times.append((time.perf_counter() - t0) * 1000)
    return times


def _load() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


def _agreement_rows(path: Path | None) -> list[str]:
    if path is None or not path.is_file():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = [
        "",
        f"Agreement with torch fp32 (`{data['command']}`, {data['date']}):",
        "",
        "| set | answers | backend | spans equal | verdict equal | AUROC | max score change |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in data["detector"]:
        spans = f"{r['spans_equal']:.1%}" if "spans_equal" in r else "(reference)"
        verdict = f"{r['verdict_equal']:.1%}" if "verdict_equal" in r else ""
        change = f"{r['score_diff_max']:.2g}" if "score_diff_max" in r else ""
        rows.append(
            f"| {r['set']} | {r['answers']} | {r['backend']} | {spans} | {verdict} | "
            f"{r['auroc']:.4f} | {change} |"
        )
    rows.extend(
        f"| {r['model']} | {r['pairs']} | {r['backend']} | labels equal "
        f"{r['labels_equal']:.1%} | | | |"
        for key in ("nli", "prompt")
        for r in data.get(key, [])
    )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_input_options(ap, repeats=20)
    ap.add_argument("--guard-repeats", type=int, default=20)
    ap.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    ap.add_argument("--stage-repeats", type=int, default=5, help="stage breakdown (0: skip)")
    ap.add_argument("--no-memory", action="store_true", help="skip the resident-size processes")
    lettuce = "lettucedetect rows, when installed (0: skip)"
    ap.add_argument("--lettuce-repeats", type=int, default=3, help=lettuce)
    ap.add_argument(
        "--agreement", type=Path, default=Path("benchmarks/results/onnx_agreement.json")
    )
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/onnx_backend.md"))
    args = ap.parse_args()
    from truthlens_integrations.core.engine import TruthLens
    from truthlens_integrations.core.models.detection import load_detector

    root = Path(
        os.environ.get("TRUTHLENS_BENCHDATA", Path(__file__).parents[2] / "shared" / "benchdata")
    )
    torch.set_num_threads(onnx_threads())
    load_before = _load()
    sentences = _sentences(root)
    rows: list[str] = []
    guard_rows: list[str] = []
    tokenizer = load_detector(backend="torch")._loaded.tokenizer  # type: ignore[attr-defined]
    rng = random.Random(5)
    inputs = {
        size: [
            _triple(tokenizer, sentences, size, args.answer_tokens, rng) for _ in range(args.items)
        ]
        for size in args.contexts
    }
    p50: dict[tuple[int, str], float] = {}
    detectors = {}
    for name in args.backends:
        settings = BACKENDS[name]
        dtype = "float32" if settings["precision"] == "float32" else "int8"
        detector = load_detector(backend=settings["backend"], dtype=dtype, device="cpu")
        detectors[name] = detector
        for size, items in inputs.items():
            times, results = _time(detector, items, args.repeats)
            p50[(size, name)] = _pct(times, 50)
            ratio = (
                p50[(size, "torch fp32")] / p50[(size, name)]
                if (size, "torch fp32") in p50
                else None
            )
            rows.append(
                f"| {size} | {args.answer_tokens} | {name} | {_pct(times, 50):.0f} | "
                f"{_pct(times, 99):.0f} | {'' if ratio is None else f'{ratio:.2f}x'} | "
                f"{sum(r.detected for r in results)} of {len(results)} |"
            )
            print(rows[-1], flush=True)
        if 1000 in inputs:
            engine = TruthLens(_policy(settings))
            times = _guard_times(engine, inputs[1000], args.guard_repeats)
            memory = "" if args.no_memory else f"{_memory(settings):.0f}"
            guard_rows.append(
                f"| {name} | {_pct(times, 50):.0f} | {_pct(times, 99):.0f} | {memory} |"
            )
            print(guard_rows[-1], flush=True)
    lettuce = _lettuce(tokenizer) if args.lettuce_repeats else None
    if lettuce is not None:
        for size, items in inputs.items():
            times = []
            for item in items:
                lettuce(item)  # warm-up
                for _ in range(args.lettuce_repeats):
                    t0 = time.perf_counter()
                    lettuce(item)
                    times.append((time.perf_counter() - t0) * 1000)
            ratio = p50.get((size, "torch fp32"), 0.0) / _pct(times, 50)
            rows.append(
                f"| {size} | {args.answer_tokens} | lettucedetect 0.2 (torch fp32, every window) "
                f"| {_pct(times, 50):.0f} | {_pct(times, 99):.0f} | {ratio:.2f}x | |"
            )
            print(rows[-1], flush=True)
    stages: list[str] = []
    if args.stage_repeats:
        for name in ("torch fp32", "onnx fp32"):
            if name in detectors:
                print(f"stages, {name}:", flush=True)
                stages += [
                    "",
                    f"Where a call's time goes, {name} (ms per call, each stage without the "
                    f"stages it calls; {args.stage_repeats} calls of each input):",
                    "",
                    *stage_table(detectors[name], inputs, args.stage_repeats),
                ]
    machine = (
        f"{platform.platform()}, {os.cpu_count()} CPU cores ({onnx_threads()} usable), "
        f"Python {sys.version.split()[0]}, torch {torch.__version__}"
    )
    try:
        import onnxruntime

        machine += f", onnxruntime {onnxruntime.__version__}"
    except ImportError:
        pass
    text = "\n".join(
        [
            _BEGIN,
            f"- machine: {machine}",
            f"- command: `python benchmarks/bench_onnx.py {' '.join(sys.argv[1:])}`".rstrip(),
            f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
            f"- load average (1 / 5 / 15 min) before: {load_before}, after: {_load()}",
            "- model: the bundled detector (evidence selection), NLI branch and prompt head",
            f"- data: as bench_evidence.py; {args.items} inputs per context size, "
            f"{args.repeats} timed calls each",
            "",
            "| context tokens | answer tokens | backend | p50 ms | p99 ms | speed-up vs torch "
            "| inputs detected |",
            "|---:|---:|---|---:|---:|---:|---|",
            *rows,
            "",
            "Whole guard (prompt classifier + detector + NLI on flagged spans), 1k-token context,"
            " and resident memory of a fresh process after loading the three models:",
            "",
            "| backend | guard p50 ms | guard p99 ms | resident MiB |",
            "|---|---:|---:|---:|",
            *guard_rows,
            *_agreement_rows(args.agreement),
            *stages,
            _END,
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    old = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
    if _BEGIN in old and _END in old:
        text = old[: old.index(_BEGIN)] + text + old[old.index(_END) + len(_END) :]
    else:
        text = f"# Encoder backends: torch fp32, ONNX Runtime fp32 and int8\n\n{text}\n"
    args.out.write_text(text, encoding="utf-8")
    print(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
