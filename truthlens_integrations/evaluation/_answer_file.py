"""A user's file of answers: one format and one reader for ``detect``, ``calibrate`` and ``eval``.

One record per line (JSON lines; a ``.json`` file holds one record or a list of them)::

    {"id": "a1", "context": ["passage", ...], "question": "...", "answer": "...",
     "label": 1, "spans": [[30, 34]], "task_type": "qa"}

- ``answer`` (required): the text to check;
- ``context``: a string or a list of passages; missing or null: the answer cannot be
  checked (never clean);
- ``question``: a string or null;
- ``label``: **1 (or true) = the answer makes a claim its context does not support**,
  0 (or false) = it is supported. ``calibrate`` and ``eval`` need it; ``detect`` reads it
  and checks it like the others;
- ``spans``: ``[[start, end], ...]`` character offsets of the unsupported text (label 1);
- ``id`` (a string or an integer; echoed by ``detect``) and ``task_type`` (a group in the
  report).

Any other key is an error (with the key it was probably meant to be), and so is a record
over the guard's size limits (the service refuses it; the detector never scores it whole).
A bad record is named by its line (and its id, which need not be unique).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import DetectionInput, InvalidInputError, JSONFormatError, TruthLensError
from ..core._adapter_api import InputLimits, check_input_sizes, loads_strict
from ._records import EvalExample, GoldSpan, make_example

__all__ = [
    "ANSWER_KEYS",
    "AnswerRecord",
    "labelled_records",
    "read_answer_file",
    "read_labelled_answers",
]

#: The keys a record may hold, in the order the docs list them.
ANSWER_KEYS: tuple[str, ...] = (
    "id",
    "context",
    "question",
    "answer",
    "label",
    "spans",
    "task_type",
)

#: The service's limits: a record the service would refuse is refused here too.
_LIMITS = InputLimits()


@dataclass
class AnswerRecord:
    """One record of an answer file: where it is, and what it holds or what is wrong.

    Attributes:
        where: ``file:line`` (``file record n`` in a ``.json`` list).
        line: Its position in the file (the line; the n-th record of a ``.json`` list).
        id: Its ``id`` as given, ``None`` when it has none.
        item: The checked input; ``None`` when ``error`` is set.
        label: ``True`` for an answer with an unsupported claim, ``None`` without a label.
        spans: The unsupported text's offsets (label 1).
        has_spans: Whether the record gave ``spans`` at all.
        task_type: Its group in a report.
        error: What is wrong with it; ``None`` for a good record.
    """

    where: str
    line: int
    id: str | int | None = None
    item: DetectionInput | None = None
    label: bool | None = None
    spans: tuple[GoldSpan, ...] = field(default_factory=tuple)
    has_spans: bool = False
    task_type: str = "all"
    error: str | None = None

    @property
    def name(self) -> str:
        """``file:line`` and the id, for messages (ids need not be unique; lines are)."""
        return self.where if self.id is None else f"{self.where} (id {self.id!r})"

    def example(self) -> EvalExample:
        """The record as a labelled example (its id, else its line number).

        Raises:
            InvalidInputError: If the record is bad or has no label.
        """
        if self.item is None or self.error is not None:
            raise InvalidInputError(f"{self.name}: {self.error}")
        if self.label is None:
            raise InvalidInputError(
                f"{self.name}: no 'label' (1 = the answer has an unsupported claim, "
                "0 = it is supported)"
            )
        ident = str(self.id) if self.id is not None else str(self.line)
        return make_example(
            "labelled",
            ident,
            self.task_type,
            self.item.context,
            self.item.question,
            self.item.answer,
            hallucinated=self.label,
            gold_spans=self.spans,
            has_span_labels=self.has_spans,
            source_id=ident,
        )


def read_answer_file(path: str | os.PathLike[str]) -> Iterator[AnswerRecord]:
    """Every record of an answer file, a bad one with its ``error`` set (never raised).

    Args:
        path: A JSON lines file, or a ``.json`` file holding one record or a list.

    Yields:
        The records, in file order; blank lines are skipped.

    Raises:
        InvalidInputError: If the file is missing or unreadable, a ``.json`` file is not
            valid JSON, or it holds no record at all (nothing checked is never clean).
    """
    file = Path(path)
    if not file.is_file():
        raise InvalidInputError(f"no such file: {file}")
    rows = _json_rows(file) if file.suffix.lower() == ".json" else _jsonl_rows(file)
    count = 0
    for where, line, row in rows:
        count += 1
        yield _record(where, line, row)
    if count == 0:
        raise InvalidInputError(f"{file} holds no records: nothing was checked")


def labelled_records(path: str | os.PathLike[str]) -> list[AnswerRecord]:
    """The records of a labelled answer file, each good and labelled.

    Raises:
        InvalidInputError: For the first bad or unlabelled record, naming its line (and
            id), or for an unreadable or empty file.
    """
    records = list(read_answer_file(path))
    for record in records:
        record.example()  # raises for a bad or unlabelled record, naming it
    return records


def read_labelled_answers(path: str | os.PathLike[str]) -> list[EvalExample]:
    """A user's labelled answers (the format above), as examples for ``eval`` and ``calibrate``.

    ``label`` is ``1`` / ``true`` for an answer with an unsupported claim and ``0`` /
    ``false`` for a supported one; an example's id is the record's ``id``, else its line.

    Raises:
        InvalidInputError: If the file is missing or empty, or a record is bad or has no
            label (the message names its line).
    """
    return [record.example() for record in labelled_records(path)]


# -- reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Bad:
    """A row that could not be parsed, and why."""

    reason: str


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from None


def _jsonl_rows(path: Path) -> Iterator[tuple[str, int, object]]:
    """``(file:line, line, parsed value or the error)`` for each non-blank line."""
    for number, raw in enumerate(_read_bytes(path).split(b"\n"), start=1):
        where = f"{path}:{number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield where, number, _Bad(f"not UTF-8 text (byte {exc.start + 1} of the line)")
            continue
        if number == 1:
            line = line.removeprefix("\ufeff")  # a byte-order mark some editors write
        if not line.strip():
            continue
        try:
            yield where, number, loads_strict(line)
        except JSONFormatError as exc:
            yield where, number, _Bad(str(exc))


def _json_rows(path: Path) -> Iterator[tuple[str, int, object]]:
    """``(file record n, n, value)`` for a ``.json`` file holding one record or a list."""
    try:
        loaded = loads_strict(_read_bytes(path), allow_bom=True)
    except JSONFormatError as exc:
        where = f"{path}:{exc.line}" if exc.line is not None else str(path)
        raise InvalidInputError(f"{where}: {exc}") from None
    rows = loaded if isinstance(loaded, list) else [loaded]
    for n, row in enumerate(rows, start=1):
        yield (f"{path} record {n}" if isinstance(loaded, list) else str(path)), n, row


# -- one record ---------------------------------------------------------------------------


def _record(where: str, line: int, row: object) -> AnswerRecord:
    record = AnswerRecord(where=where, line=line)
    if isinstance(row, _Bad):
        record.error = row.reason
        return record
    if not isinstance(row, dict):
        record.error = f"a record must be a JSON object, got {_kind(row)}"
        return record
    ident = row.get("id")
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, str | int)):
        record.error = f"'id' must be a string or an integer, got {_kind(ident)}"
        return record
    record.id = ident
    try:
        _fill(record, row)
    except _RecordError as exc:
        record.error = str(exc)
    except TruthLensError as exc:  # the input's own checks (unreadable text, sizes)
        record.item, record.error = None, str(exc)
    return record


class _RecordError(ValueError):
    """What is wrong with one record."""


def _fill(record: AnswerRecord, row: dict[str, Any]) -> None:
    unknown = [key for key in row if key not in ANSWER_KEYS]
    if unknown:
        raise _RecordError(_unknown_keys(unknown))
    answer = row.get("answer")
    if not isinstance(answer, str):
        raise _RecordError("no text 'answer'" if answer is None else f"'answer' is {_kind(answer)}")
    context = row.get("context")
    if context is not None and not (
        isinstance(context, str)
        or (isinstance(context, list) and all(isinstance(c, str) for c in context))
    ):
        raise _RecordError(f"'context' must be a string or a list of strings, got {_kind(context)}")
    question = row.get("question")
    if question is not None and not isinstance(question, str):
        raise _RecordError(f"'question' must be a string or null, got {_kind(question)}")
    record.label = _label(row)
    task = row.get("task_type", "all")
    if not isinstance(task, str):
        raise _RecordError(f"'task_type' must be a string, got {_kind(task)}")
    record.task_type = task
    record.has_spans = "spans" in row
    record.spans = _spans(row.get("spans"), len(answer))
    if record.spans and record.label is False:
        raise _RecordError("a supported answer (label 0) cannot have spans")
    if record.spans and record.label is None:
        raise _RecordError("'spans' mark unsupported text: give them with label 1")
    item = DetectionInput.create(context=context, question=question, answer=answer)
    check_input_sizes([item], _LIMITS, where="the record")
    record.item = item


def _label(row: dict[str, Any]) -> bool | None:
    if "label" not in row:
        return None
    label = row["label"]
    if isinstance(label, bool):
        return label
    if type(label) is int and label in (0, 1):
        return bool(label)
    raise _RecordError(
        f"'label' must be 1 (an unsupported claim) or 0 (supported), or true / false; got {label!r}"
    )


def _spans(raw: Any, length: int) -> tuple[GoldSpan, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _RecordError("'spans' must be a list of [start, end] pairs")
    spans = []
    for pair in raw:
        ok = isinstance(pair, list) and len(pair) == 2
        ok = ok and all(type(v) is int for v in pair) and 0 <= pair[0] < pair[1] <= length
        if not ok:
            raise _RecordError(f"span {pair!r} is not [start, end] inside the {length}-char answer")
        spans.append(GoldSpan(start=pair[0], end=pair[1]))
    return tuple(sorted(spans, key=lambda s: (s.start, s.end)))


def _unknown_keys(keys: list[str]) -> str:
    """``unknown key 'anwser' (did you mean 'answer'?)``, for each key."""
    parts = []
    for key in keys:
        close = difflib.get_close_matches(key, ANSWER_KEYS, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        parts.append(f"{key!r}{hint}")
    allowed = ", ".join(repr(k) for k in ANSWER_KEYS)
    noun = "key" if len(keys) == 1 else "keys"
    return f"unknown {noun} {', '.join(parts)}; a record holds {allowed}"


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")
