"""The guard pipeline's result."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from .._decision import NotCheckedReason
from .._types import Decision, DetectionResult, HallucinationSpan, UnreadPassage
from ..mitigation import Iteration, MitigationResult, MitigationStatus, Strategy
from ..mitigation._results import AnswerDiff, CostAccount, diff_answers
from ..models.claims import ClaimJudgement
from ..policy import Action, Mode
from ._injection import ContextFlag

__all__ = [
    "REDACTED",
    "SEVERITY",
    "VERDICT_FIELDS",
    "CheckReport",
    "ClaimCheckReport",
    "Findings",
    "MitigationReport",
    "NotCheckedReason",
    "Verdict",
    "mitigation_fields",
    "redact_verdict",
]

#: What replaces hallucinated text in a redacted verdict.
REDACTED = "[redacted]"

#: Severity of a kept span by its NLI label (HaluGate): a contradiction is worse than
#: a claim the context neither supports nor refutes. An entailment the NLI model is
#: not sure of (below the NLI threshold) keeps the span with the lowest severity.
SEVERITY: dict[str, int] = {"contradiction": 4, "neutral": 2, "entailment": 1}


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ClaimCheckReport(_Part):
    """What the claim checker of the cascade read and said (``claim_check`` in the policy).

    Attributes:
        checker: The checker's name.
        when: Which answers it reads (``uncertain``, ``flagged``, ``always``).
        detector_score: The detector's response score before the checker.
        score: The score after combining the two (``None`` when the answer ended up not
            checked).
        judgements: One per claim of the original answer, in order: probability of
            support, label, quote; or not checked, with the reason.
    """

    checker: str
    when: str
    detector_score: float | None = Field(default=None, ge=0.0, le=1.0)
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    judgements: list[ClaimJudgement] = Field(default_factory=list)

    @property
    def not_checked(self) -> int:
        """Claims the checker could not judge."""
        return sum(not j.checked for j in self.judgements)


class Findings(_Part):
    """What detection and the NLI filter found in the answer shown.

    Attributes:
        score: Detector's response score (of the final answer after mitigation);
            ``None`` when the answer was not checked (never a number then: a score
            reads as a check) or the detector could not score the final answer.
        threshold: Threshold of the route the answer was judged by.
        detected: Whether hallucinations were found; ``None`` (unknown) when the
            answer was not checked.
        spans: Flagged spans that survived the NLI filter, with label and severity;
            never a span labelled ``entailment``.
        dropped_spans: Spans the NLI model found entailed with at least the NLI
            threshold's confidence (false positives), kept here for inspection. A
            weaker entailment counts as ``neutral`` (not confirmed by the context).
        below_threshold_spans: What the detector marked in an answer whose score stayed
            below the threshold: not flagged, not explained by NLI, never a reason to
            act; kept apart from ``spans`` so that it cannot read as a finding. Empty
            for a flagged answer and for one that was not checked.
        max_severity: Highest span severity (0 without spans).
        contradiction_count: Spans labelled ``contradiction``.
        claim_check: What the cascade's claim checker read and said about the original
            answer, when it read it (:class:`ClaimCheckReport`).
        detection: The raw detector result of the original answer, when detection
            ran.
    """

    score: float | None = Field(default=None, ge=0.0, le=1.0)
    threshold: float = Field(ge=0.0, le=1.0)
    detected: bool | None = False
    spans: list[HallucinationSpan] = Field(default_factory=list)
    dropped_spans: list[HallucinationSpan] = Field(default_factory=list)
    below_threshold_spans: list[HallucinationSpan] = Field(default_factory=list)
    max_severity: int = Field(default=0, ge=0, le=4)
    contradiction_count: int = Field(default=0, ge=0)
    detection: DetectionResult | None = None
    claim_check: ClaimCheckReport | None = None


class CheckReport(_Part):
    """Whether the answer could be checked, and against what (the verdict's ``coverage`` group).

    Not the detector's :class:`~truthlens_integrations.core.Coverage` (what part of the
    input the model scored); this one says whether the guard checked the answer at all.

    Attributes:
        fact_check_needed: The prompt classifier's verdict after its threshold.
        fact_check_confidence: The classifier's confidence in its prediction.
        unverified: A factual prompt was answered with no grounding to check
            against.
        context_missing: No context was given.
        enabled: Whether detection is enabled for the answer's route (the policy's
            ``enabled``; ``x-truthlens-enabled``). Whether it ran and checked this
            answer is ``checked``.
        checked: Whether the answer was checked against grounding. ``False`` is
            never clean: ``status`` is ``not_checked``, ``score``, ``detected`` and
            ``original_score`` are ``None``, and the metadata says
            ``x-truthlens-checked: false`` with the reason, score ``n/a`` and
            detected ``unknown``.
        not_checked_reason: Why it was not checked (see :data:`NotCheckedReason`).
        context_instructions: Context passages that carry instructions to the model
            (prompt injection); they were left out of the evidence.
        context_not_read: Context passages in a language the detector does not read
            (its ``languages``), with their language; they were left out of the
            evidence and the answer was checked against the others. When no passage is
            read the answer is not checked (``not_checked_reason="language"``) and this
            lists every passage.
    """

    fact_check_needed: bool
    fact_check_confidence: float | None = None
    unverified: bool = False
    context_missing: bool = False
    enabled: bool
    checked: bool = True
    not_checked_reason: NotCheckedReason | None = None
    context_instructions: list[ContextFlag] = Field(default_factory=list)
    context_not_read: list[UnreadPassage] = Field(default_factory=list)


class MitigationReport(_Part):
    """What the mitigation loop did (defaults when none ran).

    Attributes:
        iterations: Mitigation rounds performed (0 when no loop ran).
        final_answer: The answer to show, without any warning: the best answer of
            the mitigation loop, or the original when no loop ran; ``None`` when
            blocked. ``output`` is this text plus the warning where the action or
            ``require_disclaimer`` asks for one.
        original_score: The original answer's score (equals ``score`` when no loop
            ran).
        status: Why mitigation ended: ``not_needed`` (not flagged), ``not_run``
            (flagged, but lightweight mode or no ``llm``), ``converged``,
            ``success`` (retrieval feedback), ``max_iterations_reached``,
            ``query_stagnation``, ``llm_error``, ``llm_timeout``,
            ``retrieval_error``.
        strategy: The loop that ran: ``self_refine``, ``cross_model``,
            ``retrieval_feedback``; ``None`` when none ran.
        converged: Whether the final answer is below ``convergence_threshold`` after
            a loop (``False`` when no loop ran).
        history: Every step of the loop, the original answer first (empty when no
            loop ran).
        diff: The original answer against ``final_answer``; ``None`` when no loop
            ran.
        cost: LLM calls, tokens and seconds the mitigation cost (zero without a
            loop).
        mitigation_error: The error message that stopped the loop, if any.
        final_context: The context the final answer was checked against when the
            retrieval-feedback loop extended it; ``None`` otherwise.
    """

    iterations: int = Field(default=0, ge=0)
    final_answer: str | None = None
    original_score: float | None = Field(default=None, ge=0.0, le=1.0)
    status: MitigationStatus = "not_needed"
    strategy: Strategy | None = None
    converged: bool = False
    history: list[Iteration] = Field(default_factory=list)
    diff: AnswerDiff | None = None
    cost: CostAccount = Field(default_factory=CostAccount)
    mitigation_error: str | None = None
    final_context: list[str] | None = None


#: The verdict's groups: field name on :class:`Verdict` and model.
_GROUPS: dict[str, type[_Part]] = {
    "findings": Findings,
    "coverage": CheckReport,
    "mitigation": MitigationReport,
}

#: The group each grouped field lives in.
_GROUP_OF: dict[str, str] = {
    name: group for group, part in _GROUPS.items() for name in part.model_fields
}

#: Every flat verdict field, in the order ``model_dump`` writes them.
VERDICT_FIELDS: tuple[str, ...] = (
    "decision",
    "score",
    "threshold",
    "detected",
    "spans",
    "dropped_spans",
    "below_threshold_spans",
    "max_severity",
    "contradiction_count",
    "fact_check_needed",
    "fact_check_confidence",
    "unverified",
    "context_missing",
    "enabled",
    "mode",
    "iterations",
    "latency_ms",
    "original_answer",
    "output",
    "blocked",
    "action",
    "route",
    "metadata",
    "detection",
    "claim_check",
    "final_answer",
    "original_score",
    "status",
    "strategy",
    "converged",
    "history",
    "diff",
    "cost",
    "mitigation_error",
    "final_context",
    "checked",
    "not_checked_reason",
    "context_instructions",
    "context_not_read",
    "redacted",
)


def _fields_of(value: object) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return dict(value)
    return dict(value) if isinstance(value, dict) else {}


if TYPE_CHECKING:

    class _FlatFields:
        """The groups' fields as the type checker sees them on :class:`Verdict`."""

        score: float | None
        threshold: float
        detected: bool | None
        spans: list[HallucinationSpan]
        dropped_spans: list[HallucinationSpan]
        below_threshold_spans: list[HallucinationSpan]
        max_severity: int
        contradiction_count: int
        detection: DetectionResult | None
        claim_check: ClaimCheckReport | None
        fact_check_needed: bool
        fact_check_confidence: float | None
        unverified: bool
        context_missing: bool
        enabled: bool
        checked: bool
        not_checked_reason: NotCheckedReason | None
        context_instructions: list[ContextFlag]
        context_not_read: list[UnreadPassage]
        iterations: int
        final_answer: str | None
        original_score: float | None
        status: MitigationStatus
        strategy: Strategy | None
        converged: bool
        history: list[Iteration]
        diff: AnswerDiff | None
        cost: CostAccount
        mitigation_error: str | None
        final_context: list[str] | None

else:
    _FlatFields = object


class Verdict(BaseModel, _FlatFields):
    """What the guard decided about one answer and what the caller should show.

    After a mitigation loop ran, ``score``, ``detected``, ``spans``, ``output``,
    ``action`` and the metadata describe the FINAL answer (the one to show); the
    original stays in ``original_answer`` / ``original_score`` and ``history[0]``.

    The fields come in three groups (:class:`Findings`, :class:`CheckReport`,
    :class:`MitigationReport`); each of their fields is also readable flat
    (``verdict.score`` is ``verdict.findings.score``). A verdict is built and
    serialised flat: ``Verdict(score=..., threshold=...)`` and
    ``Verdict.model_validate(flat_dict)`` sort the fields into their groups, and
    ``model_dump`` writes them flat again (:data:`VERDICT_FIELDS`).

    Attributes:
        findings: What detection and NLI found.
        coverage: Whether and against what the answer was checked.
        mitigation: What the mitigation loop did.
        decision: ``PASS`` or ``MITIGATE``. ``MITIGATE`` when the answer was flagged
            (score at or above the threshold, unless the NLI filter cleared every
            span the detector marked; a high score with no span at all is flagged
            too), when a factual prompt was answered without grounding, or
            when a mitigation loop ran (even if it fixed the answer).
        mode: Operating mode of the route.
        latency_ms: Milliseconds per stage (``classifier``, ``routing``,
            ``detector``, ``context`` (premise selection), ``nli``, ``total``);
            stages that did not run are absent.
        original_answer: The answer exactly as given, kept for audit.
        output: The text to show: the answer for ``header`` / ``none``, answer plus
            warning for ``body``, ``None`` when blocked.
        blocked: Whether the answer was withheld.
        action: The action applied, ``None`` when the verdict is ``PASS``.
        route: Name of the policy decision that matched, ``None`` for global
            settings.
        metadata: The ``x-truthlens-*`` / ``x-vsr-*`` headers as a plain dict.
        redacted: Text was withheld from this verdict: the blocked answer (by
            default, for every blocked answer) or, with the engine option
            ``redact``, all hallucinated text. The full verdict is
            :meth:`full` and what the audit hook got.

    A verdict reads the same everywhere a user can see it: :meth:`to_dict` (JSON-safe)
    under the key ``"truthlens"`` in message metadata, responses and events.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    findings: Findings
    coverage: CheckReport
    mitigation: MitigationReport = Field(default_factory=MitigationReport)
    decision: Decision
    mode: Mode
    latency_ms: dict[str, float] = Field(default_factory=dict)
    original_answer: str
    output: str | None
    blocked: bool = False
    action: Action | None = None
    route: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    redacted: bool = False

    # The unredacted verdict, for the application only: never serialised, copied into
    # a dump, a repr or a pickle (see ``full``).
    _full: Verdict | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _not_checked_reads_unknown(self) -> Verdict:
        """The one rule for what the verdict of an unchecked answer shows.

        No number and no clean flag: ``score``, ``detected`` and ``original_score`` are
        ``None``. Every surface (``to_dict``, metadata, events, state, logs, metrics)
        reads these fields, so none can show a not-checked answer as clean.
        """
        findings, coverage = self.findings, self.coverage
        if coverage.checked:
            if findings.detected is None:
                raise ValueError("a checked answer is detected or not (true or false)")
            return self
        shown = {
            "score": findings.score,
            "detected": findings.detected,
            "original_score": self.mitigation.original_score,
        }
        wrong = sorted(name for name, value in shown.items() if value is not None)
        if wrong:
            raise ValueError(
                f"an answer that was not checked ({coverage.not_checked_reason}) has no "
                f"{', '.join(wrong)}: they must be null, not {[shown[w] for w in wrong]}"
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, data: Any) -> Any:
        """Sort flat field names into their groups (what ``model_dump`` writes)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for group, part in _GROUPS.items():
            flat = {k: data.pop(k) for k in part.model_fields if k in data}
            if flat:
                data[group] = {**_fields_of(data.get(group)), **flat}
        return data

    @model_serializer(mode="wrap")
    def _flatten(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        """Write the groups' fields flat, in :data:`VERDICT_FIELDS` order."""
        nested = handler(self)
        flat: dict[str, Any] = {}
        for group in _GROUPS:
            flat.update(nested.pop(group, None) or {})
        flat.update(nested)
        # ``exclude`` names flat fields; the handler only saw the top level.
        excluded = info.exclude or ()
        return {k: flat[k] for k in VERDICT_FIELDS if k in flat and k not in excluded}

    def replace(self, **changes: Any) -> Verdict:
        """A copy with some flat fields changed (validated like a new verdict).

        A withheld verdict's copy keeps :meth:`full` pointing at the full one.
        """
        current: dict[str, Any] = {k: v for k, v in self if k not in _GROUPS}
        for group in _GROUPS:
            current.update(_fields_of(getattr(self, group)))
        copy = type(self).model_validate({**current, **changes})
        copy._full = self._full  # what was withheld stays reachable through full()
        return copy

    @property
    def passed(self) -> bool:
        """Whether the verdict is ``PASS``."""
        return self.decision is Decision.PASS

    def to_dict(self) -> dict[str, Any]:
        """The verdict as a user reads it: flat, JSON-safe, withholding applied.

        This is what every adapter puts under the key ``"truthlens"`` (message
        ``response_metadata``, LlamaIndex ``Response.metadata``, agent messages'
        ``additional_kwargs``, events). The raw detector output (per-token scores,
        large) is left out; a redacted verdict holds no withheld text.

        Returns:
            The :data:`VERDICT_FIELDS` but ``detection``, as JSON-ready values.
        """
        return self.model_dump(mode="json", exclude={"detection"})

    def full(self) -> Verdict:
        """The full verdict, withheld text included, for the application.

        A blocked answer's verdict withholds the blocked text (original answer, span
        texts, rejected mitigation rounds) from every serialisation; so does every
        verdict of an engine built with ``redact=True``. This accessor is the
        explicit channel to what was withheld (the audit hook gets the same). It is
        kept out of :meth:`to_dict`, ``model_dump``, ``repr`` and pickles: a verdict
        that crossed a process boundary or was rebuilt from its dict returns itself.

        Returns:
            The unredacted verdict (``self`` when nothing was withheld).
        """
        return self._full if self._full is not None else self

    def __getstate__(self) -> dict[Any, Any]:
        # A pickle (a checkpointer, a process pool) must not carry the withheld text.
        state = dict(super().__getstate__())
        private = state.get("__pydantic_private__")
        if private:
            state["__pydantic_private__"] = {**private, "_full": None}
        return state

    def __getattr__(self, name: str) -> Any:
        # The groups' fields read flat (``verdict.score``); typed by ``_FlatFields``.
        group = _GROUP_OF.get(name)
        if group is not None:
            return getattr(getattr(self, group), name)
        return super().__getattr__(name)  # type: ignore[misc]

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *_GROUP_OF})


def mitigation_fields(
    result: MitigationResult | None,
    *,
    original: str,
    original_score: float | None,
    flagged: bool,
    final_answer: str | None,
) -> dict[str, Any]:
    """The mitigation-related :class:`Verdict` fields.

    Args:
        result: The loop's result; ``None`` when no loop ran.
        original: The original answer.
        original_score: Its detector score.
        flagged: Whether the original answer was flagged.
        final_answer: The answer to show (``None`` when blocked).

    Returns:
        Keyword arguments for :class:`Verdict`.
    """
    fields: dict[str, Any] = {"final_answer": final_answer, "original_score": original_score}
    if result is None:
        fields["status"] = "not_run" if flagged else "not_needed"
        return fields
    extended = list(result.context) if result.strategy == "retrieval_feedback" else None
    fields.update(
        status=result.status,
        strategy=result.strategy,
        converged=result.converged,
        history=result.history,
        diff=diff_answers(original, result.final.answer),
        cost=result.cost,
        mitigation_error=result.error,
        final_context=extended,
    )
    return fields


def _hide(text: str | None, shown: str | None) -> str | None:
    return text if text is None or text == shown else REDACTED


def _hide_spans(spans: list[HallucinationSpan]) -> list[HallucinationSpan]:
    return [s.model_copy(update={"text": REDACTED}) for s in spans]


def _hide_claims(report: ClaimCheckReport | None) -> ClaimCheckReport | None:
    """The report with the answer's claims withheld (their offsets, labels and scores stay).

    A checker's reason and quote are its own text, which may echo a claim (a server that
    repeats the claim it was asked about, an error that quotes the request): the reason
    goes, and a quote stays only where it is the evidence's own words.
    """
    if report is None:
        return None
    hidden = [
        j.model_copy(
            update={
                "claim": j.claim.model_copy(update={"text": REDACTED}),
                "reason": REDACTED if j.reason else None,
                "quote": j.quote if j.quote and j.quote in j.claim.evidence else None,
            }
        )
        for j in report.judgements
    ]
    return report.model_copy(update={"judgements": hidden})


def redact_verdict(verdict: Verdict, metadata: dict[str, str]) -> Verdict:
    """``verdict`` without hallucinated text, for callers that must not see it.

    The copy's :meth:`Verdict.full` returns ``verdict``. Text that is not the shown
    answer goes: the original answer (when it is not what
    is shown), every span text (offsets stay), the answers, spans, claims and rewritten
    retrieval queries of the mitigation rounds, the answer diff and the raw detector
    output.

    Args:
        verdict: The full verdict.
        metadata: The metadata to use (built without span texts).

    Returns:
        The redacted copy, ``redacted=True``.
    """
    shown = verdict.final_answer
    history = [
        step.model_copy(
            update={
                "answer": _hide(step.answer, shown),
                "spans": _hide_spans(step.spans),
                "claims": [],
                # A rewritten retrieval query is built from the unsupported claims.
                "query": _hide(step.query, None),
            }
        )
        for step in verdict.history
    ]
    redacted = verdict.replace(
        original_answer=_hide(verdict.original_answer, shown),
        spans=_hide_spans(verdict.spans),
        dropped_spans=_hide_spans(verdict.dropped_spans),
        below_threshold_spans=_hide_spans(verdict.below_threshold_spans),
        history=history,
        diff=None,
        detection=None,
        claim_check=_hide_claims(verdict.claim_check),
        metadata=metadata,
        redacted=True,
    )
    redacted._full = verdict.full()
    return redacted
