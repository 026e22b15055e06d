"""Bookkeeping shared by the loops: best-kept answer, history, status."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from .._errors import LLMError, LLMTimeoutError
from .._text import content_words
from ..llm import LLM, ChatMessage
from ._ops import Generate, Ledger, Op, generate
from ._prompts import absurd_reason, clean_output
from ._results import (
    Assessment,
    ClaimCheck,
    Iteration,
    IterationKind,
    MitigationResult,
    MitigationStatus,
    Strategy,
)

__all__ = ["LoopSettings", "MitigationOptions", "Recorder", "ask_model"]


class MitigationOptions(BaseModel):
    """Tuning of the mitigation loops that the policy does not carry.

    Attributes:
        consensus: How premium mode merges verifier judgements per claim:
            ``majority`` (more than half agree), ``weighted`` (verifier votes weighted
            by how well their own answer is grounded), or ``replace`` (weighted, and a
            contradicted claim is replaced by the best-supported verifier sentence, as
            in Finch-Zk).
        max_tokens: Completion limit of generation calls.
        temperature: Temperature of refine / regenerate / judge calls (``None``: the
            backend's default).
        verifier_temperature: Temperature of the verification calls.
        context_token_budget: Upper bound (approximate tokens, 4 characters each) of
            the accumulated context in the retrieval-feedback loop; the original
            context always stays.
        max_new_passages: Passages one retrieval round may add at most.
        dedupe_similarity: Word-set Jaccard similarity at or above which two
            passages count as duplicates.
        refine_messages: Replaces :func:`build_refine_messages` (same keyword
            arguments) wherever an answer is refined; ``None``: the built-in prompt.
            A fresh answer (self-refine after a repeated answer, the retrieval loop
            after it added passages) uses the grounded answer prompt.
            Adapters use it to let users edit the prompt their framework's way.
        refiner_messages: Replaces :func:`build_refiner_messages` (same keyword
            arguments) for the query refiner; its reply must still be the JSON
            object the refiner asks for. ``None``: the built-in prompt.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    consensus: str = Field(default="replace", pattern="^(majority|weighted|replace)$")
    max_tokens: int | None = Field(default=384, ge=1)
    temperature: float | None = Field(default=0.0, ge=0.0)
    verifier_temperature: float | None = Field(default=None, ge=0.0)
    context_token_budget: int = Field(default=3000, ge=64)
    max_new_passages: int = Field(default=4, ge=1)
    dedupe_similarity: float = Field(default=0.9, gt=0.0, le=1.0)
    refine_messages: Callable[..., list[ChatMessage]] | None = None
    refiner_messages: Callable[..., list[ChatMessage]] | None = None


@dataclass(frozen=True)
class LoopSettings:
    """What one loop run needs from the route's settings."""

    max_iterations: int
    convergence_threshold: float
    require_consensus: bool = True
    options: MitigationOptions = field(default_factory=MitigationOptions)


class Recorder:
    """Keeps the best answer and the history of one loop run.

    Args:
        initial: The original answer's assessment (history entry 0).
        ledger: The request's cost ledger, for per-step deltas.
        goal: ``convergence_threshold``: an effective score below it has converged.
    """

    def __init__(
        self,
        initial: Assessment,
        ledger: Ledger,
        goal: float,
        *,
        grounding: Sequence[str | None] | None = None,
    ) -> None:
        self.ledger = ledger
        self.goal = goal
        # What a usable reply must talk about (see ``absurd_reason``); None: no check.
        self.topic: frozenset[str] | None = None
        if grounding is not None:
            texts = [initial.answer, *(t for t in grounding if t)]
            self.topic = frozenset(w for t in texts for w in content_words(t))
        self.best = initial
        self.rounds = 0
        self.history: list[Iteration] = [
            Iteration(
                index=0,
                kind="initial",
                answer=initial.answer,
                score=initial.score,
                effective_score=initial.effective_score,
                spans=initial.spans,
                accepted=True,
            )
        ]
        self._started = time.perf_counter()
        self._snapshot = ledger.snapshot()

    def each_round(self, count: int) -> Iterator[Assessment]:
        """Start up to ``count`` rounds, stopping once the best answer has converged.

        Yields:
            The best answer so far, which the round works from.
        """
        for _ in range(count):
            if self.reached(self.best):
                return
            self.start()
            yield self.best

    def failed(
        self,
        kind: IterationKind,
        exc: LLMError,
        *,
        query: str | None = None,
        new_passages: int = 0,
    ) -> tuple[MitigationStatus, str]:
        """Record a step whose model call failed; the loop stops with the returned status.

        Returns:
            ``("llm_timeout" | "llm_error", message)``.
        """
        error = str(exc)
        self.record(kind, None, error=error, query=query, new_passages=new_passages)
        return ("llm_timeout" if isinstance(exc, LLMTimeoutError) else "llm_error"), error

    def usable(
        self, kind: IterationKind, raw: str, *, reference: str, query: str | None = None
    ) -> str | None:
        """The cleaned model output, or ``None`` after recording why it is unusable.

        Args:
            kind: The step's kind.
            raw: The model's output.
            reference: The answer the output replaces (an echo of it is unusable).
            query: The retrieval query of the step, for the record.
        """
        text = clean_output(raw)
        reason = absurd_reason(text, reference=reference, topic=self.topic)
        if reason is None:
            return text
        self.record(kind, None, error=reason, answer=raw, query=query)
        return None

    def reached(self, assessment: Assessment) -> bool:
        """Whether ``assessment`` meets the convergence threshold."""
        return assessment.effective_score < self.goal

    def start(self) -> None:
        """Begin a new round (counted) and its first step."""
        self.rounds += 1
        self.step()

    def step(self) -> None:
        """Begin a step: timing and LLM-call deltas are measured from here."""
        self._started = time.perf_counter()
        self._snapshot = self.ledger.snapshot()

    def record(
        self,
        kind: IterationKind,
        assessment: Assessment | None,
        *,
        error: str | None = None,
        answer: str | None = None,
        query: str | None = None,
        new_passages: int = 0,
        claims: Sequence[ClaimCheck] = (),
        win_ties: bool = False,
    ) -> bool:
        """Add a step to the history; keep its answer if it beats the best so far.

        Args:
            kind: The step's kind.
            assessment: The step's scored answer; ``None`` when the step failed.
            error: Why the step failed.
            answer: The raw output of a failed step, for the record.
            query: The retrieval query of the step.
            new_passages: Passages the step added to the context.
            claims: Claim checks of a cross-check step.
            win_ties: Take the answer on an equal score too (the judge's answer is
                meant to be final unless it scores worse).

        Returns:
            Whether the step's answer became the best: a strictly lower effective
            score (on a tie the earlier answer stays unless ``win_ties``).
        """
        accepted = assessment is not None and (
            assessment.effective_score < self.best.effective_score
            or (win_ties and assessment.effective_score == self.best.effective_score)
        )
        if accepted:
            assert assessment is not None
            self.best = assessment
        calls, prompt, completion, total = self.ledger.snapshot()
        c0, p0, k0, t0 = self._snapshot
        self.history.append(
            Iteration(
                index=self.rounds,
                kind=kind,
                answer=assessment.answer if assessment is not None else answer,
                score=assessment.score if assessment is not None else None,
                effective_score=assessment.effective_score if assessment is not None else None,
                spans=assessment.spans if assessment is not None else [],
                accepted=accepted,
                error=error,
                llm_calls=calls - c0,
                prompt_tokens=prompt - p0,
                completion_tokens=completion - k0,
                total_tokens=total - t0,
                latency_ms=(time.perf_counter() - self._started) * 1000.0,
                query=query,
                new_passages=new_passages,
                claims=list(claims),
            )
        )
        self.step()
        return accepted

    def result(
        self,
        strategy: Strategy,
        status: MitigationStatus,
        *,
        context: Sequence[str],
        error: str | None = None,
        success: MitigationStatus | None = None,
    ) -> MitigationResult:
        """The loop's result with the best answer and the full history.

        ``success``, when given, replaces ``status`` if the best answer has converged.
        """
        if success is not None and self.reached(self.best):
            status = success
        return MitigationResult(
            strategy=strategy,
            status=status,
            final=self.best,
            iterations=self.rounds,
            history=self.history,
            cost=self.ledger.account(),
            error=error,
            context=list(context),
            converged=self.reached(self.best),
        )


def ask_model(
    llm: LLM, messages: Sequence[ChatMessage], *, role: str, options: MitigationOptions
) -> Generator[Op, object, str]:
    """Yield one generation with the loop's token and temperature options.

    Returns:
        The raw text of the reply.
    """
    response = yield from generate(
        Generate(
            llm,
            tuple(messages),
            role=role,
            max_tokens=options.max_tokens,
            temperature=options.temperature,
        )
    )
    return response.text
