"""NLI pairs from real answers judged by people: a claim beside the evidence it was judged on.

The NLI explainer reads a flagged span's answer sentence (the hypothesis) against the two
context sentences that share the most words with it (the premise; the engine's
``select_premise``). These pairs are built the same way, from three sets of real answers
(roles in ``benchdata/MANIFEST.md``):

- **ExpertQA** (train): a claim against the passages it cites. Experts marked its
  ``support``: ``Complete`` -> entailment; ``Partial`` and ``Incomplete`` -> neutral (the
  passage backs part of the claim or none of it: the claim as a whole is not entailed,
  and nothing says it is contradicted); ``Missing`` claims cite no passage text, so they
  make no pair; ``N/A`` and unlabelled claims are left out (the evaluation reader
  ``read_expertqa`` applies these rules).
- **ragtruth_dev** (train, split by source: only the ``train`` part may train): the
  answer sentence holding a RAGTruth span against the source. A sentence with a
  ``Conflict`` span (Evident or Subtle) -> contradiction; with only ``Baseless Info`` spans
  -> neutral. Every sentence of an answer without a span (at least
  :data:`MIN_CLEAN_WORDS` words) -> entailment.
- **AttributionBench** (select: measure and choose, never train): a claim against its
  references, ``attributable`` -> entailment, ``not attributable`` -> :data:`NOT_ENTAILED`
  (binary only).

Train-role pairs are split by source (:func:`heldout_part`): an ExpertQA question or a
RAGTruth source lies wholly in the training or the held-out part.

    python -m lab.training.nli_real   # counts per set, part and label
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from truthlens_integrations._lab_api import (
    answer_sentence,
    read_attributionbench,
    read_expertqa,
    read_ragtruth_dev,
    select_premise,
    split_sentences,
    words,
)
from truthlens_integrations.evaluation import EvalExample

from . import data

__all__ = [
    "HELDOUT_PERCENT",
    "MIN_CLEAN_WORDS",
    "NOT_ENTAILED",
    "RealPair",
    "attributionbench_pairs",
    "expertqa_pairs",
    "heldout_part",
    "ragtruth_pairs",
    "training_examples",
]

NOT_ENTAILED = "not_entailed"
"""The label of a pair known only to be not entailed (AttributionBench's binary label)."""
MIN_CLEAN_WORDS = 4
"""Sentences of clean answers shorter than this ("Sure.", "Here is a summary:") make no pair."""
HELDOUT_PERCENT = 20
"""Share of the train-role sources (ExpertQA questions, ragtruth_dev sources) held out."""

Label = Literal["entailment", "neutral", "contradiction", "not_entailed"]
_CITATION = re.compile(r"\s*\[\d+\](?:\s*\[\d+\])*")


@dataclass(frozen=True)
class RealPair:
    """One (premise, hypothesis) pair of a real answer, with its label and source.

    Attributes:
        premise: The context sentences the engine would pick for ``hypothesis``.
        hypothesis: The claim or answer sentence.
        label: ``entailment``, ``neutral``, ``contradiction``, or ``not_entailed``.
        dataset: ``expertqa``, ``ragtruth_dev`` or ``attributionbench``.
        group: What the answer was written over (question or source id): the unit of
            the held-out split.
        marked: The labelled text inside ``hypothesis`` (RAGTruth spans); empty otherwise.
    """

    premise: str
    hypothesis: str
    label: Label
    dataset: str
    group: str
    marked: tuple[str, ...] = ()

    @property
    def entailed(self) -> bool:
        """Whether the gold label is entailment (the binary view)."""
        return self.label == "entailment"


def heldout_part(group: str) -> bool:
    """Whether a source falls in the held-out part (a fixed hash of its id, no seed)."""
    digest = hashlib.blake2b(group.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") % 100 < HELDOUT_PERCENT


def _pair(
    example: EvalExample, hypothesis: str, label: Label, marked: tuple[str, ...] = ()
) -> RealPair | None:
    hypothesis = hypothesis.strip()
    premise = select_premise(list(example.context), hypothesis)
    if not hypothesis or not premise.strip():
        return None
    return RealPair(
        premise=premise,
        hypothesis=hypothesis,
        label=label,
        dataset=example.dataset,
        group=f"{example.dataset}:{example.source_id}",
        marked=marked,
    )


def expertqa_pairs(folder: Path) -> list[RealPair]:
    """ExpertQA claims against their cited passages (citation marks removed from the claim)."""
    out = []
    for ex in read_expertqa(folder):
        claim = _CITATION.sub("", ex.answer)
        pair = _pair(ex, claim, "neutral" if ex.hallucinated else "entailment")
        if pair is not None:
            out.append(pair)
    return out


def _is_conflict(label: str | None) -> bool:
    return "conflict" in (label or "").lower()


def ragtruth_pairs(folder: Path, part: Literal["train", "select"]) -> list[RealPair]:
    """``ragtruth_dev`` answer sentences of one part of the committed split, labelled.

    The sentences holding spans (one pair per sentence, or per run of sentences a span
    crosses) and every sentence of the answers without a span.
    """
    out = []
    for ex in read_ragtruth_dev(folder, part=part):
        if not ex.gold_spans:
            for start, end in split_sentences(ex.answer):
                if len(words(ex.answer[start:end])) >= MIN_CLEAN_WORDS:
                    pair = _pair(ex, ex.answer[start:end], "entailment")
                    if pair is not None:
                        out.append(pair)
            continue
        sentences: dict[str, list[tuple[str, str | None]]] = {}
        for span in ex.gold_spans:
            sentence = answer_sentence(ex.answer, span.start, span.end)
            sentences.setdefault(sentence, []).append(
                (ex.answer[span.start : span.end], span.label)
            )
        for sentence, marks in sentences.items():
            label: Label = "contradiction" if any(_is_conflict(k) for _, k in marks) else "neutral"
            pair = _pair(ex, sentence, label, tuple(text for text, _ in marks))
            if pair is not None:
                out.append(pair)
    return out


def attributionbench_pairs(folder: Path) -> list[RealPair]:
    """AttributionBench claims against their references (select role: never train on these)."""
    out = []
    for ex in read_attributionbench(folder):
        if not ex.context:
            continue
        pair = _pair(ex, ex.answer, NOT_ENTAILED if ex.hallucinated else "entailment")
        if pair is not None:
            out.append(pair)
    return out


def train_role_pairs(root: Path = data.DATA_ROOT) -> list[RealPair]:
    """The pairs that may train: ExpertQA and the train part of ``ragtruth_dev``."""
    return expertqa_pairs(root / "expertqa") + ragtruth_pairs(root / "ragtruth_dev", "train")


def training_examples(
    pairs: Iterable[RealPair],
) -> tuple[list[data.NLIExample], list[data.NLIExample]]:
    """(train, held out) NLI examples of three-way labelled pairs, split by source.

    Raises:
        ValueError: If a pair carries only a binary label (AttributionBench's): those
            are for choosing, never for training.
    """
    train: list[data.NLIExample] = []
    heldout: list[data.NLIExample] = []
    for pair in pairs:
        if pair.label not in data.NLI_LABELS:
            raise ValueError(f"{pair.dataset} pair labelled {pair.label!r} cannot train NLI")
        example = data.NLIExample(
            pair.premise, pair.hypothesis, data.NLI_LABELS.index(pair.label), pair.dataset
        )
        (heldout if heldout_part(pair.group) else train).append(example)
    return train, heldout


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else data.DATA_ROOT
    sets = {
        "expertqa": expertqa_pairs(root / "expertqa"),
        "ragtruth_dev train": ragtruth_pairs(root / "ragtruth_dev", "train"),
        "ragtruth_dev select": ragtruth_pairs(root / "ragtruth_dev", "select"),
        "attributionbench": attributionbench_pairs(root / "attributionbench"),
    }
    for name, pairs in sets.items():
        counts = Counter(("held out" if heldout_part(p.group) else "train", p.label) for p in pairs)
        groups = len({p.group for p in pairs})
        print(f"{name}: {len(pairs)} pairs, {groups} sources")
        for (part, label), n in sorted(counts.items()):
            print(f"  {part:9} {label:14} {n:5}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
