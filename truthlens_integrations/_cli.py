"""The ``truthlens`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from truthlens_integrations._cli_eval import add_precision_option, refuse_model_options
from truthlens_integrations.core import (
    Coverage,
    DetectionInput,
    HallucinationSpan,
    InvalidInputError,
    TruthLensError,
)
from truthlens_integrations.core._adapter_api import (
    NOT_CHECKED_WORDS,
    InputLimits,
    check_input_sizes,
    runs_model,
)

if TYPE_CHECKING:
    from truthlens_integrations.core.engine import TruthLens, Verdict
    from truthlens_integrations.evaluation._answer_file import AnswerRecord

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
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {_version()}", help="print the version"
    )
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


def _version() -> str:
    from truthlens_integrations import __version__

    return __version__


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
        help="check answers as the guard does and print each verdict",
        description=_detect_description(),
    )
    p.add_argument("--context", action="append", help="a context passage (repeatable)")
    p.add_argument("--question", help="the question the answer responds to")
    p.add_argument("--answer", help="the answer to check")
    p.add_argument("--input", type=Path, help="a JSON lines file of answers (or a .json file)")
    p.add_argument("--config", type=Path, help="a policy file (default: the built-in policy)")
    _add_detector_options(p)
    p.add_argument(
        "--threshold",
        type=_probability,
        help="response score at or above which an answer is flagged (0-1; every route)",
    )
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
        help="print each verdict as JSON, one line per record: the engine's verdict.to_dict(), "
        "with the record's 'id' when it has one",
    )
    p.add_argument("--tokens", action="store_true", help="include per-token scores in JSON")
    p.set_defaults(handler=_run_detect)


def _add_detector_options(p: argparse.ArgumentParser) -> None:
    """The options of the detector ``detect`` runs (the NLI and classifier follow the policy)."""
    p.add_argument(
        "--model",
        default=os.environ.get("TRUTHLENS_MODEL"),
        help="the detector: a model folder, hub id, 'bundled' (default) or 'lexical'",
    )
    p.add_argument("--device", help="the detector's device: cpu, cuda, mps (default: best)")
    p.add_argument(
        "--backend",
        choices=("auto", "torch", "onnx"),
        default="auto",
        help="what runs the detector: 'auto' (default): ONNX Runtime on a CPU where the fast "
        "extra is installed (int8 where the CPU has VNNI, else fp32), torch elsewhere; "
        "'torch' or 'onnx' force one",
    )
    add_precision_option(p)
    p.add_argument(
        "--token-threshold", type=_probability, help="token probability to flag a token (0-1)"
    )
    p.add_argument("--batch-size", type=_positive_int, default=16)


def _detect_description() -> str:
    return (
        "Check answers as the guard engine does (the prompt classifier, the detector, NLI "
        "on the flagged spans, the policy's decision) and print each verdict in the "
        "engine's words: PASS or MITIGATE, flagged or not, or not checked and why. One "
        "answer given with flags, or many from a file in the format calibrate and eval "
        'read: JSON lines (a .json file: one record or a list) of "answer", "context" '
        '(string or list), "question" and optionally "id" (echoed), "label" (1 = the '
        'answer has an unsupported claim, 0 = supported), "spans" and "task_type"; any '
        "other key is an error. A record over the service's size limits (answer "
        f"{_LIMITS.max_answer_chars:,} characters, context and question "
        f"{_LIMITS.max_context_chars:,}) is refused before any model runs. Exit status: 0 "
        "every record checked, 1 some skipped (--on-error skip), 2 an error (also: a file "
        "with no records)."
    )


def _run_detect(args: argparse.Namespace) -> int:
    from truthlens_integrations.core.engine import TruthLens
    from truthlens_integrations.core.models.detection import load_detector

    stop = args.on_error == "stop"
    # Every record is read and validated before the models load: a bad line at the end
    # of a large file stops the run (or is reported) before any time is spent.
    records = list(_records(args, stop=stop))
    options: dict[str, Any] = {"batch_size": args.batch_size}
    if args.device:
        options["device"] = args.device
    refuse_model_options(args.model, backend=args.backend, precision=args.precision)
    if runs_model(args.model):
        options["backend"] = args.backend
    if args.precision != "auto":
        options["dtype"] = args.precision
    if args.token_threshold is not None:
        options["token_threshold"] = args.token_threshold
    if args.config is not None and not args.config.is_file():
        raise _usage(f"no such policy file: {args.config}")
    knobs: dict[str, Any] = {}
    if args.threshold is not None:
        knobs["threshold"] = args.threshold
    # The answers are the user's own: a blocking policy's verdict still shows them here.
    engine = TruthLens.from_config(
        args.config, detector=load_detector(args.model, **options), expose_blocked_text=True,
        **knobs,
    )  # fmt: skip
    skipped = _check_all(engine, records, args, stop=stop)
    if skipped:
        print(
            f"truthlens: {skipped} of {len(records)} record(s) skipped and not checked",
            file=sys.stderr,
        )
        return 1
    return 0


#: The service's limits: a record the service would refuse is refused here too.
_LIMITS = InputLimits()


def _records(args: argparse.Namespace, *, stop: bool) -> Iterator[AnswerRecord]:
    from truthlens_integrations.evaluation._answer_file import AnswerRecord, read_answer_file

    if args.input is None:
        if args.answer is None:
            raise _usage("give --answer (with --context and --question) or --input FILE")
        item = DetectionInput.create(
            context=args.context, question=args.question, answer=args.answer
        )
        check_input_sizes([item], _LIMITS, where="--answer")
        yield AnswerRecord(where="--answer", line=0, item=item)
        return
    for record in read_answer_file(args.input):
        if record.error is not None and stop:
            raise _usage(f"{record.name}: {record.error} (--on-error skip checks the rest)")
        yield record


def _usage(message: str) -> TruthLensError:
    return InvalidInputError(message)


def _check_all(
    engine: TruthLens, records: list[AnswerRecord], args: argparse.Namespace, *, stop: bool
) -> int:
    """Guard each record, print its verdict as it comes; returns how many were skipped.

    Records are checked one at a time so that each reports its own latency and a
    failure names its record.
    """
    from tqdm import tqdm

    skipped = 0
    many = args.input is not None
    # The bar is for a person at a terminal. Records go to stdout; a bar written to a
    # piped or redirected stderr (`2>&1`, a CI log) would land between them.
    progress = many and sys.stderr.isatty()
    with tqdm(total=len(records), disable=not progress, unit="answer", file=sys.stderr) as bar:
        for record in records:
            verdict = None
            if record.item is not None:
                try:
                    item = record.item
                    verdict = engine.guard(
                        context=list(item.context), question=item.question, answer=item.answer
                    )
                except TruthLensError as exc:
                    if stop:
                        raise TruthLensError(f"{record.name}: {exc}") from exc
                    record.error = str(exc)
            with tqdm.external_write_mode(file=sys.stderr):  # the bar steps aside
                if verdict is None:
                    skipped += 1
                    _print_skipped(record, as_json=args.json)
                elif args.json:
                    print(json.dumps(_as_json(verdict, record, tokens=args.tokens),
                                     ensure_ascii=False), flush=True)  # fmt: skip
                else:
                    _print_table(verdict, sys.stdout, record=record if many else None)
            bar.update(1)
    return skipped


def _print_skipped(record: AnswerRecord, *, as_json: bool) -> None:
    # Skipped records stay in the output, in order: a missing line would read as if
    # the record had been checked, and the output would no longer line up with the input.
    if as_json:
        # stdout is for programs; a person watching the run reads stderr.
        print(f"truthlens: skipped {record.name}: {record.error}", file=sys.stderr)
        payload: dict[str, Any] = {} if record.id is None else {"id": record.id}
        payload.update(source=record.where, status="skipped", error=record.error)
        print(json.dumps(payload, ensure_ascii=False), flush=True)
    else:
        sys.stdout.write(f"record:   {record.name}\nverdict:  SKIPPED  {record.error}\n\n")


def _as_json(verdict: Verdict, record: AnswerRecord, *, tokens: bool) -> dict[str, Any]:
    """The verdict's own serialisation (what every adapter hands out), with the record's id."""
    payload: dict[str, Any] = {} if record.id is None else {"id": record.id}
    payload.update(verdict.to_dict())
    if tokens:
        found = verdict.detection.tokens if verdict.detection is not None else []
        payload["tokens"] = [token.model_dump(mode="json") for token in found]
    return payload


def _marked(answer: str, spans: Sequence[HallucinationSpan], *, color: bool) -> str:
    """``answer`` with the flagged spans marked (``[[...]]``, or red on a terminal)."""
    marked, last = [], 0
    for span in sorted(spans, key=lambda s: s.start):
        marked.append(answer[last : span.start])
        text = answer[span.start : span.end]
        marked.append(f"{_RED}{text}{_RESET}" if color else f"[[{text}]]")
        last = span.end
    marked.append(answer[last:])
    return "".join(marked)


def _verdict_line(verdict: Verdict) -> str:
    """The decision in the engine's words: flagged or not at the threshold, or not checked."""
    total = verdict.latency_ms.get("total", 0.0)
    model = verdict.detection.model_id if verdict.detection is not None else None
    ran = f"  model={model}" if model else ""
    if not verdict.checked:
        reason = verdict.not_checked_reason or ""
        words = NOT_CHECKED_WORDS.get(reason, reason)
        return (
            f"{verdict.decision.value}  NOT CHECKED: {words} ({reason})  score=n/a  "
            f"action={verdict.action or 'none'}{ran}  {total:.1f} ms"
        )
    said = "flagged" if verdict.detected else "not flagged"
    score = "n/a" if verdict.score is None else f"{verdict.score:.3f}"
    return (
        f"{verdict.decision.value}  {said}  score={score}  threshold={verdict.threshold:.2f}  "
        f"action={verdict.action or 'none'}{ran}  {total:.1f} ms"
    )


def _print_table(verdict: Verdict, out: TextIO, *, record: AnswerRecord | None = None) -> None:
    color = out.isatty() and not os.environ.get("NO_COLOR")
    if record is not None:
        out.write(f"record:   {record.name}\n")
    out.write(f"answer:   {_marked(verdict.original_answer, verdict.spans, color=color)}\n")
    out.write(f"verdict:  {_verdict_line(verdict)}\n")
    if verdict.detection is not None and verdict.checked:
        out.write(f"coverage: {_coverage_line(verdict.detection.coverage)}\n")
    if verdict.context_not_read:  # left out of the evidence: the detector does not read them
        unread = ", ".join(f"{p.index} ({p.language})" for p in verdict.context_not_read)
        out.write(
            f"not read: context passage(s) {unread}, in a language the detector does not read\n"
        )
    if verdict.spans:
        out.write(f"{'start':>6} {'end':>6} {'conf':>6}  {'what':<13}  text\n")
        for span in verdict.spans:
            what = span.nli_label or "unexplained"
            out.write(
                f"{span.start:>6} {span.end:>6} {span.confidence:>6.3f}  {what:<13}  {span.text}\n"
            )
    # Never marked in the answer: these are not findings, and must not read as ones.
    for label, spans in (
        ("below the threshold (not flagged)", verdict.below_threshold_spans),
        ("cleared by NLI (entailed by the context)", verdict.dropped_spans),
    ):
        if spans:
            listed = ", ".join(f'"{s.text}" ({s.confidence:.2f})' for s in spans)
            out.write(f"{label}: {listed}\n")
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
