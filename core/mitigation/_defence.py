"""Defence in depth: retrieval-quality filter, constrained prompts, confidence degradation.

The layers of the multi-layer design around the guard: filter what retrieval returns
(layer 1, :func:`filter_passages`), constrain generation to numbered documents (layer 2,
:func:`build_constrained_prompt`), and degrade by confidence per scenario (layer 4,
:func:`degrade_verdict`) after detection (layer 3, the guard itself). Public in
:mod:`truthlens_integrations.core.mitigation`; ``cookbook/defence_layers.py`` runs all four.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from .._errors import InvalidInputError
from ..llm import ChatMessage
from ._prompts import build_answer_messages
from ._text import is_near_duplicate


class GuardedAnswer(Protocol):
    """What :func:`degrade_verdict` reads of a verdict (the engine's ``Verdict`` has it)."""

    @property
    def output(self) -> str | None:
        """The text shown to the user (``None`` when withheld)."""

    @property
    def checked(self) -> bool:
        """Whether the guard checked the answer against its grounding."""

    @property
    def score(self) -> float | None:
        """The response score (``None`` when not checked)."""


__all__ = [
    "SCENARIOS",
    "Degradation",
    "Passage",
    "Scenario",
    "build_constrained_prompt",
    "degrade",
    "degrade_verdict",
    "filter_passages",
]


class Passage(BaseModel):
    """A retrieved passage with what the retriever knew about it.

    Attributes:
        text: The passage text.
        score: Retrieval similarity, if the retriever reported one.
        metadata: Source metadata (``authority`` in [0, 1] is read by the filter).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    score: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


def filter_passages(
    passages: Sequence[Passage | str],
    *,
    min_score: float | None = None,
    min_chars: int = 50,
    dedupe_similarity: float = 0.9,
    authority_key: str = "authority",
    min_authority: float | None = None,
) -> list[Passage]:
    """Layer 1: keep passages good enough to ground an answer.

    Args:
        passages: Retrieved passages (plain strings have no score or metadata).
        min_score: Drop passages whose score is below this (unscored ones stay).
        min_chars: Drop passages shorter than this (stripped).
        dedupe_similarity: Drop a passage this similar (content-word Jaccard) to one
            already kept; exact duplicates after normalising always go.
        authority_key: Metadata key holding the source authority.
        min_authority: Drop passages whose authority is below this; passages without
            the key stay. ``None`` disables the check.

    Returns:
        The kept passages, in input order; kept passages with an authority come first
        when ``min_authority`` is set (authoritative sources preferred).
    """
    kept: list[Passage] = []
    for item in passages:
        passage = item if isinstance(item, Passage) else Passage(text=item)
        text = passage.text.strip()
        if len(text) < min_chars:
            continue
        if min_score is not None and passage.score is not None and passage.score < min_score:
            continue
        authority = passage.metadata.get(authority_key)
        if (
            min_authority is not None
            and isinstance(authority, int | float)
            and authority < min_authority
        ):
            continue
        if is_near_duplicate(text, [p.text for p in kept], dedupe_similarity):
            continue
        kept.append(passage)
    if min_authority is not None:
        kept.sort(key=lambda p: -float(p.metadata.get(authority_key, 0.0) or 0.0))
    return kept


def build_constrained_prompt(
    question: str, documents: Sequence[str], *, cite: bool = True
) -> list[ChatMessage]:
    """Layer 2: answer only from the numbered documents, cite them, say when they lack it.

    Args:
        question: The user's question.
        documents: The (filtered) documents, numbered from 1 in the prompt.
        cite: Ask for ``[1]``, ``[2]`` citations.

    Returns:
        Chat messages for any :class:`~truthlens_integrations.core.llm.LLM`. The
        documents are delimited so their text cannot pose as instructions.
    """
    return build_answer_messages(context=documents, question=question, cite=cite)


class Scenario(BaseModel):
    """Degradation settings of one scenario.

    Attributes:
        threshold: Confidence (1 - hallucination score) needed for ``approved``.
        warning_margin: Below the threshold by at most this: ``warning``.
        fallback: Text shown instead of a ``rejected`` answer.
        warning: Prefix of a ``warning`` answer.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: float = Field(ge=0.0, le=1.0)
    warning_margin: float = Field(default=0.2, ge=0.0, le=1.0)
    fallback: str
    warning: str = "(Not fully verified) "


#: Per-scenario thresholds of the design's degradation layer.
SCENARIOS: dict[str, Scenario] = {
    "medical": Scenario(threshold=0.9, fallback="Please consult a medical professional."),
    "legal": Scenario(threshold=0.85, fallback="Please consult a qualified lawyer."),
    "customer_service": Scenario(threshold=0.7, fallback="Let me transfer you to a human agent."),
    "general": Scenario(threshold=0.7, fallback="Sorry, I am not confident enough to answer."),
    "entertainment": Scenario(threshold=0.6, fallback="Sorry, I am not sure."),
}


class Degradation(BaseModel):
    """Layer 4's decision.

    Attributes:
        level: ``approved``, ``warning`` or ``rejected``.
        confidence: The confidence the decision was made on.
        threshold: The scenario's threshold.
        scenario: The scenario used.
        text: The text to show: the answer, the answer with the warning prefix, or
            the scenario's fallback.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: Literal["approved", "warning", "rejected"]
    confidence: float
    threshold: float
    scenario: str
    text: str


def degrade(
    answer: str,
    *,
    score: float | None = None,
    confidence: float | None = None,
    scenario: str = "general",
    scenarios: Mapping[str, Scenario] | None = None,
) -> Degradation:
    """Layer 4: approve, warn or reject an answer by confidence and scenario.

    Args:
        answer: The (checked) answer.
        score: The hallucination score (confidence = 1 - score); or give ``confidence``.
        confidence: The confidence directly (overrides ``score``).
        scenario: ``medical`` 0.9, ``legal`` 0.85, ``customer_service`` 0.7,
            ``general`` 0.7, ``entertainment`` 0.6, or one of ``scenarios``; unknown
            names use ``general``.
        scenarios: Replaces :data:`SCENARIOS`.

    Returns:
        The decision with the text to show.

    Raises:
        InvalidInputError: If neither ``score`` nor ``confidence`` is given.
    """
    if confidence is None:
        if score is None:
            raise InvalidInputError("degrade needs a score or a confidence")
        confidence = 1.0 - score
    name, spec = _scenario(scenario, scenarios)
    if confidence >= spec.threshold:
        level: Literal["approved", "warning", "rejected"] = "approved"
        text = answer
    elif confidence >= spec.threshold - spec.warning_margin:
        level, text = "warning", f"{spec.warning}{answer}"
    else:
        level, text = "rejected", spec.fallback
    return Degradation(
        level=level, confidence=confidence, threshold=spec.threshold, scenario=name, text=text
    )


def degrade_verdict(
    verdict: GuardedAnswer,
    *,
    scenario: str = "general",
    scenarios: Mapping[str, Scenario] | None = None,
) -> Degradation:
    """Layer 4 on a guarded answer: what it shows, at its confidence, for a scenario.

    The confidence is ``1 - verdict.score``. An answer the guard did not check (no
    grounding, unreadable, another language) has no confidence at all: it is degraded
    at 0 and rejected, never approved, whatever the scenario's threshold. The text degraded
    is what the verdict shows (``verdict.output``); a blocked answer shows nothing, so it
    gets the fallback too.

    Args:
        verdict: The guard's verdict.
        scenario: The scenario's name (see :func:`degrade`).
        scenarios: Replaces :data:`SCENARIOS`.

    Returns:
        The decision with the text to show.
    """
    shown, score = verdict.output, verdict.score
    if shown is not None and verdict.checked and score is not None:
        return degrade(shown, confidence=1.0 - score, scenario=scenario, scenarios=scenarios)
    # Nothing checked, or nothing to show: the fallback, whatever the scenario's threshold.
    name, spec = _scenario(scenario, scenarios)
    return Degradation(
        level="rejected",
        confidence=0.0,
        threshold=spec.threshold,
        scenario=name,
        text=spec.fallback,
    )


def _scenario(name: str, scenarios: Mapping[str, Scenario] | None) -> tuple[str, Scenario]:
    """The scenario a name selects (unknown names: ``general``) and its settings."""
    table = dict(scenarios) if scenarios is not None else SCENARIOS
    chosen = name if name in table else "general"
    return chosen, table.get(chosen) or SCENARIOS["general"]
