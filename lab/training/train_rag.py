"""Fine-tune the bundled detector on real RAG answers (issue 27, candidate 3).

Starts from a trained folder (the shipped stage 5 by default) and trains the token head
with ``train_evidence``'s rows and losses on:

* ``ragtruth_dev``'s **train split** only (``lab.training.rag_rows``): each response beside the
  context the runtime reads, RAGTruth's span labels as token labels (a clean response:
  every token supported), read ``--rag-repeat`` times per pass;
* evidence-removal variants of the split's clean responses (``--removal-repeat`` times);
* a share of stage 5's own training rows (``--mix-per-source`` real examples per source,
  ``--hard`` of the hard cases, ``--synthetic`` synthetic edits), so what stage 5 learnt
  about numbers, negations and refusals is kept.

Rows are planned with the runtime's evidence-selection settings (``DetectionConfig``'s
``unit_tokens`` and ``evidence_tokens``), so training reads what inference reads. The
embeddings and the lower three layers stay frozen (the NLI branch depends on them).
Time-bounded: a linear warm-up, then a linear decay over ``--minutes``.

    python -m lab.training.train_rag --minutes 40 --threads 2 --out runs/rag1
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch

from truthlens_integrations.core import DetectionConfig

from . import rag_rows
from .realdata import Claim
from .train_evidence import (
    BUNDLED,
    Encoded,
    Example,
    _from_claim,
    batches,
    encode,
    load_examples,
    optimizer_step,
    save,
    start_training,
)

log = logging.getLogger("train_rag")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    defaults = DetectionConfig()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--init", type=Path, default=BUNDLED)
    p.add_argument("--out", type=Path, default=Path("runs/rag"))
    numbers: dict[str, int | float] = {
        "--seed": 13,
        "--minutes": 40.0,
        "--max-steps": 100_000,
        "--batch-rows": 16,
        "--lr": 5e-5,
        "--warmup-steps": 50,
        "--threads": 2,
        "--rag-repeat": 3,
        "--removal-repeat": 1,
        "--mix-per-source": 100,
    }
    for flag, default in numbers.items():  # the type is the default's
        p.add_argument(flag, type=type(default), default=default)
    p.add_argument("--hard", type=int, default=700, help="train hard cases mixed in")
    p.add_argument("--synthetic", type=int, default=500)
    p.add_argument("--unit-tokens", type=int, default=defaults.unit_tokens)
    p.add_argument("--evidence-tokens", type=int, default=defaults.evidence_tokens)
    p.add_argument("--quick", action="store_true", help="tiny smoke run")
    p.add_argument(
        "--response-weight",
        type=float,
        default=0.0,
        help="weight of the answer-level term (largest margin of an answer against its label)",
    )
    return p.parse_args(argv)


def _mix(args: argparse.Namespace, rng: random.Random) -> list[Example]:
    """Stage 5's kinds of training rows, fewer of them (its train part only)."""
    ns = argparse.Namespace(
        per_source=args.mix_per_source,
        heldout_per_source=0,
        seed=13,  # realdata's split seed: the stage-5 held-out contexts stay unseen
        quick=args.quick,
        llm_answers=0,
        synthetic=args.synthetic,
    )
    examples = load_examples(ns, "train", rng)
    hard = [e for e in examples if e.source.startswith("hard")]
    rest = [e for e in examples if not e.source.startswith("hard")]
    rng.shuffle(hard)
    return rest + hard[: args.hard]


def training_examples(args: argparse.Namespace, rng: random.Random) -> list[Example]:
    """The examples of one pass: RAG answers and removal variants repeated, then the mix."""
    rag: list[Claim] = rag_rows.rag_claims("train")
    removed: list[Claim] = rag_rows.removal_claims("train", seed=args.seed)
    if args.quick:
        rag, removed = rag[:24], removed[:8]
    examples = [_from_rag(c) for c in rag] * args.rag_repeat
    examples += [_from_rag(c) for c in removed] * args.removal_repeat
    examples += _mix(args, rng)
    return examples


def _from_rag(c: Claim) -> Example:
    # ``rag_rows`` joins the runtime's passages with newlines and none holds one itself.
    ex = _from_claim(c)
    return Example(ex.source, ex.context, ex.question, ex.answer, ex.label, c.spans)


def encode_all(tokenizer: Any, examples: list[Example], args: argparse.Namespace) -> list[Encoded]:
    out = []
    for ex in examples:
        enc = encode(
            tokenizer, ex, unit_tokens=args.unit_tokens, evidence_tokens=args.evidence_tokens
        )
        if enc is not None:
            out.append(enc)
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rng, tokenizer, model, device = start_training(args)

    started = time.time()
    train = encode_all(tokenizer, training_examples(args, rng), args)
    rows = sum(len(e.rows) for e in train)
    counts = Counter(d.source.split("/")[0] for d in train)
    log.info(
        "encoded %d examples (%d rows) in %.0f s: %s",
        len(train),
        rows,
        time.time() - started,
        dict(counts),
    )

    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    budget = args.minutes * 60.0
    step, epoch = 0, 0
    t0 = time.time()
    model.train()
    done = False
    while not done:
        for group in batches(train, args.batch_rows, rng):
            elapsed = time.time() - t0
            if elapsed > budget or step >= args.max_steps:
                done = True
                break
            warmup = min(1.0, (step + 1) / max(args.warmup_steps, 1))
            scale = warmup * max(0.05, 1.0 - elapsed / budget)
            loss = optimizer_step(
                model,
                optim,
                train,
                group,
                device,
                args.lr * scale,
                response_weight=args.response_weight,
            )
            step += 1
            if step % 10 == 0:
                log.info(
                    "epoch %d step %d loss %.4f (%.1f min)", epoch, step, loss.item(), elapsed / 60
                )
        epoch += 1
    metrics = {
        "steps": step,
        "epochs_started": epoch,
        "train_minutes": round((time.time() - t0) / 60, 1),
        "train_examples": len(train),
        "train_rows": rows,
        "examples_by_source": dict(counts),
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    log.info("done: %s", json.dumps(metrics))
    save(model, tokenizer, args, metrics)


if __name__ == "__main__":
    main()
