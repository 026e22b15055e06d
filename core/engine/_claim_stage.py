"""The cascade's second step: a claim checker reads the answers the detector leaves open.

The policy's ``claim_check`` block says which answers go to the checker (``when``:
those whose detector score lies in ``band``, the flagged ones, or all). For each, the
answer's claims (its sentences that state something, each with its evidence) are read
by the checker in one batch, and:

- the response score combines the detector's and the checker's worst claim through the
  response map's ``claim`` term: ``sigmoid(logit(score) + weight * claim + bias)``, where
  ``claim`` is the logit of the worst claim's probability of *not* being supported;
- a claim the checker rejects becomes a span over the claim, with the checker's label
  (``contradiction`` or ``neutral``), unless a detector span already covers part of it;
- a claim the checker could not judge is *not checked*: an answer with one that is not
  flagged by what was judged is not checked (``unverifiable``, the reason in the
  detector result's ``error``), never clean.

The verdict's ``claim_check`` says which checker read which claims and what it said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._calibration._claim import combined_score
from .._decision import detected_at, flagged
from .._quoting import quoted
from .._types import DetectionResult, DetectionStatus, HallucinationSpan, NLILabel
from ..models.claims import Claim, ClaimChecker, ClaimJudgement, not_checked
from ..models.claims._contract import check_claims
from ..models.claims._extract import answer_claims, evidence_sentences
from ..models.detection._base import unverifiable_result
from ..observability import Metrics, Tracer
from ..policy._settings import ClaimCheckSettings
from ._stages import Item, model_name
from ._verdict import SEVERITY, ClaimCheckReport

__all__ = [
    "ClaimStage",
    "run_claim_check",
    "settle_claim_check",
    "wants_claim_check",
]


@dataclass(frozen=True)
class ClaimStage:
    """The checker and the policy's cascade settings."""

    checker: ClaimChecker
    settings: ClaimCheckSettings


def wants_claim_check(it: Item, settings: ClaimCheckSettings) -> bool:
    """Whether ``it``'s answer goes to the checker (``settings.when``).

    Only answers the detector checked: a score of ``None`` (not checked) stays not
    checked whatever a checker would say.
    """
    detection = it.detection
    if detection is None or it.route is None or detection.score is None:
        return False
    if detection.status is DetectionStatus.UNVERIFIABLE:
        return False
    threshold = it.route.settings.threshold
    if settings.when == "flagged":  # as the detector decided (a rule may flag below the score)
        return detected_at(detection, threshold)
    return settings.sends(detection.score, threshold)


def run_claim_check(
    items: Sequence[Item], stage: ClaimStage, *, tracer: Tracer, metrics: Metrics
) -> None:
    """Read the claims of each item the cascade sends, and fold the judgements in."""
    wanted = [it for it in items if wants_claim_check(it, _settings(it, stage))]
    if not wanted:
        return
    top_k = evidence_sentences(stage.checker)
    claims = [answer_claims(it.data.answer, it.data.context, top_k=top_k) for it in wanted]
    flat = [c for found in claims for c in found]
    name = str(getattr(stage.checker, "name", type(stage.checker).__name__))
    with tracer.stage("claim_check", claims=len(flat)) as span:
        judgements = _judge(stage.checker, name, flat)
    metrics.record_model_use(
        model=model_name(stage.checker, name), role="claim_check", count=len(flat)
    )
    share = span.elapsed_ms / len(wanted)
    start = 0
    for it, found in zip(wanted, claims, strict=True):
        mine = judgements[start : start + len(found)]
        start += len(found)
        it.latency_ms["claim_check"] = share
        _fold(it, mine, name, _settings(it, stage))


def _settings(it: Item, stage: ClaimStage) -> ClaimCheckSettings:
    """The item's route's cascade settings (a route's calibration file fits its own weight)."""
    own = it.route.settings.claim_check if it.route is not None else None
    return own or stage.settings


def _judge(checker: ClaimChecker, name: str, claims: list[Claim]) -> list[ClaimJudgement]:
    """The checker's judgements; a checker that fails leaves every claim not checked."""
    try:
        return check_claims(checker, claims)
    except Exception as exc:  # noqa: BLE001 - a broken checker judges nothing
        # quoted: a message may carry a URL with credentials, or characters that hide
        reason = f"checker error: {type(exc).__name__}: {quoted(exc, limit=240)}"
        return [not_checked(c, name, reason) for c in claims]


def _fold(
    it: Item, judgements: list[ClaimJudgement], name: str, settings: ClaimCheckSettings
) -> None:
    """The item's score, spans and report after the checker's judgements."""
    detection = it.detection
    assert detection is not None
    assert detection.score is not None
    assert it.route is not None
    threshold = it.route.settings.threshold
    checked = [j for j in judgements if j.checked]
    result = detection
    if checked:
        worst = min(j.supported for j in checked if j.supported is not None)
        result = _rescored(detection, worst, settings, threshold)
    it.claim_report = ClaimCheckReport(
        checker=name,
        when=settings.when,
        detector_score=detection.score,
        score=result.score,
        judgements=judgements,
    )
    it.detection = result
    it.claim_spans = [_span(j) for j in checked if j.rejected]


def settle_claim_check(items: Sequence[Item]) -> None:
    """After NLI: add the rejected claims' spans, and leave open what the checker could not judge.

    An answer with a claim the checker could not judge is flagged only by what was
    judged; when that does not flag it (NLI may have cleared the detector's spans), it
    is not checked, never clean.
    """
    for it in items:
        rejected = [s for s in it.claim_spans if not _overlaps(s, it.kept)]
        it.kept = sorted([*it.kept, *rejected], key=lambda span: span.start)
        report, detection = it.claim_report, it.detection
        if report is None or detection is None or it.route is None or not report.not_checked:
            continue
        threshold = it.route.settings.threshold
        if flagged(detection, it.kept, threshold):
            continue
        it.detection = _not_judged(it, detection, report.judgements, threshold)
        it.kept = []
        it.claim_report = report.model_copy(update={"score": None})


def _rescored(
    detection: DetectionResult, worst: float, settings: ClaimCheckSettings, threshold: float
) -> DetectionResult:
    """The detector's result with the combined score, decided at the route's threshold."""
    score = combined_score(detection.score or 0.0, worst, settings.weight, settings.bias)
    return detection.model_copy(
        update={"score": score, "threshold": threshold, "detected": score >= threshold}
    )


def _not_judged(
    it: Item, result: DetectionResult, judgements: list[ClaimJudgement], threshold: float
) -> DetectionResult:
    """Not checked: the checker could not judge every claim, and what it judged clears it."""
    missing = [j for j in judgements if not j.checked]
    reasons = sorted({j.reason or "" for j in missing})
    return unverifiable_result(
        it.data,
        coverage=result.coverage,
        threshold=threshold,
        model_id=result.model_id,
        latency_ms=result.latency_ms,
        error=(
            f"claim check: {len(missing)} of {len(judgements)} claims were not judged "
            f"({'; '.join(reasons)[:300]})"
        ),
    )


def _span(judgement: ClaimJudgement) -> HallucinationSpan:
    claim = judgement.claim
    label: NLILabel = "contradiction" if judgement.label == "contradiction" else "neutral"
    confidence = 1.0 - (judgement.supported or 0.0)
    return HallucinationSpan(
        start=claim.start,
        end=claim.end,
        text=claim.text,
        confidence=confidence,
        nli_label=label,
        nli_confidence=confidence,
        severity=SEVERITY[label],
    )


def _overlaps(span: HallucinationSpan, kept: Sequence[HallucinationSpan]) -> bool:
    """Whether a detector span the user sees already covers part of the claim."""
    return any(s.start < span.end and span.start < s.end for s in kept)
