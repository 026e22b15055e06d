"""Training pairs for the claim check: one answer sentence against its best evidence.

The claim check reads each answer sentence (the hypothesis) against the context sentences
that share the most words with it (the premise, :func:`select_premise` with
:data:`PREMISE_SENTENCES` sentences, as the runtime picks it) with the NLI branch of the
bundled encoder. These pairs teach it meaning where words mislead (issue 41), from two
train-role sources (``benchdata/MANIFEST.md``):

- ``curriculum_nli``: the **train** files of the tasks in :data:`CURRICULUM_TASKS`, at most
  ``per_task`` pairs each (many tasks are templated: no task may dominate). No
  ``val.jsonl`` is ever read here: the phenomena suite (``lab/training/phenomena.py``) is
  built from the validation files. Passage premises (ConTRoL, DROP, ...) are cut to the
  sentences sharing the most words with the hypothesis, as at run time. Two-class tasks'
  ``not-entailed`` becomes ``neutral``.
- FaithJudge answers of current LLMs to the **train** sources of the committed
  ``ragtruth_dev`` split: every sentence of a judge-consistent answer is entailed (a
  seeded sample of at most ``consistent_per_answer`` per answer); in a judge-inconsistent
  answer, the sentence that shares the most words with a passage the judge's reasoning
  quotes is ``neutral`` (the judge says unsupported, not which kind). Answers whose
  reasoning quotes nothing that matches a sentence are left out. 10% of the sources (by
  hash) are held out.

    python -m lab.training.claims   # counts per source and label
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import zipfile
from collections import Counter
from typing import Any

from truthlens_integrations._lab_api import (
    PREMISE_SENTENCES,
    ragtruth_dev_split,
    read_faithjudge,
    select_premise,
    split_sentences,
    words,
)

from . import data
from .phenomena import CURRICULUM

__all__ = [
    "CURRICULUM_TASKS",
    "PREMISE_SENTENCES",
    "curriculum_examples",
    "faithjudge_examples",
    "heldout_source",
]

BENCHDATA = CURRICULUM.parent
#: Tasks trained on: the phenomena a grounding check meets, and passage-level premises.
#: Left out: hellaswag, physicalqa, socialqa, puns, sentiment, analytic (not grounding).
CURRICULUM_TASKS = (
    "negation",
    "boolean",
    "quantifier",
    "counting",
    "comparative",
    "conditional",
    "monotonicity_infer",
    "lexical",
    "hypernymy",
    "hyponymy",
    "coreference",
    "transitive",
    "spatial",
    "kg_relations",
    "ner",
    "syntactic_alternation",
    "syntactic_variation",
    "verbnet",
    "verbcorner",
    "temporal",
    "drop",
    "control",
    "entailment_tree",
    "ester",
    "logiqa",
    "cosmoqa",
    "counterfactual",
    "defeasible",
    "context_align",
)
_LABELS = {
    "entailment": 0,
    "entailed": 0,
    "neutral": 1,
    "not-entailed": 1,
    "not_entailed": 1,
    "contradiction": 2,
}
_LONG_PREMISE = 400  # characters; longer premises are cut as the runtime cuts contexts
_QUOTE = re.compile(r"[\"“”'‘’]([^\"“”]{12,300}?)[\"“”]")


def _train_rows(task: str) -> list[dict[str, Any]]:
    with zipfile.ZipFile(CURRICULUM / f"{task}.zip") as archive:
        names = [
            n for n in archive.namelist() if n.endswith("/train.jsonl") and "__MACOSX" not in n
        ]
        (name,) = names  # never a val.jsonl: those are the phenomena suite's
        lines = archive.read(name).decode("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _premise(premise: str, hypothesis: str) -> str:
    if len(premise) <= _LONG_PREMISE:
        return premise
    return select_premise([premise], hypothesis, top_k=PREMISE_SENTENCES)


def curriculum_examples(rng: random.Random, per_task: int) -> list[data.NLIExample]:
    """At most ``per_task`` labelled pairs of each task's train file, premises cut."""
    out: list[data.NLIExample] = []
    for task in CURRICULUM_TASKS:
        rows = [
            r
            for r in _train_rows(task)
            if str(r.get("gold_label", "")).strip().lower() in _LABELS
            and str(r.get("premise", "")).strip()
            and str(r.get("hypothesis", "")).strip()
        ]
        for r in rng.sample(rows, min(per_task, len(rows))):
            hyp = str(r["hypothesis"]).strip()
            label = _LABELS[str(r["gold_label"]).strip().lower()]
            out.append(data.NLIExample(_premise(str(r["premise"]), hyp), hyp, label, task))
    return out


def heldout_source(source_id: str) -> bool:
    """Whether a FaithJudge train source is held out from the claim check's training."""
    return int(hashlib.sha256(source_id.encode()).hexdigest(), 16) % 10 == 0


def _reasonings() -> dict[tuple[str, str], str]:
    file = BENCHDATA / "faithjudge_llm_judged" / "faithjudge_ragtruth_dev_sources.jsonl"
    out = {}
    for line in file.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out[(str(row["source_id"]), str(row["model"]))] = str(row.get("judge_reasoning") or "")
    return out


def _quoted_sentence(answer: str, reasoning: str) -> str | None:
    """The answer sentence sharing the most words with a passage the reasoning quotes."""
    quotes = [set(words(q)) for q in _QUOTE.findall(reasoning)]
    quotes = [q for q in quotes if len(q) >= 3]
    best: tuple[float, str] | None = None
    for s, e in split_sentences(answer):
        sentence = answer[s:e].strip()
        own = set(words(sentence))
        for q in quotes:
            share = len(own & q) / len(q)
            if share >= 0.6 and (best is None or share > best[0]):
                best = (share, sentence)
    return best[1] if best else None


def faithjudge_examples(
    rng: random.Random, *, consistent_per_answer: int = 2
) -> tuple[list[data.NLIExample], list[data.NLIExample]]:
    """(train, held out) sentence pairs of FaithJudge answers to the train sources."""
    train_sources = ragtruth_dev_split()["train"]
    reasons = _reasonings()
    train: list[data.NLIExample] = []
    heldout: list[data.NLIExample] = []
    for ex in read_faithjudge(BENCHDATA, sources=train_sources):
        assert ex.source_id in train_sources  # never a select source
        if ex.hallucinated:
            model = (ex.generator or "").strip()
            claim = _quoted_sentence(ex.answer, reasons.get((str(ex.source_id), model), ""))
            claims = [(claim, 1)] if claim else []
        else:
            sentences = [ex.answer[s:e].strip() for s, e in split_sentences(ex.answer)]
            sentences = [s for s in sentences if len(words(s)) >= 5]
            picked = rng.sample(sentences, min(consistent_per_answer, len(sentences)))
            claims = [(s, 0) for s in picked]
        part = heldout if heldout_source(str(ex.source_id)) else train
        for sentence, label in claims:
            premise = select_premise(ex.context, sentence, top_k=PREMISE_SENTENCES)
            part.append(data.NLIExample(premise, sentence, label, "faithjudge"))
    return train, heldout


def main() -> None:
    rng = random.Random(41)
    cur = curriculum_examples(rng, 1200)
    fj_train, fj_held = faithjudge_examples(rng)
    for name, xs in (("curriculum", cur), ("faithjudge train", fj_train), ("held", fj_held)):
        print(name, len(xs), dict(Counter(data.NLI_LABELS[x.label] for x in xs)))


if __name__ == "__main__":
    main()
