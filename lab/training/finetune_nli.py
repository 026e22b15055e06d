"""Fine-tune all six layers of the NLI explainer for hours on the CPU, resumable at any point.

Issue 49: the claim check needs an entailment model that reads meaning, and the three-layer
branch trained for 25 minutes did not. This trains a branch that shares only the detector's
(frozen) embeddings: all six transformer layers and the mean-pooled head learn NLI, from the
shipped branch (its layers 4-6 and head) over the detector's layers 1-3. Three steps::

    # 1. every train-role pair, encoded once (about 3 minutes)
    python -m lab.training.finetune_nli pack --out runs/nli49/pairs.pt.gz
    # 2. train; stop it at any moment (Ctrl-C, SIGTERM, --leg-minutes), --resume goes on
    nice -n 19 python -m lab.training.finetune_nli train --pairs runs/nli49/pairs.pt.gz \
        --run runs/nli49 --planned-pairs 400000 --threads 2 [--resume]
    # 3. a branch folder the runtime loads (int8 or fp16 storage)
    python -m lab.training.finetune_nli export --run runs/nli49 --out runs/nli49/branch

The data (train role only): the train files of all 36 ``curriculum_nli`` tasks (never a
``val.jsonl``: the phenomena suite reads those; 1% of each task's train rows held out), the
SNLI dev / SICK / CLIMATE-FEVER mix and its synthetic pairs, real-answer sentences
(``nli_real``: ExpertQA, ``ragtruth_dev`` train sources), FaithJudge answers to the train
sources (``claims``), and the minimal pairs of ``minimal_pairs`` beside their twins.

Batches are length-bucketed (pairs of at most ``--max-length`` tokens); the learning rate
warms up and decays linearly over the whole planned run. Every ``--checkpoint-minutes`` the
run writes ``checkpoint.pt`` (weights, optimiser, scheduler, data position, random states)
atomically; ``--resume`` continues from it exactly. ``log.jsonl`` in the run folder holds the
learning curve (loss, held-out accuracy per source) and one line per leg.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import logging
import os
import random
import signal
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from . import claims, data, minimal_pairs, nli_real
from .train import OUT_DIR as DETECTOR_DIR
from .train import encode_pairs, length_batches, pad, start_run
from .train_nli import OUT_DIR as BRANCH_DIR
from .train_nli import NLIBranch, _balanced

log = logging.getLogger("training")

#: Tasks outside grounding (commonsense, puns, sentiment) get a smaller share of the budget.
_OTHER_TASKS = ("analytic", "hellaswag", "physicalqa", "puns", "sentiment", "socialqa", "sprl")
ALL_TASKS = (*claims.CURRICULUM_TASKS, *_OTHER_TASKS)
_SETS = ("train", "heldout")


# ---------------------------------------------------------------- data


def _curriculum(
    rng: random.Random, per_task: int, other_per_task: int, heldout_share: float
) -> tuple[list[data.NLIExample], list[data.NLIExample]]:
    """(train, held out) pairs of every task's train file: a seeded sample, premises cut."""
    train: list[data.NLIExample] = []
    heldout: list[data.NLIExample] = []
    for task in ALL_TASKS:
        cap = other_per_task if task in _OTHER_TASKS else per_task
        rows = [
            r
            for r in claims._train_rows(task)
            if str(r.get("gold_label", "")).strip().lower() in claims._LABELS
            and str(r.get("premise", "")).strip()
            and str(r.get("hypothesis", "")).strip()
        ]
        picked = rng.sample(rows, min(len(rows), cap + max(1, int(cap * heldout_share))))
        cut = max(1, int(len(picked) * heldout_share))
        for n, r in enumerate(picked):
            hyp = str(r["hypothesis"]).strip()
            label = claims._LABELS[str(r["gold_label"]).strip().lower()]
            ex = data.NLIExample(claims._premise(str(r["premise"]), hyp), hyp, label, task)
            (heldout if n < cut else train).append(ex)
    return train, heldout


def build_sets(
    args: argparse.Namespace,
) -> tuple[list[data.NLIExample], list[data.NLIExample]]:
    """Every train-role pair of the recipe: (train, held out)."""
    rng = random.Random(args.seed)
    train, heldout = data.nli_examples(rng)
    train += data.synthetic_nli(rng, args.synthetic)
    cur_train, cur_held = _curriculum(
        random.Random(args.seed), args.curriculum_per_task, args.other_per_task, 0.01
    )
    train += cur_train
    heldout += cur_held
    real_train, real_held = nli_real.training_examples(nli_real.train_role_pairs())
    real_train = _balanced(real_train, random.Random(args.seed))
    train += [data.NLIExample(e.premise, e.hypothesis, e.label, "real") for e in real_train]
    heldout += [data.NLIExample(e.premise, e.hypothesis, e.label, "real") for e in real_held]
    fj_train, fj_held = claims.faithjudge_examples(random.Random(args.seed))
    fj_train += [e for e in fj_train if e.label != 0]  # the rare inconsistent ones count twice
    train += fj_train
    heldout += fj_held
    mp_train, mp_held = minimal_pairs.minimal_pairs(random.Random(args.seed), args.minimal_per_kind)
    train += mp_train
    heldout += mp_held
    return train, heldout


def pack(args: argparse.Namespace) -> None:
    from transformers import AutoTokenizer

    train, heldout = build_sets(args)
    tok = AutoTokenizer.from_pretrained(args.encoder)
    packed: dict[str, Any] = {}
    for name, rows in zip(_SETS, (train, heldout), strict=True):
        enc = encode_pairs(
            tok, [(e.premise, e.hypothesis) for e in rows], [e.label for e in rows], args.max_length
        )
        ids = [i for r in enc for i in r["input_ids"]]
        if max(ids) > np.iinfo(np.uint16).max:
            raise SystemExit("token ids exceed uint16: this encoder cannot be packed")
        packed[f"{name}.ids"] = torch.from_numpy(np.asarray(ids, dtype=np.uint16).view(np.int16))
        packed[f"{name}.lengths"] = torch.tensor([len(r["input_ids"]) for r in enc])
        packed[f"{name}.labels"] = torch.tensor([e.label for e in rows], dtype=torch.int8)
        packed[f"{name}.sources"] = [e.source for e in rows]
        counts = Counter(e.source for e in rows)
        log.info("%s: %d pairs %s", name, len(rows), dict(sorted(counts.items())))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out, "wb", compresslevel=6) as fh:
        torch.save(packed, fh)
    log.info("packed %s (%.1f MB)", args.out, args.out.stat().st_size / 1e6)


def read_pack(file: Path) -> dict[str, list[dict[str, Any]]]:
    with gzip.open(file, "rb") as fh:
        packed = torch.load(io.BytesIO(fh.read()), weights_only=True)
    out: dict[str, list[dict[str, Any]]] = {}
    for name in _SETS:
        ids = packed[f"{name}.ids"].numpy().view(np.uint16).astype(np.int64)
        lengths = packed[f"{name}.lengths"].numpy().astype(np.int64)
        ends = np.cumsum(lengths)
        rows = []
        for a, b, y, s in zip(
            ends - lengths,
            ends,
            packed[f"{name}.labels"].tolist(),
            packed[f"{name}.sources"],
            strict=True,
        ):
            rows.append({"input_ids": ids[a:b].tolist(), "label": int(y), "source": s})
        out[name] = rows
    return out


# ---------------------------------------------------------------- model


def build_model(encoder: Path, branch: Path | None) -> NLIBranch:
    """Six trainable layers over the frozen embeddings, started from the shipped branch."""
    from safetensors.torch import load_file
    from transformers import AutoModelForTokenClassification

    det = AutoModelForTokenClassification.from_pretrained(encoder, dtype=torch.float32)
    model = NLIBranch(det.bert, shared_layers=0)
    if branch is not None:
        state = {k: v.float() for k, v in load_file(str(branch / "model.safetensors")).items()}
        head = {k.removeprefix("head."): v for k, v in state.items() if k.startswith("head.")}
        model.head.load_state_dict(head)
        for key, value in state.items():
            if key.startswith("encoder.layer."):
                _, _, index, rest = key.split(".", 3)
                model.bert.encoder.layer[int(index)].get_parameter(rest).data.copy_(value)
    return model


def trainable_state(model: NLIBranch) -> dict[str, torch.Tensor]:
    """The tensors that train (the six layers and the head); embeddings are the detector's."""
    return {k: v.detach().clone() for k, v in model.shipped_state().items()}


def load_trainable(model: NLIBranch, state: dict[str, torch.Tensor]) -> None:
    for key, value in state.items():
        if key.startswith("head."):
            model.head.get_parameter(key.removeprefix("head.")).data.copy_(value)
        else:
            _, _, index, rest = key.split(".", 3)
            model.bert.encoder.layer[int(index)].get_parameter(rest).data.copy_(value)


# ---------------------------------------------------------------- training


class Plan:
    """Where the run is: the epoch's seeded length-bucketed batches and the next one."""

    def __init__(self, rows: list[dict[str, Any]], batch: int, seed: int) -> None:
        self.rows, self.batch, self.seed = rows, batch, seed
        self.epoch, self.index = 0, 0
        self._batches = self._epoch_batches()

    def _epoch_batches(self) -> list[list[int]]:
        rng = random.Random(self.seed * 1000 + self.epoch)
        return length_batches([len(r["input_ids"]) for r in self.rows], self.batch, rng)

    def next(self) -> list[dict[str, Any]]:
        if self.index >= len(self._batches):
            self.epoch, self.index = self.epoch + 1, 0
            self._batches = self._epoch_batches()
        picked = self._batches[self.index]
        self.index += 1
        return [self.rows[i] for i in picked]

    def state(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}

    def restore(self, state: dict[str, int]) -> None:
        self.epoch, self.index = state["epoch"], state["index"]
        self._batches = self._epoch_batches()


@torch.inference_mode()
def evaluate(model: NLIBranch, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy on the held-out rows, pooled and per source family."""
    model.eval()
    right: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]["input_ids"]))
    for start in range(0, len(order), 64):
        batch = [rows[i] for i in order[start : start + 64]]
        ids = pad([r["input_ids"] for r in batch], 0)
        pred = model(ids, (ids != 0).long()).argmax(-1).tolist()
        for r, p in zip(batch, pred, strict=True):
            for key in ("all", r["source"]):
                right[key][0] += int(p == r["label"])
                right[key][1] += 1
    model.train()
    return {k: round(a / n, 4) for k, (a, n) in sorted(right.items())} | {"n": len(rows)}


def _heldout_sample(rows: list[dict[str, Any]], limit: int, seed: int) -> list[dict[str, Any]]:
    """A fixed, per-source stratified sample of the held-out rows (the same every leg)."""
    by_source: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_source[r["source"]].append(r)
    share = min(1.0, limit / max(len(rows), 1))
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for source in sorted(by_source):
        group = by_source[source]
        out += rng.sample(group, max(1, min(len(group), round(len(group) * share))))
    return out


def _write_atomic(obj: Any, file: Path) -> None:
    tmp = file.with_suffix(".tmp")
    torch.save(obj, tmp)
    tmp.replace(file)


def _append(log_file: Path, entry: dict[str, Any]) -> None:
    with log_file.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")


def train(args: argparse.Namespace) -> None:
    start_run(args.seed, args.threads)
    run: Path = args.run
    run.mkdir(parents=True, exist_ok=True)
    ckpt_file, log_file = run / "checkpoint.pt", run / "log.jsonl"
    sets = read_pack(args.pairs)
    heldout = _heldout_sample(sets["heldout"], args.heldout_limit, args.seed)
    model = build_model(args.encoder, args.init_branch)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    total = max(1, args.planned_pairs // args.batch)
    warm = max(1, int(total * args.warmup_share))
    # A replanned run decays linearly from where it was replanned to its new end; the
    # change is kept in the checkpoint so that every later leg follows it.
    replanned: dict[str, float] = {}

    def lr_factor(s: int) -> float:
        if replanned:
            left = (replanned["end"] - s) / max(1.0, replanned["end"] - replanned["from_step"])
            return replanned["factor"] * max(0.0, left)
        return min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    plan = Plan(sets["train"], args.batch, args.seed)
    step, cpu_before, losses = 0, 0.0, []
    if args.resume:
        if not ckpt_file.is_file():
            raise SystemExit(f"--resume: no checkpoint in {run}")
        ckpt = torch.load(ckpt_file, weights_only=False)
        if ckpt["planned_steps"] != total or ckpt["batch"] != args.batch:
            raise SystemExit(
                f"--resume: the checkpoint planned {ckpt['planned_steps']} steps of "
                f"{ckpt['batch']}; pass the same --planned-pairs and --batch"
            )
        load_trainable(model, ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        plan.restore(ckpt["plan"])
        random.setstate(ckpt["python_random"])
        np.random.set_state(ckpt["numpy_random"])
        torch.set_rng_state(ckpt["torch_random"])
        step, cpu_before, losses = ckpt["step"], ckpt["cpu_seconds"], ckpt["recent_losses"]
        # "shortened": the key the first replanned legs wrote
        replanned.update(ckpt.get("replanned", ckpt.get("shortened", {})))
        _replan(replanned, args, step, lr_factor(step))
        log.info("resumed at step %d of %d (epoch %d)", step, _end(total, replanned), plan.epoch)
    elif ckpt_file.exists():
        raise SystemExit(f"{run} already holds a checkpoint: pass --resume or another --run")
    elif args.replan_to_pairs:
        raise SystemExit("--replan-to-pairs replans a resumed run; a new one takes --planned-pairs")
    end = _end(total, replanned)

    stop = {"now": False}

    def _stop(signum: int, _frame: Any) -> None:
        log.info("signal %d: checkpoint and stop", signum)
        stop["now"] = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    leg_start, leg_cpu, leg_step = time.time(), time.process_time(), step
    last_ckpt = time.time()

    def checkpoint() -> None:
        _write_atomic(
            {
                "model": trainable_state(model),
                "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(),
                "plan": plan.state(),
                "python_random": random.getstate(),
                "numpy_random": np.random.get_state(),
                "torch_random": torch.get_rng_state(),
                "step": step,
                "planned_steps": total,
                "replanned": dict(replanned),
                "batch": args.batch,
                "cpu_seconds": cpu_before + time.process_time() - leg_cpu,
                "recent_losses": losses[-200:],
                "args": {k: str(v) for k, v in vars(args).items()},
            },
            ckpt_file,
        )

    if step == 0:
        _append(log_file, {"step": 0, "pairs": 0, "heldout": evaluate(model, heldout)})
    model.train()
    while step < end and not stop["now"]:
        batch = plan.next()
        ids = pad([r["input_ids"] for r in batch], 0)
        target = torch.tensor([r["label"] for r in batch])
        loss = nn.functional.cross_entropy(model(ids, (ids != 0).long()), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        step += 1
        if step % args.log_every == 0:
            entry = {
                "step": step,
                "pairs": step * args.batch,
                "loss": round(float(np.mean(losses[-args.log_every :])), 4),
                "lr": sched.get_last_lr()[0],
                "epoch": plan.epoch,
                "cpu_seconds": round(cpu_before + time.process_time() - leg_cpu),
            }
            _append(log_file, entry)
            log.info("%s", json.dumps(entry))
        if step % args.eval_every == 0 or step == end:
            scores = evaluate(model, heldout)
            _append(log_file, {"step": step, "pairs": step * args.batch, "heldout": scores})
            log.info("held out at step %d: %s", step, scores["all"])
        if time.time() - last_ckpt >= args.checkpoint_minutes * 60:
            checkpoint()
            last_ckpt = time.time()
        if args.leg_minutes and time.time() - leg_start >= args.leg_minutes * 60:
            break
        if args.leg_steps and step - leg_step >= args.leg_steps:
            break
    checkpoint()
    _append(
        log_file,
        {
            "leg": {
                "from_step": leg_step,
                "to_step": step,
                "pairs": (step - leg_step) * args.batch,
                "wall_seconds": round(time.time() - leg_start),
                "cpu_seconds": round(time.process_time() - leg_cpu),
                "threads": args.threads,
                "done": step >= end,
            }
        },
    )
    log.info("leg ended at step %d of %d", step, end)


def _end(total: int, replanned: dict[str, float]) -> int:
    """The step the run ends at: as planned, or as replanned."""
    return int(replanned["end"]) if replanned else total


def _replan(planned: dict[str, float], args: argparse.Namespace, step: int, factor: float) -> None:
    """Apply ``--replan-to-pairs`` to a resumed run: the rate decays from now to the new end.

    Given again with the same end on a later resume, it changes nothing.
    """
    if not args.replan_to_pairs:
        return
    end = args.replan_to_pairs // args.batch
    if planned and int(planned["end"]) == end:
        return
    if end <= step:
        raise SystemExit(f"--replan-to-pairs must end after step {step}")
    planned.update({"end": float(end), "from_step": float(step), "factor": factor})
    log.info(
        "replanned: from step %d the rate decays from %.3g of its peak to 0 at step %d",
        step,
        factor,
        end,
    )


# ---------------------------------------------------------------- export


def export(args: argparse.Namespace) -> None:
    """The checkpoint's branch as the runtime reads it (``shared_layers`` 0, fp16)."""
    from safetensors.torch import save_file

    from truthlens_integrations.core.models import encoder_fingerprint

    ckpt = torch.load(args.run / "checkpoint.pt", weights_only=False)
    model = build_model(args.encoder, None)
    load_trainable(model, ckpt["model"])
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.half().contiguous() for k, v in model.shipped_state().items()},
        str(out / "model.safetensors"),
        metadata={
            "labels": ",".join(data.NLI_LABELS),
            "shared_layers": "0",
            "pooling": "mean",
            "encoder": "detector",
            "encoder_sha256": encoder_fingerprint(args.encoder, 0),
        },
    )
    metrics = {
        "steps": ckpt["step"],
        "planned_steps": ckpt["planned_steps"],
        "replanned": ckpt.get("replanned", ckpt.get("shortened", {})),
        "pairs": ckpt["step"] * ckpt["batch"],
        "cpu_seconds": round(ckpt["cpu_seconds"]),
        "args": ckpt["args"],
    }
    (out / "training_metrics.json").write_text(json.dumps(metrics, indent=1))
    log.info("wrote %s (%.1f MB)", out, (out / "model.safetensors").stat().st_size / 1e6)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    pk = sub.add_parser("pack", help="encode every train-role pair once")
    pk.add_argument("--out", type=Path, required=True)
    pk.add_argument("--curriculum-per-task", type=int, default=12000)
    pk.add_argument("--other-per-task", type=int, default=3000)
    pk.add_argument("--minimal-per-kind", type=int, default=4000)
    pk.add_argument("--synthetic", type=int, default=3000)
    pk.add_argument("--max-length", type=int, default=128)
    tr = sub.add_parser("train", help="train, or --resume a stopped run")
    tr.add_argument("--pairs", type=Path, required=True)
    tr.add_argument("--run", type=Path, required=True)
    tr.add_argument("--resume", action="store_true")
    tr.add_argument("--planned-pairs", type=int, default=400_000)
    tr.add_argument(
        "--replan-to-pairs",
        type=int,
        default=0,
        help="with --resume: end the run at this many pairs (earlier or later than planned), "
        "the rate decaying there from where it stands",
    )
    tr.add_argument("--batch", type=int, default=32)
    tr.add_argument("--lr", type=float, default=4e-5)
    tr.add_argument("--warmup-share", type=float, default=0.02)
    tr.add_argument("--threads", type=int, default=2)
    tr.add_argument("--checkpoint-minutes", type=float, default=5.0)
    tr.add_argument("--leg-minutes", type=float, default=0.0, help="stop after (0: never)")
    tr.add_argument("--leg-steps", type=int, default=0, help="stop after N steps (0: never)")
    tr.add_argument("--log-every", type=int, default=50)
    tr.add_argument("--eval-every", type=int, default=1000)
    tr.add_argument("--heldout-limit", type=int, default=3000)
    tr.add_argument("--init-branch", type=Path, default=BRANCH_DIR)
    ex = sub.add_parser("export", help="write the checkpoint as a branch folder")
    ex.add_argument("--run", type=Path, required=True)
    ex.add_argument("--out", type=Path, required=True)
    for sp in (pk, tr, ex):
        sp.add_argument("--seed", type=int, default=49)
        sp.add_argument("--encoder", type=Path, default=DETECTOR_DIR)
    return p.parse_args(argv)


# glibc hands each large freed block back to the system and maps it again at the next
# step, so every step page-faults its activations afresh. On this VM that cost grew
# during a run until a step took 4-5 times its CPU (half of it system time: steps 9,350 to
# 10,000 of the issue-49 run); keeping freed memory in the heap brought it back at once.
_MALLOC = {
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(16 << 30),
    "MALLOC_TOP_PAD_": str(512 << 20),
}


def _with_heap_kept(argv: list[str] | None) -> None:
    """Re-run this command with :data:`_MALLOC` set, unless it already is (train only)."""
    if argv is not None or all(os.environ.get(k) == v for k, v in _MALLOC.items()):
        return
    command = [sys.executable, "-m", "lab.training.finetune_nli", *sys.argv[1:]]
    os.execve(sys.executable, command, {**os.environ, **_MALLOC})


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.command == "train":
        _with_heap_kept(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    {"pack": pack, "train": train, "export": export}[args.command](args)


if __name__ == "__main__":
    main()
