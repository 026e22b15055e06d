"""The guard's decision about one answer, made in one place.

Whether an answer is flagged, whether it counts as unverified, which action follows
(``header``, ``body``, ``block``, ``none`` or nothing) and so whether it is blocked:
every part of the package that needs one of these asks this module, and nothing else
decides them.

- The policy resolves a route's settings with its rules: which threshold a route
  flags at (:func:`route_threshold`) and what an answer that could not be checked gets
  (:func:`unverified_action`).
- The engine decides each answer with :func:`decide_answer`, which returns one frozen
  :class:`AnswerDecision` (flagged, unverified, action, blocked, the threshold used and
  why); its stages ask :func:`flagged` and :func:`detected_at` on the way (the NLI stage
  runs only for an answer that reaches the threshold, the mitigation loops judge each
  candidate answer the same way).

The module reads the detection result and the route's resolved settings only; it is
in the core's shared base, below the policy and the engine, so both use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ._types import DetectionResult, DetectionStatus, HallucinationSpan

__all__ = [
    "NOT_CHECKED_WORDS",
    "Action",
    "AnswerDecision",
    "DecisionSettings",
    "NotCheckedReason",
    "decide_answer",
    "detected_at",
    "flagged",
    "not_checked_reason",
    "reaches",
    "route_threshold",
    "unverified_action",
]

Action = Literal["header", "body", "block", "none"]
"""What the guard does with an answer: annotate the metadata (``header``), append a
warning (``body``), withhold it (``block``) or pass it through (``none``)."""

NotCheckedReason = Literal["disabled", "non_factual", "no_grounding", "unverifiable", "language"]
"""Why an answer was not checked: detection is off for the route (``disabled``), the
policy skips non-factual prompts and the classifier found this one non-factual
(``non_factual``), there was no usable grounding (``no_grounding``, also when every
passage carried instructions), the detector could not read the input
(``unverifiable``), or the answer, or every passage of the context, is in a language the
detector does not read (``language``; ``core/_language.py``)."""

#: Each reason in words, as every surface says it (the ``body`` warning, the command line).
NOT_CHECKED_WORDS: dict[str, str] = {
    "disabled": "checking is off for this route",
    "non_factual": "the policy skips non-factual prompts",
    "no_grounding": "there was no context to check it against",
    "unverifiable": (
        "the detector could not read enough of it, or the claim checker could not judge it"
    ),
    "language": "it, or its whole context, is in a language the detector does not read",
}


class DecisionSettings(Protocol):
    """What a decision reads of a route's resolved settings (``ResolvedSettings``)."""

    @property
    def enabled(self) -> bool: ...

    @property
    def threshold(self) -> float: ...

    @property
    def hallucination_action(self) -> Action: ...

    @property
    def unverified_factual_action(self) -> Action: ...


# -- a route's settings ------------------------------------------------------------------


def route_threshold(own: float | None, calibration: float | None, default: float) -> float:
    """The response score threshold a route flags at.

    Args:
        own: The route's own ``response_threshold`` (``None``: unset).
        calibration: The threshold of the route's calibration file, if it has one.
        default: The policy's global ``response_threshold``.
    """
    if own is not None:
        return own
    return calibration if calibration is not None else default


def unverified_action(
    own: Action | None, default: Action | None, hallucination_action: Action
) -> Action:
    """The action for an answer that could not be checked.

    Set explicitly (on the route, then globally) it holds; unset, it follows a ``block``
    hallucination action, because an answer nobody could check must not be shown where
    a wrong one would be withheld ("not checked is never clean").
    """
    chosen = own or default
    if chosen is not None:
        return chosen
    return "block" if hallucination_action == "block" else "header"


# -- one answer ---------------------------------------------------------------------------


def reaches(score: float, threshold: float) -> bool:
    """Whether a response score reaches a threshold (at or above it)."""
    return score >= threshold


def detected_at(result: DetectionResult, threshold: float) -> bool:
    """Whether a checked answer's score reaches ``threshold``.

    The detector's own ``detected`` where it decided at this threshold (a route's
    calibration re-scores the answer and decides at the route's threshold); a detector
    that decided at another threshold has its score read at this one. An answer the
    detector could not check (no score) is not detected: it is *not checked* instead
    (:func:`not_checked_reason`).
    """
    if result.score is None:  # not checked: nothing reaches a threshold
        return False
    if result.threshold == threshold:
        return result.detected
    return reaches(result.score, threshold)


def flagged(result: DetectionResult, kept: Sequence[HallucinationSpan], threshold: float) -> bool:
    """Whether an answer is flagged: its score reaches ``threshold`` (:func:`detected_at`).

    One exception: when the detector marked spans and NLI found every one of them entailed
    (none is ``kept``), the answer passes. A score that reaches the threshold with no span
    at all still flags it (a calibrated score also reads absent words and length, so it
    can be high while no single token is); the verdict then has no span to show.
    """
    if not detected_at(result, threshold):
        return False
    return bool(kept) or not result.spans


def not_checked_reason(
    settings: DecisionSettings,
    detection: DetectionResult | None,
    *,
    grounded: bool,
    kept: Sequence[HallucinationSpan] = (),
    partly_read: bool = False,
) -> NotCheckedReason | None:
    """Why the answer was not checked against grounding, or ``None`` if it was.

    Args:
        settings: The route's resolved settings.
        detection: The detector's result (``None``: the detector did not run).
        grounded: Whether the answer came with usable grounding.
        kept: The spans NLI kept.
        partly_read: Whether the detector read too little of the answer to clear it.
    """
    if not settings.enabled:
        return "disabled"
    if not grounded:
        return "no_grounding"
    if detection is None:
        return "non_factual"
    if detection.status is DetectionStatus.UNVERIFIABLE:
        return "language" if detection.unread_language is not None else "unverifiable"
    if partly_read and not flagged(detection, kept, settings.threshold):
        # flagged on what was read, then cleared by NLI: the unread part is still unchecked
        return "unverifiable"
    return None


@dataclass(frozen=True)
class AnswerDecision:
    """The guard's decision about one answer.

    Attributes:
        flagged: The answer to show is flagged (after a mitigation loop: its answer).
        original_flagged: The answer as given was flagged.
        unverified: A factual answer that could not be checked (no grounding, or the
            detector could not read it, in a language it does not read too): the route's
            ``unverified_factual_action`` applies.
        action: The action that follows, ``None`` when none does.
        blocked: Whether the answer is withheld (``action == "block"``).
        threshold: The response score threshold the answer was judged at.
        not_checked: Why the answer was not checked, ``None`` when it was.
        why: The decision in one line, for logs.
    """

    flagged: bool
    original_flagged: bool
    unverified: bool
    action: Action | None
    blocked: bool
    threshold: float
    not_checked: NotCheckedReason | None
    why: str

    @property
    def checked(self) -> bool:
        """Whether the answer was checked against grounding."""
        return self.not_checked is None


def decide_answer(
    settings: DecisionSettings,
    detection: DetectionResult | None,
    *,
    kept: Sequence[HallucinationSpan] = (),
    grounded: bool,
    factual: bool,
    partly_read: bool = False,
    final_flagged: bool | None = None,
) -> AnswerDecision:
    """Decide one answer: flagged, unverified, the action and whether it is blocked.

    Args:
        settings: The route's resolved settings (threshold and actions).
        detection: The detector's result at the route (``None``: it did not run).
        kept: The spans NLI kept (all of the detector's when NLI did not run).
        grounded: Whether the answer came with usable grounding.
        factual: Whether the prompt is factual (the classifier, after its threshold).
        partly_read: Whether the detector read too little of the answer to clear it.
        final_flagged: Whether the mitigation loop's answer (the one to show) is
            flagged; ``None`` when no loop ran.

    Returns:
        The decision.
    """
    threshold = settings.threshold
    reason = not_checked_reason(
        settings, detection, grounded=grounded, kept=kept, partly_read=partly_read
    )
    # A factual prompt without grounding, or grounding the detector could not read (in a
    # language it does not read, too), is answered but unverified: the route's unverified
    # action applies.
    unverified = settings.enabled and (
        (factual and reason == "no_grounding") or reason in ("unverifiable", "language")
    )
    original = detection is not None and flagged(detection, kept, threshold)
    shown = original if final_flagged is None else final_flagged
    action: Action | None = None
    if shown:
        action = settings.hallucination_action
    elif unverified:
        action = settings.unverified_factual_action
    return AnswerDecision(
        flagged=shown,
        original_flagged=original,
        unverified=unverified,
        action=action,
        blocked=action == "block",
        threshold=threshold,
        not_checked=reason,
        why=_why(detection, kept, threshold, reason, final_flagged),
    )


def _why(
    detection: DetectionResult | None,
    kept: Sequence[HallucinationSpan],
    threshold: float,
    reason: NotCheckedReason | None,
    final_flagged: bool | None,
) -> str:
    """The decision in one line (no answer text: it goes to logs)."""
    if detection is None or detection.score is None:
        return f"not checked: {reason}"
    if reason in ("disabled", "no_grounding", "non_factual", "language"):
        return f"not checked: {reason}"
    score = f"score {detection.score:.3f}"
    if not detected_at(detection, threshold):
        said = f"{score} below the threshold {threshold:g}"
    elif kept or not detection.spans:
        whole = "" if kept else " with no span (the whole answer)"
        said = f"{score} reaches the threshold {threshold:g}{whole}"
    else:
        said = f"{score} reaches the threshold {threshold:g}, every span entailed by NLI"
    if reason is not None:
        said = f"not checked: {reason} ({said})"
    if final_flagged is not None:
        said += "; the mitigated answer is " + ("still flagged" if final_flagged else "clear")
    return said
