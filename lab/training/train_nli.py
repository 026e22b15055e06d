"""Train the NLI explainer's own upper layers on top of the bundled detector's encoder.

The multi-task model gives NLI one step in eight, and its SNLI accuracy stayed near 0.69.
This script trains a branch for NLI alone: the detector's embeddings and its lower
``--shared-layers`` transformer layers stay frozen and shared (no extra weights, and at run
time the NLI reuses them); only the upper layers and a mean-pooled head are trained and
shipped, in ``core/_bundled/nli/model.safetensors``. Run from the repository root::

    python -m lab.training.train_nli --seed 13

It reads train-role data only (SNLI dev, SICK, CLIMATE-FEVER, synthetic pairs; see
``lab/training/data.py``) and keeps 10% of the pooled pairs as a held-out split, which is where
the epoch is chosen. ``--real-repeat N`` adds the pairs of real answers judged by people
(ExpertQA, the train part of ``ragtruth_dev``; ``lab/training/nli_real.py``) N times per pass;
their sources' held-out part (20%, by source) joins the held-out split.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import io
import json
import logging
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from truthlens_integrations.core.models import encoder_fingerprint

from . import claims, data, nli_real
from .model import SequenceHead
from .train import OUT_DIR as DETECTOR_DIR
from .train import Stream, encode_pairs, pad, start_run

log = logging.getLogger("training")
REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "core" / "_bundled" / "nli"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--encoder", type=Path, default=DETECTOR_DIR, help="bundled detector folder")
    p.add_argument("--shared-layers", type=int, default=3, help="frozen lower layers reused")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--synthetic-nli", type=int, default=3000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    p.add_argument(
        "--real-repeat",
        type=int,
        default=0,
        help="add the real-answer pairs (lab.training.nli_real) this many times (0: none)",
    )
    p.add_argument(
        "--real-balanced",
        action="store_true",
        help="keep only as many entailed real pairs (a seeded sample) as the others",
    )
    p.add_argument(
        "--init-branch",
        type=Path,
        default=None,
        help="start from this trained branch (a folder with model.safetensors for --encoder)",
    )
    p.add_argument(
        "--mix-share",
        type=float,
        default=1.0,
        help="share of the existing mix (SNLI dev, SICK, CLIMATE-FEVER, synthetic) to train on",
    )
    p.add_argument(
        "--curriculum-per-task",
        type=int,
        default=0,
        help="add this many curriculum_nli train pairs per task (lab.training.claims; 0: none)",
    )
    p.add_argument(
        "--faithjudge-repeat",
        type=int,
        default=0,
        help="add FaithJudge train-source sentence pairs (lab.training.claims) N times per pass",
    )
    p.add_argument(
        "--pack",
        type=Path,
        default=None,
        help="write the encoded train and held-out pairs to this file (.pt) and stop: a "
        "machine without the benchmark data (a lent GPU) trains from it with --packed",
    )
    p.add_argument(
        "--packed",
        type=Path,
        default=None,
        help="train on the pairs --pack wrote instead of reading the benchmark data",
    )
    p.add_argument("--quick", action="store_true", help="tiny smoke run")
    p.add_argument("--out", type=Path, default=OUT_DIR)
    args = p.parse_args(argv)
    if args.real_repeat < 0:
        p.error("--real-repeat must be 0 or more")
    if not 0.0 < args.mix_share <= 1.0:
        p.error("--mix-share must be in (0, 1]")
    if args.quick:
        args.epochs, args.synthetic_nli = 1, 50
    return args


class NLIBranch(nn.Module):
    """Frozen shared embeddings and lower layers, trainable upper layers and head."""

    def __init__(self, bert: Any, shared_layers: int) -> None:
        super().__init__()
        self.bert = copy.deepcopy(bert)
        for module in (self.bert.embeddings, *self.bert.encoder.layer[:shared_layers]):
            for param in module.parameters():
                param.requires_grad = False
        self.shared_layers = shared_layers
        self.head = SequenceHead(3)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        states = self.bert(input_ids=ids, attention_mask=mask).last_hidden_state
        return self.head(states, mask)

    def load_shipped(self, state: dict[str, torch.Tensor]) -> None:
        """Take the upper layers and the head from a saved branch (see :meth:`shipped_state`)."""
        layers: dict[int, dict[str, torch.Tensor]] = {}
        head: dict[str, torch.Tensor] = {}
        for key, value in state.items():
            if key.startswith("head."):
                head[key.removeprefix("head.")] = value.float()
            else:
                _, _, index, rest = key.split(".", 3)
                layers.setdefault(int(index), {})[rest] = value.float()
        if sorted(layers) != list(range(self.shared_layers, len(self.bert.encoder.layer))):
            raise ValueError(f"the branch holds layers {sorted(layers)}, not the upper ones")
        for index, layer_state in layers.items():
            self.bert.encoder.layer[index].load_state_dict(layer_state)
        self.head.load_state_dict(head)

    def shipped_state(self) -> dict[str, torch.Tensor]:
        """What the package stores: the upper layers and the head, nothing shared."""
        state = {
            f"encoder.layer.{i}.{k}": v
            for i in range(self.shared_layers, len(self.bert.encoder.layer))
            for k, v in self.bert.encoder.layer[i].state_dict().items()
        }
        state.update({f"head.{k}": v for k, v in self.head.state_dict().items()})
        return state


@torch.inference_mode()
def accuracy(model: NLIBranch, encoded: list[dict[str, Any]], device: torch.device) -> float:
    model.eval()
    correct = 0
    for i in range(0, len(encoded), 64):
        batch = encoded[i : i + 64]
        ids = pad([e["input_ids"] for e in batch], 0).to(device)
        logits = model(ids, (ids != 0).long()).cpu()
        correct += int((logits.argmax(-1) == torch.tensor([e["label"] for e in batch])).sum())
    model.train()
    return correct / max(len(encoded), 1)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rng = start_run(args.seed, args.threads)
    started = time.time()
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.encoder)
    det = AutoModelForTokenClassification.from_pretrained(args.encoder, dtype=torch.float32)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model = NLIBranch(det.bert, args.shared_layers)
    del det
    if args.init_branch is not None:
        model.load_shipped(_read_branch(args.init_branch, args.encoder, args.shared_layers))
    model = model.to(device)

    if args.packed is not None:
        tr_enc, ho_all, ho_snli, ho_real = _read_pack(args.packed)
        if args.quick:
            tr_enc, ho_all = tr_enc[:600], ho_all[:200]
            ho_snli, ho_real = ho_snli[:50], ho_real[:50]
    else:
        tr_enc, ho_all, ho_snli, ho_real = _encoded_sets(args, rng, tok)
    if args.pack is not None:
        _write_pack(args.pack, (tr_enc, ho_all, ho_snli, ho_real))
        return
    steps_per_epoch = (len(tr_enc) + args.batch - 1) // args.batch
    total = steps_per_epoch * args.epochs
    log.info(
        "nli: %d train, %d held out (%d snli), %d steps",
        len(tr_enc),
        len(ho_all),
        len(ho_snli),
        total,
    )

    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    warm = max(1, total // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / (total - warm)))
    )
    stream = Stream(tr_enc, args.batch, rng)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")
    history: list[dict[str, float]] = []
    best: tuple[float, dict[str, torch.Tensor]] | None = None
    losses: list[float] = []
    model.train()
    for step in range(total):
        batch = stream.next()
        ids = pad([e["input_ids"] for e in batch], 0).to(device)
        target = torch.tensor([e["label"] for e in batch], device=device)
        with autocast:
            loss = nn.functional.cross_entropy(model(ids, (ids != 0).long()).float(), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        if (step + 1) % 100 == 0:
            log.info(
                "step %d/%d %.0fs loss %.4f",
                step + 1,
                total,
                time.time() - started,
                float(np.mean(losses[-100:])),
            )
        if (step + 1) % steps_per_epoch == 0:
            acc = accuracy(model, ho_all, device)
            snli = accuracy(model, ho_snli, device)
            scores = {"epoch": len(history) + 1, "heldout": acc, "heldout_snli": snli}
            if ho_real:
                scores["heldout_real"] = accuracy(model, ho_real, device)
            history.append(scores)
            log.info("epoch %d: %s", len(history), json.dumps(scores))
            # the checkpoint is picked on the pooled held-out split of train-role data
            if best is None or acc > best[0]:
                state = model.shipped_state()
                best = (acc, {k: v.detach().cpu().clone() for k, v in state.items()})
    assert best is not None
    metrics = {
        "train_seconds": round(time.time() - started),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "epochs": history,
        "chosen_epoch": max(history, key=lambda h: h["heldout"])["epoch"],
        "heldout_n": len(ho_all),
        "heldout_snli_n": len(ho_snli),
        "heldout_real_n": len(ho_real),
        "train_n": len(tr_enc),
    }
    save(best[1], args, metrics)


def _encoded_sets(
    args: argparse.Namespace, rng: random.Random, tok: Any
) -> tuple[list[dict[str, Any]], ...]:
    """The encoded train, held-out, held-out SNLI and held-out real-answer pairs."""
    train, heldout = data.nli_examples(rng)
    train += data.synthetic_nli(rng, args.synthetic_nli)
    if args.mix_share < 1.0:
        # a seeded sample of the mix; the held-out split stays whole
        train = random.Random(args.seed).sample(train, round(len(train) * args.mix_share))
    if args.quick:
        train, heldout = train[:400], heldout[:200]
    heldout_real: list[data.NLIExample] = []
    if args.real_repeat:
        # After the generator's draws, so the pairs above stay those of a run without them.
        real_train, heldout_real = nli_real.training_examples(nli_real.train_role_pairs())
        if args.real_balanced:
            real_train = _balanced(real_train, random.Random(args.seed))
        if args.quick:
            real_train, heldout_real = real_train[:100], heldout_real[:50]
        train += real_train * args.real_repeat
        heldout += heldout_real

    if args.curriculum_per_task:
        train += claims.curriculum_examples(random.Random(args.seed), args.curriculum_per_task)
    if args.faithjudge_repeat:
        fj_train, fj_held = claims.faithjudge_examples(random.Random(args.seed))
        # the judge-inconsistent sentences are rare: they count twice in each repeat
        fj_train += [e for e in fj_train if e.label != 0]
        train += fj_train * args.faithjudge_repeat
        heldout += fj_held
        heldout_real += fj_held
    if args.quick:
        train = train[:600]

    def enc(xs: list[data.NLIExample]) -> list[dict[str, Any]]:
        pairs: list[tuple[str, str | None]] = [(e.premise, e.hypothesis) for e in xs]
        return encode_pairs(tok, pairs, [e.label for e in xs], args.max_length)

    tr_enc = enc(train)
    ho_all = enc(heldout)
    ho_snli = enc([e for e in heldout if e.source == "snli"])
    ho_real = enc(heldout_real)
    return tr_enc, ho_all, ho_snli, ho_real


_PACK_SETS = ("train", "heldout", "heldout_snli", "heldout_real")


def _write_pack(file: Path, sets: tuple[list[dict[str, Any]], ...]) -> None:
    """The encoded sets as flat uint16 token ids with offsets (the vocabulary fits)."""
    packed: dict[str, torch.Tensor] = {}
    for name, rows in zip(_PACK_SETS, sets, strict=True):
        ids = [i for r in rows for i in r["input_ids"]]
        if ids and max(ids) > np.iinfo(np.uint16).max:
            raise ValueError("token ids exceed uint16: this encoder cannot be packed")
        lengths = [len(r["input_ids"]) for r in rows]
        packed[f"{name}.ids"] = torch.from_numpy(np.asarray(ids, dtype=np.uint16).view(np.int16))
        packed[f"{name}.lengths"] = torch.tensor(lengths, dtype=torch.int32)
        packed[f"{name}.labels"] = torch.tensor([r["label"] for r in rows], dtype=torch.int8)
    file.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(file, "wb", compresslevel=9) as fh:  # what travels to a GPU is capped
        torch.save(packed, fh)
    log.info("packed %s (%.1f MB): %s", file, file.stat().st_size / 1e6,
             {n: len(r) for n, r in zip(_PACK_SETS, sets, strict=True)})  # fmt: skip


def _read_pack(file: Path) -> tuple[list[dict[str, Any]], ...]:
    """The sets :func:`_write_pack` wrote, as the trainer's rows."""
    with gzip.open(file, "rb") as fh:
        packed = torch.load(io.BytesIO(fh.read()), weights_only=True)
    out = []
    for name in _PACK_SETS:
        ids = packed[f"{name}.ids"].numpy().view(np.uint16).astype(np.int64)
        lengths = packed[f"{name}.lengths"].numpy().astype(np.int64)
        ends = np.cumsum(lengths)
        starts = ends - lengths
        labels = packed[f"{name}.labels"].tolist()
        out.append(
            [
                {"input_ids": ids[a:b].tolist(), "label": int(y)}
                for a, b, y in zip(starts, ends, labels, strict=True)
            ]
        )
    return tuple(out)


def _balanced(pairs: list[data.NLIExample], rng: random.Random) -> list[data.NLIExample]:
    """The pairs not entailed, and as many entailed ones drawn at random, in their order."""
    entailed = [i for i, e in enumerate(pairs) if e.label == 0]
    keep = set(rng.sample(entailed, min(len(entailed), len(pairs) - len(entailed))))
    return [e for i, e in enumerate(pairs) if e.label != 0 or i in keep]


def _read_branch(folder: Path, encoder: Path, shared_layers: int) -> dict[str, torch.Tensor]:
    """A saved branch's tensors, checked to belong to ``encoder`` with as many shared layers."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    file = folder / "model.safetensors"
    with safe_open(str(file), framework="pt") as fh:
        meta = fh.metadata() or {}
    if meta.get("shared_layers") != str(shared_layers) or meta.get(
        "encoder_sha256"
    ) != encoder_fingerprint(encoder, shared_layers):
        raise SystemExit(f"{file} was not trained on {encoder} with {shared_layers} shared layers")
    return load_file(str(file))


def save(state: dict[str, torch.Tensor], args: argparse.Namespace, metrics: dict[str, Any]) -> None:
    from safetensors.torch import save_file

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.half().contiguous() for k, v in state.items()},
        str(out / "model.safetensors"),
        metadata={
            "labels": ",".join(data.NLI_LABELS),
            "shared_layers": str(args.shared_layers),
            "pooling": "mean",
            "encoder": "detector",
            "encoder_sha256": encoder_fingerprint(args.encoder, args.shared_layers),
        },
    )
    flat = {k: str(v) for k, v in vars(args).items()}
    record: dict[str, Any] = {"args": flat, "metrics": metrics}
    if args.init_branch is not None and (args.init_branch / "training_metrics.json").is_file():
        # how the branch it started from was made, for the card
        record["init"] = json.loads((args.init_branch / "training_metrics.json").read_text())
    (out / "training_metrics.json").write_text(json.dumps(record, indent=1))
    size = (out / "model.safetensors").stat().st_size / 1e6
    log.info("wrote %s (%.1f MB): %s", out, size, json.dumps(metrics))
    from .card import branch_card

    (out / "README.md").write_text(branch_card(out / "training_metrics.json"))


if __name__ == "__main__":
    main()
