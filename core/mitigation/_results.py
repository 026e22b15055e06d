"""What a mitigation run reports: the iterations, the cost, the before/after diff."""

from __future__ import annotations

import difflib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._types import HallucinationSpan

__all__ = [
    "AnswerDiff",
    "Assessment",
    "ClaimCheck",
    "CostAccount",
    "Iteration",
    "IterationKind",
    "MitigationResult",
    "MitigationStatus",
    "ModelUse",
    "Strategy",
    "diff_answers",
]

MitigationStatus = Literal[
    "not_checked",
    "not_needed",
    "not_run",
    "converged",
    "success",
    "max_iterations_reached",
    "query_stagnation",
    "answer_stagnation",
    "llm_error",
    "llm_timeout",
    "retrieval_error",
]
"""Why mitigation ended.

- ``not_checked``: the answer was not checked (see ``Verdict.not_checked_reason``);
  it is neither clean nor flagged.
- ``not_needed``: the answer was checked and not flagged, nothing to fix.
- ``not_run``: the answer was flagged but no loop ran (lightweight mode, or no
  ``llm`` / ``answerer`` given); the policy's action applies to the original.
- ``converged``: self-refine or cross-model verification brought the score below
  ``convergence_threshold``.
- ``success``: the retrieval-feedback loop brought the score below it.
- ``max_iterations_reached``: rounds ran out; ``final_answer`` is the best seen.
- ``query_stagnation``: the retrieval-feedback loop stopped because the rewritten
  query or the retrieved set did not change.
- ``answer_stagnation``: self-refine stopped because the model kept returning answers
  it had already given, with the refine prompt and then with a fresh grounded prompt.
- ``llm_error`` / ``llm_timeout``: an LLM call failed mid-loop; the loop stopped and
  kept the best answer so far.
- ``retrieval_error``: the retriever (or grounded answerer) failed mid-loop.
"""

Strategy = Literal["self_refine", "cross_model", "retrieval_feedback"]
IterationKind = Literal["initial", "refine", "regenerate", "cross_check", "judge", "retrieve"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Assessment(_Frozen):
    """The guard's judgement of one candidate answer (detector plus NLI filter).

    Attributes:
        answer: The candidate answer.
        score: The detector's response score; ``None`` when it could not run.
        spans: Spans that survived the NLI filter, with labels where NLI ran.
        flagged: Score at or above the route threshold, unless NLI cleared every span
            the detector marked (a high score with no span at all stays flagged).
    """

    answer: str
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    spans: list[HallucinationSpan] = Field(default_factory=list)
    flagged: bool = False

    @property
    def effective_score(self) -> float:
        """The score, counted as 0 when nothing is left to fix.

        That is an answer with no span that is not flagged: NLI cleared every span the
        detector marked, or the score is under the threshold. Loops rank and stop on
        this value; an answer flagged as a whole keeps its score.
        """
        if self.score is None:
            return 1.0
        return self.score if self.spans or self.flagged else 0.0


class ClaimCheck(_Frozen):
    """How the verification models judged one claim (sentence) of the primary answer.

    Attributes:
        claim: The claim's text.
        support: Verifiers whose answer entails it.
        contradict: Verifiers whose answer contradicts it.
        neutral: Verifiers whose answer neither supports nor contradicts it.
        support_weight: Sum of the weights of the supporting verifiers.
        contradict_weight: Sum of the weights of the contradicting verifiers.
        verdict: ``supported``, ``contradicted`` or ``unverified`` under the
            consensus method.
        replacement: The better-supported version that replaced the claim, if any.
    """

    claim: str
    support: int = 0
    contradict: int = 0
    neutral: int = 0
    support_weight: float = 0.0
    contradict_weight: float = 0.0
    verdict: Literal["supported", "contradicted", "unverified"]
    replacement: str | None = None


class Iteration(_Frozen):
    """One step of a mitigation loop.

    Attributes:
        index: 0 for the original answer, then 1, 2, ... per round.
        kind: ``initial``, ``refine`` (self-refine), ``cross_check`` (premium
            verification and merge), ``judge`` (premium arbitration) or ``retrieve``
            (retrieval-feedback round).
        answer: The candidate answer of this step; ``None`` when the step failed
            before producing a usable one.
        score: Its detector score (``None`` when not scored).
        effective_score: The score loops rank by (0 when NLI cleared every span).
        spans: Its flagged spans.
        accepted: Whether it became the best answer so far.
        error: Why the step failed (LLM error, empty or absurd output, ...).
        llm_calls: LLM calls made in this step.
        prompt_tokens: Prompt tokens of those calls (where the backend reported them).
        completion_tokens: Completion tokens of those calls.
        total_tokens: Total tokens of those calls.
        latency_ms: Wall time of the step.
        query: The retrieval query of a ``retrieve`` step.
        new_passages: Passages a ``retrieve`` step added to the context.
        claims: Per-claim agreement of a ``cross_check`` step.
    """

    index: int = Field(ge=0)
    kind: IterationKind
    answer: str | None
    score: float | None = None
    effective_score: float | None = None
    spans: list[HallucinationSpan] = Field(default_factory=list)
    accepted: bool = False
    error: str | None = None
    llm_calls: int = Field(default=0, ge=0)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    total_tokens: int = Field(default=0, ge=0)
    latency_ms: float = Field(default=0.0, ge=0.0)
    query: str | None = None
    new_passages: int = Field(default=0, ge=0)
    claims: list[ClaimCheck] = Field(default_factory=list)


class ModelUse(_Frozen):
    """LLM use of one (model, role) pair within one request."""

    model: str
    role: str
    calls: int = Field(ge=0)
    failed_calls: int = Field(default=0, ge=0)
    total_tokens: int = Field(default=0, ge=0)
    seconds: float = Field(default=0.0, ge=0.0)


class CostAccount(_Frozen):
    """What mitigation cost for one request.

    Attributes:
        llm_calls: LLM calls made, failed ones included.
        failed_calls: Calls that raised (error, timeout, empty output).
        unmetered_calls: Calls that answered without reporting their tokens (a streamed
            reply from a server that sends no usage): the token counts are then a lower
            bound, not the cost.
        prompt_tokens: Prompt tokens, where backends reported usage.
        completion_tokens: Completion tokens, where backends reported usage.
        total_tokens: Total tokens, where backends reported usage.
        llm_seconds: Wall time spent inside LLM calls (parallel calls add up).
        seconds: Wall time of the whole mitigation, detection included.
        models: Use per (model, role); roles are ``generator``, ``verifier``,
            ``judge``, ``refiner`` and ``answerer``.
    """

    llm_calls: int = Field(default=0, ge=0)
    failed_calls: int = Field(default=0, ge=0)
    unmetered_calls: int = Field(default=0, ge=0)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    total_tokens: int = Field(default=0, ge=0)
    llm_seconds: float = Field(default=0.0, ge=0.0)
    seconds: float = Field(default=0.0, ge=0.0)
    models: list[ModelUse] = Field(default_factory=list)


class AnswerDiff(_Frozen):
    """The answer before and after mitigation.

    Attributes:
        before: The original answer.
        after: The final answer.
        changed: Whether they differ.
        removed: Word runs of ``before`` that are not in ``after``.
        added: Word runs of ``after`` that are not in ``before``.
        unified: A line-based unified diff (empty when unchanged).
    """

    before: str
    after: str
    changed: bool
    removed: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    unified: str = ""


class MitigationResult(_Frozen):
    """The outcome of one mitigation loop.

    Attributes:
        strategy: The loop that ran.
        status: Why it ended (see :data:`MitigationStatus`).
        final: The best assessment seen (never worse than the original).
        iterations: Rounds that ran (the original answer is not a round).
        history: Every step, the original answer first.
        cost: LLM calls, tokens and time.
        error: The message of the error that stopped the loop, if any.
        context: The context the final answer was checked against (grows in the
            retrieval-feedback loop; the original context otherwise).
        converged: Whether the final answer met the convergence threshold.
    """

    strategy: Strategy
    status: MitigationStatus
    final: Assessment
    iterations: int = Field(ge=0)
    history: list[Iteration]
    cost: CostAccount
    error: str | None = None
    context: list[str] = Field(default_factory=list)
    converged: bool = False


def diff_answers(before: str, after: str) -> AnswerDiff:
    """Compare two answers word by word (and line by line for ``unified``).

    Args:
        before: The original answer.
        after: The final answer.

    Returns:
        The diff; ``changed`` is false and the lists empty when they are equal.
    """
    if before == after:
        return AnswerDiff(before=before, after=after, changed=False)
    a, b = before.split(), after.split()
    removed: list[str] = []
    added: list[str] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("replace", "delete"):
            removed.append(" ".join(a[i1:i2]))
        if op in ("replace", "insert"):
            added.append(" ".join(b[j1:j2]))
    unified = "\n".join(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            fromfile="original",
            tofile="final",
            lineterm="",
        )
    )
    return AnswerDiff(
        before=before, after=after, changed=True, removed=removed, added=added, unified=unified
    )
