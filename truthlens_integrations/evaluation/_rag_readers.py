"""Readers for RAG answers judged by people or an LLM, and for a user's labelled answers.

The sets: ``ragtruth_dev``, ExpertQA and AttributionBench (people), FaithJudge (an LLM).

Each returns :class:`EvalExample` records in file order, with ``source_id`` set to what
the answer was written over (a RAGTruth source, an ExpertQA question, an AttributionBench
row), so that fits can be cross-validated by source. Roles follow the benchmark
folder's ``MANIFEST.md``: ``ragtruth_dev`` is split by source (the committed
``ragtruth_dev_split.json`` beside this module); FaithJudge rows are only read for the
sources of the selection split when they choose or calibrate anything.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Literal

from ..core import ConfigError, InvalidInputError
from ._answer_file import read_labelled_answers
from ._files import _RAGTRUTH_DATA2TXT_INSTRUCTION, _read_jsonl, _split_passages
from ._records import EvalExample, GoldSpan, make_example, marked

__all__ = [
    "EXPERTQA_UNSUPPORTED",
    "RAGTRUTH_DEV_TASKS",
    "RagtruthDevPart",
    "align_label",
    "ragtruth_dev_split",
    "read_attributionbench",
    "read_expertqa",
    "read_faithjudge",
    "read_labelled_answers",
    "read_ragtruth_dev",
]

RagtruthDevPart = Literal["train", "select", "all"]
RAGTRUTH_DEV_TASKS: dict[str, str] = {"qa": "QA", "summary": "Summary", "data2txt": "Data2txt"}
EXPERTQA_UNSUPPORTED = frozenset({"Incomplete", "Partial", "Missing"})
"""ExpertQA support labels that make a claim unsupported (``Complete`` is supported;
``N/A`` and unlabelled claims are left out)."""

_SPLIT_FILE = Path(__file__).resolve().parent / "ragtruth_dev_split.json"
_FAITHJUDGE_FILE = "faithjudge_llm_judged/faithjudge_ragtruth_dev_sources.jsonl"
_FAITHJUDGE_TASKS = {
    "ragtruth-qa": "QA",
    "ragtruth-summary": "Summary",
    "ragtruth-data2txt": "Data2txt",
}
_ATTRIBUTIONBENCH_FILES = (
    "dev_all_subset_balanced.jsonl",
    "test_all_subset_balanced_sampled500.jsonl",
    "test_ood_all_subset_balanced.jsonl",
)
# "[3] https://example.org/page\n\npassage text": the citation mark and URL come first.
_EVIDENCE_HEAD = re.compile(r"^\s*(\[\d+\])?\s*(https?://\S+)?\s*")


# --------------------------------------------------------------------------- ragtruth_dev


def ragtruth_dev_split(path: str | os.PathLike[str] | None = None) -> dict[str, frozenset[str]]:
    """The committed split of ``ragtruth_dev`` by source: ``train`` and ``select`` source ids.

    Args:
        path: The split file; ``None`` reads ``ragtruth_dev_split.json``, shipped beside
            this module.

    Raises:
        ConfigError: If the file is missing or does not hold both lists.
    """
    file = Path(path) if path is not None else _SPLIT_FILE
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
        return {part: frozenset(str(s) for s in raw[part]) for part in ("train", "select")}
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read the ragtruth_dev split {file}: {exc}") from exc


def align_label(response: str, start: int, end: int, text: str | None) -> tuple[int, int]:
    """Character offsets of a span label, checked against the text the label quotes.

    RAGTruth labels carry ``start``, ``end`` and the ``text`` they mark. When
    ``response[start:end]`` is that text the offsets stand. Otherwise the quoted text is
    looked up in the response and the occurrence nearest ``start`` is used (the repair);
    without quoted text the offsets must lie inside the response.

    Raises:
        InvalidInputError: If the offsets are out of range and the text cannot be found.
    """
    if text is None or response[start:end] == text:
        if 0 <= start <= end <= len(response):
            return start, end
        raise InvalidInputError(f"span {start}-{end} is outside a {len(response)}-char answer")
    found = [m.start() for m in re.finditer(re.escape(text), response)] if text else []
    if not found:
        raise InvalidInputError(f"label text {text[:60]!r} does not occur in the answer")
    best = min(found, key=lambda at: abs(at - start))
    return best, best + len(text)


def _ragtruth_dev_context(task: str, source: Any) -> tuple[list[str], str | None]:
    if task == "QA" and isinstance(source, dict):
        return _split_passages(str(source.get("passages", ""))), str(source.get("question", ""))
    if task == "Summary" and isinstance(source, str):
        return [source], None
    if task == "Data2txt" and isinstance(source, dict):
        return [repr(source)], _RAGTRUTH_DATA2TXT_INSTRUCTION
    raise InvalidInputError(f"ragtruth_dev {task} source of type {type(source).__name__}")


def _ragtruth_dev_sources(root: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    for stem, task in RAGTRUTH_DEV_TASKS.items():
        for row in _read_jsonl(root / f"ragtruth_dev_{stem}.jsonl"):
            yield task, row


def read_ragtruth_dev(
    folder: str | os.PathLike[str],
    *,
    part: RagtruthDevPart = "all",
    split_file: str | os.PathLike[str] | None = None,
) -> list[EvalExample]:
    """Read ``ragtruth_dev/``: one example per response, with RAGTruth's span labels.

    Args:
        folder: The ``ragtruth_dev`` folder (``ragtruth_dev_{qa,summary,data2txt}.jsonl``).
        part: ``train`` or ``select`` sources of the committed split, or ``all``.
        split_file: Another split file (tests); default the committed one.

    Returns:
        Examples by task file then file order; ids ``{source_id}-{n}`` (the response's
        place under its source), ``task_type`` ``QA`` / ``Summary`` / ``Data2txt``.

    Raises:
        ConfigError: If a file is missing.
        InvalidInputError: If a label cannot be placed in its response.
    """
    keep = None if part == "all" else ragtruth_dev_split(split_file)[part]
    examples = []
    for task, row in _ragtruth_dev_sources(Path(folder)):
        source_id = str(row["source_id"])
        if keep is not None and source_id not in keep:
            continue
        passages, question = _ragtruth_dev_context(task, row["source"])
        for n, response in enumerate(row["responses"]):
            answer = str(response["response"])
            if not answer.strip():
                continue
            spans = []
            for label in response.get("labels") or []:
                try:
                    start, end = align_label(
                        answer, int(label["start"]), int(label["end"]), label.get("text")
                    )
                except InvalidInputError as exc:
                    raise InvalidInputError(f"ragtruth_dev {source_id}-{n}: {exc}") from exc
                spans.append(GoldSpan(start=start, end=end, label=label.get("label_type")))
            examples.append(
                make_example(
                    "ragtruth_dev",
                    f"{source_id}-{n}",
                    task,
                    passages,
                    question,
                    answer,
                    **marked(spans),
                    source_id=source_id,
                    generator=str(response.get("model") or "") or None,
                )
            )
    return examples


# --------------------------------------------------------------------------- FaithJudge


def read_faithjudge(
    data_dir: str | os.PathLike[str], *, sources: Collection[str] | None = None
) -> list[EvalExample]:
    """FaithJudge's answers of newer LLMs to ``ragtruth_dev``'s prompts, judged by an LLM.

    The context is the ``ragtruth_dev`` source the answer was written for (joined by
    ``source_id``); ``hallucinated`` is the judge's ``Inconsistent``. Rows the judge
    marked ``Invalid`` are left out. There are no span labels.

    Args:
        data_dir: The benchmark folder (holding ``faithjudge_llm_judged/`` and
            ``ragtruth_dev/``).
        sources: Keep only these source ids (the selection split, when choosing or
            calibrating); ``None`` keeps all.

    Raises:
        ConfigError: If a file is missing or a row names a source ``ragtruth_dev`` lacks.
    """
    root = Path(data_dir)
    contexts = {
        str(row["source_id"]): _ragtruth_dev_context(task, row["source"])
        for task, row in _ragtruth_dev_sources(root / "ragtruth_dev")
    }
    examples = []
    for n, row in enumerate(_read_jsonl(root / _FAITHJUDGE_FILE)):
        source_id = str(row["source_id"])
        label = row.get("judge_label")
        if label not in ("Consistent", "Inconsistent"):
            continue
        if sources is not None and source_id not in sources:
            continue
        if source_id not in contexts:
            raise ConfigError(f"FaithJudge row {n} names source {source_id}, not in ragtruth_dev")
        answer = str(row["response"]).strip()
        if not answer:
            continue
        passages, question = contexts[source_id]
        examples.append(
            make_example(
                "faithjudge",
                f"{source_id}-{row['model']}",
                _FAITHJUDGE_TASKS.get(str(row.get("task")), str(row.get("task"))),
                passages,
                question,
                answer,
                hallucinated=label == "Inconsistent",
                has_span_labels=False,
                source_id=source_id,
                generator=str(row["model"]),
            )
        )
    return examples


# --------------------------------------------------------------------------- ExpertQA


def _expertqa_answers(value: Any) -> dict[str, Any]:
    # The field is a Python-literal string in most rows and already an object in some.
    answers = ast.literal_eval(value) if isinstance(value, str) else value
    if not isinstance(answers, dict):
        raise InvalidInputError(f"ExpertQA answers are {type(answers).__name__}, not a dict")
    return answers


def _evidence_passage(evidence: str) -> str:
    return _EVIDENCE_HEAD.sub("", evidence, count=1).strip()


def read_expertqa(folder: str | os.PathLike[str]) -> list[EvalExample]:
    """ExpertQA claims judged by experts against the passages they cite.

    The ``rand_*`` and ``domain_*`` files are two splits of one pool: answers are
    deduplicated by (question, system, answer text) and claims by their text within an
    answer (479 answers, 2,788 claims). A claim becomes an example when its evidence has
    passage text (not only a URL); the example's context is those passages (citation
    mark and URL removed), its question the expert's question, its ``task_type`` the
    answering system, and it is unsupported when the experts marked its support
    ``Incomplete``, ``Partial`` or ``Missing`` (``Complete`` is supported; ``N/A`` and
    unlabelled claims are left out).

    Raises:
        ConfigError: If the data folder has no ExpertQA files.
    """
    files = sorted((Path(folder) / "data").glob("*.jsonl")) or sorted(Path(folder).glob("*.jsonl"))
    if not files:
        raise ConfigError(f"no ExpertQA .jsonl files in {folder}")
    answers: dict[tuple[str, str, str], tuple[int, dict[str, Any]]] = {}
    for file in files:
        for row in _read_jsonl(file):
            question = str(row["question"])
            for system, answer in _expertqa_answers(row["answers"]).items():
                key = (question, str(system), str(answer.get("answer_string", "")))
                answers.setdefault(key, (len(answers), answer))
    examples = []
    for (question, system, _), (number, answer) in answers.items():
        seen: set[str] = set()
        for claim in answer.get("claims") or []:
            text = str(claim.get("claim_string") or "")
            support = claim.get("support")
            if not text.strip() or text in seen:
                continue
            seen.add(text)
            if support != "Complete" and support not in EXPERTQA_UNSUPPORTED:
                continue
            passages = [p for p in map(_evidence_passage, claim.get("evidence") or []) if p]
            if not passages:
                continue
            examples.append(
                make_example(
                    "expertqa",
                    f"a{number}-c{len(seen) - 1}",
                    system,
                    passages,
                    question,
                    text,
                    hallucinated=support != "Complete",
                    has_span_labels=False,
                    source_id=f"q{_stable_id(question)}",
                )
            )
    return examples


def _stable_id(text: str) -> str:
    import hashlib

    return hashlib.blake2b(text.encode("utf-8"), digest_size=6).hexdigest()


# --------------------------------------------------------------------------- AttributionBench


def read_attributionbench(folder: str | os.PathLike[str]) -> list[EvalExample]:
    """AttributionBench claims with the passages they cite (``attributable`` or not).

    Reads its three files (in-domain dev and test, out-of-domain test) as the benchmark
    folder keeps them; ``task_type`` is the source data set (``src_dataset``), and the
    group for cross-fitting is the question.

    Raises:
        ConfigError: If a file is missing.
    """
    examples = []
    for name in _ATTRIBUTIONBENCH_FILES:
        for row in _read_jsonl(Path(folder) / name):
            claim = str(row.get("claim") or "").strip()
            label = row.get("attribution_label")
            if not claim or label not in ("attributable", "not attributable"):
                continue
            references = tuple(str(r) for r in row.get("references") or [] if str(r).strip())
            question = str(row.get("question") or "").strip() or None
            examples.append(
                make_example(
                    "attributionbench",
                    str(row["id"]),
                    str(row.get("src_dataset") or "unknown"),
                    references,
                    question,
                    claim,
                    hallucinated=label == "not attributable",
                    has_span_labels=False,
                    source_id=f"q{_stable_id(question or claim)}",
                )
            )
    return examples


# --------------------------------------------------------------------------- user files

# A user's labelled answers share one format and one reader with `truthlens detect`:
# ``_answer_file.py`` (re-exported here, where the harness's readers are listed).
