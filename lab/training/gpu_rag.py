"""Candidate 30 of issue 27: the stage-6 recipe on a lent GPU, with ExpertQA and seed soups.

Stage 6 (the shipped weights) trained 630 steps on the 2-core CPU, one seed. On a GPU a
run of that recipe takes seconds, so one call trains every variant of
``lab/records/rag_selection/RULE_candidate30.md``. Only 64 MiB travel to the GPU
machine and it has no copy of the data, so, as in ``lab.training.gpu_student``:

``pack`` (here, on the CPU)
    Encodes stage 6's rows (``lab.training.train_rag``'s examples, runtime evidence
    selection), the ExpertQA claims (train role; claim labels, so unsupported claims get
    the MIL loss) and the ``ragtruth_dev`` select split's answers (scored, never trained
    on), and writes stage 5's trained weights (the start of stage 6) beside them.
``train`` (on the GPU)
    Trains each ``--variant`` (``NAME:START:ROWS:PASSES:LR:SEEDS``; ``START`` is ``s5`` or
    ``s6``, ``ROWS`` ``rag`` or ``eqa``, ``SEEDS`` joined by ``+``: several seeds are
    averaged into one model), writes its trained weights (fp16, about 11 MB) and the
    select-split AUROC of each model's largest raw token probability, stage 5's and
    stage 6's beside them, to ``results.json``.

``lab.training.gpu_student unpack`` then joins the weights with the shipped folder::

    python -m lab.training.gpu_rag pack --out .gpu
    python -m lab.training.gpu_rag train --pack .gpu --out OUT \\
        --variant rag:s5:rag:2:5e-5:21 --variant eqa_soup:s5:eqa:2:5e-5:21+22+23+24
    python -m lab.training.gpu_student unpack --delta OUT/eqa_soup.safetensors \\
        --out runs/c30/eqa_soup
    python -m lab.training.gpu_rag score --pack .gpu --folder core/_bundled/detector \\
        --folder runs/c30/eqa_soup
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import pickle
import random
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from truthlens_integrations.evaluation import auroc

from .gpu_student import (
    _compact,
    _device,
    _device_name,
    _expand,
    _student,
    trainable,
    unpack,
)
from .train_evidence import (
    BUNDLED,
    FROZEN_LAYERS,
    Encoded,
    Example,
    example_scores,
    optimizer_step,
    step_groups,
)

log = logging.getLogger("gpu_rag")

STAGE5_COMMIT = "dcda0be"  # the commit whose detector weights stage 6 started from
ROWS = ("rag", "eqa")
STARTS = ("s5", "s6")
# stage 6's command (lab/training/README.md): the mix and repeats of ``train_rag``
STAGE6_FLAGS = [
    "--rag-repeat",
    "2",
    "--removal-repeat",
    "1",
    "--mix-per-source",
    "40",
    "--hard",
    "400",
    "--synthetic",
    "200",
]


@dataclass(frozen=True)
class Variant:
    """One model of the rule: where it starts, what it reads, and the seeds it averages."""

    name: str
    start: str
    rows: str
    passes: float
    lr: float
    seeds: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> Variant:
        """``NAME:START:ROWS:PASSES:LR:SEEDS``, e.g. ``eqa_soup:s5:eqa:2:5e-5:21+22``."""
        parts = text.split(":")
        try:
            name, start, rows, passes, lr, seeds = parts
            variant = cls(
                name, start, rows, float(passes), float(lr), tuple(map(int, seeds.split("+")))
            )
        except ValueError:
            variant = None
        if variant is None or not name.isidentifier() or start not in STARTS or rows not in ROWS:
            raise argparse.ArgumentTypeError(
                f"variant {text!r}: expected NAME:START:ROWS:PASSES:LR:SEEDS with START in "
                f"{STARTS} and ROWS in {ROWS}, e.g. eqa_soup:s5:eqa:2:5e-5:21+22"
            )
        return variant


# ---------------------------------------------------------------------------- pack


def expertqa_examples() -> list[Example]:
    """The ExpertQA claims with passage text (train role), as training examples."""
    from truthlens_integrations.evaluation import load_detection_dataset

    return [
        Example(
            "expertqa",
            list(e.context),
            e.question,
            e.answer,
            int(e.hallucinated),
            None,  # claim labels: an unsupported claim's tokens are unknown (MIL)
        )
        for e in load_detection_dataset("expertqa")
    ]


def stage6_parts(quick: bool = False) -> dict[str, list[Example]]:
    """Stage 6's examples by part, each once (the repeats are the trainer's)."""
    from . import rag_rows
    from .train_rag import _from_rag, _mix, parse_args

    args = parse_args([*STAGE6_FLAGS, *(["--quick"] if quick else [])])
    rng = random.Random(args.seed)  # train_rag seeds its generator with --seed (13)
    rag = [_from_rag(c) for c in rag_rows.rag_claims("train")]
    removal = [_from_rag(c) for c in rag_rows.removal_claims("train", seed=args.seed)]
    select = [_from_rag(c) for c in rag_rows.rag_claims("select")]
    if quick:
        rag, removal, select = rag[:24], removal[:8], select[:40]
    return {"rag": rag, "removal": removal, "mix": _mix(args, rng), "select": select}


def stage5_delta(out: Path) -> None:
    """Stage 5's trained tensors (layers 4-6 and the head), from the commit that shipped it."""
    from safetensors.torch import load, save_file

    blob = subprocess.run(
        ["git", "show", f"{STAGE5_COMMIT}:core/_bundled/detector/model.safetensors"],
        check=True,
        capture_output=True,
    ).stdout
    state = load(blob)
    save_file({k: v for k, v in state.items() if trainable(k)}, str(out))


def pack(out: Path, quick: bool = False) -> None:
    """Write the encoded parts (``rows.pkl.gz``) and stage 5's weights (``s5.safetensors``)."""
    from transformers import AutoTokenizer

    from truthlens_integrations.core import DetectionConfig

    from .train_evidence import encode

    defaults = DetectionConfig()
    tokenizer = AutoTokenizer.from_pretrained(BUNDLED)
    started = time.time()
    parts = stage6_parts(quick)
    parts["expertqa"] = expertqa_examples()[: 40 if quick else None]
    blob = {}
    for name, examples in parts.items():
        encoded = [
            e
            for x in examples
            if (
                e := encode(
                    tokenizer,
                    x,
                    unit_tokens=defaults.unit_tokens,
                    evidence_tokens=defaults.evidence_tokens,
                )
            )
        ]
        blob[name] = _compact(encoded)
        log.info("%s: %d examples, %d rows", name, len(encoded), sum(len(e.rows) for e in encoded))
    out.mkdir(parents=True, exist_ok=True)
    with gzip.open(out / "rows.pkl.gz", "wb", compresslevel=6) as fh:
        pickle.dump(blob, fh, protocol=pickle.HIGHEST_PROTOCOL)
    stage5_delta(out / "s5.safetensors")
    log.info("wrote %s in %.0f s", out, time.time() - started)


# ---------------------------------------------------------------------------- train


def rows_of(parts: dict[str, list[Encoded]], rows: str) -> list[Encoded]:
    """One pass of a variant's rows: stage 6's repeats, and the ExpertQA claims for ``eqa``."""
    data = parts["rag"] * 2 + parts["removal"] + parts["mix"]
    return data + parts["expertqa"] if rows == "eqa" else data


def fit(model: Any, data: list[Encoded], passes: float, lr: float, seed: int) -> int:
    """Stage 6's schedule by steps: warm-up over 30, linear decay to 5%; returns the steps."""
    device = next(model.parameters()).device
    torch.manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    rows = sum(len(d.rows) for d in data)
    total = max(1, int(rows * passes / 16))
    model.train()
    steps = 0
    for step, group in step_groups(data, 16, random.Random(seed), total):
        scale = min(1.0, (step + 1) / 30) * max(0.05, 1.0 - step / total)
        optimizer_step(model, optim, data, group, device, lr * scale, response_weight=1.0)
        steps = step + 1
    return steps


def trained_state(model: Any) -> dict[str, torch.Tensor]:
    params = model.named_parameters()
    return {n: p.detach().float().cpu().clone() for n, p in params if trainable(n)}


def train_all(
    variants: list[Variant],
    starts: dict[str, Path],
    parts: dict[str, list[Encoded]],
    out: Path,
) -> list[dict[str, Any]]:
    """Train every variant (each seed run once, shared between variants) and score them."""
    from safetensors.torch import save_file

    device = _device()
    select = parts["select"]
    gold = [bool(d.label) for d in select]
    results = []
    for start, folder in starts.items():
        model = _student(folder, FROZEN_LAYERS, device)
        value = auroc(gold, example_scores(model, select, device).tolist())
        results.append({"name": f"stage{start[1]}", "select_raw_auroc": round(value, 4)})
        log.info("stage %s: select raw AUROC %.4f", start[1], value)
        del model
    runs: dict[tuple[Any, ...], tuple[dict[str, torch.Tensor], int]] = {}
    for v in variants:
        started, states = time.time(), []
        for seed in v.seeds:
            key = (v.start, v.rows, v.passes, v.lr, seed)
            if key not in runs:
                model = _student(starts[v.start], FROZEN_LAYERS, device)
                steps = fit(model, rows_of(parts, v.rows), v.passes, v.lr, seed)
                runs[key] = (trained_state(model), steps)
                del model
            states.append(runs[key][0])
        steps = runs[key][1]
        mean = {k: sum(s[k] for s in states) / len(states) for k in states[0]}
        model = _student(starts[v.start], FROZEN_LAYERS, device)
        model.load_state_dict(mean, strict=False)
        value = auroc(gold, example_scores(model, select, device).tolist())
        save_file(
            {k: t.half().contiguous() for k, t in mean.items()}, str(out / f"{v.name}.safetensors")
        )
        results.append(
            {
                "name": v.name,
                "variant": {**v.__dict__, "seeds": list(v.seeds)},
                "steps_per_seed": steps,
                "seconds": round(time.time() - started, 1),
                "device": _device_name(device),
                "select_raw_auroc": round(value, 4),
            }
        )
        log.info("%s: select raw AUROC %.4f (%.0f s)", v.name, value, results[-1]["seconds"])
        (out / "results.json").write_text(json.dumps(results, indent=1))
        del model
    return results


def run_training(args: argparse.Namespace) -> None:
    with gzip.open(args.pack / "rows.pkl.gz", "rb") as fh:
        blob = pickle.load(fh)  # our own file, written by ``pack``
    limit = args.limit or None  # a CPU smoke run reads the first few examples of each part
    parts = {name: _expand(rows[:limit]) for name, rows in blob.items()}
    log.info("parts: %s", {k: len(v) for k, v in parts.items()})
    args.out.mkdir(parents=True, exist_ok=True)
    stage5 = args.work / "stage5"
    unpack(args.pack / "s5.safetensors", args.init, stage5)
    train_all(args.variant, {"s5": stage5, "s6": args.init}, parts, args.out)


def score_folders(pack_dir: Path, folders: list[Path]) -> dict[str, float]:
    """Stage A on any device: each folder's select-split AUROC of its largest raw token
    probability (the ``select`` part of the pack)."""
    with gzip.open(pack_dir / "rows.pkl.gz", "rb") as fh:
        select = _expand(pickle.load(fh)["select"])  # our own file, written by ``pack``
    gold = [bool(d.label) for d in select]
    device = _device()
    out = {}
    for folder in folders:
        model = _student(folder, FROZEN_LAYERS, device)
        out[str(folder)] = round(auroc(gold, example_scores(model, select, device).tolist()), 4)
        log.info("%s: select raw AUROC %.4f", folder, out[str(folder)])
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="encode the rows, write stage 5's weights (CPU)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--quick", action="store_true", help="a few examples of each part")
    t = sub.add_parser("train", help="train and score the variants (GPU)")
    t.add_argument("--pack", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--work", type=Path, default=Path("/tmp/gpu_rag"))
    t.add_argument("--init", type=Path, default=BUNDLED, help="the shipped stage 6 folder")
    t.add_argument("--variant", type=Variant.parse, action="append", required=True)
    t.add_argument("--limit", type=int, default=0, help="first N examples of each part")
    s = sub.add_parser("score", help="stage A: select raw AUROC of detector folders (any device)")
    s.add_argument("--pack", type=Path, required=True)
    s.add_argument("--folder", type=Path, action="append", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.command == "pack":
        pack(args.out, args.quick)
    elif args.command == "score":
        print(json.dumps(score_folders(args.pack, args.folder), indent=1))
    else:
        run_training(args)


if __name__ == "__main__":
    main()
