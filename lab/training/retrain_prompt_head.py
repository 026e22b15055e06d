"""Refit the prompt classifier's head on a detector folder whose encoder changed.

The prompt classifier ("needs fact check?") is a small head on the mean-pooled states
of the detector's encoder. ``train_evidence`` retrains the encoder's upper layers, so
the head is refitted on the new states: the encoder stays as it is, the prompts
(``lab.training.data.prompt_examples``, train-role sets, 15% held out with the same seed as
``lab.training.train``) are encoded once, and the head (dense + tanh + linear) is trained on
the cached pooled states. The folder's ``heads.safetensors`` gets the new ``prompt.*``
tensors; the other heads are kept.

    python -m lab.training.retrain_prompt_head runs/evidence
"""

from __future__ import annotations

import json
import logging
import random
import time

import torch
from safetensors.torch import load_file, save_file

from ._cli import folder_args
from .data import prompt_examples
from .model import SequenceHead

log = logging.getLogger("retrain_prompt_head")


@torch.inference_mode()
def pooled(model: torch.nn.Module, tokenizer: object, texts: list[str]) -> torch.Tensor:
    """Mean-pooled last-layer states of each text (the head's input), in order."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    rows: dict[int, torch.Tensor] = {}
    for first in range(0, len(order), 32):
        idx = order[first : first + 32]
        enc = tokenizer(  # type: ignore[operator]
            [texts[i] for i in idx], truncation=True, max_length=256, padding=True,
            return_tensors="pt",
        )  # fmt: skip
        states = model.bert(  # type: ignore[operator]
            input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]
        ).last_hidden_state
        m = enc["attention_mask"].unsqueeze(-1).to(states.dtype)
        vectors = (states * m).sum(1) / m.sum(1).clamp(min=1.0)
        rows.update(zip(idx, vectors, strict=True))
    return torch.stack([rows[i] for i in range(len(texts))])


def main(argv: list[str] | None = None) -> None:
    args = folder_args(__doc__, argv, epochs=60)
    torch.manual_seed(args.seed)
    started = time.time()

    from transformers import AutoModelForTokenClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.folder)
    model = AutoModelForTokenClassification.from_pretrained(args.folder, dtype=torch.float32)
    model.eval()
    rng = random.Random(args.seed)
    prompts = prompt_examples(rng)
    rng.shuffle(prompts)
    cut = int(len(prompts) * 0.85)
    train, held = prompts[:cut], prompts[cut:]
    x_tr = pooled(model, tokenizer, [p.text for p in train])
    y_tr = torch.tensor([p.label for p in train])
    x_ho = pooled(model, tokenizer, [p.text for p in held])
    y_ho = torch.tensor([p.label for p in held])

    head = SequenceHead(2)
    optim = torch.optim.AdamW(head.parameters(), lr=2e-3, weight_decay=0.01)
    for _ in range(args.epochs):
        head.train()
        perm = torch.randperm(len(x_tr))
        for first in range(0, len(perm), 64):
            idx = perm[first : first + 64]
            mask = torch.ones(len(idx), 1)
            logits = head(x_tr[idx].unsqueeze(1), mask)
            loss = torch.nn.functional.cross_entropy(logits, y_tr[idx])
            loss.backward()
            optim.step()
            optim.zero_grad()
    head.eval()
    with torch.inference_mode():
        predicted = head(x_ho.unsqueeze(1), torch.ones(len(x_ho), 1)).argmax(-1)
    accuracy = float((predicted == y_ho).float().mean())
    log.info("prompt head: held-out accuracy %.4f on %d prompts", accuracy, len(held))

    heads_path = args.folder / "heads.safetensors"
    heads = load_file(heads_path)
    dtype = next(iter(heads.values())).dtype
    for key, value in head.state_dict().items():
        heads[f"prompt.{key}"] = value.to(dtype).contiguous()
    save_file(heads, heads_path)
    metrics_path = args.folder / "prompt_head_metrics.json"
    metrics_path.write_text(
        json.dumps(
            {
                "heldout_accuracy": accuracy,
                "heldout_n": len(held),
                "train_n": len(train),
                "minutes": round((time.time() - started) / 60, 1),
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
