"""Train the bundled detector on real generated text, judged unit by unit against evidence.

The runtime's :class:`EvidenceDetector` cuts an answer into units and reads each beside
the context sentences selected for it. This trains the token head on exactly those rows
(the same selection code builds them), from:

* real outputs with human labels (``lab.training.realdata``): summaries, dialogue responses,
  claims, QA answers; most labels are per example, some per span or token;
* the hard cases users hit (``lab.training.hardcases``), exact character labels;
* with ``--llm-answers N``, paragraph answers a local LLM wrote (``lab.training.llm_answers``),
  labelled by a planted change, each read N times per pass;
* a share of the older synthetic perturbations (exact labels), so spans stay sharp;
* with ``--teacher PREFIX``, a larger model's token probabilities on these examples as soft
  targets beside the labels (``lab.training.teacher``: distillation without the teacher).

Labels are used for what they are. A clean answer labels every token supported. A span
label marks its tokens. An example-level "not supported" label with no span says only
that *some* token is unsupported: its loss is on the most suspicious token of the example
(multiple-instance learning), so the head is not taught that every word of it is wrong.

The embeddings and the lower three layers stay frozen: the NLI branch is built on them
(its fingerprint stays valid) and each step is cheaper. Time-bounded (``--minutes``), so
it fits the 2-hour CPU budget; ``--init`` continues from a previous run (with
``--order-seed``, in another order over the same examples).

    python -m lab.training.train_evidence --minutes 60 --out runs/evidence
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import shutil
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from truthlens_integrations._lab_api import ContextIndex, plan_rows
from truthlens_integrations.evaluation import average_precision, threshold_curve

from . import hardcases, llm_answers, realdata, teacher
from .data import synthetic_examples
from .teacher import Soft, soft_target

log = logging.getLogger("train_evidence")

BUNDLED = Path(__file__).resolve().parents[2] / "core" / "_bundled" / "detector"
FROZEN_LAYERS = 3
# The shipped weights were trained with units of up to 48 tokens; the runtime default (96)
# was chosen later on held-out data (benchmarks/results/heldout_units.md).
UNIT_TOKENS = 48
EVIDENCE_TOKENS = 192


@dataclass
class Example:
    """One answer with its label, in the form training needs."""

    source: str
    context: list[str]
    question: str | None
    answer: str
    label: int
    spans: tuple[tuple[int, int], ...] | None


@dataclass
class Encoded:
    source: str
    label: int
    exact: bool  # token labels are exact (clean answers and span labels)
    rows: list[dict[str, Any]]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--init", type=Path, default=BUNDLED)
    p.add_argument("--out", type=Path, default=Path("runs/evidence"))
    p.add_argument("--seed", type=int, default=13)
    p.add_argument(
        "--order-seed",
        type=int,
        default=None,
        help="shuffle the batches with this seed instead (same examples, same held-out split): "
        "a run continued with --init then reads the rows in another order",
    )
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--max-steps", type=int, default=100_000)
    p.add_argument("--batch-rows", type=int, default=16)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--per-source", type=int, default=2500, help="most examples per source")
    p.add_argument("--synthetic", type=int, default=3000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--heldout-per-source", type=int, default=300)
    p.add_argument(
        "--llm-answers",
        type=int,
        default=0,
        metavar="N",
        help="add the LLM-written paragraph answers (lab.training.llm_answers), each N times; "
        "their test part joins the held-out report",
    )
    p.add_argument(
        "--teacher",
        type=Path,
        default=None,
        metavar="PREFIX",
        help="soft targets: a larger model's token probabilities on these training examples "
        "(PREFIX.json and PREFIX_train_*.npz, written by lab.training.teacher)",
    )
    p.add_argument("--teacher-weight", type=float, default=1.0)
    p.add_argument(
        "--teacher-temperature",
        type=float,
        default=1.0,
        help="soften the teacher's probabilities: sigmoid(logit(p) / T). Its outputs on its "
        "own training examples are nearly 0 or 1; T > 1 keeps their order, not their certainty",
    )
    p.add_argument("--quick", action="store_true", help="tiny smoke run")
    return p.parse_args(argv)


def _from_claim(c: Any) -> Example:
    passages = [p for p in c.context.split("\n") if p.strip()] or [c.context]
    return Example(c.source, passages, c.question or None, c.answer, c.label, c.spans)


def balanced(claims: list[Any], per_source: int, rng: random.Random) -> list[Any]:
    """At most ``per_source`` claims per source, positives and negatives evened out."""
    by_source: dict[str, list[Any]] = defaultdict(list)
    for c in claims:
        by_source[c.source].append(c)
    out = []
    for source in sorted(by_source):
        items = by_source[source]
        rng.shuffle(items)
        pos = [c for c in items if c.label == 1]
        neg = [c for c in items if c.label == 0]
        half = per_source // 2
        take_pos = pos[: max(half, per_source - len(neg))]
        take_neg = neg[: per_source - len(take_pos)]
        out.extend(take_pos + take_neg)
    return out


def load_examples(args: argparse.Namespace, part: str, rng: random.Random) -> list[Example]:
    per_source = args.per_source if part == "train" else args.heldout_per_source
    if args.quick:
        per_source = 40
    claims = balanced(realdata.load_real(part=part, seed=args.seed), per_source, rng)
    examples = [_from_claim(c) for c in claims]
    examples += [_from_claim(c) for c in _hard_cases(part)]
    if args.llm_answers > 0:
        llm = [
            _from_claim(c)
            for c in llm_answers.load_llm_answers("train" if part == "train" else "test")
        ]
        examples += llm * (args.llm_answers if part == "train" else 1)
    if part == "train" and args.synthetic:
        n = 60 if args.quick else args.synthetic
        for ex in synthetic_examples("train", rng, n, long_fraction=0.3):
            # data.py splits HaluEval by line, realdata by context: keep only contexts that
            # realdata also trains on, so its held-out part stays unseen
            if realdata.split_of_context(" ".join(ex.context), args.seed) != "train":
                continue
            spans = tuple((int(a), int(b)) for a, b in ex.spans)
            examples.append(
                Example(
                    f"synthetic/{ex.kind}",
                    list(ex.context),
                    ex.question,
                    ex.answer,
                    int(bool(spans)),
                    spans,
                )
            )
    return examples


def _hard_cases(part: str) -> list[Any]:
    """The committed hard-case records of one part (``train``; anything else: ``test``)."""
    return list(hardcases.load_hardcases("train" if part == "train" else "test"))


def row_encodings(
    tokenizer: Any,
    ex: Example,
    *,
    unit_tokens: int = UNIT_TOKENS,
    evidence_tokens: int = EVIDENCE_TOKENS,
) -> list[tuple[Any, Any]]:
    """``(plan row, tokenizer output)`` of the example's first six runtime rows.

    ``unit_tokens`` and ``evidence_tokens`` are the runtime's evidence-selection settings
    the rows are planned with (this module's defaults are those stage 4 and 5 trained with).
    """

    def count_many(texts: list[str]) -> list[int]:
        enc = tokenizer(texts, add_special_tokens=False, return_attention_mask=False)
        return [len(ids) for ids in enc["input_ids"]]

    if not ex.answer.strip() or not any(p.strip() for p in ex.context):
        return []
    rows_plan = plan_rows(
        ContextIndex(ex.context),
        ex.question,
        ex.answer,
        count_many=count_many,
        unit_tokens=unit_tokens,
        evidence_tokens=evidence_tokens,
    )
    return [
        (
            row,
            tokenizer(
                row.prompt,
                ex.answer[row.start : row.end],
                return_offsets_mapping=True,
                truncation="only_first",
                max_length=evidence_tokens + unit_tokens + 16,
            ),
        )
        for row in rows_plan[:6]
    ]


def encode(
    tokenizer: Any,
    ex: Example,
    soft: Soft | None = None,
    *,
    unit_tokens: int = UNIT_TOKENS,
    evidence_tokens: int = EVIDENCE_TOKENS,
) -> Encoded | None:
    """The runtime's rows for one example, with token labels (-100 where unknown).

    With ``soft`` (the teacher's ``(start, end, probability)`` for the example's answer
    tokens), each answer token also gets the teacher's largest probability among the
    tokens it overlaps (``-1`` where none does). Token type ids are kept where the
    tokenizer gives them.
    """
    exact = ex.label == 0 or ex.spans is not None
    rows = []
    for row, enc in row_encodings(
        tokenizer, ex, unit_tokens=unit_tokens, evidence_tokens=evidence_tokens
    ):
        seq = enc.sequence_ids()
        labels = []
        for i, (a, b) in enumerate(enc["offset_mapping"]):
            if seq[i] != 1 or b <= a:
                labels.append(-100)
            elif not exact:
                labels.append(-2)  # answer token, label unknown (MIL)
            else:
                s, e = row.start + a, row.start + b
                hit = any(s < y and x < e for x, y in ex.spans or ())
                labels.append(int(hit))
        row_data: dict[str, Any] = {"input_ids": enc["input_ids"], "labels": labels}
        if "token_type_ids" in enc:
            row_data["token_type_ids"] = enc["token_type_ids"]
        if soft is not None:
            row_data["soft"] = [
                soft_target(soft, row.start + a, row.start + b) if label != -100 else -1.0
                for label, (a, b) in zip(labels, enc["offset_mapping"], strict=True)
            ]
        rows.append(row_data)
    if not rows:
        return None
    return Encoded(ex.source, ex.label, exact, rows)


def _pad(
    rows: list[dict[str, Any]], device: torch.device, pad_id: int = 0
) -> dict[str, torch.Tensor]:
    """The rows as one padded batch; token type ids only where the rows have them."""
    width = max(len(r["input_ids"]) for r in rows)

    def col(key: str, fill: float) -> torch.Tensor:
        return torch.tensor([r[key] + [fill] * (width - len(r[key])) for r in rows])

    out = {
        "input_ids": col("input_ids", pad_id).to(device),
        "attention_mask": torch.tensor(
            [[1] * len(r["input_ids"]) + [0] * (width - len(r["input_ids"])) for r in rows]
        ).to(device),
    }
    if all("labels" in r for r in rows):
        out["labels"] = col("labels", -100).to(device)
    if all("token_type_ids" in r for r in rows):
        out["token_type_ids"] = col("token_type_ids", 0).to(device)
    if any("soft" in r for r in rows):
        # A row the teacher did not label (an example it never saw) gets -1, "no target",
        # at every position: its neighbours in the batch keep their targets.
        soft = [r.get("soft") or [-1.0] * len(r["input_ids"]) for r in rows]
        out["soft"] = torch.tensor([s + [-1.0] * (width - len(s)) for s in soft]).to(device)
    return out


def batches(data: list[Encoded], rows_per_batch: int, rng: random.Random) -> list[list[int]]:
    """Example groups of about ``rows_per_batch`` rows, similar lengths together."""
    order = sorted(
        range(len(data)), key=lambda i: (len(data[i].rows[0]["input_ids"]) // 32, rng.random())
    )
    out: list[list[int]] = []
    current: list[int] = []
    n = 0
    for i in order:
        current.append(i)
        n += len(data[i].rows)
        if n >= rows_per_batch:
            out.append(current)
            current, n = [], 0
    if current:
        out.append(current)
    rng.shuffle(out)
    return out


def step_groups(
    data: list[Encoded], rows_per_batch: int, rng: random.Random, total: int
) -> Iterator[tuple[int, list[int]]]:
    """``(step, example group)`` for ``total`` steps, pass after pass over ``data``."""
    step = 0
    while step < total:
        groups = batches(data, rows_per_batch, rng)
        if not groups:
            return
        for group in groups[: total - step]:
            yield step, group
            step += 1


def label_loss(
    margin: torch.Tensor,
    labels: torch.Tensor,
    exact: list[bool],
    owner: list[int],
    response_weight: float = 0.0,
) -> torch.Tensor:
    """The loss of the labels: token BCE where they are exact, the MIL loss elsewhere.

    Args:
        margin: Logit margins, one per row and position.
        labels: 0 / 1 where known, -2 for answer tokens of an example-level label, -100
            elsewhere.
        exact: Per example of the batch, whether its token labels are exact.
        owner: Per row, the index of its example in ``exact``.
        response_weight: Weight of an answer-level term for exactly labelled examples:
            the largest margin over all rows of an answer against whether it has an
            unsupported token. The response score reads that maximum, so the term trains
            the ranking of whole answers, which token BCE leaves to chance.
    """
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    known = labels >= 0
    losses = []
    if known.any():
        target = labels[known].float()
        # hallucinated tokens are rare: weigh them up so the head does not learn "never"
        losses.append(bce(margin[known], target, weight=1.0 + 2.0 * target))
    # multiple-instance loss: an answer labelled unsupported must have one token that is
    mil = []
    owners = torch.tensor(owner, device=margin.device)
    for k, is_exact in enumerate(exact):
        if is_exact:
            continue
        mask = (labels == -2) & (owners[:, None] == k)
        if mask.any():
            mil.append(margin[mask].max())
    if mil:
        losses.append(bce(torch.stack(mil), torch.ones(len(mil), device=margin.device)))
    weights = [1.0] * len(losses)
    if response_weight > 0:
        peaks, targets = [], []
        for k, is_exact in enumerate(exact):
            mask = known & (owners[:, None] == k)
            if is_exact and mask.any():
                peaks.append(margin[mask].max())
                targets.append((labels[mask] > 0).any().float())
        if peaks:
            losses.append(bce(torch.stack(peaks), torch.stack(targets)))
            weights.append(response_weight)
    total = sum(w * loss for w, loss in zip(weights, losses, strict=True))
    return total / sum(weights)  # type: ignore[return-value]


def soft_targets(probabilities: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """The teacher's probabilities, softened: ``sigmoid(logit(p) / temperature)``."""
    if temperature == 1.0:
        return probabilities
    clipped = probabilities.clamp(1e-4, 1 - 1e-4)
    return torch.sigmoid(torch.logit(clipped) / temperature)


def logits_of(model: Any, batch: dict[str, torch.Tensor], device: torch.device) -> torch.Tensor:
    """The model's fp32 logits; the forward pass runs in bf16 autocast on a GPU."""
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        return model(**batch).logits.float()


def loss_of(
    model: Any,
    data: list[Encoded],
    group: list[int],
    device: torch.device,
    teacher_weight: float = 0.0,
    pad_id: int = 0,
    teacher_temperature: float = 1.0,
    response_weight: float = 0.0,
) -> Any:
    rows = [r for i in group for r in data[i].rows]
    owner = [k for k, i in enumerate(group) for _ in data[i].rows]
    batch = _pad(rows, device, pad_id)
    labels = batch.pop("labels")
    soft = batch.pop("soft", None)
    logits = logits_of(model, batch, device)
    margin = logits[..., 1] - logits[..., 0]
    total = label_loss(
        margin, labels, [data[i].exact for i in group], owner, response_weight=response_weight
    )
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    if soft is not None and teacher_weight > 0 and (soft >= 0).any():
        # Distillation: the larger teacher's probability of every answer token, labelled
        # or not, as a soft target beside the labels.
        known = soft >= 0
        target = soft_targets(soft[known], teacher_temperature)
        total = total + teacher_weight * bce(margin[known], target)
    return total


def optimizer_step(
    model: Any,
    optim: Any,
    data: list[Encoded],
    group: list[int],
    device: torch.device,
    lr: float,
    *,
    teacher_weight: float = 0.0,
    teacher_temperature: float = 1.0,
    pad_id: int = 0,
    response_weight: float = 0.0,
) -> torch.Tensor:
    """One update on ``group``: the learning rate set, the loss, clipped gradients.

    Returns the loss, detached (reading its value waits for the GPU, so callers read it
    only when they log it).
    """
    for g in optim.param_groups:
        g["lr"] = lr
    loss = loss_of(
        model,
        data,
        group,
        device,
        teacher_weight,
        pad_id=pad_id,
        teacher_temperature=teacher_temperature,
        response_weight=response_weight,
    )
    loss.backward()
    params = [p for g in optim.param_groups for p in g["params"]]
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optim.step()
    optim.zero_grad()
    return loss.detach()


@torch.inference_mode()
def example_scores(
    model: Any, data: list[Encoded], device: torch.device, pad_id: int = 0
) -> np.ndarray:
    """Highest token probability of each example (the uncalibrated response score)."""
    model.eval()
    out = np.zeros(len(data))
    order = sorted(range(len(data)), key=lambda i: len(data[i].rows[0]["input_ids"]))
    for first in range(0, len(order), 16):
        group = order[first : first + 16]
        rows = [r for i in group for r in data[i].rows]
        owner = [i for i in group for _ in data[i].rows]
        batch = _pad(rows, device, pad_id)
        labels = batch.pop("labels")
        batch.pop("soft", None)  # the teacher's column is for the loss, never a model input
        probs = torch.softmax(logits_of(model, batch, device), -1)[..., 1]
        for row, i in enumerate(owner):
            answer = labels[row] != -100
            if answer.any():
                out[i] = max(out[i], float(probs[row][answer].max()))
    model.train()
    return out


def _ap(scores: np.ndarray, gold: np.ndarray) -> float:
    if not gold.any():
        return float("nan")
    return average_precision(threshold_curve(gold.astype(bool).tolist(), scores.tolist()))


def report(scores: np.ndarray, data: list[Encoded]) -> dict[str, Any]:
    gold = np.array([d.label for d in data])
    by: dict[str, list[int]] = defaultdict(list)
    for i, d in enumerate(data):
        by[d.source.split("/")[0]].append(i)
    out: dict[str, Any] = {"all": {"n": len(data), "ap": _ap(scores, gold)}}
    for source, idx in sorted(by.items()):
        g = gold[idx]
        s = scores[idx]
        out[source] = {
            "n": len(idx),
            "positives": int(g.sum()),
            "ap": _ap(s, g),
            "flag_rate_clean": float((s[g == 0] > 0.5).mean()) if (g == 0).any() else None,
        }
    return out


def start_training(args: argparse.Namespace) -> tuple[random.Random, Any, Any, torch.device]:
    """Seed everything, load ``args.init`` and freeze its embeddings and lower layers.

    Shared by the training scripts that fine-tune the detector's token head.

    Returns:
        The seeded random generator, the tokenizer, the model (on its device) and the device.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)

    from transformers import AutoModelForTokenClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.init)
    model = AutoModelForTokenClassification.from_pretrained(args.init, dtype=torch.float32)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    frozen = ("bert.embeddings.", *(f"bert.encoder.layer.{i}." for i in range(FROZEN_LAYERS)))
    for name, param in model.named_parameters():
        param.requires_grad = not name.startswith(frozen)
    return rng, tokenizer, model, device


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rng, tokenizer, model, device = start_training(args)

    started = time.time()
    train_examples = load_examples(args, "train", rng)
    softs: list[Soft | None] = [None] * len(train_examples)
    if args.teacher is not None:
        softs = list(teacher.load_soft_targets(args.teacher, train_examples))
    train = [
        e
        for e in (encode(tokenizer, x, s) for x, s in zip(train_examples, softs, strict=True))
        if e
    ]
    held = [e for e in (encode(tokenizer, x) for x in load_examples(args, "heldout", rng)) if e]
    log.info(
        "encoded %d train / %d held-out examples in %.0f s",
        len(train),
        len(held),
        time.time() - started,
    )
    counts: dict[str, int] = defaultdict(int)
    for d in train:
        counts[d.source.split("/")[0]] += 1
    log.info("train sources: %s", dict(counts))

    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    # --seed also picks the held-out split and the examples; only the order may change.
    order_rng = rng if args.order_seed is None else random.Random(args.order_seed)
    budget = args.minutes * 60.0
    step = 0
    t0 = time.time()
    model.train()
    done = False
    epoch = 0
    while not done:
        for group in batches(train, args.batch_rows, order_rng):
            elapsed = time.time() - t0
            if elapsed > budget or step >= args.max_steps:
                done = True
                break
            # linear warm-up then linear decay over the time budget
            frac = elapsed / budget
            scale = min(1.0, (step + 1) / 50) * max(0.05, 1.0 - frac)
            loss = optimizer_step(
                model,
                optim,
                train,
                group,
                device,
                args.lr * scale,
                teacher_weight=args.teacher_weight,
                teacher_temperature=args.teacher_temperature,
            )
            step += 1
            if step % 50 == 0:
                log.info(
                    "epoch %d step %d loss %.4f (%.1f min)", epoch, step, loss.item(), elapsed / 60
                )
        epoch += 1
    train_minutes = (time.time() - t0) / 60
    scores = example_scores(model, held, device)
    metrics = {
        "steps": step,
        "epochs_started": epoch,
        "train_minutes": round(train_minutes, 1),
        "train_examples": len(train),
        "heldout": report(scores, held),
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    log.info("held-out: %s", json.dumps(metrics["heldout"], indent=1))
    save(model, tokenizer, args, metrics)


def save(model: Any, tokenizer: Any, args: argparse.Namespace, metrics: dict[str, Any]) -> None:
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    model.half().save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    for name in ("heads.safetensors",):
        src = args.init / name
        if src.is_file() and src.resolve() != (out / name).resolve():
            shutil.copy(src, out / name)
    (out / "evidence_metrics.json").write_text(json.dumps(metrics, indent=1, default=_num))


def _num(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return str(value)


if __name__ == "__main__":
    main()
