"""TruthLens events for LlamaIndex's instrumentation (``llama_index.core.instrumentation``).

They go through ``get_dispatcher(__name__)``, a child of LlamaIndex's root
dispatcher, so any event handler attached to the root (Arize Phoenix, Langfuse, a
custom ``BaseEventHandler``) receives them next to LlamaIndex's own query, retrieval
and LLM events, inside the span of the query that caused them.
"""

from __future__ import annotations

from typing import Any

import llama_index.core.instrumentation as instrument
from llama_index.core.instrumentation.events import BaseEvent
from pydantic import Field

from truthlens_integrations.core import HallucinationSpan
from truthlens_integrations.core._adapter_api import REDACTED
from truthlens_integrations.core.engine import TruthLens, Verdict

__all__ = [
    "TruthLensDetectionEndEvent",
    "TruthLensDetectionStartEvent",
    "TruthLensMitigationIterationEvent",
    "TruthLensNodeFilterEvent",
    "dispatch_start",
    "dispatch_verdict",
    "dispatcher",
    "event_payload",
]

# llama_index.core.instrumentation re-exports get_dispatcher without __all__, which
# mypy's no-implicit-reexport rejects; the adapter imports from llama_index.core only.
dispatcher = instrument.get_dispatcher(__name__)  # type: ignore[attr-defined]


class TruthLensDetectionStartEvent(BaseEvent):
    """The guard is about to check an answer.

    Attributes:
        query: The question.
        answer: The answer to check.
        num_passages: Passages (source nodes) it is checked against.
    """

    query: str | None
    answer: str
    num_passages: int

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "TruthLensDetectionStartEvent"


class TruthLensDetectionEndEvent(BaseEvent):
    """The guard has decided.

    Attributes:
        decision: ``PASS`` or ``MITIGATE``.
        score: The final answer's detector score (``None`` when detection did not run).
        spans: The flagged spans of the answer that was judged last (empty when
            clean, and span texts blanked when the policy withholds details).
        action: The action applied (``None`` on ``PASS``).
        blocked: Whether the answer was withheld.
        mode: The route's mode.
        iterations: Mitigation rounds run.
        status: The mitigation status (``None`` when the engine reports none).
        metadata: The ``x-truthlens-*`` / ``x-vsr-*`` header values.
    """

    decision: str
    score: float | None
    spans: list[HallucinationSpan]
    action: str | None
    blocked: bool
    mode: str
    iterations: int
    status: str | None = None
    metadata: dict[str, str]

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "TruthLensDetectionEndEvent"


class TruthLensMitigationIterationEvent(BaseEvent):
    """One step of a mitigation loop (refinement, cross-check, judge, re-retrieval).

    Attributes:
        index: 0 for the original answer, then one per round.
        kind: ``initial``, ``refine``, ``cross_check``, ``judge`` or ``retrieve``.
        score: The step's detector score.
        accepted: Whether the step's answer became the best so far.
        query: The rewritten query of a ``retrieve`` step.
        new_passages: Passages a ``retrieve`` step added.
        error: Why the step failed, if it did.
    """

    index: int
    kind: str
    score: float | None = None
    accepted: bool = False
    query: str | None = None
    new_passages: int = 0
    error: str | None = None

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "TruthLensMitigationIterationEvent"


class TruthLensNodeFilterEvent(BaseEvent):
    """The node postprocessor removed or demoted nodes.

    Attributes:
        stage: ``quality`` (score / length / duplicate / authority filters) or
            ``evidence`` (nodes that supported nothing in the answer).
        kept: Node ids kept, in output order.
        removed: Node id -> why it was removed.
        demoted: Node ids whose score was lowered.
    """

    stage: str
    kept: list[str]
    removed: dict[str, str]
    demoted: list[str] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "TruthLensNodeFilterEvent"


def event_payload(event: BaseEvent) -> dict[str, Any]:
    """The event as a plain dict, for the legacy callback manager's payloads."""
    return event.model_dump(mode="json", exclude={"timestamp", "id_", "span_id", "tags"})


def _fields(source: object, event: type[BaseEvent]) -> dict[str, Any]:
    """The attributes of ``source`` that ``event`` declares (the base event's own left out)."""
    names = set(event.model_fields) - set(BaseEvent.model_fields)
    return {name: getattr(source, name) for name in names}


def dispatch_start(
    engine: TruthLens, *, query: str | None, answer: str, num_passages: int
) -> TruthLensDetectionStartEvent:
    """Dispatch the start of a check, the answer left out when ``engine`` redacts.

    The answer is not checked yet and may be withheld: a redacting engine keeps it out
    of every event, as out of the verdict (the audit hook still gets it).

    Returns:
        The event that was dispatched (for the legacy callback payload).
    """
    shown = REDACTED if engine.options.redact else answer
    start = TruthLensDetectionStartEvent(query=query, answer=shown, num_passages=num_passages)
    dispatcher.event(start)
    return start


def dispatch_verdict(verdict: Verdict) -> TruthLensDetectionEndEvent:
    """Dispatch one event per mitigation round after the first, then the decision.

    Args:
        verdict: The guard's verdict.

    Returns:
        The end event that was dispatched (for the legacy callback payload).
    """
    for step in verdict.history[1:]:
        dispatcher.event(
            TruthLensMitigationIterationEvent(**_fields(step, TruthLensMitigationIterationEvent))
        )
    fields = _fields(verdict, TruthLensDetectionEndEvent)
    end = TruthLensDetectionEndEvent(**{**fields, "decision": verdict.decision.value})
    dispatcher.event(end)
    return end
