"""``truthlens calibrate``: fit the response map and a threshold on a user's labelled answers.

The main CLI (:mod:`truthlens_integrations._cli`) calls :func:`add_calibrate_parser`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._claim_fit import ClaimCheckFit, fit_cascade, load_claim_check

__all__ = ["add_calibrate_parser", "calibrate", "run_calibrate_command"]

#: Below this many checked answers of a label the fit still runs (from 2), with a
#: warning: a map fitted on a handful of labels follows their noise.
FEW_PER_LABEL = 20


def add_calibrate_parser(subparsers: Any) -> None:
    """Add the ``calibrate`` subcommand to the ``truthlens`` subparsers."""
    p = subparsers.add_parser(
        "calibrate",
        help="fit the response score and threshold on your own labelled answers",
        description="""Run a detector over labelled answers (the answer file detect and eval read:
        JSON lines of context, question, answer and label, 1 = the answer has an unsupported claim,
        0 = it is supported; optional id, spans, task_type), fit the response map on them (length
        safe: adding sentences never lowers a score) and pick the threshold for a precision target
        or a false-alarm cap (default 0.5). Writes a file a policy route can point to
        (calibration: path/to/calib.json). A bad record is named by its line.""",
    )
    p.add_argument("--data", type=Path, required=True, help="the labelled .jsonl file")
    p.add_argument("--out", type=Path, required=True, help="the calibration file to write")
    target = p.add_mutually_exclusive_group()
    target.add_argument(
        "--target-precision",
        type=float,
        help="lowest threshold at which at least this share of flagged answers is unsupported",
    )
    target.add_argument(
        "--max-false-alarm-rate",
        type=float,
        help="lowest threshold that flags at most this share of the supported answers",
    )
    p.add_argument(
        "--model",
        default=os.environ.get("TRUTHLENS_MODEL", "bundled"),
        help="'bundled' (default), a model folder or a hub id",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="a policy file whose hallucination.claim_check block names a claim checker: "
        "fit the checker's weight in the cascade too, and the threshold on the cascade's score",
    )
    p.add_argument("--device", help="cpu, cuda, mps (default: best available)")
    p.add_argument("--batch-size", type=int, default=16, help="answers per detector call")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(handler=run_calibrate_command)


def calibrate(
    detector: Any,
    examples: Sequence[Any],
    *,
    model: str,
    target_precision: float | None = None,
    max_false_alarm_rate: float | None = None,
    batch_size: int = 16,
    progress: bool = False,
    names: Sequence[str] | None = None,
    claim_check: ClaimCheckFit | None = None,
) -> dict[str, Any]:
    """Fit a calibration file's contents from labelled examples.

    Args:
        detector: A detector that reports token probabilities (``detect_batch``).
        examples: :class:`~truthlens_integrations.evaluation.EvalExample` records.
        model: The model name stored in the file.
        target_precision: Choose the threshold for this precision.
        max_false_alarm_rate: Choose the threshold for this false-alarm cap.
        batch_size: Answers per detector call.
        progress: Show a progress bar.
        names: How messages name each example (``file:line``; by default its id).
        claim_check: A claim checker and the policy's ``claim_check`` block: the file then
            holds its fitted weight, and the cascade's threshold.

    Returns:
        The file's JSON object (validated by :class:`CalibrationFile` when read).

    Raises:
        InvalidInputError: Too few checkable answers of a label, or no threshold meets
            the target.
    """
    from truthlens_integrations.core._adapter_api import CALIBRATION_FORMAT, threshold_for

    fitted = _fit(detector, examples, names, batch_size, progress=progress)
    calibration, checked, labels, scores, partly_read = fitted
    target = {"target_precision": target_precision, "max_false_alarm_rate": max_false_alarm_rate}
    threshold = threshold_for(scores, labels, **target)
    cascade = None
    if claim_check is not None:
        cascade = fit_cascade(claim_check, checked, scores, labels, threshold=threshold, **target)
        scores, threshold = cascade.scores, cascade.threshold
    metrics = _fit_metrics(
        labels, scores, threshold, answers=len(examples), partly_read=len(partly_read)
    )
    content = {
        "format": CALIBRATION_FORMAT,
        "model": model,
        "response_calibration": calibration.to_config(
            f"{len(labels)} labelled answers ({sum(labels)} unsupported)"
        ),
        "threshold": round(threshold, 6),
        "token_threshold": float(detector.config.token_threshold),
        "target": {k: v for k, v in _chosen(target).items() if v is not None},
        "metrics": metrics | ({"claim_check": cascade.metrics} if cascade else {}),
        **({"claim_check": cascade.block} if cascade else {}),
    }
    _check_loadable(content)
    return content


def _chosen(target: dict[str, float | None]) -> dict[str, float | None]:
    """The threshold's target as the file names it."""
    return {
        "precision": target["target_precision"],
        "false_alarm_rate": target["max_false_alarm_rate"],
    }


def _fit(
    detector: Any,
    examples: Sequence[Any],
    names: Sequence[str] | None,
    batch_size: int,
    *,
    progress: bool,
) -> tuple[Any, list[Any], list[bool], list[float], list[str]]:
    """The map fitted on the checked answers.

    Returns:
        The map, the checked answers (detector inputs), their labels and scores, and
        what was left out.
    """
    from truthlens_integrations.core._adapter_api import fit_response_map

    names = names if names is not None else [f"id {e.id}" for e in examples]
    signals, checked, labels, partly_read, no_context = _checked_signals(
        detector, examples, names, batch_size, progress=progress
    )
    _check_enough(labels, answers=len(examples), partly_read=partly_read, no_context=no_context)
    calibration = fit_response_map(signals, labels)
    return calibration, checked, labels, [calibration.score(s) for s in signals], partly_read


def _check_enough(
    labels: list[bool], *, answers: int, partly_read: Sequence[str], no_context: int
) -> None:
    """Warn of answers left out and of few labels; refuse too few (see the parts)."""
    _warn_if_partly_read(partly_read)
    _refuse_if_too_few(labels, answers=answers, partly_read=len(partly_read), no_context=no_context)
    _warn_if_few(labels)


def _warn_if_partly_read(names: Sequence[str]) -> None:
    if names:
        more = ", ..." if len(names) > 5 else ""
        _warn(
            f"left out {len(names)} answer(s) the detector could not read in full "
            f"({', '.join(names[:5])}{more}): "
            "a map fitted on part of an answer would misjudge the whole"
        )


def _refuse_if_too_few(
    labels: list[bool], *, answers: int, partly_read: int, no_context: int
) -> None:
    """Refuse a fit without 2 checked answers of each label, saying why they are missing.

    Raises:
        InvalidInputError: Counting the answers that could not be checked and why.
    """
    from truthlens_integrations.core import InvalidInputError

    unsupported = sum(labels)
    supported = len(labels) - unsupported
    if unsupported >= 2 and supported >= 2:
        return
    unreadable = answers - len(labels) - partly_read - no_context
    why = []
    if no_context:
        why.append(f"{no_context} had no context to check them against")
    if unreadable:
        why.append(f"{unreadable} the detector could not read")
    if partly_read:
        why.append(f"{partly_read} the detector could read only in part")
    left_out = f" ({'; '.join(why)})" if why else ""
    raise InvalidInputError(
        f"a map needs at least 2 checked answers of each label; of {answers} labelled "
        f"answers, {len(labels)} could be checked{left_out}: {unsupported} with label 1 "
        f"(an unsupported claim) and {supported} with label 0 (supported)"
    )


def _check_loadable(content: dict[str, Any]) -> None:
    """Refuse to write a file a policy would refuse to load (e.g. a map that ignores the detector).

    Raises:
        InvalidInputError: Saying why, and what to do.
    """
    from pydantic import ValidationError

    from truthlens_integrations.core import ConfigError, InvalidInputError
    from truthlens_integrations.core._adapter_api import (
        CalibrationFile,
        check_flags_planted_file,
    )

    try:
        check_flags_planted_file(CalibrationFile.model_validate(content), where="it")
    except ValidationError as exc:
        problem = exc.errors(include_url=False, include_input=False)[0]["msg"]
        raise InvalidInputError(
            f"the fitted map cannot be used: {problem.removeprefix('Value error, ')}; the "
            "labels may not separate on what the detector reads (label more answers)"
        ) from None
    except ConfigError as exc:
        raise InvalidInputError(
            f"the fitted map cannot be used: {exc}; the labels may not separate on what the "
            "detector reads (label more answers)"
        ) from None


def _warn(message: str) -> None:
    print(f"truthlens: warning: {message}", file=sys.stderr)


def _warn_if_few(labels: list[bool]) -> None:
    unsupported = sum(labels)
    fewest = min(unsupported, len(labels) - unsupported)
    if 2 <= fewest < FEW_PER_LABEL:
        _warn(
            f"fitted on {unsupported} unsupported and {len(labels) - unsupported} supported "
            f"answers: with fewer than {FEW_PER_LABEL} of each label the map and threshold "
            "follow these few examples and may not hold on new answers; label more"
        )


def _checked_signals(
    detector: Any, examples: Sequence[Any], names: Sequence[str], batch_size: int, *, progress: bool
) -> tuple[list[Any], list[Any], list[bool], list[str], int]:
    """The response signals and labels of the answers the detector read in full.

    Returns:
        The signals, inputs and labels of those answers, and the names (``file:line``)
        of the answers left out because the detector read only part of them (it flagged
        what it read), and how many answers had no context at all.
    """
    from truthlens_integrations.core._adapter_api import answer_signals, covered
    from truthlens_integrations.evaluation._runner import _run_batched

    run = _run_batched(
        examples,
        lambda batch: detector.detect_batch([e.to_input() for e in batch]),
        batch_size=batch_size,
        progress=progress,
        desc="calibrate",
        what="detector",
    )
    token_threshold = float(detector.config.token_threshold)
    min_coverage = float(getattr(detector.config, "min_coverage", 0.8))
    signals, checked, labels, partly_read, no_context = [], [], [], [], 0
    for example, name, result in zip(examples, names, run.outputs, strict=True):
        item = example.to_input()
        if not result.grounded:  # an answer that could not be checked teaches the map nothing
            no_context += not item.grounded
            continue
        if not covered(item.answer, result.coverage, min_coverage):
            partly_read.append(name)
            continue
        signals.append(answer_signals(item, result.tokens, token_threshold=token_threshold))
        checked.append(item)
        labels.append(example.hallucinated)
    return signals, checked, labels, partly_read, no_context


def _fit_metrics(
    labels: list[bool], scores: list[float], threshold: float, *, answers: int, partly_read: int
) -> dict[str, Any]:
    """What the fitted map does on the labelled answers (in sample), and what was left out."""
    from truthlens_integrations.evaluation import auroc, expected_calibration_error
    from truthlens_integrations.evaluation._metrics import reliability_bins

    flagged = [s >= threshold for s in scores]
    clean = [f for f, gold in zip(flagged, labels, strict=True) if not gold]
    bad = [f for f, gold in zip(flagged, labels, strict=True) if gold]
    hits = sum(bad)
    return {
        "answers": answers,
        "checked": len(labels),
        "unverifiable": answers - len(labels) - partly_read,
        "partly_read": partly_read,
        "unsupported": sum(labels),
        "auroc_in_sample": round(auroc(labels, scores), 4),
        "ece_in_sample": round(expected_calibration_error(reliability_bins(labels, scores)), 4),
        "precision": round(hits / sum(flagged), 4) if any(flagged) else None,
        "recall": round(hits / len(bad), 4),
        "false_alarm_rate": round(sum(clean) / len(clean), 4),
    }


def run_calibrate_command(args: argparse.Namespace) -> int:
    """Handle ``truthlens calibrate``: read, detect, fit, write; print what was measured."""
    from truthlens_integrations.core import InvalidInputError
    from truthlens_integrations.core.models.detection import load_detector
    from truthlens_integrations.evaluation._answer_file import labelled_records

    for name in ("target_precision", "max_false_alarm_rate"):
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and 0.0 < value < 1.0):
            flag = "--" + name.replace("_", "-")
            raise InvalidInputError(f"{flag} must be between 0 and 1, got {value}")
    _check_out(args.out)
    # one reader for detect, calibrate and eval: a bad or over-long record is named by its line
    records = labelled_records(args.data)
    examples = [record.example() for record in records]
    options: dict[str, Any] = {"batch_size": args.batch_size, "early_exit": False}
    if args.device:
        options["device"] = args.device
    claim_check = load_claim_check(args.config, progress=not args.no_progress)
    detector = load_detector(args.model, aggregation="max", **options)
    content = calibrate(
        detector,
        examples,
        model=str(args.model),
        target_precision=args.target_precision,
        max_false_alarm_rate=args.max_false_alarm_rate,
        batch_size=args.batch_size,
        progress=not args.no_progress,
        names=[record.name for record in records],
        claim_check=claim_check,
    )
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"--out {args.out}: cannot write it: {exc.strerror}") from None
    m = content["metrics"]
    print(
        f"fitted on {m['checked']} answers ({m['unsupported']} unsupported, "
        f"{m['unverifiable']} not checkable, {m['partly_read']} partly read): "
        f"threshold {content['threshold']:.3f}, "
        f"precision {m['precision']}, recall {m['recall']}, false alarms {m['false_alarm_rate']}, "
        f"AUROC {m['auroc_in_sample']} (in sample)"
    )
    if "claim_check" in m:
        c = m["claim_check"]
        print(
            f"claim checker {c['checker']}: read {c['sent']} answers ({c['judged']} judged), "
            f"weight {content['claim_check']['weight']:.3f}, bias "
            f"{content['claim_check']['bias']:.3f}; AUROC in sample {c['auroc_detector']} "
            f"(detector) -> {c['auroc_cascade']} (cascade)"
        )
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _check_out(out: Path) -> None:
    """Refuse an ``--out`` that cannot be a file, before the detector runs.

    Raises:
        InvalidInputError: If it is a folder, or a folder above it is a file.
    """
    from truthlens_integrations.core import InvalidInputError

    if out.is_dir():
        raise InvalidInputError(f"--out {out} is a folder; give the file to write (calib.json)")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InvalidInputError(f"--out {out}: {parent} is a file, not a folder")
            break
