"""The ``truthlens`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from truthlens_integrations.core import DetectionInput, DetectionResult, TruthLensError

__all__ = ["main"]

_RED = "\033[1;31m"
_RESET = "\033[0m"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``truthlens`` command; returns the process exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if not args.verbose else logging.INFO)
    if not args.verbose:
        # transformers reads this when it is first imported: weight-loading bars are noise here
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        code: int = args.handler(args)
    except TruthLensError as exc:
        print(f"truthlens: error: {exc}", file=sys.stderr)
        return 2
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="truthlens", description="Find and fix hallucinations in LLM answers."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_detect(sub)
    try:
        from truthlens_integrations._cli_eval import add_eval_parser
    except ImportError:
        pass
    else:
        add_eval_parser(sub)
        from truthlens_integrations._cli_calibrate import add_calibrate_parser

        add_calibrate_parser(sub)
    _add_serve(sub)
    return parser


def _add_serve(sub: Any) -> None:
    # The parser is light; Ray loads only when `truthlens serve` runs.
    from truthlens_integrations.serve._cli import add_serve_parser

    add_serve_parser(sub)


def _add_detect(sub: Any) -> None:
    p = sub.add_parser(
        "detect",
        help="flag unsupported spans in an answer",
        description=(
            "Check one answer given with flags, or many from a JSON / JSONL file whose "
            'records hold "context" (string or list), "question", "answer" and optionally '
            '"id" (echoed in the output). Exit status: 0 every record checked, 1 some '
            "skipped (--on-error skip), 2 an error."
        ),
    )
    p.add_argument("--context", action="append", help="a context passage (repeatable)")
    p.add_argument("--question", help="the question the answer responds to")
    p.add_argument("--answer", help="the answer to check")
    p.add_argument("--input", type=Path, help="a .json file (one record) or .jsonl (many)")
    p.add_argument(
        "--model",
        default=os.environ.get("TRUTHLENS_MODEL"),
        help="model folder, hub id, 'bundled' (default) or 'lexical'",
    )
    p.add_argument("--device", help="cpu, cuda, mps (default: best available)")
    p.add_argument("--token-threshold", type=float, help="token probability to flag a token")
    p.add_argument("--threshold", type=float, help="response score that counts as detected")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument(
        "--on-error",
        choices=("stop", "skip"),
        default="stop",
        help=(
            "a bad record in --input (malformed JSON, no answer, unreadable text): 'stop' "
            "(default) ends with an error naming file:line and its id; 'skip' reports it "
            "on stderr and as a 'skipped' entry, checks the rest and exits with 1"
        ),
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON (one line per record, with the record's 'id' when it has one)",
    )
    p.add_argument("--tokens", action="store_true", help="include per-token scores in JSON")
    p.set_defaults(handler=_run_detect)


def _run_detect(args: argparse.Namespace) -> int:
    from truthlens_integrations.core.models.detection import load_detector

    stop = args.on_error == "stop"
    # Every record is read and validated before the model loads: a bad line at the end
    # of a large file stops the run (or is reported) before any time is spent.
    records = list(_records(args, stop=stop))
    options: dict[str, Any] = {"batch_size": args.batch_size}
    if args.device:
        options["device"] = args.device
    if args.token_threshold is not None:
        options["token_threshold"] = args.token_threshold
    if args.threshold is not None:
        options["threshold"] = args.threshold
    detector = load_detector(args.model, **options)
    skipped = _detect_all(detector, records, args, stop=stop)
    if skipped:
        print(
            f"truthlens: {skipped} of {len(records)} record(s) skipped and not checked",
            file=sys.stderr,
        )
        return 1
    return 0


_NO_ID = object()


@dataclass
class _Record:
    """One input record: where it came from, its ``id``, and the input or the error."""

    where: str
    id: Any = _NO_ID
    item: DetectionInput | None = None
    error: str | None = None

    @property
    def label(self) -> str:
        """``file:line`` and the record's id, for messages."""
        return self.where if self.id is _NO_ID else f"{self.where} (id {self.id!r})"


def _records(args: argparse.Namespace, *, stop: bool) -> Iterator[_Record]:
    if args.input is None:
        if args.answer is None:
            raise _usage("give --answer (with --context and --question) or --input FILE")
        item = DetectionInput.create(
            context=args.context, question=args.question, answer=args.answer
        )
        yield _Record(where="--answer", item=item)
        return
    path: Path = args.input
    if not path.is_file():
        raise _usage(f"no such file: {path}")
    rows = _jsonl_rows(path) if path.suffix == ".jsonl" else _json_rows(path)
    for where, row in rows:
        record = _record(where, row)
        if record.error is not None and stop:
            raise _usage(f"{record.label}: {record.error} (--on-error skip checks the rest)")
        yield record


def _jsonl_rows(path: Path) -> Iterator[tuple[str, object]]:
    """``(file:line, parsed value or the error)`` for each non-blank line."""
    for number, raw in enumerate(_read_bytes(path).split(b"\n"), start=1):
        where = f"{path}:{number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield where, _Bad(f"not UTF-8 text (byte {exc.start + 1} of the line)")
            continue
        if not line.strip():
            continue
        yield where, _parse_json(line)


def _json_rows(path: Path) -> Iterator[tuple[str, object]]:
    """``(file record n, value)`` for a ``.json`` file holding one record or a list."""
    try:
        text = _read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _usage(f"{path}: not UTF-8 text (byte {exc.start + 1})") from None
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        message = f"{path}:{exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})"
        raise _usage(message) from None
    except RecursionError:
        raise _usage(f"{path}: not valid JSON: nested too deeply") from None
    rows = loaded if isinstance(loaded, list) else [loaded]
    for n, row in enumerate(rows, start=1):
        yield (f"{path} record {n}" if isinstance(loaded, list) else str(path)), row


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _usage(f"cannot read {path}: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class _Bad:
    """A line that could not be parsed, and why."""

    reason: str


def _parse_json(line: str) -> object:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        return _Bad(f"not valid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return _Bad("not valid JSON: nested too deeply")


def _record(where: str, row: object) -> _Record:
    if isinstance(row, _Bad):
        return _Record(where=where, error=row.reason)
    if not isinstance(row, dict):
        return _Record(where=where, error=f"a record must be a JSON object, got {_kind(row)}")
    record = _Record(where=where, id=row.get("id", _NO_ID))
    answer = row.get("answer")
    if not isinstance(answer, str):
        record.error = "no text 'answer'" if answer is None else f"'answer' is {_kind(answer)}"
        return record
    try:
        record.item = DetectionInput.create(
            context=row.get("context"), question=row.get("question"), answer=answer
        )
    except TruthLensError as exc:
        record.error = str(exc)
    return record


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")


def _usage(message: str) -> TruthLensError:
    from truthlens_integrations.core import InvalidInputError

    return InvalidInputError(message)


def _detect_all(
    detector: Any, records: list[_Record], args: argparse.Namespace, *, stop: bool
) -> int:
    """Check each record, print its result as it comes; returns how many were skipped.

    Records are checked one at a time so that each reports its own latency and a
    failure names its record; the detector still batches the windows of one record.
    """
    from tqdm import tqdm

    skipped = 0
    progress = args.input is not None
    with tqdm(total=len(records), disable=not progress, unit="answer", file=sys.stderr) as bar:
        for record in records:
            result = None
            if record.item is not None:
                try:
                    result = detector.detect_batch([record.item])[0]
                except TruthLensError as exc:
                    if stop:
                        raise TruthLensError(f"{record.label}: {exc}") from exc
                    record.error = str(exc)
            if result is None:
                skipped += 1
                _print_skipped(record, as_json=args.json)
            elif args.json:
                payload = _as_json(result, tokens=args.tokens)
                if record.id is not _NO_ID:
                    payload = {"id": record.id, **payload}
                print(json.dumps(payload, ensure_ascii=False), flush=True)
            else:
                _print_table(result, sys.stdout, record=record if progress else None)
            bar.update(1)
    return skipped


def _print_skipped(record: _Record, *, as_json: bool) -> None:
    # Skipped records stay in the output, in order: a missing line would read as if
    # the record had been checked, and the output would no longer line up with the input.
    if as_json:
        # stdout is for programs; a person watching the run reads stderr.
        print(f"truthlens: skipped {record.label}: {record.error}", file=sys.stderr)
        payload: dict[str, Any] = {} if record.id is _NO_ID else {"id": record.id}
        payload.update(source=record.where, status="skipped", error=record.error)
        print(json.dumps(payload, ensure_ascii=False), flush=True)
    else:
        sys.stdout.write(f"record:   {record.label}\nverdict:  SKIPPED  {record.error}\n\n")


def _as_json(result: DetectionResult, *, tokens: bool) -> dict[str, Any]:
    exclude = {"answer"} if tokens else {"answer", "tokens"}
    return result.model_dump(mode="json", exclude=exclude)


def _print_table(result: DetectionResult, out: TextIO, *, record: _Record | None = None) -> None:
    color = out.isatty() and not os.environ.get("NO_COLOR")
    answer = result.answer
    marked, last = [], 0
    for span in result.spans:
        marked.append(answer[last : span.start])
        text = answer[span.start : span.end]
        marked.append(f"{_RED}{text}{_RESET}" if color else f"[[{text}]]")
        last = span.end
    marked.append(answer[last:])
    verdict = result.status.value.upper()
    if record is not None:
        out.write(f"record:   {record.label}\n")
    out.write(f"answer:   {''.join(marked)}\n")
    out.write(
        f"verdict:  {verdict}  score={result.score:.3f}  threshold={result.threshold:.2f}  "
        f"model={result.model_id}  {result.latency_ms:.1f} ms\n"
    )
    cov = result.coverage
    out.write(
        f"coverage: {cov.answer_chars_scored}/{cov.answer_chars} answer chars, "
        f"{cov.context_windows} context window(s), {cov.answer_pieces} answer piece(s), "
        f"window {cov.max_length} tokens\n"
    )
    if result.spans:
        out.write(f"{'start':>6} {'end':>6} {'conf':>6}  text\n")
        for span in result.spans:
            out.write(f"{span.start:>6} {span.end:>6} {span.confidence:>6.3f}  {span.text}\n")
    out.write("\n")


if __name__ == "__main__":
    raise SystemExit(main())
