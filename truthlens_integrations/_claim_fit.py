"""The claim checker in the cascade, fitted and measured on labelled answers.

``truthlens calibrate --config`` (:func:`fit_cascade`) and ``truthlens eval --config``
(:func:`cascade_columns`) read the checker the policy's ``hallucination.claim_check``
block names, on the answers the cascade would send it (``when`` and ``band``), and score
them as the engine does (``combined_score``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CascadeFit",
    "ClaimCheckFit",
    "cascade_columns",
    "compare_cascade",
    "fit_cascade",
    "load_claim_check",
]


@dataclass(frozen=True)
class ClaimCheckFit:
    """A loaded claim checker and the policy's ``claim_check`` block (``ClaimCheckSettings``).

    ``progress``: show a progress bar while the checker reads (a server judge may take
    seconds an answer).
    """

    checker: Any
    settings: Any
    progress: bool = False

    def read(self, answers: Sequence[Any]) -> list[Any]:
        """Each answer's ``ClaimReading``, one answer at a time under a progress bar."""
        from truthlens_integrations.core._adapter_api import read_claims

        if not self.progress:
            return read_claims(self.checker, answers)
        from tqdm.auto import tqdm

        bar = tqdm(answers, desc="claim check", unit="answer")
        return [reading for answer in bar for reading in read_claims(self.checker, [answer])]


def load_claim_check(
    config: Path | None, calibration: str | None = None, *, progress: bool = False
) -> ClaimCheckFit | None:
    """The claim checker a ``--config`` policy names, loaded; ``None`` without ``--config``.

    Args:
        config: The policy file (``--config``).
        calibration: A calibration file (``--calibration``): when it was fitted with a
            claim checker, the policy must name the same one, and the file gives its
            weight and bias, as on a route.
        progress: Show a progress bar while the checker reads.

    Raises:
        InvalidInputError: If the file is missing or has no ``claim_check`` block, or a
            calibration file fitted with a checker comes without ``--config``.
        ConfigError: If the calibration file was fitted with another checker.
    """
    from truthlens_integrations.core import ConfigError, InvalidInputError
    from truthlens_integrations.core._adapter_api import (
        fitted_cascade,
        load_calibration_file,
        load_claim_checker,
        read_fitted_claim_check,
    )
    from truthlens_integrations.core.policy import load_policy

    fitted = None
    if calibration is not None:
        fitted = read_fitted_claim_check(load_calibration_file(calibration), calibration)
    if config is None:
        if fitted is not None:
            raise InvalidInputError(
                f"--calibration {calibration} was fitted with the claim checker "
                f"{fitted.checker!r} in a cascade: pass --config with the policy that names it"
            )
        return None
    if not config.is_file():
        raise InvalidInputError(f"--config {config}: no such policy file")
    policy = load_policy(config)
    settings = policy.hallucination.claim_check
    if settings is None:
        raise InvalidInputError(
            f"--config {config} has no hallucination.claim_check block: it names no checker"
        )
    try:
        settings = fitted_cascade(settings, fitted) or settings
    except ConfigError as exc:
        raise ConfigError(f"--calibration {calibration} {exc}") from None
    return ClaimCheckFit(load_claim_checker(policy), settings, progress=progress)


@dataclass(frozen=True)
class CascadeFit:
    """What :func:`fit_cascade` fitted.

    Attributes:
        block: The ``claim_check`` block to store, with the fitted weight and bias.
        scores: Each answer's score under the cascade.
        threshold: The threshold on those scores.
        metrics: What the fit read and measured (in sample).
    """

    block: dict[str, Any]
    scores: list[float]
    threshold: float
    metrics: dict[str, Any]


def fit_cascade(
    claim_check: ClaimCheckFit,
    answers: Sequence[Any],
    scores: Sequence[float],
    labels: Sequence[bool],
    *,
    threshold: float,
    target_precision: float | None,
    max_false_alarm_rate: float | None,
) -> CascadeFit:
    """Fit the checker's weight and bias, then the threshold on the cascade's scores.

    Args:
        claim_check: The checker and the policy's block.
        answers: The answers the detector checked (``DetectionInput``).
        scores: Their calibrated detector scores.
        labels: ``True`` for an answer with an unsupported claim.
        threshold: The detector's own threshold (the one ``when: flagged`` sends at,
            kept for that cascade: it sends only what the detector flags).
        target_precision: As for the detector's threshold.
        max_false_alarm_rate: As for the detector's threshold.

    Raises:
        InvalidInputError: Too few answers of a label among those the checker read.
    """
    from truthlens_integrations.core._adapter_api import combined_score, threshold_for
    from truthlens_integrations.evaluation import auroc

    settings = claim_check.settings
    sent = [i for i, s in enumerate(scores) if settings.sends(s, threshold)]
    name = _name(claim_check.checker)
    print(f"truthlens: the claim checker {name} reads {len(sent)} answers", file=sys.stderr)
    readings = claim_check.read([answers[i] for i in sent])
    usable = [(i, r.worst) for i, r in zip(sent, readings, strict=True) if r.worst is not None]
    fit = _fit_weight(settings, usable, scores, labels)
    final = list(scores)
    for i, worst in usable:
        final[i] = combined_score(scores[i], worst, fit.weight, fit.bias)
    if settings.when != "flagged":
        threshold = threshold_for(
            final,
            labels,
            target_precision=target_precision,
            max_false_alarm_rate=max_false_alarm_rate,
        )
    block = settings.model_dump(mode="json", exclude_unset=True)
    block.update(weight=round(fit.weight, 6), bias=round(fit.bias, 6))
    metrics = {
        "checker": name,
        "sent": len(sent),
        "judged": len(usable),
        "not_judged": sum(not r.complete for r in readings),
        "auroc_detector": round(auroc(labels, scores), 4),
        "auroc_cascade": round(auroc(labels, final), 4),
    }
    return CascadeFit(block=block, scores=final, threshold=threshold, metrics=metrics)


def _fit_weight(
    settings: Any, usable: list[tuple[int, float]], scores: Sequence[float], labels: Sequence[bool]
) -> Any:
    """The claim term fitted on the answers the checker judged (``usable``: index, worst).

    Raises:
        InvalidInputError: Too few of a label, with what would send the checker more.
    """
    from truthlens_integrations.core import InvalidInputError
    from truthlens_integrations.core._adapter_api import fit_claim_weight

    try:
        return fit_claim_weight(
            [scores[i] for i, _ in usable], [w for _, w in usable], [labels[i] for i, _ in usable]
        )
    except InvalidInputError as exc:
        hint = " (widen band, or send more with when: always)" if settings.when != "always" else ""
        raise InvalidInputError(f"{exc}{hint}") from None


def cascade_columns(
    claim_check: ClaimCheckFit,
    answers: Sequence[Any],
    scores: Sequence[float | None],
    threshold: float,
) -> tuple[list[float | None], list[float | None], int]:
    """The checker alone and the cascade, per answer, beside the detector's scores.

    The checker reads every answer (to be measured alone); the cascade uses its reading
    only where the policy would send the answer. An answer whose claims the checker did
    not all judge is ``None`` (not checked) for the checker alone, and for the cascade
    when what was judged does not flag it: the engine's rule.

    Args:
        claim_check: The checker and the policy's block (its weight, bias, band).
        answers: Every answer (``DetectionInput``).
        scores: The detector's scores (``None``: not checked).
        threshold: The route's threshold.

    Returns:
        The checker-alone scores, the cascade's scores, and how many answers the cascade
        sent to the checker.
    """
    from truthlens_integrations.core._adapter_api import combined_score

    settings = claim_check.settings
    readings = claim_check.read(answers)
    alone: list[float | None] = []
    cascade: list[float | None] = []
    sent = 0
    for score, reading in zip(scores, readings, strict=True):
        alone.append(
            1.0 - reading.worst if reading.complete and reading.worst is not None else None
        )
        if reading.complete and reading.worst is None:
            alone[-1] = 0.0  # no claim to read: nothing unsupported
        if score is None or not settings.sends(score, threshold):
            cascade.append(score)
            continue
        sent += 1
        if reading.worst is None:
            cascade.append(score if reading.complete else None)
            continue
        value = combined_score(score, reading.worst, settings.weight, settings.bias)
        cascade.append(value if reading.complete or value >= threshold else None)
    return alone, cascade, sent


def compare_cascade(
    claim_check: ClaimCheckFit, answers: Sequence[Any], report: Any, lexical: Sequence[float | None]
) -> Any:
    """The checker alone and the cascade beside the detector and the lexical reference.

    Args:
        claim_check: The checker and the ``claim_check`` block to run it with.
        answers: The report's answers (``DetectionInput``), in its order.
        report: The detector's :class:`EvalReport` on them.
        lexical: The lexical reference's scores on them.

    Returns:
        A ``CascadeComparison`` for the report's ``claim_check``.
    """
    import time

    from truthlens_integrations.evaluation._runner import CascadeComparison

    gold = [p.gold for p in report.predictions]
    detector = [p.score for p in report.predictions]
    threshold = float(report.config.threshold)
    started = time.perf_counter()
    alone, cascade, sent = cascade_columns(claim_check, answers, detector, threshold)
    seconds = time.perf_counter() - started
    columns = {
        "detector": detector,
        "lexical reference": list(lexical),
        f"checker alone ({_name(claim_check.checker)})": alone,
        "cascade": cascade,
    }
    return CascadeComparison(
        checker=_name(claim_check.checker),
        settings=claim_check.settings.model_dump(mode="json", exclude_unset=True)
        | {"weight": claim_check.settings.weight, "bias": claim_check.settings.bias},
        threshold=threshold,
        sent=sent,
        checker_seconds=round(seconds, 2),
        systems=[_system(name, gold, scores, threshold) for name, scores in columns.items()],
    )


def _name(checker: Any) -> str:
    return str(getattr(checker, "name", type(checker).__name__))


def _system(
    name: str, gold: Sequence[bool], scores: Sequence[float | None], threshold: float
) -> Any:
    """One system's figures over the answers it checked."""
    from truthlens_integrations.evaluation import auroc
    from truthlens_integrations.evaluation._runner import SystemScores

    kept = [(g, s) for g, s in zip(gold, scores, strict=True) if s is not None]
    labels = [g for g, _ in kept]
    wrong = [s >= threshold for g, s in kept if g]
    right = [s >= threshold for g, s in kept if not g]
    return SystemScores(
        system=name,
        auroc=round(auroc(labels, [s for _, s in kept]), 4)
        if 0 < sum(labels) < len(labels)
        else None,
        caught=round(sum(wrong) / len(wrong), 4) if wrong else None,
        flagged=round(sum(right) / len(right), 4) if right else None,
        not_checked=len(scores) - len(kept),
    )
