"""Which faster precision could keep the detector's verdicts? Token-logit error, speed, cascade.

Usage (from the repository root; one thread, CPU time, so a shared machine counts work)::

    OMP_NUM_THREADS=1 python benchmarks/bench_onnx_quant.py [--rows 150] [--out FILE]

Rows are the bundled detector's evidence rows for train-role HaluEval answers (qa,
summarization, dialogue; nothing eval-only): one set to calibrate the static graph and
to set each cascade margin, another to measure. Each candidate runs every measured row
alone (no padding) and is compared with torch fp32 on the calibrated token logit
``scale * (logit1 - logit0) + shift``, whose sign against 0 is the token threshold 0.5:

* error: p50 / p99 / max of the absolute logit change over answer tokens;
* rows flipped: rows with a token on the other side of the threshold (its spans move);
* cascade: the candidate first, torch fp32 again for each row with a token within the
  margin (1.25 x the largest error on the calibration rows) of the threshold; the share
  of rows that fall back, rows still flipped, and the cost against fp32 alone.

Candidates: the package's ONNX int8 graph (dynamic, per channel, fused), dynamic
per-tensor, reduce_range and MatMul-only variants, static QDQ (MatMul only, per channel, MinMax
calibrated), torch bf16 weights and torch bf16 autocast. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from truthlens_integrations._lab_api import detector_calibration
from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models.detection import load_detector

Row = tuple[list[int], list[int], list[int]]  # input ids, type ids, answer positions
Runner = Callable[[Row], np.ndarray]


def _items(root: Path, start: int, n: int, seed: int) -> list[DetectionInput]:
    out = []
    for kind, fields in {
        "qa": ("knowledge", "question", "right_answer", "hallucinated_answer"),
        "summarization": ("document", None, "right_summary", "hallucinated_summary"),
        "dialogue": ("knowledge", "dialogue_history", "right_response", "hallucinated_response"),
    }.items():
        lines = (root / "halueval" / f"dataset_halueval_{kind}.jsonl").read_text().splitlines()
        for i in random.Random(seed).sample(range(start, len(lines)), n):
            row = json.loads(lines[i])
            context, question, *answers = fields
            out.extend(
                DetectionInput.create(
                    context=[row[context]],
                    question=row[question] if question else None,
                    answer=row[answer],
                )
                for answer in answers
                if row[answer].strip()
            )
    return out


def _rows(detector: Any, items: list[DetectionInput], n: int) -> list[Row]:
    rows: list[Row] = []
    for start in range(0, len(items), 16):
        plans, _ = detector._evidence_plans(items[start : start + 16])
        for plan in plans:
            rows += [(s.input_ids, s.type_ids, s.answer_positions) for s in plan.segments]
    return rows[:: max(1, len(rows) // n)][:n]


def _feeds(row: Row) -> dict[str, np.ndarray]:
    ids = np.array([row[0]], dtype=np.int64)
    return {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "token_type_ids": np.array([row[1]]),
    }


def _torch(model: Any, autocast: torch.dtype | None = None) -> Runner:
    def run(row: Row) -> np.ndarray:
        feeds = {k: torch.from_numpy(v) for k, v in _feeds(row).items()}
        with (
            torch.inference_mode(),
            torch.autocast("cpu", autocast or torch.bfloat16, enabled=autocast is not None),
        ):
            return model(**feeds).logits.float().numpy()  # type: ignore[no-any-return]

    return run


def _onnx(path: Path) -> Runner:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return lambda row: session.run(["logits"], _feeds(row))[0]  # type: ignore[no-any-return]


def _graphs(fp32: Path, calibration: list[Row], folder: Path) -> dict[str, Path]:
    """The quantized variants of the package's fused fp32 graph."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    extra = {"DefaultTensorType": onnx.TensorProto.FLOAT}
    out = {}
    for name, options in {
        "onnx int8 dynamic per-tensor": {"per_channel": False},
        "onnx int8 dynamic per-channel, reduce_range": {"per_channel": True, "reduce_range": True},
        "onnx int8 dynamic per-channel, MatMul only": {
            "per_channel": True,
            "op_types_to_quantize": ["MatMul"],
        },
    }.items():
        out[name] = folder / f"{len(out)}.onnx"
        quantize_dynamic(
            fp32, out[name], weight_type=QuantType.QInt8, extra_options=extra, **options
        )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.rows = iter(calibration)

        def get_next(self) -> dict[str, np.ndarray] | None:
            row = next(self.rows, None)
            return None if row is None else _feeds(row)

    name = "onnx int8 static QDQ per-channel, MatMul only (MinMax on train rows)"
    out[name] = folder / "static.onnx"
    quantize_static(
        fp32,
        out[name],
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        calibrate_method=CalibrationMethod.MinMax,
        extra_options=extra,
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=150, help="rows per set (calibration, measured)")
    ap.add_argument("--out", type=Path, help="also write the table here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    root = Path(
        os.environ.get("TRUTHLENS_BENCHDATA", Path(__file__).parents[2] / "shared" / "benchdata")
    )
    reference = load_detector(backend="torch", device="cpu")
    scale, shift = detector_calibration(reference._loaded.config)  # type: ignore[attr-defined]
    calibration = _rows(reference, _items(root, 2000, 60, 1), args.rows)
    measured = _rows(reference, _items(root, 6000, 60, 2), args.rows)

    def logit(runner: Runner, row: Row) -> np.ndarray:
        raw = runner(row)[0].astype(np.float64)
        return (scale * (raw[:, 1] - raw[:, 0]) + shift)[row[2]]  # type: ignore[no-any-return]

    model = reference._loaded.model  # type: ignore[attr-defined]
    int8 = load_detector(backend="onnx", dtype="int8")._loaded.graph  # type: ignore[attr-defined]
    fp32 = load_detector(backend="onnx", dtype="float32")._loaded.graph  # type: ignore[attr-defined]
    candidates: dict[str, Runner] = {
        "onnx fp32 (fused, the package's)": _onnx(fp32.path),
        "onnx int8 dynamic per-channel (the package's)": _onnx(int8.path),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in _graphs(fp32.path, calibration, Path(tmp)).items():
            candidates[name] = _onnx(path)
        candidates["torch bf16 weights"] = _torch(copy.deepcopy(model).to(torch.bfloat16))
        candidates["torch bf16 autocast"] = _torch(model, torch.bfloat16)
        exact = _torch(model)
        ref = {
            "calibration": [logit(exact, r) for r in calibration],
            "measured": [logit(exact, r) for r in measured],
        }
        started = time.process_time()
        for row in measured:
            exact(row)
        fp32_cpu = (time.process_time() - started) / len(measured)
        lines = [
            f"- rows: {len(calibration)} calibration / {len(measured)} measured (train-role "
            f"HaluEval), one thread, CPU time; load average {_load()}",
            f"- torch fp32: {fp32_cpu * 1000:.1f} ms CPU per row",
            "",
            "| candidate | speed vs fp32 | logit change p50 / p99 / max | rows flipped "
            "| cascade margin | rows falling back | rows flipped after | cascade speed |",
            "|---|---:|---|---:|---:|---:|---:|---:|",
        ]
        for name, runner in candidates.items():
            runner(measured[0])
            errors = [
                np.abs(logit(runner, r) - z).max()
                for r, z in zip(calibration, ref["calibration"], strict=True)
            ]
            margin = 1.25 * float(max(errors))
            started = time.process_time()
            got = [logit(runner, r) for r in measured]
            cpu = (time.process_time() - started) / len(measured)
            change = np.concatenate(
                [np.abs(a - b) for a, b in zip(got, ref["measured"], strict=True)]
            )
            flipped = [
                bool(((a > 0) != (b > 0)).any()) for a, b in zip(got, ref["measured"], strict=True)
            ]
            falls = [bool((np.abs(a) < margin).any()) for a in got]
            after = sum(f and not back for f, back in zip(flipped, falls, strict=True))
            cascade = cpu + fp32_cpu * sum(falls) / len(measured)
            lines.append(
                f"| {name} | {fp32_cpu / cpu:.2f}x | {np.median(change):.3f} / "
                f"{np.quantile(change, 0.99):.3f} / {change.max():.3f} | "
                f"{sum(flipped)} of {len(measured)} | {margin:.3f} | {sum(falls)} | {after} | "
                f"{fp32_cpu / cascade:.2f}x |"
            )
            print(lines[-1], flush=True)
    text = "\n".join(
        [
            f"`python benchmarks/bench_onnx_quant.py {' '.join(sys.argv[1:])}`".rstrip(),
            "",
            *lines,
            "",
        ]
    )
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


if __name__ == "__main__":
    main()
