"""A larger encoder as a teacher, on a GPU: fine-tune it, score it, write its soft targets.

The encoder probe of lab/records/gpu_h100/encoder_probe: a base encoder restored from
an int8 transport pack (``--pack``; only 64 MiB travel to the lent GPU machine per call, so
weights went as int8 rows with fp16 scales), every layer trained for ``--epochs`` passes over
the stage-5 training examples (``--examples``: the rows the runtime builds, 48-token units,
192 evidence tokens; the labels and losses of ``lab.training.train_evidence``), bf16 autocast.
It then reports the held-out AP of the largest token probability by source, RAGTruth
through the runtime (evidence selection, the rules, aggregation ``max``) and, with
``--soft-out``, writes the teacher's probability of every answer token of the training
examples (``lab.training.teacher`` reads them).

The examples file is ``{"train": [...], "heldout": [...]}`` of ``train_evidence.Example``
fields, as ``load_examples`` returns them for the stage-5 flags. Run from the repository
root with the package installed::

    python -m lab.training.gpu_teacher --pack PACK --examples examples.json.gz --work /tmp/w \\
        --epochs 2 --lr 3e-5 --data-dir BENCHDATA --soft-out OUT
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import random
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .train_evidence import (
    Encoded,
    Example,
    _pad,
    batches,
    example_scores,
    logits_of,
    optimizer_step,
    report,
    row_encodings,
    step_groups,
)
from .train_evidence import encode as train_encode

_TOKENIZER: Any = None


def restore(pack: Path, out: Path) -> None:
    """Rebuild fp32 weights from an int8 pack (weights_q.pt plus config and tokenizer)."""
    from safetensors.torch import save_file

    packed = torch.load(pack / "weights_q.pt")
    state = {
        k: (v[0].float() * v[1].float()).contiguous() if isinstance(v, tuple) else v.float()
        for k, v in packed.items()
    }
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / "model.safetensors"))
    for f in pack.iterdir():
        if f.name != "weights_q.pt":
            (out / f.name).write_bytes(f.read_bytes())


def _init(path: str) -> None:
    global _TOKENIZER  # noqa: PLW0603 - one tokenizer per worker process
    from transformers import AutoTokenizer

    _TOKENIZER = AutoTokenizer.from_pretrained(path)


def encode(ex: Example) -> Encoded | None:
    """``train_evidence.encode`` with this worker's tokenizer."""
    return train_encode(_TOKENIZER, ex)


def _answer_tokens(item: tuple[int, Example]) -> list[tuple[int, list[int], list[tuple]]]:
    """``(example, input ids, [(position, start, end)])`` of each row's answer tokens."""
    index, ex = item
    out = []
    for row, enc in row_encodings(_TOKENIZER, ex):
        seq = enc.sequence_ids()
        spots = [
            (k, row.start + a, row.start + b)
            for k, (a, b) in enumerate(enc["offset_mapping"])
            if seq[k] == 1 and b > a
        ]
        out.append((index, enc["input_ids"], spots))
    return out


def _pool_map(path: str, fn: Any, items: list[Any], procs: int) -> list[Any]:
    with Pool(procs, initializer=_init, initargs=(path,)) as pool:
        return pool.map(fn, items, chunksize=64)


def ragtruth(folder: Path, data_dir: Path, limit: int | None, device: str) -> dict[str, Any]:
    """AP and AUROC on the RAGTruth subset (eval-only) through the runtime, ``max`` score."""
    from truthlens_integrations._lab_api import read_ragtruth
    from truthlens_integrations.core.models.detection import load_detector
    from truthlens_integrations.evaluation import run_evaluation

    dtype = "float32" if device == "cpu" else "auto"
    det = load_detector(
        str(folder), strategy="evidence", aggregation="max", device=device, dtype=dtype
    )
    path = data_dir / "ragtruth_subsets" / "ragtruth_test_subset_with_context.jsonl"
    examples = read_ragtruth(path)[:limit] if limit else read_ragtruth(path)
    rep = run_evaluation(det, examples, batch_size=16, progress=False)
    out = {"all": {"ap": rep.overall.average_precision, "auroc": rep.overall.auroc}}
    for task, g in rep.per_task.items():
        out[task] = {"ap": g.average_precision, "auroc": g.auroc, "n": g.n}
    return out


@torch.inference_mode()
def write_soft_targets(
    model: Any, path: str, examples: list[Example], out: Path, procs: int
) -> None:
    """The teacher's probability of every answer token, by example index and offsets."""
    device = next(model.parameters()).device
    pad_id = model.config.pad_token_id
    rows = [
        r for rs in _pool_map(path, _answer_tokens, list(enumerate(examples)), procs) for r in rs
    ]
    rows.sort(key=lambda r: len(r[1]))
    found: list[tuple[int, int, int, float]] = []
    for first in range(0, len(rows), 128):
        chunk = rows[first : first + 128]
        batch = _pad([{"input_ids": r[1]} for r in chunk], device, pad_id)
        probs = torch.softmax(logits_of(model, batch, device), -1)[..., 1].cpu().numpy()
        for j, (index, _, spots) in enumerate(chunk):
            found += [(index, s, e, float(probs[j, k])) for k, s, e in spots]
    table = np.array(found)
    order = np.lexsort((table[:, 1], table[:, 0]))
    table = table[order]
    half = len(examples) // 2
    for name, keep in (("a", table[:, 0] < half), ("b", table[:, 0] >= half)):
        np.savez_compressed(
            out / f"teacher_train_{name}.npz",
            example=table[keep, 0].astype(np.int32),
            start=table[keep, 1].astype(np.int32),
            end=table[keep, 2].astype(np.int32),
            p=table[keep, 3].astype(np.float16),
        )


def _example(d: dict[str, Any]) -> Example:
    spans = tuple(map(tuple, d["spans"])) if d["spans"] is not None else None
    return Example(d["source"], d["context"], d["question"], d["answer"], d["label"], spans)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pack", type=Path, required=True)
    ap.add_argument("--examples", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, required=True, help="benchdata with RAGTruth")
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--batch-rows", type=int, default=32)
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--rt-limit", type=int, default=0, help="first N RAGTruth answers (0: all)")
    ap.add_argument("--eval-only", action="store_true", help="score the folder --pack as it is")
    ap.add_argument("--soft-out", type=Path, help="write the soft targets to this folder")
    args = ap.parse_args()
    torch.manual_seed(13)
    rng = random.Random(13)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    started = time.time()
    with gzip.open(args.examples, "rt") as fh:
        blob = json.load(fh)
    train = [_example(d) for d in blob["train"]]
    held = [_example(d) for d in blob["heldout"]]
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    model_dir = args.pack if args.eval_only else args.work / "base"
    if not args.eval_only:
        restore(args.pack, model_dir)
    labels = {"supported": 0, "hallucinated": 1}
    model = AutoModelForTokenClassification.from_pretrained(
        model_dir, num_labels=2, label2id=labels, id2label={v: k for k, v in labels.items()}
    ).to(device)
    pad_id = model.config.pad_token_id if model.config.pad_token_id is not None else 0
    held_enc = [e for e in _pool_map(str(model_dir), encode, held, args.procs) if e]
    result: dict[str, Any] = {"model": str(args.pack)}
    if not args.eval_only:
        train_enc = [e for e in _pool_map(str(model_dir), encode, train, args.procs) if e]
        result["encode_s"] = round(time.time() - started)
        optim = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
        total = int(len(batches(train_enc, args.batch_rows, random.Random(0))) * args.epochs)
        step, t1 = 0, time.time()
        model.train()
        for done, group in step_groups(train_enc, args.batch_rows, rng, total):
            # linear warm-up over 100 steps, then linear decay to zero
            scale = min(1.0, (done + 1) / 100) * max(0.0, 1.0 - done / total)
            loss = optimizer_step(
                model, optim, train_enc, group, device, args.lr * scale, pad_id=pad_id
            )
            step = done + 1
            if step % 200 == 0:
                print(f"step {step}/{total} loss {loss.item():.4f} {time.time() - t1:.0f}s")
        result.update(steps=step, train_s=round(time.time() - t1), epochs=args.epochs)
        model_dir = args.work / "trained"
        model.save_pretrained(model_dir)
        AutoTokenizer.from_pretrained(args.work / "base").save_pretrained(model_dir)
    result["heldout"] = report(example_scores(model, held_enc, device, pad_id), held_enc)
    if args.soft_out:
        args.soft_out.mkdir(parents=True, exist_ok=True)
        write_soft_targets(model, str(model_dir), train, args.soft_out, args.procs)
    del model
    result["ragtruth"] = ragtruth(model_dir, args.data_dir, args.rt_limit or None, device.type)
    print("RESULT", json.dumps(result, default=lambda v: None if math.isnan(v) else str(v)))


if __name__ == "__main__":
    main()
