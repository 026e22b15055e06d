"""``truthlens eval``: measure a detector (or NLI model) on a benchmark.

The main CLI (:mod:`truthlens_integrations._cli`) calls :func:`add_eval_parser`; the
subcommand's handler is stored as ``handler`` in the parsed namespace and returns the
exit code.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any, get_args

from ._claim_fit import compare_cascade, load_claim_check

__all__ = ["add_eval_parser", "add_precision_option", "refuse_model_options", "run_eval_command"]

_DATASETS = (
    "ragtruth",
    "halueval",
    "faithbench",
    "wice",
    "snli",
    "ragtruth_dev_select",
    "ragtruth_dev_train",
    "attributionbench",
    "faithjudge_select",
    "expertqa",
)


def add_eval_parser(subparsers: Any) -> None:
    """Add the ``eval`` subcommand to the ``truthlens`` subparsers.

    Args:
        subparsers: What ``ArgumentParser.add_subparsers`` returned.
    """
    p = subparsers.add_parser(
        "eval",
        help="measure a detector on a benchmark",
        description=(
            "Run a detector over RAGTruth (913-response test subset), HaluEval (held-out "
            "part), FaithBench, WiCE, the RAG answer sets (ragtruth_dev_select / "
            "ragtruth_dev_train: the committed split of ragtruth_dev; attributionbench; "
            "faithjudge_select: FaithJudge answers to the select sources; expertqa), a "
            "labelled JSONL file of your own (--data), or an NLI model over SNLI test, and "
            "report example-, token- and character-level scores, calibration, latency and "
            "threshold curves."
        ),
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", choices=_DATASETS)
    source.add_argument(
        "--data",
        type=Path,
        help="your own labelled answers (.jsonl: context, question, answer, label, spans)",
    )
    p.add_argument(
        "--calibration",
        help="score with the map and threshold of a file truthlens calibrate wrote",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="a policy file whose hallucination.claim_check block names a claim checker: "
        "report it alone and in the cascade, beside the detector and the lexical reference",
    )
    _add_model_options(p)
    p.add_argument(
        "--data-dir",
        type=Path,
        help="benchmark folder (default: $TRUTHLENS_BENCHDATA, else ../shared/benchdata)",
    )
    p.add_argument("--limit", type=int, help="evaluate N examples spread over the data set")
    p.add_argument("--batch-size", type=int, default=16, help="examples per detector call")
    p.add_argument("--threshold", type=float, help="response score that counts as detected")
    p.add_argument("--token-threshold", type=float, help="token probability to flag a token")
    p.add_argument(
        "--halueval-part",
        choices=("heldout", "train", "all"),
        default="heldout",
        help="HaluEval part to read (default: the held-out last 10%% of each file)",
    )
    p.add_argument("--out", type=Path, help="folder for the JSON, markdown and PNG reports")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(handler=run_eval_command)


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """``--model``, ``--device`` and ``--precision``: which model runs, where and how."""
    p.add_argument(
        "--model",
        default=os.environ.get("TRUTHLENS_MODEL", "bundled"),
        help="'bundled' (default), 'lexical', a model folder or a hub id",
    )
    p.add_argument("--device", help="cpu, cuda, mps (default: best available)")
    add_precision_option(p)


def add_precision_option(p: argparse.ArgumentParser) -> None:
    """``--precision``, in the policy's vocabulary (``truthlens eval`` and ``detect``)."""
    from truthlens_integrations.core._adapter_api import Precision

    p.add_argument(
        "--precision",
        choices=get_args(Precision),
        default="auto",
        help="the model's precision, as a policy's 'precision' (default auto: on a CPU the "
        "ONNX int8 graph where the CPU has VNNI, else fp32); float32 gives torch's exact "
        "spans, int8 the int8 graph",
    )


def refuse_model_options(model: str, **flags: str) -> None:
    """Refuse ``--backend`` / ``--precision`` for the lexical reference, which runs no model.

    Raises:
        InvalidInputError: For a flag set to anything but ``auto`` (it would be ignored).
    """
    from truthlens_integrations.core import InvalidInputError
    from truthlens_integrations.core._adapter_api import runs_model

    if runs_model(model):
        return
    for flag, value in flags.items():
        if value != "auto":
            raise InvalidInputError(f"--{flag} applies to model detectors, not to {model!r}")


def _command_line() -> str:
    return "truthlens " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def _detector_options(args: argparse.Namespace) -> dict[str, Any]:
    # Curves, AP and the oracle threshold need every token's exact probability, which
    # early exit gives up for tokens below the token threshold.
    options: dict[str, Any] = {"batch_size": args.batch_size, "early_exit": False}
    if args.threshold is not None:
        options["threshold"] = args.threshold
    if args.token_threshold is not None:
        options["token_threshold"] = args.token_threshold
    from truthlens_integrations.core._adapter_api import runs_model

    if args.device and runs_model(args.model):
        options["device"] = args.device
    if args.precision != "auto":
        options["dtype"] = args.precision
    return options


def _load_detector(model: str, options: dict[str, Any]) -> Any:
    from truthlens_integrations.core.models.detection import load_detector

    return load_detector(model, **options)


def _load_nli(
    model: str, device: str | None, batch_size: int, precision: str
) -> tuple[Any, str, str | None]:
    """An NLI predictor for ``--model``, its name, and what runs it.

    The model is the bundled explainer, the lexical floor, or a Hugging Face NLI model.
    """
    from truthlens_integrations.core import InvalidInputError

    if precision != "auto" and model != "bundled":
        raise InvalidInputError("--precision with snli applies to the bundled NLI model only")
    if model == "lexical":
        from truthlens_integrations.core._adapter_api import lexical_nli

        return lexical_nli, "lexical-nli", None
    if model == "bundled":
        from truthlens_integrations.core.models.nli import BundledNLI

        dtype = None if precision == "auto" else precision
        bundled = BundledNLI(device=device, batch_size=batch_size, dtype=dtype)
        return (
            (lambda pairs: [p.label for p in bundled.predict(pairs)]),
            "bundled-nli",
            bundled.backend,
        )
    from truthlens_integrations.core.models.nli import TransformersNLIExplainer

    explainer = TransformersNLIExplainer(model, device=device, batch_size=batch_size)
    return (lambda pairs: [label for label, _ in explainer.explain(pairs)]), model, None


class _CalibratedDetector:
    """A detector whose response scores come from a calibration file (``--calibration``)."""

    def __init__(self, inner: Any, calibration: str, threshold: float | None) -> None:
        from truthlens_integrations.core import ConfigError
        from truthlens_integrations.core._adapter_api import (
            RouteCalibration,
            check_calibration_detector,
            load_calibration_file,
        )

        self._inner = inner
        self.backend: str | None = getattr(inner, "backend", None)
        file = load_calibration_file(calibration)
        try:
            # A map scores the outputs of the detector it was fitted for, no other.
            check_calibration_detector(file, inner.model_id)
        except ConfigError as exc:
            raise ConfigError(f"--calibration {calibration}: {exc}") from None
        # Read into its map once: the engine rescores a route's answers the same way.
        self._route = RouteCalibration.of(file)
        self._threshold = file.threshold if threshold is None else threshold
        self.model_id = f"{inner.model_id}+{Path(calibration).stem}"
        self.config = inner.config.model_copy(update={"threshold": self._threshold})

    def detect_batch(self, inputs: Any) -> list[Any]:
        results = self._inner.detect_batch(inputs)
        return [
            self._route.rescore(item, result, self._threshold)
            for item, result in zip(inputs, results, strict=True)
        ]


def _detection_report(args: argparse.Namespace, data_dir: Path | None, progress: bool) -> Any:
    """Run the detector of ``--model`` over ``--dataset`` or ``--data``."""
    from truthlens_integrations.evaluation import (
        load_detection_dataset,
        read_labelled_answers,
        run_evaluation,
    )
    from truthlens_integrations.evaluation._readers import subsample

    if args.data is not None:
        examples = subsample(read_labelled_answers(args.data), args.limit)
    else:
        examples = load_detection_dataset(
            args.dataset, data_dir, limit=args.limit, halueval_part=args.halueval_part
        )
    refuse_model_options(args.model, precision=args.precision)
    claim_check = load_claim_check(args.config, args.calibration, progress=progress)
    detector = _load_detector(args.model, _detector_options(args))
    if args.calibration is not None:
        detector = _CalibratedDetector(detector, args.calibration, args.threshold)
    report = run_evaluation(detector, examples, args.batch_size, progress, command=_command_line())
    if claim_check is None:
        return report
    answers = [e.to_input() for e in examples]
    lexical = _load_detector("lexical", {"batch_size": args.batch_size}).detect_batch(answers)
    comparison = compare_cascade(claim_check, answers, report, [r.score for r in lexical])
    return report.model_copy(update={"claim_check": comparison})


def run_eval_command(args: argparse.Namespace) -> int:
    """Handle ``truthlens eval``: load, run, print the markdown table, write reports.

    Args:
        args: The parsed ``eval`` arguments.

    Returns:
        The exit code (0 on success).

    Raises:
        ConfigError: For a missing data folder.
        ModelNotAvailableError: For an NLI model or detector that cannot be found.
    """
    from truthlens_integrations.core import InvalidInputError
    from truthlens_integrations.evaluation import render_markdown, run_nli_evaluation, write_report
    from truthlens_integrations.evaluation._readers import default_data_dir, read_snli, subsample
    from truthlens_integrations.evaluation._runner import EvalReport, NLIReport

    data_dir: Path | None = None
    if args.data is None:
        data_dir = Path(args.data_dir) if args.data_dir is not None else default_data_dir()
    progress = not args.no_progress
    report: EvalReport | NLIReport
    if args.dataset == "snli":
        if args.calibration is not None:
            raise InvalidInputError("--calibration applies to detectors, not to snli")
        predict, model_id, backend = _load_nli(
            args.model, args.device, args.batch_size, args.precision
        )
        assert data_dir is not None  # --dataset snli, so not --data
        pairs = subsample(read_snli(data_dir / "esnli", split="test"), args.limit)
        report = run_nli_evaluation(
            predict,
            pairs,
            args.batch_size,
            progress,
            model_id=model_id,
            dataset_name="snli-test",
            command=_command_line(),
            backend=backend,
        )
    else:
        report = _detection_report(args, data_dir, progress)
    print(render_markdown(report))
    if args.out is not None:
        for path in write_report(report, args.out):
            print(f"wrote {path}", file=sys.stderr)
    return 0
