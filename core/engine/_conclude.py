"""The closing stages of the guard pipeline: verdict, delivery and observation.

:func:`build_verdict` turns one analysed (and maybe mitigated) item into its
:class:`~truthlens_integrations.core.engine.Verdict`; :func:`deliver` (and
:func:`adeliver`) hands it to the audit hook and redacts it when asked;
:func:`observe` records its metrics.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .._decision import NOT_CHECKED_WORDS, AnswerDecision, decide_answer
from .._errors import AuditHookError
from .._metadata import build_metadata
from .._types import Decision, HallucinationSpan
from ..observability import Metrics
from ..observability._logging import log_event
from ..observability._tracing import StageSpan
from ..policy import ResolvedSettings
from ._options import EngineOptions
from ._stages import Item
from ._verdict import (
    CheckReport,
    Findings,
    MitigationReport,
    Verdict,
    mitigation_fields,
    redact_verdict,
)

__all__ = [
    "adeliver",
    "build_verdict",
    "decide",
    "deliver",
    "finish",
    "flagged_note",
    "log_verdict",
    "observe",
    "with_warning",
]


@dataclass(frozen=True)
class _Answer:
    """One answer as judged: its text, kept spans and score."""

    text: str
    kept: list[HallucinationSpan]
    score: float | None


def decide(it: Item) -> AnswerDecision:
    """The decision about ``it``'s answer (``core/_decision.py``): its answer as shown."""
    assert it.route is not None  # set by the routing stage for every item
    final = it.mitigation.final.flagged if it.mitigation is not None else None
    return decide_answer(
        it.route.settings,
        it.detection,
        kept=it.kept,
        grounded=it.data.grounded,
        factual=it.factual,
        partly_read=it.partly_read,
        final_flagged=final,
    )


def _answers(it: Item) -> tuple[_Answer, _Answer]:
    """The original answer and the one to show (the mitigation loop's best, if one ran)."""
    score = it.detection.score if it.detection is not None else None
    first = _Answer(it.data.answer, it.kept, score)
    if it.mitigation is None:
        return first, first
    best = it.mitigation.final
    return first, _Answer(best.answer, best.spans, best.score)


def with_warning(answer: str, warning: str) -> str:
    """The answer followed by the warning, added once even if guarded twice."""
    note = warning.strip()
    if answer.rstrip().endswith(note):
        return answer
    return f"{answer.rstrip()}\n\n{note}"


#: Flagged parts the ``body`` warning names at most, and characters of each.
_NAMED_SPANS = 3
_NAMED_CHARS = 60


#: How the ``body`` warning names a flagged part, by its NLI label: a contradiction is said
#: as one; a neutral span (or one NLI did not label) is what the context does not support.
_CONTRADICTED = "Contradicted by the context"
_UNSUPPORTED = "Not supported by the context"


def _quoted(text: str) -> str:
    short = text if len(text) <= _NAMED_CHARS else text[: _NAMED_CHARS - 3].rstrip() + "..."
    return f'"{short}"'


def flagged_note(warning: str, spans: list[HallucinationSpan]) -> str:
    """The warning line, naming the flagged parts of the answer and what each is.

    Args:
        warning: The policy's ``warning_template``.
        spans: The flagged spans of the answer shown (empty: the warning alone).

    Returns:
        ``warning``, then up to three parts, the most severe first (each severity in
        answer order), grouped by what they are: ``Contradicted by the context: "1950".
        Not supported by the context: "500 meters".`` (`` and 2 more`` after the last).
    """
    note = warning.strip()
    ranked = sorted(spans, key=lambda s: (-(s.severity or 0), s.start))
    kinds: dict[str, str] = {}  # each part once, with what its most severe span says
    for span in ranked:
        text = " ".join(span.text.split())
        contradicted = span.nli_label == "contradiction"
        if text:
            kinds.setdefault(text, _CONTRADICTED if contradicted else _UNSUPPORTED)
    if not kinds:
        return note
    groups: dict[str, list[str]] = {}
    for text, what in list(kinds.items())[:_NAMED_SPANS]:
        groups.setdefault(what, []).append(_quoted(text))
    more = len(kinds) - _NAMED_SPANS
    tail = f" and {more} more" if more > 0 else ""
    said = ". ".join(f"{what}: {', '.join(parts)}" for what, parts in groups.items())
    return f"{note} {said}{tail}."


def _unchecked_note(warning: str, reason: str | None) -> str:
    """The warning of an answer shown with a warning although it was not checked."""
    note = warning.strip()
    return note if reason is None else f"{note} Not checked: {NOT_CHECKED_WORDS[reason]}."


def _output(settings: ResolvedSettings, decided: AnswerDecision, answer: _Answer) -> str | None:
    if decided.blocked:
        return None
    if decided.action == "body":
        if not decided.checked:
            note = _unchecked_note(settings.warning_template, decided.not_checked)
            return with_warning(answer.text, note)
        spans = answer.kept if decided.flagged else []
        return with_warning(answer.text, flagged_note(settings.warning_template, spans))
    if settings.enabled and settings.require_disclaimer:
        return with_warning(answer.text, settings.warning_template)
    return answer.text


def _findings(it: Item, shown: _Answer, decided: AnswerDecision) -> Findings:
    """What detection and NLI found in the answer shown.

    An answer that was not checked has no score and is neither detected nor clean
    (``None``), whatever the detector computed on the way (a partly read answer, one
    shown in another order than it was read): the verdict's rule
    (``Verdict._not_checked_reads_unknown``).
    """
    spans = shown.kept if decided.flagged else []
    # A checked answer under the threshold keeps its marks apart: visible, never a finding.
    below = shown.kept if decided.checked and not decided.flagged else []
    return Findings(
        score=shown.score if decided.checked else None,
        threshold=decided.threshold,
        detected=decided.flagged if decided.checked else None,
        spans=spans,
        dropped_spans=it.dropped,
        below_threshold_spans=below,
        max_severity=max((s.severity or 0 for s in spans), default=0),
        contradiction_count=sum(s.nli_label == "contradiction" for s in spans),
        detection=it.detection,
        claim_check=it.claim_report,
    )


def _check_report(it: Item, settings: ResolvedSettings, decided: AnswerDecision) -> CheckReport:
    """Whether and against what the answer was checked."""
    return CheckReport(
        fact_check_needed=it.factual,
        fact_check_confidence=it.fact_check[1] if it.data.question is not None else None,
        unverified=decided.unverified,
        context_missing=not it.data.grounded,
        enabled=settings.enabled,
        checked=decided.checked,
        not_checked_reason=decided.not_checked,
        context_instructions=it.instructions,
        context_not_read=it.not_read,
    )


def _metadata(verdict: Verdict, *, include_details: bool) -> dict[str, str]:
    """The verdict's ``x-*`` headers."""
    return build_metadata(
        enabled=verdict.enabled,
        mode=verdict.mode,
        score=verdict.score,
        detected=verdict.detected,
        iterations=verdict.iterations,
        latency_ms=verdict.latency_ms["total"],
        fact_check_needed=verdict.fact_check_needed,
        spans=verdict.spans,
        unverified_factual=verdict.unverified,
        context_missing=verdict.context_missing,
        include_details=include_details,
        not_checked_reason=verdict.not_checked_reason,
        context_instructions=len(verdict.context_instructions),
        context_not_read=len(verdict.context_not_read),
    )


def build_verdict(
    it: Item, decided: AnswerDecision, *, total_ms: float, stage: StageSpan, redact: bool
) -> Verdict:
    """The verdict for one item: decision, action, text to show and metadata.

    Args:
        it: The analysed item (routed; detected and mitigated where that ran).
        decided: The decision about its answer (:func:`decide`).
        total_ms: The item's share of the call's time.
        stage: The ``action`` stage span; kept spans are recorded on it.
        redact: Leave span texts out of the metadata and the trace.

    Returns:
        The full (unredacted) verdict.
    """
    assert it.route is not None  # set by the routing stage for every item
    settings = it.route.settings
    first, shown = _answers(it)
    action, blocked = decided.action, decided.blocked
    mitigated = it.mitigation
    mitigation = mitigation_fields(
        mitigated,
        original=it.data.answer,
        original_score=first.score if decided.checked else None,
        flagged=decided.original_flagged,
        final_answer=None if blocked else shown.text,
    )
    if not decided.checked and mitigated is None:
        mitigation["status"] = "not_checked"
    verdict = Verdict(
        decision=Decision.PASS if action is None and mitigated is None else Decision.MITIGATE,
        findings=_findings(it, shown, decided),
        coverage=_check_report(it, settings, decided),
        mitigation=MitigationReport(
            iterations=mitigated.iterations if mitigated is not None else 0, **mitigation
        ),
        mode=settings.mode,
        route=it.route.decision,
        latency_ms={**it.latency_ms, "total": total_ms},
        original_answer=it.data.answer,
        output=_output(settings, decided, shown),
        blocked=blocked,
        action=action,
    )
    include_details = settings.include_hallucination_details and not blocked and not redact
    for span in verdict.spans:
        stage.record_hallucination_span(
            span, action=action or "none", include_details=include_details
        )
    metadata = _metadata(verdict, include_details=include_details)
    return verdict.model_copy(update={"metadata": metadata})


def finish(
    it: Item,
    total_ms: float,
    stage: StageSpan,
    redact: bool,
    metrics: Metrics,
    logger: logging.Logger,
) -> Verdict:
    """Decide, build and log one item's verdict (delivery follows in the caller).

    Args:
        it: The analysed item.
        total_ms: Its share of the call's time.
        stage: The ``action`` stage span.
        redact: The engine's ``redact`` option.
        metrics: Where the mitigation loop's model use is counted.
        logger: The engine's logger (``guard.verdict``).
    """
    decided = decide(it)
    verdict = build_verdict(it, decided, total_ms=total_ms, stage=stage, redact=redact)
    if it.mitigation is not None:
        for use in it.mitigation.cost.models:
            metrics.record_model_use(model=use.model, role=use.role, count=use.calls)
    log_verdict(logger, verdict, dropped=len(it.dropped), why=decided.why)
    return verdict


def log_verdict(
    logger: logging.Logger, verdict: Verdict, *, dropped: int, why: str | None = None
) -> None:
    """Log the verdict as one ``guard.verdict`` event (INFO unless it passed).

    ``why`` is the decision in one line (:attr:`AnswerDecision.why`).
    """
    log_event(
        logger,
        "guard.verdict",
        level=logging.DEBUG if verdict.passed else logging.INFO,
        decision=verdict.decision.value,
        route=verdict.route,
        mode=verdict.mode,
        score=verdict.score,
        spans=len(verdict.spans),
        dropped=dropped,
        action=verdict.action,
        status=verdict.status,
        not_checked=verdict.not_checked_reason,
        iterations=verdict.iterations,
        latency_ms=round(verdict.latency_ms["total"], 3),
        why=why,
    )


def audit(verdict: Verdict, options: EngineOptions) -> Awaitable[object] | None:
    """Hand the full verdict to the audit hook; an async hook's awaitable comes back.

    Raises:
        AuditHookError: If the hook raised (the cause chained, the verdict attached).
    """
    if options.audit_hook is None:
        return None
    try:
        result = options.audit_hook(verdict)
    except Exception as exc:  # the hook is the application's code: any failure
        raise audit_failed(verdict, exc) from exc
    return result if inspect.isawaitable(result) else None


async def await_audit(verdict: Verdict, pending: Awaitable[object]) -> None:
    """Await an async audit hook's result, failures typed as :func:`audit`'s."""
    try:
        await pending
    except Exception as exc:
        raise audit_failed(verdict, exc) from exc


def audit_failed(verdict: Verdict, exc: Exception) -> AuditHookError:
    """The typed error of a failed audit hook."""
    return AuditHookError(
        f"the audit_hook raised {type(exc).__name__}: {exc}; the verdict was not handed out",
        verdict,
    )


def withhold(verdict: Verdict, options: EngineOptions) -> Verdict:
    """The caller's copy of the verdict: withheld text left out.

    A blocked answer's text is withheld unless ``expose_blocked_text`` is set; with
    ``redact`` every hallucinated text is. The caller's copy keeps the full verdict
    for :meth:`Verdict.full`, out of every serialisation.
    """
    hide = options.redact or (verdict.blocked and not options.expose_blocked_text)
    if not hide:
        return verdict
    return redact_verdict(verdict, verdict.metadata)


def deliver(verdict: Verdict, options: EngineOptions) -> Verdict:
    """Audit (running an async hook to completion), then withhold: the sync path."""
    pending = audit(verdict, options)
    if pending is not None:
        run_to_completion(await_audit(verdict, pending))
    return withhold(verdict, options)


async def adeliver(verdict: Verdict, options: EngineOptions) -> Verdict:
    """Audit on the caller's event loop, then withhold: the async path."""
    pending = audit(verdict, options)
    if pending is not None:
        await await_audit(verdict, pending)
    return withhold(verdict, options)


def run_to_completion(coro: Coroutine[Any, Any, None]) -> None:
    """Run ``coro`` from sync code, also when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    # A sync guard() called on a running loop's thread: a loop of its own in a worker
    # thread, since this one cannot be re-entered.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coro).result()


def observe(verdict: Verdict, metrics: Metrics) -> None:
    """Record the verdict's detection and per-stage latency metrics."""
    ran = verdict.detection is not None
    metrics.record_detection(
        decision=verdict.route,
        mode=verdict.mode,
        detected=verdict.detected,
        score=verdict.score,
        iterations=verdict.iterations if ran else None,
    )
    for operation, ms in verdict.latency_ms.items():
        metrics.observe_latency(mode=verdict.mode, operation=operation, seconds=ms / 1000)
