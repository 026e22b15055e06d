"""A larger encoder as a teacher, on a GPU: fine-tune it, score it, write its soft targets.

The encoder probe of benchmarks/results/gpu_h100/encoder_probe: a base encoder restored from
an int8 transport pack (``--pack``; only 64 MiB travel to the lent GPU machine per call, so
weights went as int8 rows with fp16 scales), every layer trained for ``--epochs`` passes over
the stage-5 training examples (``--examples``: the rows the runtime builds, 48-token units,
192 evidence tokens; the labels and losses of ``training.train_evidence``), bf16 autocast.
It then reports the held-out AP of the largest token probability by source, RAGTruth
through the runtime (evidence selection, the rules, aggregation ``max``) and, with
``--soft-out``, writes the teacher's probability of every answer token of the training
examples (``training.teacher`` reads them).

The examples file is ``{"train": [...], "heldout": [...]}`` of ``train_evidence.Example``
fields, as ``load_examples`` returns them for the stage-5 flags. Run from the repository
root with the package installed::

    python -m training.gpu_teacher --pack PACK --examples examples.json.gz --work /tmp/w \\
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

from truthlens_integrations.core.models.detection._evidence import ContextIndex, plan_rows

from .train_evidence import EVIDENCE_TOKENS, UNIT_TOKENS, Encoded, Example, batches, report

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


def _rows(ex: Example) -> list[tuple[Any, Any]]:
    """``(plan row, tokenizer output)`` of each of the example's first six rows."""
    tok = _TOKENIZER

    def count_many(texts: list[str]) -> list[int]:
        enc = tok(texts, add_special_tokens=False, return_attention_mask=False)
        return [len(i) for i in enc["input_ids"]]

    if not ex.answer.strip() or not any(p.strip() for p in ex.context):
        return []
    plan = plan_rows(
        ContextIndex(ex.context),
        ex.question,
        ex.answer,
        count_many=count_many,
        unit_tokens=UNIT_TOKENS,
        evidence_tokens=EVIDENCE_TOKENS,
    )
    return [
        (
            row,
            tok(
                row.prompt,
                ex.answer[row.start : row.end],
                return_offsets_mapping=True,
                truncation="only_first",
                max_length=EVIDENCE_TOKENS + UNIT_TOKENS + 16,
            ),
        )
        for row in plan[:6]
    ]


def encode(ex: Example) -> Encoded | None:
    """``train_evidence.encode`` for any tokenizer (token type ids only where it has them)."""
    exact = ex.label == 0 or ex.spans is not None
    rows = []
    for row, enc in _rows(ex):
        seq = enc.sequence_ids()
        labels = []
        for i, (a, b) in enumerate(enc["offset_mapping"]):
            if seq[i] != 1 or b <= a:
                labels.append(-100)
            elif not exact:
                labels.append(-2)
            else:
                s, e = row.start + a, row.start + b
                labels.append(int(any(s < y and x < e for x, y in ex.spans or ())))
        data = {"input_ids": enc["input_ids"], "labels": labels}
        if "token_type_ids" in enc:
            data["token_type_ids"] = enc["token_type_ids"]
        rows.append(data)
    return Encoded(ex.source, ex.label, exact, rows) if rows else None


def _answer_tokens(item: tuple[int, Example]) -> list[tuple[int, list[int], list[tuple]]]:
    """``(example, input ids, [(position, start, end)])`` of each row's answer tokens."""
    index, ex = item
    out = []
    for row, enc in _rows(ex):
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


def pad(
    rows: list[dict[str, Any]], pad_id: int, device: torch.device
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    width = max(len(r["input_ids"]) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    types = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        n = len(r["input_ids"])
        ids[i, :n] = torch.tensor(r["input_ids"])
        mask[i, :n] = 1
        labels[i, :n] = torch.tensor(r["labels"])
        if "token_type_ids" in r:
            types[i, :n] = torch.tensor(r["token_type_ids"])
    batch = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
    if "token_type_ids" in rows[0]:
        batch["token_type_ids"] = types.to(device)
    return batch, labels.to(device)


def _logits(model: Any, batch: dict[str, torch.Tensor], device: torch.device) -> torch.Tensor:
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        return model(**batch).logits.float()


def loss_of(
    model: Any, data: list[Encoded], group: list[int], pad_id: int, device: torch.device
) -> torch.Tensor:
    """``train_evidence.loss_of``: weighted token BCE and the multiple-instance loss."""
    rows = [r for i in group for r in data[i].rows]
    owner = torch.tensor([k for k, i in enumerate(group) for _ in data[i].rows], device=device)
    batch, labels = pad(rows, pad_id, device)
    logits = _logits(model, batch, device)
    margin = logits[..., 1] - logits[..., 0]
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    exact = labels >= 0
    losses = []
    if exact.any():
        target = labels[exact].float()
        losses.append(bce(margin[exact], target, weight=1.0 + 2.0 * target))
    mil = []
    for k, i in enumerate(group):
        if data[i].exact:
            continue
        mask = (labels == -2) & (owner[:, None] == k)
        if mask.any():
            mil.append(margin[mask].max())
    if mil:
        losses.append(bce(torch.stack(mil), torch.ones(len(mil), device=device)))
    return sum(losses) / len(losses)  # type: ignore[return-value]


@torch.inference_mode()
def scores(model: Any, data: list[Encoded], pad_id: int, device: torch.device) -> np.ndarray:
    """The largest answer-token probability of each example."""
    model.eval()
    out = np.zeros(len(data))
    order = sorted(range(len(data)), key=lambda i: len(data[i].rows[0]["input_ids"]))
    for first in range(0, len(order), 32):
        group = order[first : first + 32]
        rows = [r for i in group for r in data[i].rows]
        owner = [i for i in group for _ in data[i].rows]
        batch, labels = pad(rows, pad_id, device)
        probs = torch.softmax(_logits(model, batch, device), -1)[..., 1]
        for row, i in enumerate(owner):
            answer = labels[row] != -100
            if answer.any():
                out[i] = max(out[i], float(probs[row][answer].max()))
    model.train()
    return out


def ragtruth(folder: Path, data_dir: Path, limit: int | None, device: str) -> dict[str, Any]:
    """AP and AUROC on the RAGTruth subset (eval-only) through the runtime, ``max`` score."""
    from truthlens_integrations.core.models.detection import load_detector
    from truthlens_integrations.evaluation import read_ragtruth, run_evaluation

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
        batch, _ = pad(
            [{"input_ids": r[1], "labels": [0] * len(r[1])} for r in chunk], pad_id, device
        )
        probs = torch.softmax(_logits(model, batch, device), -1)[..., 1].cpu().numpy()
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
        while step < total:
            for group in batches(train_enc, args.batch_rows, rng):
                if step >= total:
                    break
                # linear warm-up over 100 steps, then linear decay to zero
                scale = min(1.0, (step + 1) / 100) * max(0.0, 1.0 - step / total)
                for g in optim.param_groups:
                    g["lr"] = args.lr * scale
                loss = loss_of(model, train_enc, group, pad_id, device)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optim.step()
                optim.zero_grad()
                step += 1
                if step % 200 == 0:
                    print(f"step {step}/{total} loss {loss.item():.4f} {time.time() - t1:.0f}s")
        result.update(steps=step, train_s=round(time.time() - t1), epochs=args.epochs)
        model_dir = args.work / "trained"
        model.save_pretrained(model_dir)
        AutoTokenizer.from_pretrained(args.work / "base").save_pretrained(model_dir)
    result["heldout"] = report(scores(model, held_enc, pad_id, device), held_enc)
    if args.soft_out:
        args.soft_out.mkdir(parents=True, exist_ok=True)
        write_soft_targets(model, str(model_dir), train, args.soft_out, args.procs)
    del model
    result["ragtruth"] = ragtruth(model_dir, args.data_dir, args.rt_limit or None, device.type)
    print("RESULT", json.dumps(result, default=lambda v: None if math.isnan(v) else str(v)))


if __name__ == "__main__":
    main()
