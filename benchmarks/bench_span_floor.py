"""What the span shift and the rule sentence floor cost: the bundled detector with and without.

Usage (from the repository root, on a quiet machine)::

    python benchmarks/bench_span_floor.py [--items 5] [--repeats 20] [--guard-repeats 10]
        [--rag 20] [--out benchmarks/results/span_floor.md]

Issue 27, candidates 8 and 10b. The shipped folder against a copy whose ``config.json`` is
the one before them (no ``span_shift``, no ``rule_sentence_floor``, the map's bias as it
was), both on the same backend (``auto``: ONNX Runtime fp32 on a CPU with the ``fast``
extra), the inputs of ``bench_evidence.py`` at a 1k-token context with a 100-token answer,
calls of the two interleaved input by input. The detector call and the whole guard
(``TruthLens.guard``: prompt classifier, detector, NLI on each kept span); the spans per
answer say why the guard's NLI stage costs more: more tokens reach 0.5. ``--rag N`` also
guards N real RAG answers (the select split of ``ragtruth_dev``), where spans are many.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_evidence import _pct, _sentences, _triple

from truthlens_integrations._lab_api import onnx_threads


def before_config(config: dict[str, Any]) -> dict[str, Any]:
    """The folder's config as it was before the span shift and the rule sentence floor."""
    extra = config["truthlens"]
    calibration = dict(extra["calibration"])
    shift = calibration.pop("span_shift", 0.0)
    calibration.pop("span_shift_fitted_on", None)
    response = dict(extra["response_calibration"])
    response.pop("rule_sentence_floor", None)
    linear = response.get("max_logit", 0.0) + response.get("sentence_peak", 0.0)
    response["bias"] = round(response["bias"] + linear * shift, 6)
    return {
        **config,
        "truthlens": {**extra, "calibration": calibration, "response_calibration": response},
    }


def _detector(folder: Path) -> Any:
    """The bundled detector's class and defaults over ``folder``."""
    from truthlens_integrations.core import DetectionConfig
    from truthlens_integrations.core.models.detection import EvidenceDetector

    config = DetectionConfig(aggregation="calibrated")
    return EvidenceDetector(folder, config=config, model_id="truthlens-bundled-detector")


def _rag_rows(engines: dict[str, Any], n: int) -> list[str]:
    """Guard latency, kept spans and flags on ``n`` real RAG answers, per folder."""
    from truthlens_integrations.evaluation import load_detection_dataset

    examples = load_detection_dataset("ragtruth_dev_select", limit=n)
    times: dict[str, list[float]] = {name: [] for name in engines}
    spans: dict[str, list[int]] = {name: [] for name in engines}
    flagged: dict[str, int] = dict.fromkeys(engines, 0)
    for example in examples:
        item = example.to_input()
        kwargs = {"context": list(item.context), "question": item.question, "answer": item.answer}
        for name, engine in engines.items():
            engine.guard(**kwargs)  # warm-up
            t0 = time.perf_counter()
            verdict = engine.guard(**kwargs)
            times[name].append((time.perf_counter() - t0) * 1000)
            spans[name].append(len(verdict.spans))
            flagged[name] += verdict.detected
    return [
        f"| {name} | {_pct(times[name], 50):.0f} / {_pct(times[name], 99):.0f} | "
        f"{statistics.mean(spans[name]):.1f} | {flagged[name]} of {len(examples)} |"
        for name in engines
    ]


def main() -> None:
    from truthlens_integrations.core.engine import TruthLens
    from truthlens_integrations.core.models import bundled_detector_path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--guard-repeats", type=int, default=10)
    ap.add_argument(
        "--rag", type=int, default=20, help="also guard N ragtruth_dev select answers (0: skip)"
    )
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/span_floor.md"))
    args = ap.parse_args()
    root = Path(
        os.environ.get("TRUTHLENS_BENCHDATA", Path(__file__).parents[2] / "shared" / "benchdata")
    )
    shipped = bundled_detector_path()
    work = Path(tempfile.mkdtemp(prefix="span_floor_"))
    before = work / "detector"
    shutil.copytree(shipped, before)
    config = json.loads((shipped / "config.json").read_text())
    (before / "config.json").write_text(json.dumps(before_config(config), indent=2))
    folders = {"before (stage 6 as it was)": before, "shipped (span shift + floor)": shipped}
    detectors = {name: _detector(folder) for name, folder in folders.items()}
    engines = {name: TruthLens.from_config(None, detector=d) for name, d in detectors.items()}
    tokenizer = next(iter(detectors.values()))._loaded.tokenizer  # type: ignore[attr-defined]
    rng = random.Random(5)
    items = [_triple(tokenizer, _sentences(root), 1000, 100, rng) for _ in range(args.items)]
    detect: dict[str, list[float]] = {name: [] for name in folders}
    guard: dict[str, list[float]] = {name: [] for name in folders}
    spans: dict[str, list[int]] = {name: [] for name in folders}
    for item in items:
        kwargs = {
            "context": list(item.context),
            "question": "Summarize the news.",
            "answer": item.answer,
        }
        for name in folders:  # warm-up
            detectors[name].detect_batch([item])
            spans[name].append(len(engines[name].guard(**kwargs).spans))
        for _ in range(args.repeats):
            for name, detector in detectors.items():
                t0 = time.perf_counter()
                detector.detect_batch([item])
                detect[name].append((time.perf_counter() - t0) * 1000)
        for _ in range(args.guard_repeats):
            for name, engine in engines.items():
                t0 = time.perf_counter()
                engine.guard(**kwargs)
                guard[name].append((time.perf_counter() - t0) * 1000)
    rag_rows = _rag_rows(engines, args.rag) if args.rag else []
    shutil.rmtree(work)
    backend = next(iter(detectors.values())).backend  # type: ignore[attr-defined]
    lines = [
        "# The span shift and the rule sentence floor: latency (issue 27, candidates 8 and 10b)",
        "",
        "- command: `python benchmarks/bench_span_floor.py "
        f"--items {args.items} --repeats {args.repeats} --guard-repeats {args.guard_repeats} "
        f"--rag {args.rag}`",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: "
        f"{platform.machine()}, {os.cpu_count()} cores; backend {backend}, "
        f"{onnx_threads()} thread(s); load average {os.getloadavg()[0]:.1f} at the end",
        f"- data: as bench_evidence.py, {args.items} inputs of a 1k-token context and a "
        "100-token answer (one changed digit); the two detectors' calls interleaved",
        "",
        "| detector folder | detector p50 / p99 ms | guard p50 / p99 ms | guard spans per answer |",
        "|---|---:|---:|---:|",
    ]
    lines.extend(
        f"| {name} | {_pct(detect[name], 50):.0f} / {_pct(detect[name], 99):.0f} | "
        f"{_pct(guard[name], 50):.0f} / {_pct(guard[name], 99):.0f} | "
        f"{statistics.mean(spans[name]):.1f} |"
        for name in folders
    )
    if rag_rows:
        lines += [
            "",
            f"Real RAG answers: the first {args.rag} of the `ragtruth_dev` select split (select "
            "role), each guarded once per folder after a warm-up, interleaved:",
            "",
            "| detector folder | guard p50 / p99 ms | spans shown per answer | flagged |",
            "|---|---:|---:|---:|",
            *rag_rows,
        ]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
