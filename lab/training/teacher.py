"""Soft targets from a larger teacher: its token probabilities on the training examples.

The teacher is all-mpnet-base-v2 (110M parameters, from PyPI), every layer fine-tuned on
a GPU for two passes over the same training examples as stage 5, with the same rows and
losses (``lab/records/gpu_h100/encoder_probe/``). It does not fit the 60 MB budget
and its training does not fit the 2-core CPU, so what is committed is what it said: for
each training example, the probability it gives every answer token, keyed by character
offsets into the answer (``lab/training/data/teacher_mpnet_train_{a,b}.npz``, 3 MB). A CPU
run of ``train_evidence --teacher lab/training/data/teacher_mpnet`` then distils it into the
bundled MiniLM without the teacher.

``teacher_mpnet.json`` holds a fingerprint of the examples the probabilities belong to
(the stage-5 flags: ``--seed 13 --per-source 1500 --heldout-per-source 120 --synthetic
2500``); other examples are refused rather than matched by position.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# starts, ends and probabilities of the teacher's answer tokens, sorted by start
Soft = tuple[list[int], list[int], list[float]]


def fingerprint(examples: Sequence[Any]) -> str:
    """A hash of the examples' answers, in order."""
    h = hashlib.sha1()
    for ex in examples:
        h.update(ex.answer.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def soft_target(soft: Soft, start: int, end: int) -> float:
    """The teacher's largest probability among its tokens overlapping ``[start, end)``."""
    starts, ends, probs = soft
    best = -1.0
    i = bisect.bisect_left(starts, start)
    # a teacher token that starts before ``start`` may still reach into it
    for j in range(max(i - 1, 0), len(starts)):
        if starts[j] >= end:
            break
        if ends[j] > start:
            best = max(best, probs[j])
    return best


def load_soft_targets(prefix: Path, examples: Sequence[Any]) -> Iterator[Soft | None]:
    """Each example's soft targets (``None`` where the teacher read no answer token).

    Raises:
        SystemExit: If the files were written for other examples.
    """
    meta = json.loads(prefix.with_suffix(".json").read_text("utf-8"))
    if meta["examples"] != len(examples) or meta["fingerprint"] != fingerprint(examples):
        raise SystemExit(
            f"{prefix}: the teacher's probabilities belong to other training examples "
            f"({meta['examples']} with fingerprint {meta['fingerprint'][:12]}); "
            "use the flags in its .json"
        )
    by_example: dict[int, Soft] = {}
    for path in sorted(prefix.parent.glob(f"{prefix.name}_train_*.npz")):
        data = np.load(path)
        order = np.lexsort((data["start"], data["example"]))
        example, start, end = data["example"][order], data["start"][order], data["end"][order]
        prob = data["p"][order].astype(float)
        cuts = np.flatnonzero(np.diff(example)) + 1
        for chunk in np.split(np.arange(len(example)), cuts):
            if len(chunk):
                by_example[int(example[chunk[0]])] = (
                    start[chunk].tolist(),
                    end[chunk].tolist(),
                    prob[chunk].tolist(),
                )
    for i in range(len(examples)):
        yield by_example.get(i)
