"""Training rows from real RAG answers: ``ragtruth_dev``'s train split, span by span.

Each RAGTruth response becomes one :class:`~lab.training.realdata.Claim` beside the context
the runtime would see for it, built by the same code the evaluation reader uses
(``evaluation._readers._ragtruth_context``): QA gives the question and its passages (split
at ``passage N:``), Summary the article with no question, Data2txt the business record as
RAGTruth printed it (``repr``) with the writing instruction as the question. Its spans are
RAGTruth's own labels (``start`` / ``end`` into the response), which mark the unsupported
phrase or sentence, merged where they overlap. A response with no label is clean: all of
its characters are supported.

Only the sources of one part of the committed split (``ragtruth_dev_split.json``)
are read; the ``select`` part chooses and calibrates and never trains weights.

Evidence-removal variants (``lab.training.removal``) multiply the in-domain data: for a clean
train-split response, the context pieces that back one sentence are removed, and that
sentence, in the writer's own words, is the unsupported span. For Data2txt the record is
handed to the removal as JSON (its pieces are fields) and written back with ``repr``, the
runtime's format.

    python -m lab.training.rag_rows --stats
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from truthlens_integrations._lab_api import ragtruth_context, stripped_range

from . import removal
from ._cli import stats_args
from .ragtruth_dev import DATA, SPLIT_FILE, TASKS, load_split
from .realdata import Claim

__all__ = ["RagAnswer", "rag_answers", "rag_claims", "removal_claims"]

Span = tuple[int, int]


@dataclass(frozen=True)
class RagAnswer:
    """One RAGTruth response with the context the runtime reads for it.

    Attributes:
        source_id: RAGTruth's source id (the split's unit).
        task_type: ``QA``, ``Summary`` or ``Data2txt``.
        model: The LLM that wrote the response.
        context: The context passages, as the runtime receives them.
        question: The question (QA), the writing instruction (Data2txt) or ``None``.
        answer: The response.
        spans: Unsupported character spans of ``answer`` (merged, sorted); ``()`` if clean.
        record: For Data2txt, the business record (so removal can drop its fields).
    """

    source_id: int
    task_type: str
    model: str
    context: tuple[str, ...]
    question: str | None
    answer: str
    spans: tuple[Span, ...]
    record: dict[str, Any] | None = None

    @property
    def label(self) -> int:
        """1 when the response has an unsupported span."""
        return int(bool(self.spans))


def _merge(spans: list[Span]) -> tuple[Span, ...]:
    out: list[Span] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)


def _spans(response: str, labels: list[dict[str, Any]]) -> tuple[Span, ...]:
    spans = []
    for label in labels:
        a, b = int(label["start"]), int(label["end"])
        if not 0 <= a < b <= len(response):
            raise ValueError(f"span {a}-{b} lies outside a response of {len(response)} chars")
        # Trim the whitespace RAGTruth sometimes includes at a span's edges.
        a, b = stripped_range(response, a, b)
        if b > a:
            spans.append((a, b))
    return _merge(spans)


def rag_answers(part: str, data: Path = DATA, split: Path = SPLIT_FILE) -> Iterator[RagAnswer]:
    """The responses of one part (``train`` or ``select``) of the committed split.

    Args:
        part: ``train`` or ``select``.
        data: The ``ragtruth_dev`` folder.
        split: The split file (the committed one unless a test passes its own).

    Yields:
        One :class:`RagAnswer` per non-empty response, in file order.
    """
    sources = load_split(split)[part]
    for stem, task in TASKS.items():
        with (data / f"ragtruth_dev_{stem}.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                row = json.loads(line)
                if int(row["source_id"]) not in sources:
                    continue
                passages, question = ragtruth_context(task, row["source"])
                record = row["source"] if task == "Data2txt" else None
                for response in row["responses"]:
                    answer = str(response["response"])
                    if not answer.strip():
                        continue
                    yield RagAnswer(
                        source_id=int(row["source_id"]),
                        task_type=task,
                        model=str(response.get("model", "")),
                        context=tuple(passages),
                        question=question,
                        answer=answer,
                        spans=_spans(answer, response.get("labels") or []),
                        record=record,
                    )


def _uid(a: RagAnswer) -> str:
    return hashlib.sha1(f"{a.source_id}\x1f{a.model}\x1f{a.answer}".encode()).hexdigest()


def _claim(a: RagAnswer) -> Claim:
    return Claim(
        f"ragtruth_dev/{a.task_type.lower()}",
        "\n".join(a.context),
        a.question or "",
        a.answer,
        a.label,
        a.spans,
        _uid(a),
    )


def rag_claims(part: str = "train", data: Path = DATA, split: Path = SPLIT_FILE) -> list[Claim]:
    """Every response of ``part`` as a :class:`Claim` (context passages joined by newlines)."""
    return [_claim(a) for a in rag_answers(part, data, split)]


def _removal_input(a: RagAnswer) -> Claim:
    # Removal drops JSON fields of a record and sentences of newline-separated passages.
    context = json.dumps(a.record) if a.record is not None else "\n".join(a.context)
    return Claim(
        f"ragtruth_dev/{a.task_type.lower()}",
        context,
        a.question or "",
        a.answer,
        a.label,
        a.spans,
        _uid(a),
    )


def _runtime_context(a: RagAnswer, context: str) -> str:
    """The reduced context back in the runtime's format, newline-joined passages."""
    if a.record is not None:
        return repr(json.loads(context))
    if a.task_type == "Summary":
        # The article is one passage at runtime; removal joined what is left of it.
        return context.replace("\n", " ")
    return context


def removal_claims(
    part: str = "train",
    per_answer: int = 1,
    seed: int = 13,
    data: Path = DATA,
    split: Path = SPLIT_FILE,
) -> list[Claim]:
    """Evidence-removal variants of the clean responses of ``part`` (label 1, one span).

    Args:
        part: The split part (``train``: the only part that may train weights).
        per_answer: Variants per clean response (each a different sentence).
        seed: Draws the order in which sentences are tried.
        data: The ``ragtruth_dev`` folder.
        split: The split file.
    """
    answers = [a for a in rag_answers(part, data, split) if not a.spans]
    by_uid = {_uid(a): a for a in answers}
    pairs = removal.removal_pairs(
        [_removal_input(a) for a in answers], per_answer, random.Random(seed)
    )
    out = []
    for base, variant in pairs:
        a = by_uid[base.uid]
        out.append(
            Claim(
                f"rag_removal/{a.task_type.lower()}",
                _runtime_context(a, variant.context),
                variant.question,
                variant.answer,
                1,
                variant.spans,
                variant.uid,
            )
        )
    return out


def main(argv: list[str] | None = None) -> None:
    args = stats_args(__doc__, argv, "counts per part and task", "print N removal variants")
    for part in ("train", "select"):
        answers = list(rag_answers(part))
        counts = Counter((a.task_type, a.label) for a in answers)
        print(part, len({a.source_id for a in answers}), "sources", dict(sorted(counts.items())))
    variants = removal_claims("train")
    print("removal variants (train):", dict(Counter(v.source for v in variants)))
    for v in variants[: args.show]:
        ((a, b),) = v.spans or ((0, 0),)
        print("---", v.source, "\nCONTEXT:", v.context[:500], "\nSPAN:", v.answer[a:b])


if __name__ == "__main__":
    main()
