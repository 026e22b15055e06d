"""The ``truthlens`` command line."""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

from truthlens_integrations._cli_eval import add_precision_option, refuse_model_options
from truthlens_integrations.core import (
    Coverage,
    DetectionInput,
    DetectionResult,
    InvalidInputError,
    JSONFormatError,
    TruthLensError,
)
from truthlens_integrations.core._adapter_api import InputLimits, check_input_sizes, loads_strict

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
    except BrokenPipeError:
        # The reader went away (`truthlens detect ... | head`): stop quietly. Python
        # would report the failed flush of stdout at exit, so point it at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1
    return code


_N = TypeVar("_N", int, float)


def _read(
    text: str, parse: Callable[[str], _N], kind: str, ok: Callable[[_N], bool], rule: str
) -> _N:
    """``text`` read by ``parse`` ("is not KIND" if it fails), refused unless ``ok``."""
    try:
        value = parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {kind}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{text} is not {rule}")
    return value


def _probability(text: str) -> float:
    """An argparse type: a number from 0 to 1 (``nan`` and ``2`` are refused)."""
    return _read(
        text, float, "a number", lambda v: math.isfinite(v) and 0 <= v <= 1, "between 0 and 1"
    )


def _positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    return _read(text, int, "a whole number", lambda v: v >= 1, "1 or more")


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
    _add_export_onnx(sub)
    return parser


def _add_export_onnx(sub: Any) -> None:
    p = sub.add_parser(
        "export-onnx",
        help="build the ONNX Runtime graphs of a model folder (the fast CPU path)",
        description="""Build fp32 and int8 ONNX graphs from a model folder's weights into
        FOLDER/onnx/, stamped with the weights' fingerprint (a graph that does not match its weights
        is refused). 'bundled' builds the shipped models' graphs into the user cache
        (~/.cache/truthlens/onnx or $TRUTHLENS_CACHE_DIR), as their first use would. Needs: pip
        install 'truthlens-integrations[fast]'.""",
    )
    p.add_argument("folder", help="a model folder, or 'bundled'")
    p.add_argument(
        "--precision",
        nargs="+",
        choices=("fp32", "int8"),
        default=["fp32", "int8"],
        help="which graphs to build (default: both)",
    )
    p.set_defaults(handler=_run_export_onnx)


def _run_export_onnx(args: argparse.Namespace) -> int:
    if args.folder == "bundled":
        from truthlens_integrations.core.models.classifier import BundledPromptClassifier
        from truthlens_integrations.core.models.detection import load_detector
        from truthlens_integrations.core.models.nli import BundledNLI

        for precision in args.precision:
            dtype = "float32" if precision == "fp32" else "int8"
            detector = load_detector(backend="onnx", dtype=dtype, device="cpu")
            BundledNLI(backend="onnx", dtype=dtype, device="cpu")
            BundledPromptClassifier(backend="onnx", dtype=dtype, device="cpu")
            graph = detector._loaded.graph  # type: ignore[attr-defined]
            print(f"{precision}: {graph.path.parent}")
        return 0
    from truthlens_integrations.core._adapter_api import export_onnx

    for path in export_onnx(args.folder, args.precision):
        print(path)
    return 0


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
            '"id" (echoed in the output); any other key is an error. A record over the '
            f"service's size limits (answer {_LIMITS.max_answer_chars:,} characters, context "
            f"and question {_LIMITS.max_context_chars:,}) is refused before any model runs. "
            "Exit status: 0 every record checked, 1 some "
            "skipped (--on-error skip), 2 an error (also: a file with no records)."
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
    p.add_argument(
        "--backend",
        choices=("auto", "torch", "onnx"),
        default="auto",
        help="what runs the model: 'auto' (default): ONNX Runtime on a CPU where the fast "
        "extra is installed (int8 where the CPU has VNNI, else fp32), torch elsewhere; "
        "'torch' or 'onnx' force one",
    )
    add_precision_option(p)
    p.add_argument(
        "--token-threshold", type=_probability, help="token probability to flag a token (0-1)"
    )
    p.add_argument(
        "--threshold", type=_probability, help="response score that counts as detected (0-1)"
    )
    p.add_argument("--batch-size", type=_positive_int, default=16)
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
    refuse_model_options(args.model, backend=args.backend, precision=args.precision)
    if args.model != "lexical":
        options["backend"] = args.backend
    if args.precision != "auto":
        options["dtype"] = args.precision
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
        check_input_sizes([item], _LIMITS, where="--answer")
        yield _Record(where="--answer", item=item)
        return
    path: Path = args.input
    if not path.is_file():
        raise _usage(f"no such file: {path}")
    rows = _jsonl_rows(path) if path.suffix == ".jsonl" else _json_rows(path)
    count = 0
    for where, row in rows:
        count += 1
        record = _record(where, row)
        if record.error is not None and stop:
            raise _usage(f"{record.label}: {record.error} (--on-error skip checks the rest)")
        yield record
    if count == 0:
        # Nothing checked must never read as "all clean".
        raise _usage(f"{path} holds no records: nothing was checked")


#: The service's limits: a record the service would refuse is refused here too.
_LIMITS = InputLimits()
#: The keys a record may hold.
_KEYS = ("answer", "context", "question", "id")


def _jsonl_rows(path: Path) -> Iterator[tuple[str, object]]:
    """``(file:line, parsed value or the error)`` for each non-blank line."""
    for number, raw in enumerate(_read_bytes(path).split(b"\n"), start=1):
        where = f"{path}:{number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield where, _Bad(f"not UTF-8 text (byte {exc.start + 1} of the line)")
            continue
        if number == 1:
            line = line.removeprefix("\ufeff")  # a byte-order mark some editors write
        if not line.strip():
            continue
        yield where, _parse_json(line)


def _json_rows(path: Path) -> Iterator[tuple[str, object]]:
    """``(file record n, value)`` for a ``.json`` file holding one record or a list."""
    data = _read_bytes(path)
    try:
        loaded = loads_strict(data, allow_bom=True)
    except JSONFormatError as exc:
        where = f"{path}:{exc.line}" if exc.line is not None else str(path)
        raise _usage(f"{where}: {exc}") from None
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
        return loads_strict(line)
    except JSONFormatError as exc:
        return _Bad(str(exc))


def _record(where: str, row: object) -> _Record:
    if isinstance(row, _Bad):
        return _Record(where=where, error=row.reason)
    if not isinstance(row, dict):
        return _Record(where=where, error=f"a record must be a JSON object, got {_kind(row)}")
    record = _Record(where=where, id=row.get("id", _NO_ID))
    unknown = [key for key in row if key not in _KEYS]
    if unknown:
        record.error = _unknown_keys(unknown)
        return record
    answer = row.get("answer")
    if not isinstance(answer, str):
        record.error = "no text 'answer'" if answer is None else f"'answer' is {_kind(answer)}"
        return record
    try:
        record.item = DetectionInput.create(
            context=row.get("context"), question=row.get("question"), answer=answer
        )
        check_input_sizes([record.item], _LIMITS, where="the record")
    except TruthLensError as exc:
        record.item, record.error = None, str(exc)
    return record


def _unknown_keys(keys: list[str]) -> str:
    """``unknown key 'anwser' (did you mean 'answer'?)``, for each key."""
    parts = []
    for key in keys:
        close = difflib.get_close_matches(key, _KEYS, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        parts.append(f"{key!r}{hint}")
    allowed = ", ".join(repr(k) for k in _KEYS)
    noun = "key" if len(keys) == 1 else "keys"
    return f"unknown {noun} {', '.join(parts)}; a record holds {allowed}"


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")


def _usage(message: str) -> TruthLensError:

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
    many = args.input is not None
    # The bar is for a person at a terminal. Records go to stdout; a bar written to a
    # piped or redirected stderr (`2>&1`, a CI log) would land between them.
    progress = many and sys.stderr.isatty()
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
            with tqdm.external_write_mode(file=sys.stderr):  # the bar steps aside
                if result is None:
                    skipped += 1
                    _print_skipped(record, as_json=args.json)
                elif args.json:
                    payload = _as_json(result, tokens=args.tokens)
                    if record.id is not _NO_ID:
                        payload = {"id": record.id, **payload}
                    print(json.dumps(payload, ensure_ascii=False), flush=True)
                else:
                    _print_table(result, sys.stdout, record=record if many else None)
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
    # Not checked has no score: "n/a", never a number that reads as clean.
    score = "n/a" if result.score is None else f"{result.score:.3f}"
    out.write(
        f"verdict:  {verdict}  score={score}  threshold={result.threshold:.2f}  "
        f"model={result.model_id}  {result.latency_ms:.1f} ms\n"
    )
    out.write(f"coverage: {_coverage_line(result.coverage)}\n")
    if result.spans:
        out.write(f"{'start':>6} {'end':>6} {'conf':>6}  text\n")
        for span in result.spans:
            out.write(f"{span.start:>6} {span.end:>6} {span.confidence:>6.3f}  {span.text}\n")
    out.write("\n")


def _coverage_line(cov: Coverage) -> str:
    """What the detector read, in the words of the strategy that ran."""
    scored = f"{cov.answer_chars_scored}/{cov.answer_chars} answer chars scored"
    if cov.evidence_sentences is not None:
        # Evidence selection reads chosen context sentences per answer unit, not windows.
        return (
            f"{scored}, evidence selection read {cov.evidence_sentences} of "
            f"{cov.context_sentences} context sentence(s) for {cov.answer_pieces} "
            "answer unit(s)"
        )
    return (
        f"{scored}, {cov.context_windows} context window(s), {cov.answer_pieces} answer "
        f"piece(s), window {cov.max_length} tokens"
    )


if __name__ == "__main__":
    raise SystemExit(main())
