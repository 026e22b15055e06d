"""The ``truthlens`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
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
            'records hold "context" (string or list), "question" and "answer".'
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
    p.add_argument("--json", action="store_true", help="print JSON (one line per record)")
    p.add_argument("--tokens", action="store_true", help="include per-token scores in JSON")
    p.set_defaults(handler=_run_detect)


def _run_detect(args: argparse.Namespace) -> int:
    from truthlens_integrations.core.detection import load_detector

    records = list(_records(args))
    options: dict[str, Any] = {"batch_size": args.batch_size}
    if args.device:
        options["device"] = args.device
    if args.token_threshold is not None:
        options["token_threshold"] = args.token_threshold
    if args.threshold is not None:
        options["threshold"] = args.threshold
    detector = load_detector(args.model, **options)
    results = _detect_all(detector, records, progress=args.input is not None)
    for result in results:
        if args.json:
            print(json.dumps(_as_json(result, tokens=args.tokens), ensure_ascii=False))
        else:
            _print_table(result, sys.stdout)
    return 0


def _records(args: argparse.Namespace) -> Iterator[DetectionInput]:
    if args.input is None:
        if args.answer is None:
            raise _usage("give --answer (with --context and --question) or --input FILE")
        yield DetectionInput.create(
            context=args.context, question=args.question, answer=args.answer
        )
        return
    if not args.input.is_file():
        raise _usage(f"no such file: {args.input}")
    text = args.input.read_text(encoding="utf-8")
    if args.input.suffix == ".jsonl":
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        loaded = json.loads(text)
        rows = loaded if isinstance(loaded, list) else [loaded]
    for n, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise _usage(f"{args.input} record {n} is not a JSON object")
        answer = row.get("answer")
        if not isinstance(answer, str):
            raise _usage(f"{args.input} record {n} has no text 'answer'")
        yield DetectionInput.create(
            context=row.get("context"), question=row.get("question"), answer=answer
        )


def _usage(message: str) -> TruthLensError:
    from truthlens_integrations.core import InvalidInputError

    return InvalidInputError(message)


def _detect_all(detector: Any, records: list[DetectionInput], *, progress: bool) -> list[Any]:
    from tqdm import tqdm

    size = detector.config.batch_size
    results: list[DetectionResult] = []
    with tqdm(total=len(records), disable=not progress, unit="answer", file=sys.stderr) as bar:
        for first in range(0, len(records), size):
            chunk = records[first : first + size]
            results.extend(detector.detect_batch(chunk))
            bar.update(len(chunk))
    return results


def _as_json(result: DetectionResult, *, tokens: bool) -> dict[str, Any]:
    exclude = {"answer"} if tokens else {"answer", "tokens"}
    return result.model_dump(mode="json", exclude=exclude)


def _print_table(result: DetectionResult, out: TextIO) -> None:
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
