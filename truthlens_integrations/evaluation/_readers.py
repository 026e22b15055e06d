"""Readers for the benchmark formats: RAGTruth, HaluEval, FaithBench and SNLI.

Every reader returns typed records (:class:`EvalExample`, :class:`NLIExample`) in file
order, so runs are reproducible. Paths default to the shared benchmark folder found by
:func:`default_data_dir`.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, cast, get_args

from ..core import ConfigError, InvalidInputError, NLILabel
from ._files import _RAGTRUTH_DATA2TXT_INSTRUCTION, _read_jsonl, _split_passages
from ._records import EvalExample, GoldSpan, NLIExample, make_example, marked

__all__ = [
    "DETECTION_DATASETS",
    "HALUEVAL_HELDOUT_FRACTION",
    "HALUEVAL_TASKS",
    "DetectionDataset",
    "HaluEvalPart",
    "HaluEvalTask",
    "default_data_dir",
    "halueval_split",
    "load_detection_dataset",
    "ragtruth_prompt",
    "read_faithbench",
    "read_halueval",
    "read_ragtruth",
    "read_snli",
    "read_wice",
    "subsample",
    "wice_token_spans",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

DetectionDataset = Literal[
    "ragtruth",
    "halueval",
    "faithbench",
    "wice",
    "ragtruth_dev_select",
    "ragtruth_dev_train",
    "attributionbench",
    "faithjudge_select",
    "expertqa",
]
DETECTION_DATASETS: tuple[str, ...] = get_args(DetectionDataset)
HaluEvalTask = Literal["qa", "dialogue", "summarization"]
HALUEVAL_TASKS: tuple[HaluEvalTask, ...] = ("qa", "dialogue", "summarization")
HaluEvalPart = Literal["train", "heldout", "all"]
HALUEVAL_HELDOUT_FRACTION = 0.1
"""Share of each HaluEval file, taken from its end, that training must never see."""

_ENV_DATA_DIR = "TRUTHLENS_BENCHDATA"
_RAGTRUTH_FILE = "ragtruth_subsets/ragtruth_test_subset_with_context.jsonl"
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                 "ten")  # fmt: skip

# RAGTruth's generation prompts (source_info.jsonl of ParticleMedia/RAGTruth). The
# summary prompt named a word count that the subset does not keep, so it is left out.
_RAGTRUTH_QA_PROMPT = (
    "Briefly answer the following question:\n{question}\n"
    "Bear in mind that your response should be strictly based on the following "
    "{count} passages:\n{passages}\n"
    "In case the passages do not contain the necessary information to answer the question, "
    'please reply with: "Unable to answer based on given passages."\noutput:'
)
_RAGTRUTH_SUMMARY_PROMPT = "Summarize the following news:\n{text}\noutput:"
_RAGTRUTH_DATA2TXT_PROMPT = "Instruction:\n{instruction} Structured data:\n{record}\nOverview:"

# FaithBench's own binarisation (scripts/binarize.py): worst label over annotators;
# Questionable and Unwanted count as hallucinated, Benign does not.
_FAITHBENCH_HALLUCINATED = frozenset(
    {"Questionable", "Unwanted", "Unwanted.Intrinsic", "Unwanted.Extrinsic"}
)
# Stored detector outputs: HHEM gives a consistency probability, the others 1 = consistent.
_FAITHBENCH_SCORE_BASELINES = {"hhem-2.1": "HHEM-2.1", "hhem-2.1-english": "HHEM-2.1-English"}
_FAITHBENCH_VOTE_BASELINES = {
    "gpt-4-turbo": "GPT-4-Turbo",
    "gpt_4o": "GPT-4o",
    "gpt-3.5-turbo": "GPT-3.5-Turbo",
    "trueteacher": "TrueTeacher",
    "true_nli": "TRUE-NLI",
}

_HALUEVAL_FIELDS: dict[str, tuple[str, str | None, str, str]] = {
    # task: (context field, question field, right answer, hallucinated answer)
    "qa": ("knowledge", "question", "right_answer", "hallucinated_answer"),
    "dialogue": ("knowledge", "dialogue_history", "right_response", "hallucinated_response"),
    "summarization": ("document", None, "right_summary", "hallucinated_summary"),
}


def default_data_dir() -> Path:
    """Find the shared benchmark folder.

    Looks, in order, at ``$TRUTHLENS_BENCHDATA``, ``../shared/benchdata`` and
    ``shared/benchdata`` relative to the working directory, and
    ``../shared/benchdata`` relative to the repository holding this package.

    Returns:
        The first folder that exists.

    Raises:
        ConfigError: If none exists.
    """
    env = os.environ.get(_ENV_DATA_DIR)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise ConfigError(f"${_ENV_DATA_DIR} points to {path}, which is not a folder")
        return path
    repo = Path(__file__).resolve().parents[2]
    candidates = [
        Path.cwd() / ".." / "shared" / "benchdata",
        Path.cwd() / "shared" / "benchdata",
        repo / ".." / "shared" / "benchdata",
    ]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    raise ConfigError(
        "benchmark data not found; pass --data-dir or set "
        f"${_ENV_DATA_DIR} (looked in: {', '.join(str(c) for c in candidates)})"
    )


# --------------------------------------------------------------------------- RAGTruth


def ragtruth_prompt(task_type: str, source_info: str | dict[str, Any]) -> str:
    """Rebuild the prompt RAGTruth's generators saw, from ``source_info``.

    Args:
        task_type: ``QA``, ``Summary`` or ``Data2txt``.
        source_info: The record's ``source_info``: ``{question, passages}`` for QA, the
            text for Summary, the business record for Data2txt.

    Returns:
        The prompt (the summary word count is not recoverable and is left out).

    Raises:
        InvalidInputError: If the task type is unknown or ``source_info`` has the wrong shape.
    """
    if task_type == "QA" and isinstance(source_info, dict):
        passages = str(source_info.get("passages", ""))
        count = len(_split_passages(passages))
        word = _NUMBER_WORDS[count] if count < len(_NUMBER_WORDS) else str(count)
        return _RAGTRUTH_QA_PROMPT.format(
            question=source_info.get("question", ""), count=word, passages=passages
        )
    if task_type == "Summary" and isinstance(source_info, str):
        return _RAGTRUTH_SUMMARY_PROMPT.format(text=source_info)
    if task_type == "Data2txt" and isinstance(source_info, dict):
        return _RAGTRUTH_DATA2TXT_PROMPT.format(
            instruction=_RAGTRUTH_DATA2TXT_INSTRUCTION, record=repr(source_info)
        )
    raise InvalidInputError(
        f"RAGTruth task {task_type!r} with source_info of type {type(source_info).__name__}"
    )


def _ragtruth_context(
    task_type: str, source_info: str | dict[str, Any]
) -> tuple[list[str], str | None]:
    """Context passages and question for our detector input, per task type."""
    if task_type == "QA" and isinstance(source_info, dict):
        return _split_passages(str(source_info.get("passages", ""))), str(
            source_info.get("question", "")
        )
    if task_type == "Summary" and isinstance(source_info, str):
        return [source_info], None
    if task_type == "Data2txt" and isinstance(source_info, dict):
        # The record exactly as RAGTruth printed it into the generation prompt.
        return [repr(source_info)], _RAGTRUTH_DATA2TXT_INSTRUCTION
    raise InvalidInputError(
        f"RAGTruth task {task_type!r} with source_info of type {type(source_info).__name__}"
    )


def read_ragtruth(path: str | os.PathLike[str]) -> list[EvalExample]:
    """Read a RAGTruth-format JSON-lines file (responses joined with their ``source_info``).

    Each row needs ``id``, ``task_type``, ``source_info``, ``response`` and ``labels``
    (``start``/``end`` character offsets into the response). The context is rebuilt per
    task type as LettuceDetect's preprocessing sees it: QA gives the question and its
    passages (split at ``passage N:``), Summary the article with no question, Data2txt
    the business record with the writing instruction as question.

    Args:
        path: The ``.jsonl`` file.

    Returns:
        One example per response, in file order; responses that are empty are skipped.

    Raises:
        ConfigError: If the file does not exist.
        InvalidInputError: If a row is malformed or a span lies outside its response.
    """
    examples: list[EvalExample] = []
    for row in _read_jsonl(Path(path)):
        answer = str(row.get("response", ""))
        if not answer.strip():
            logger.warning("skipping RAGTruth response %s: empty", row.get("id"))
            continue
        task_type = str(row["task_type"])
        source_info = row["source_info"]
        passages, question = _ragtruth_context(task_type, source_info)
        spans = []
        for label in row.get("labels") or []:
            start, end = int(label["start"]), int(label["end"])
            if not 0 <= start <= end <= len(answer):
                raise InvalidInputError(
                    f"RAGTruth response {row.get('id')}: span {start}-{end} is outside the answer"
                )
            spans.append(GoldSpan(start=start, end=end, label=label.get("label_type")))
        examples.append(
            make_example(
                "ragtruth",
                str(row["id"]),
                task_type,
                passages,
                question,
                answer,
                **marked(spans),
                prompt=ragtruth_prompt(task_type, source_info),
            )
        )
    return examples


# --------------------------------------------------------------------------- HaluEval


def halueval_split(
    items: Sequence[T], part: HaluEvalPart, *, heldout_fraction: float = HALUEVAL_HELDOUT_FRACTION
) -> list[T]:
    """The deterministic train / held-out split of a HaluEval file, shared with training.

    Item ``i`` of ``n`` is held out when ``i >= int(n * (1 - heldout_fraction))``: the
    last 10% by index (the last 1,000 of each 10,000-item file); training uses the rest.
    The model lab's training data is split by the same rule. Splitting by position needs
    no seed, so training and evaluation cannot drift apart.

    Args:
        items: The file's items in file order.
        part: ``train``, ``heldout`` or ``all``.
        heldout_fraction: Share held out, in (0, 1).

    Returns:
        The items of that part, in file order.

    Raises:
        InvalidInputError: If ``part`` or ``heldout_fraction`` is invalid.
    """
    if not 0.0 < heldout_fraction < 1.0:
        raise InvalidInputError(f"heldout_fraction must be in (0, 1), got {heldout_fraction}")
    cut = int(len(items) * (1 - heldout_fraction))
    if part == "train":
        return list(items[:cut])
    if part == "heldout":
        return list(items[cut:])
    if part == "all":
        return list(items)
    raise InvalidInputError(f"part must be 'train', 'heldout' or 'all', got {part!r}")


def read_halueval(
    path: str | os.PathLike[str], task: HaluEvalTask, *, part: HaluEvalPart = "heldout"
) -> list[EvalExample]:
    """Read a HaluEval qa / dialogue / summarization file into paired examples.

    Every item gives two examples with the same context: its right answer (clean) and
    its hallucinated answer (hallucinated). HaluEval has no span labels, so these
    examples only count in the example-level metrics. Ids are
    ``{task}-{index}-right`` / ``{task}-{index}-hallucinated`` with the item's index in
    the file.

    Args:
        path: The ``dataset_halueval_{task}.jsonl`` file.
        task: Which task the file holds.
        part: Which part of :func:`halueval_split` to read (default: held-out).

    Returns:
        Two examples per item, in file order.

    Raises:
        ConfigError: If the file does not exist.
        InvalidInputError: If the task is unknown or an item lacks a field.
    """
    if task not in _HALUEVAL_FIELDS:
        raise InvalidInputError(f"unknown HaluEval task {task!r}; use one of {HALUEVAL_TASKS}")
    context_key, question_key, right_key, wrong_key = _HALUEVAL_FIELDS[task]
    indexed = list(enumerate(_read_jsonl(Path(path))))
    examples: list[EvalExample] = []
    for index, item in halueval_split(indexed, part):
        try:
            context = str(item[context_key])
            question = str(item[question_key]) if question_key else None
            answers = ((str(item[right_key]), False), (str(item[wrong_key]), True))
        except KeyError as exc:
            raise InvalidInputError(f"HaluEval {task} item {index} has no field {exc}") from exc
        for answer, hallucinated in answers:
            if not answer.strip():
                continue
            kind = "hallucinated" if hallucinated else "right"
            examples.append(
                make_example(
                    "halueval",
                    f"{task}-{index}-{kind}",
                    task,
                    (context,),
                    question,
                    answer,
                    hallucinated=hallucinated,
                    has_span_labels=False,
                )
            )
    return examples


# --------------------------------------------------------------------------- FaithBench


def _faithbench_baselines(metadata: dict[str, Any]) -> dict[str, bool]:
    baselines: dict[str, bool] = {}
    for key, name in _FAITHBENCH_SCORE_BASELINES.items():
        value = metadata.get(key)
        if isinstance(value, int | float):
            baselines[name] = float(value) < 0.5
    for key, name in _FAITHBENCH_VOTE_BASELINES.items():
        value = metadata.get(key)
        if isinstance(value, int | float):
            baselines[name] = int(value) == 0
    return baselines


def _batch_number(path: Path) -> int:
    digits = re.findall(r"\d+", path.stem)
    return int(digits[-1]) if digits else 0


def read_faithbench(folder: str | os.PathLike[str]) -> list[EvalExample]:
    """Read FaithBench's ``batch_*.json`` files.

    The example label follows FaithBench's own binarisation: the worst label over all
    annotations, where ``Questionable`` and ``Unwanted*`` are hallucinated and
    ``Benign`` is not. Gold spans are the union of the summary spans of the
    hallucinated-class annotations (overlapping annotations merged). The stored
    predictions of other detectors become ``baselines``: HHEM-2.1 hallucinated when its
    consistency score is below 0.5; GPT-4-Turbo, GPT-4o, GPT-3.5-Turbo, TrueTeacher and
    TRUE-NLI when their vote is 0 (1 means consistent).

    Args:
        folder: The ``data_for_release`` folder, or the FaithBench folder holding it.

    Returns:
        One example per sample, by batch number then file order; ids ``b{batch}-{sample_id}``.

    Raises:
        ConfigError: If no batch file is found.
        InvalidInputError: If a file is malformed.
    """
    root = Path(folder)
    if (root / "data_for_release").is_dir():
        root = root / "data_for_release"
    files = sorted(root.glob("batch_*.json"), key=_batch_number)
    if not files:
        raise ConfigError(f"no FaithBench batch_*.json files in {root}")
    examples: list[EvalExample] = []
    for file in files:
        try:
            samples = json.loads(file.read_text(encoding="utf-8"))["samples"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InvalidInputError(f"{file} is not a FaithBench batch: {exc}") from exc
        examples.extend(
            _faithbench_example(file, sample)
            for sample in samples
            if str(sample["summary"]).strip()
        )
    return examples


def _faithbench_example(file: Path, sample: dict[str, Any]) -> EvalExample:
    summary = str(sample["summary"])
    annotations = sample.get("annotations") or []
    hallucinated = [
        a for a in annotations if _FAITHBENCH_HALLUCINATED.intersection(a.get("label") or [])
    ]
    intervals: list[tuple[int, int]] = []
    for annotation in hallucinated:
        start, end = annotation.get("summary_start"), annotation.get("summary_end")
        if isinstance(start, int) and isinstance(end, int) and 0 <= start < end:
            intervals.append((start, min(end, len(summary))))
    return make_example(
        "faithbench",
        f"b{_batch_number(file)}-{sample['sample_id']}",
        "Summary",
        (str(sample["source"]),),
        None,
        summary,
        hallucinated=bool(hallucinated),
        gold_spans=tuple(GoldSpan(start=s, end=e) for s, e in _union(intervals)),
        baselines=_faithbench_baselines(sample.get("metadata") or {}),
    )


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


# --------------------------------------------------------------------------- SNLI


def read_snli(folder: str | os.PathLike[str], *, split: str = "test") -> list[NLIExample]:
    """Read e-SNLI's line-aligned ``s1.{split}``, ``s2.{split}`` and ``labels.{split}``.

    Args:
        folder: The ``esnli`` folder.
        split: ``test`` (eval-only) or ``dev``.

    Returns:
        One pair per line, in file order; ids ``snli-{split}-{line}``. Lines whose label
        is not one of the three NLI classes are skipped.

    Raises:
        ConfigError: If a file is missing.
        InvalidInputError: If the files have different lengths.
    """
    root = Path(folder)
    columns = []
    for name in ("s1", "s2", "labels"):
        file = root / f"{name}.{split}"
        if not file.is_file():
            raise ConfigError(f"SNLI file not found: {file}")
        columns.append(file.read_text(encoding="utf-8").splitlines())
    premises, hypotheses, labels = columns
    if not len(premises) == len(hypotheses) == len(labels):
        raise InvalidInputError(
            f"SNLI {split} files differ in length: {len(premises)}, {len(hypotheses)}, "
            f"{len(labels)}"
        )
    valid = set(get_args(NLILabel))
    examples = []
    for line, (premise, hypothesis, raw_label) in enumerate(
        zip(premises, hypotheses, labels, strict=True)
    ):
        label = raw_label.strip()
        if label not in valid:
            continue
        examples.append(
            NLIExample(
                id=f"snli-{split}-{line}",
                premise=premise.strip(),
                hypothesis=hypothesis.strip(),
                label=cast("NLILabel", label),
            )
        )
    return examples


# --------------------------------------------------------------------------- by name


def wice_token_spans(claim: str, tokens: Sequence[str], flags: Sequence[bool]) -> list[GoldSpan]:
    """Character spans of the flagged WiCE claim tokens (adjacent ones merged).

    Args:
        claim: The claim text.
        tokens: Its tokens, in order.
        flags: ``True`` for a token the evidence does not support.

    Returns:
        The spans; empty when no token is flagged.

    Raises:
        ConfigError: If a token is not found in order in the claim text.
    """
    pos = 0
    spans: list[list[int]] = []
    for token, flag in zip(tokens, flags, strict=True):
        start = claim.find(token, pos)
        if start < 0 or claim[pos:start].strip():
            raise ConfigError(f"WiCE token {token!r} is not where expected in {claim[:80]!r}")
        pos = start + len(token)
        if not flag:
            continue
        if spans and not claim[spans[-1][1] : start].strip():
            spans[-1][1] = pos
        else:
            spans.append([start, pos])
    return [GoldSpan(start=a, end=b) for a, b in spans]


def read_wice(folder: str | os.PathLike[str]) -> list[EvalExample]:
    """WiCE test claims with token labels (``non_supported_tokens/test.jsonl``, eval-only).

    Each claim is judged against the evidence sentences of its cited web page; the
    tokens the evidence does not support are the gold spans.
    """
    path = Path(folder) / "non_supported_tokens" / "test.jsonl"
    examples: list[EvalExample] = []
    for row in _read_jsonl(path):
        spans = wice_token_spans(row["claim"], row["claim_tokens"], row["non_supported_spans"])
        examples.append(
            make_example(
                "wice",
                str(row.get("meta", {}).get("id", len(examples))),
                "claim",
                tuple(e for e in row["evidence"] if e.strip()),
                None,
                row["claim"],
                hallucinated=bool(spans),
                gold_spans=tuple(spans),
            )
        )
    return examples


def subsample(items: Sequence[T], limit: int | None) -> list[T]:
    """``limit`` items spread evenly over ``items`` (all of them when ``limit`` is None).

    Evenly spaced indices (``i * len(items) // limit``) keep every task type of a file
    that is sorted by task in a small run, and the choice is deterministic.
    """
    if limit is None or limit >= len(items):
        return list(items)
    if limit <= 0:
        raise InvalidInputError(f"limit must be positive, got {limit}")
    return [items[i * len(items) // limit] for i in range(limit)]


def _rag_datasets() -> dict[str, Any]:
    from . import _rag_readers as rag

    def select_sources() -> frozenset[str]:
        return rag.ragtruth_dev_split()["select"]

    return {
        "ragtruth_dev_select": lambda root: rag.read_ragtruth_dev(
            root / "ragtruth_dev", part="select"
        ),
        "ragtruth_dev_train": lambda root: rag.read_ragtruth_dev(
            root / "ragtruth_dev", part="train"
        ),
        "attributionbench": lambda root: rag.read_attributionbench(root / "attributionbench"),
        "faithjudge_select": lambda root: rag.read_faithjudge(root, sources=select_sources()),
        "expertqa": lambda root: rag.read_expertqa(root / "expertqa"),
    }


def load_detection_dataset(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    limit: int | None = None,
    halueval_part: HaluEvalPart = "heldout",
) -> list[EvalExample]:
    """Load a detection benchmark by name from the shared benchmark folder.

    Args:
        name: ``ragtruth`` (the 913-response test subset), ``halueval`` (the three task
            files, held-out part by default), ``faithbench`` or ``wice`` (test claims
            with token labels), all eval-only but HaluEval; or the RAG answers judged
            by people: ``ragtruth_dev_select`` / ``ragtruth_dev_train`` (the two parts
            of the committed split of ``ragtruth_dev``), ``attributionbench``,
            ``faithjudge_select`` (FaithJudge answers to the selection split's sources)
            and ``expertqa`` (claims with passage evidence).
        data_dir: The benchmark folder; ``None`` uses :func:`default_data_dir`.
        limit: Keep this many examples, spread evenly (see :func:`subsample`).
        halueval_part: Which HaluEval part to read.

    Returns:
        The examples.

    Raises:
        ConfigError: If the name is unknown or the files are missing.
    """
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    if name == "ragtruth":
        examples = read_ragtruth(root / _RAGTRUTH_FILE)
    elif name == "halueval":
        examples = []
        for task in HALUEVAL_TASKS:
            file = root / "halueval" / f"dataset_halueval_{task}.jsonl"
            examples.extend(read_halueval(file, task, part=halueval_part))
    elif name == "faithbench":
        examples = read_faithbench(root / "faithbench")
    elif name == "wice":
        examples = read_wice(root / "wice")
    elif name in DETECTION_DATASETS:
        examples = _rag_datasets()[name](root)
    else:
        raise ConfigError(f"unknown dataset {name!r}; use one of {DETECTION_DATASETS} or snli")
    return subsample(examples, limit)
