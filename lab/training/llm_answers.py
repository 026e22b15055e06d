"""Paragraph answers a local LLM writes over train-role contexts, labelled by a planted change.

RAG answers are paragraphs in the writer's own words; the labelled train-role answers are
mostly one or two sentences, and most of their errors are edits. This module has a local LLM
(the Qwen2.5-Coder-1.5B-Instruct GGUF from PyPI, through llama.cpp) write answers in the three
RAGTruth task shapes over train-role contexts, and labels them without a judge:

1. One fact of the context (a number, a year, a name) is changed everywhere it occurs, giving a
   second context that differs from the first in that fact alone.
2. The LLM answers over the changed context.
3. Whichever of the two values the answer states, it is judged against both contexts: supported
   by the context that states that value (label 0), unsupported by the other (label 1, the span
   being each place the answer states it). An answer that states neither value is one clean
   record over the context it was written from.

So the same paragraph is clean beside one context and wrong beside the other: what decides is
the evidence, not the wording. An answer with a number found in neither context (the LLM made
it up) is dropped, because its other words could not be labelled supported; the LLM's other
inventions (those without a number) stay as label noise, which the README states.

Tasks, after RAGTruth's: ``qa`` (a HaluEval QA question over its knowledge and three other
items' knowledge; the changed fact is the right answer, replaced by the wrong value HaluEval's
hallucinated answer names), ``summary`` (the first 180-260 words of a HaluEval summarization
document, a number or year changed), ``data2txt`` (a business record from
``lab.training.data2txt``, its city, rating or review count changed). Train records use
contexts that ``lab.training.realdata`` trains on, test records its held-out contexts
(data2txt: other seeds).

``python -m lab.training.llm_answers --model PATH.gguf --part train --n 200`` appends to
``lab/training/data/llm_answers_<part>.jsonl`` (it resumes: records already there are skipped by
their ids). It needs ``pip install llama-cpp-python`` (built from source: 5 to 23 minutes here);
training reads the committed files and needs neither.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from . import data2txt, hardcases
from .realdata import Claim, _jsonl, _path, _root, split_of_context
from .spans import split_sentences

__all__ = ["Task", "changed_pair", "label_answer", "load_llm_answers", "main"]

DATA_DIR = Path(__file__).resolve().parent / "data"
Part = Literal["train", "test"]

_NUMBER = re.compile(
    r"(?<![\w.,/:$-])\d{1,3}(?:,\d{3})+(?![\w/:])|(?<![\w.,/:$-])\d+(?:\.\d+)?(?![\w/:%]|\.\d|,\d)"
)
_YEAR = re.compile(r"^(1[6-9]|20)\d\d$")
_CAPS_RUN = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][\w'’.-]*)*")


@dataclass(frozen=True)
class Task:
    """One prompt for the LLM, with the planted change.

    Attributes:
        uid: Stable id of the task (its kind and a hash of the original context).
        kind: ``"qa"``, ``"summary"`` or ``"data2txt"``.
        origin: The data set the context comes from.
        context: The original context.
        changed: The context with ``old`` replaced by ``new`` everywhere.
        question: The question or instruction the answer responds to.
        old: The value the original context states.
        new: The value the changed context states instead.
    """

    uid: str
    kind: str
    origin: str
    context: str
    changed: str
    question: str
    old: str
    new: str


# ---------------------------------------------------------------- the change


def _word_pattern(value: str) -> re.Pattern[str]:
    """``value`` as a whole word; a number also without or with thousands separators."""
    if re.fullmatch(r"[\d,]+", value):
        digits = value.replace(",", "")
        grouped = f"{int(digits):,}"
        body = "|".join(re.escape(v) for v in sorted({digits, grouped}, key=len, reverse=True))
        return re.compile(rf"(?<![\w.,])(?:{body})(?![\w]|[.,]\d)")
    return re.compile(rf"(?<![\w]){re.escape(value)}(?![\w])")


def changed_pair(context: str, old: str, new: str) -> str | None:
    """The context with every ``old`` replaced by ``new``; ``None`` when that is not clean.

    Not clean: ``old`` is absent, or ``new`` is already in the context (the changed context must
    differ from the original in that fact alone, and ``new`` must not be supported there).
    """
    old_at = _word_pattern(old)
    if not old_at.search(context) or _word_pattern(new).search(context):
        return None
    return old_at.sub(new, context)


def _other_number(value: str, rng: random.Random) -> str:
    """A plausible different number: a year moved 1-4 years, else the same size, other digits."""
    digits = value.replace(",", "")
    if "." in digits:
        whole, frac = digits.split(".")
        new_frac = str((int(frac) + rng.randint(1, 9)) % 10 ** len(frac)).zfill(len(frac))
        return f"{whole}.{new_frac}"
    n = int(digits)
    if _YEAR.match(digits):
        return str(n + rng.choice([-4, -3, -2, -1, 1, 2, 3, 4]))
    if n < 10:
        return str(rng.choice([k for k in range(2, 13) if k != n]))
    step = max(1, round(n * rng.uniform(0.1, 0.4)))
    other = n + step if rng.random() < 0.5 else max(1, n - step)
    return f"{other:,}" if "," in value else str(other)


# ---------------------------------------------------------------- tasks of each kind


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def _uid(kind: str, context: str) -> str:
    return f"{kind}-{_sha(context)}"


def _task(kind: str, origin: str, context: str, question: str, old: str, new: str) -> Task | None:
    """The task that changes ``old`` to ``new`` in ``context``; ``None`` when that is not clean."""
    changed = changed_pair(context, old, new)
    if changed is None:
        return None
    return Task(_uid(kind, context), kind, origin, context, changed, question, old, new)


def _want(part: Part) -> str:
    return "train" if part == "train" else "heldout"


def qa_tasks(part: Part, rng: random.Random, root: Path | None = None) -> Iterator[Task]:
    """HaluEval QA: four passages, the right answer in its passage changed to the wrong one."""
    rows = _jsonl(_path("halueval", "dataset_halueval_qa.jsonl", root=_root(root)))
    # every passage of a context comes from the part's own contexts, so no held-out
    # knowledge is ever read by training
    rows = [r for r in rows if split_of_context(r["knowledge"]) == _want(part)]
    rng.shuffle(rows)
    pool = [r["knowledge"] for r in rows[:2000]]
    for row in rows:
        knowledge, right = row["knowledge"], row["right_answer"].strip()
        wrong = _wrong_value(row, right)
        if wrong is None:
            continue
        others = rng.sample(pool, 3)
        if knowledge in others:
            continue
        passages = [knowledge, *others]
        rng.shuffle(passages)
        context = "\n".join(_passage_text(p) for p in passages)
        task = _task("qa", "halueval/qa", context, row["question"], right, wrong)
        if task is not None:
            yield task


def _passage_text(knowledge: str) -> str:
    """HaluEval glues sentences without a space; the LLM reads them better spaced."""
    return " ".join(split_sentences(knowledge))


def _wrong_value(row: dict[str, Any], right: str) -> str | None:
    """The one name or number HaluEval's hallucinated answer gives in place of the right one."""
    if re.search(r"\d", right):
        return None  # numbers are changed in the other tasks; here the wrong entity is the point
    known = set(re.findall(r"\w+", f"{row['knowledge']} {row['question']}".lower()))
    runs = {
        re.sub(r"(?:'s|’s)$", "", m.group(0).rstrip("."))
        for m in _CAPS_RUN.finditer(row["hallucinated_answer"])
    }
    fresh = [
        r
        for r in runs
        if len(r) > 2
        and r.split()[0] not in _STARTERS
        and not any(w in known for w in re.findall(r"\w+", r.lower()))
    ]
    if len(fresh) != 1 or len(fresh[0].split()) > 5:
        return None
    if len(right.split()) > 1 and len(fresh[0].split()) == 1:
        return None  # "Eric Robles" -> "Nick": a part, not a whole name
    if right[:1].isupper() != fresh[0][:1].isupper():
        return None
    return fresh[0]


# capitalised words that start a sentence rather than name something
_STARTERS = set(
    "The It He She They This That These A An In On At Yes No Both Sorry However I We You "
    "There Their His Her Its Neither Either Although One".split()
)


def summary_tasks(part: Part, rng: random.Random, root: Path | None = None) -> Iterator[Task]:
    """HaluEval summarization documents cut to 180-260 words, one number or year changed."""
    path = _path("halueval", "dataset_halueval_summarization.jsonl", root=_root(root))
    rows = _jsonl(path)
    rng.shuffle(rows)
    for row in rows:
        document = row["document"]
        if split_of_context(document) != _want(part) or _sha(document) in _EXCLUDED:
            continue
        context = _first_words(document, rng.randint(180, 260))
        numbers = [m.group(0) for m in _NUMBER.finditer(context)]
        numbers = [n for n in numbers if n.replace(",", "") not in {"0", "1"}]
        if not numbers:
            continue
        old = rng.choice(numbers)
        new = _other_number(old, rng)
        task = _task("summary", "halueval/summarization", context, SUMMARY_INSTRUCTION, old, new)
        if task is not None:
            yield task


def _first_words(document: str, words: int) -> str:
    """Whole sentences from the start of ``document`` up to about ``words`` words."""
    out: list[str] = []
    count = 0
    for sentence in split_sentences(document):
        out.append(sentence)
        count += len(sentence.split())
        if count >= words:
            break
    return " ".join(out)


# Documents that are also sources of the eval-only RAGTruth subset (a one-off scan for shared
# 60-character passages; this module never reads eval-only data): never generated from.
_EXCLUDED = frozenset({"eefec21d19f8"})

SUMMARY_INSTRUCTION = "Summarize the following news article in about 80 words."


def data2txt_tasks(part: Part, rng: random.Random, root: Path | None = None) -> Iterator[Task]:
    """Business records from ``lab.training.data2txt``: the city, rating or review count changed."""
    del root  # generated records need no data folder
    # train and test draw records from different seeds, so no record is in both
    records = random.Random(f"{part}:{rng.random()}")
    while True:
        record = data2txt.make_record(records)
        field = rng.choice(["city", "business_stars", "review_count"])
        old = str(record[field])
        if field == "city":
            new = rng.choice([c for c, _ in data2txt._CITIES if c != old])
        elif field == "business_stars":
            new = rng.choice(
                [s for s in ("2.0", "2.5", "3.0", "3.5", "4.0", "4.5", "5.0") if s != old]
            )
        else:
            new = _other_number(old, rng)
        context = json.dumps(record)
        task = _task("data2txt", "data2txt", context, data2txt.INSTRUCTION, old, new)
        if task is not None:
            yield task


MAKERS: dict[str, Callable[..., Iterator[Task]]] = {
    "qa": qa_tasks,
    "summary": summary_tasks,
    "data2txt": data2txt_tasks,
}


# ---------------------------------------------------------------- the prompt and the labels


def prompt_of(task: Task) -> str:
    """The user message: the context the answer is written from, and what to write."""
    if task.kind == "qa":
        passages = "\n".join(f"Passage {i}: {p}" for i, p in enumerate(task.changed.split("\n"), 1))
        return (
            f"Answer the question in two to four sentences, using only the passages below.\n\n"
            f"{passages}\n\nQuestion: {task.question}"
        )
    return f"{task.question} Write one paragraph of plain prose.\n\n{task.changed}"


def label_answer(task: Task, answer: str) -> list[dict[str, Any]]:
    """The labelled records one answer gives (see the module text); ``[]`` when dropped.

    Args:
        task: The task the answer was written for.
        answer: The LLM's answer over ``task.changed``.

    Returns:
        Zero, one or two records in ``lab.training.hardcases``' jsonl shape.
    """
    answer = answer.strip()
    if len(answer.split()) < 8 or _invented_number(task, answer):
        return []
    new_at = [m.span() for m in _word_pattern(task.new).finditer(answer)]
    old_at = [m.span() for m in _word_pattern(task.old).finditer(answer)]
    if new_at and old_at:
        return []  # states both: which one it asserts is not known
    if not new_at and not old_at:
        return [_row(task, task.changed, answer, [], "neither")]
    stated, spans = ("new", new_at) if new_at else ("old", old_at)
    supporting, contradicting = (
        (task.changed, task.context) if stated == "new" else (task.context, task.changed)
    )
    return [
        _row(task, supporting, answer, [], stated),
        _row(task, contradicting, answer, spans, stated),
    ]


def _invented_number(task: Task, answer: str) -> bool:
    """The answer has a number neither context states (in digits), so the LLM invented it.

    Clock times are left out: "20:0" in a record is "8:00 PM" in an overview.
    """

    def numbers(text: str) -> set[str]:
        text = _CLOCK.sub(" ", _OUT_OF.sub(" ", text))
        found = (n.rstrip(",").replace(",", "") for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text))
        return {n.rstrip("0").rstrip(".") if "." in n else n for n in found}

    known = numbers(f"{task.context} {task.changed} {task.question}")
    return bool(numbers(answer) - known)


_OUT_OF = re.compile(r"\bout of (?:5|five|10|ten)\b")
_CLOCK = re.compile(r"\b\d{1,2}(?::\d{1,2})?\s*(?:[AaPp]\.?[Mm]\.?)|\b\d{1,2}:\d{1,2}\b")


def _row(
    task: Task, context: str, answer: str, spans: list[tuple[int, int]], states: str
) -> dict[str, Any]:
    """One jsonl record; ``states`` says which value the answer gives (``"new"``, ``"old"``,
    ``"neither"``, or ``"dropped"``)."""
    return {
        "source": f"llm_answers/{task.kind}",
        "context": context,
        "question": task.question,
        "answer": answer,
        "label": int(bool(spans)),
        "spans": [list(s) for s in spans],
        "meta": {
            "kind": task.kind,
            "task": task.uid,
            "old": task.old,
            "new": task.new,
            "states": states,
            "origin": task.origin,
        },
    }


# ---------------------------------------------------------------- reading the committed files


def load_llm_answers(part: Part = "train", path: Path | None = None) -> list[Claim]:
    """The committed LLM answers as ``Claim`` records (``meta`` dropped).

    Args:
        part: ``"train"`` (may be trained on) or ``"test"`` (measure only).
        path: A jsonl file to read instead of ``lab/training/data/llm_answers_<part>.jsonl``.

    Returns:
        The records in file order; ``[]`` when the file does not exist.
    """
    file = path or DATA_DIR / f"llm_answers_{part}.jsonl"
    if not file.exists():
        return []
    out = []
    for row in _jsonl(file):
        if row["label"] < 0:  # a dropped answer, kept so a resumed run skips its task
            continue
        text = "\x1f".join((row["source"], row["context"], row["question"], row["answer"]))
        out.append(hardcases._to_claim({**row, "uid": hashlib.sha1(text.encode()).hexdigest()}))
    return out


# ---------------------------------------------------------------- generation


def _llm(model: Path, threads: int, seed: int) -> Any:
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - the generator's own dependency
        raise SystemExit(
            "lab.training.llm_answers needs llama.cpp: pip install llama-cpp-python "
            "(it builds from source: 5 to 23 minutes on 2 cores)"
        ) from exc
    return Llama(model_path=str(model), n_ctx=2048, n_threads=threads, seed=seed, verbose=False)


def generate(llm: Any, task: Task, seed: int) -> str:
    """The LLM's answer to ``prompt_of(task)`` (temperature 0.3, at most 200 tokens)."""
    out = llm.create_chat_completion(
        messages=[
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": prompt_of(task)},
        ],
        temperature=0.3,
        max_tokens=200,
        seed=seed,
    )
    return str(out["choices"][0]["message"]["content"])


def main(argv: list[str] | None = None) -> int:
    """Generate answers and append their labelled records; resumable."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", type=Path, required=True, help="the GGUF file")
    p.add_argument("--part", choices=["train", "test"], default="train")
    p.add_argument("--n", type=int, default=100, help="answers to generate (tasks, not records)")
    p.add_argument("--kinds", default="qa,summary,data2txt")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--minutes", type=float, default=None, help="stop after this long")
    p.add_argument("--out", type=Path, default=DATA_DIR)
    p.add_argument("--root", type=Path, default=None, help="benchdata folder")
    args = p.parse_args(argv)
    part: Part = args.part
    kinds = args.kinds.split(",")
    out = args.out / f"llm_answers_{part}.jsonl"
    done = (
        {json.loads(line)["meta"]["task"] for line in out.read_text("utf-8").splitlines()}
        if out.exists()
        else set()
    )
    streams = {
        k: MAKERS[k](part, random.Random(f"{args.seed}:{part}:{k}"), args.root) for k in kinds
    }
    llm = _llm(args.model, args.threads, args.seed)
    start, made, kept = time.monotonic(), 0, 0
    while made < args.n:
        if args.minutes and time.monotonic() - start > args.minutes * 60:
            break
        task = next(streams[kinds[made % len(kinds)]])
        if task.uid in done:
            made += 1
            continue
        answer = generate(llm, task, args.seed + made)
        rows = label_answer(task, answer)
        done.add(task.uid)
        with out.open("a", encoding="utf-8") as fh:
            for row in rows or [_dropped(task, answer)]:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        made += 1
        kept += bool(rows)
        print(
            f"{made}/{args.n} {task.kind} kept={kept} {time.monotonic() - start:.0f}s", flush=True
        )
    return 0


def _dropped(task: Task, answer: str) -> dict[str, Any]:
    """A dropped answer is written too (label -1), so a resumed run skips its task."""
    return {**_row(task, task.changed, answer, [], "dropped"), "label": -1}


if __name__ == "__main__":
    sys.exit(main())
