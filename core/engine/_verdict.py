"""The guard pipeline's result."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .._types import Decision, DetectionResult, HallucinationSpan
from ..policy import Action, Mode

__all__ = ["SEVERITY", "Verdict"]

#: Severity of a kept span by its NLI label (HaluGate): a contradiction is worse than
#: a claim the context neither supports nor refutes. An entailment the NLI model is
#: not sure of (below the NLI threshold) keeps the span with the lowest severity.
SEVERITY: dict[str, int] = {"contradiction": 4, "neutral": 2, "entailment": 1}


class Verdict(BaseModel):
    """What the guard decided about one answer and what the caller should show.

    Attributes:
        decision: ``PASS`` or ``MITIGATE``. ``MITIGATE`` when the answer was flagged
            (score at or above the threshold with at least one span surviving the
            NLI filter) or when a factual prompt was answered without grounding.
        score: Detector's response score; ``None`` when detection did not run.
        threshold: Threshold of the route the answer was judged by.
        detected: Whether hallucinations were found.
        spans: Flagged spans that survived the NLI filter, with label and severity.
        dropped_spans: Spans the NLI model found entailed (false positives).
        max_severity: Highest span severity (0 without spans).
        contradiction_count: Spans labelled ``contradiction``.
        fact_check_needed: The prompt classifier's verdict after its threshold.
        fact_check_confidence: The classifier's confidence in its prediction.
        unverified: A factual prompt was answered with no grounding to check against.
        context_missing: No context was given.
        enabled: Whether detection was enabled for the route.
        mode: Operating mode of the route.
        iterations: Refinement iterations performed (none yet: lightweight only).
        latency_ms: Milliseconds per stage (``classifier``, ``routing``, ``detector``,
            ``context`` (premise selection), ``nli``, ``total``); stages that did not
            run are absent.
        original_answer: The answer exactly as given, kept for audit.
        output: The text to show: the answer for ``header`` / ``none``, answer plus
            warning for ``body``, ``None`` when blocked.
        blocked: Whether the answer was withheld.
        action: The action applied, ``None`` when the verdict is ``PASS``.
        route: Name of the policy decision that matched, ``None`` for global settings.
        metadata: The ``x-truthlens-*`` / ``x-vsr-*`` headers as a plain dict.
        detection: The raw detector result, when detection ran.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision: Decision
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    threshold: float = Field(ge=0.0, le=1.0)
    detected: bool = False
    spans: list[HallucinationSpan] = Field(default_factory=list)
    dropped_spans: list[HallucinationSpan] = Field(default_factory=list)
    max_severity: int = Field(default=0, ge=0, le=4)
    contradiction_count: int = Field(default=0, ge=0)
    fact_check_needed: bool
    fact_check_confidence: float | None = None
    unverified: bool = False
    context_missing: bool = False
    enabled: bool
    mode: Mode
    iterations: int = Field(default=0, ge=0)
    latency_ms: dict[str, float] = Field(default_factory=dict)
    original_answer: str
    output: str | None
    blocked: bool = False
    action: Action | None = None
    route: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    detection: DetectionResult | None = None

    @property
    def passed(self) -> bool:
        """Whether the verdict is ``PASS``."""
        return self.decision is Decision.PASS
