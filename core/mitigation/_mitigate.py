"""Which loop runs for a flagged answer, and running it sync or async."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..llm import LLM
from ..policy import ResolvedSettings
from ._feedback import retrieval_feedback
from ._loop import LoopSettings, MitigationOptions
from ._ops import Ledger, Loop, Runtime, adrive, drive
from ._premium import cross_model
from ._protocols import GroundedAnswerer, Retriever
from ._refine import self_refine
from ._results import Assessment, MitigationResult

__all__ = ["MitigationRequest", "amitigate", "mitigate", "wants_mitigation"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MitigationRequest:
    """Everything one mitigation run needs.

    Attributes:
        context: Grounding passages of the request.
        question: The user's question.
        initial: The original answer's assessment (flagged).
        settings: The route's resolved settings (mode, rounds, thresholds).
        llm: The primary model (refines, regenerates, judges by default).
        retriever: Enables the retrieval-feedback loop for unsupported spans.
        answerer: Re-runs the caller's pipeline in the retrieval-feedback loop.
        verification_llms: Premium verifiers.
        judge_llm: Premium judge (``llm`` when ``None``).
        options: Loop tuning.
        deadline: ``time.perf_counter()`` value after which no LLM call may run (the
            policy's ``time_budget_s`` from the start of the request); ``None``: none.
    """

    context: tuple[str, ...]
    question: str | None
    initial: Assessment
    settings: ResolvedSettings
    llm: LLM | None = None
    retriever: Retriever | None = None
    answerer: GroundedAnswerer | None = None
    verification_llms: Sequence[LLM] | None = None
    judge_llm: LLM | None = None
    options: MitigationOptions = field(default_factory=MitigationOptions)
    deadline: float | None = None


def wants_mitigation(request: MitigationRequest) -> bool:
    """Whether a loop can and should run.

    It needs a flagged answer, a mode above lightweight and something to generate with.
    """
    if request.settings.mode == "lightweight" or not request.initial.flagged:
        return False
    return request.llm is not None or request.answerer is not None


def _loop(request: MitigationRequest, ledger: Ledger) -> Loop:
    s = request.settings
    settings = LoopSettings(
        max_iterations=s.max_iterations,
        convergence_threshold=s.convergence_threshold,
        require_consensus=s.require_consensus,
        options=request.options,
    )
    unsupported = any(sp.nli_label in (None, "neutral") for sp in request.initial.spans)
    searchable = request.retriever is not None or request.answerer is not None
    # what every loop starts from: the grounding, the question and the flagged answer
    start = (request.context, request.question, request.initial)
    if searchable and (unsupported or request.llm is None):
        retriever, answerer = request.retriever, request.answerer
        return retrieval_feedback(
            *start,
            llm=request.llm,
            retriever=retriever,
            answerer=answerer,
            settings=settings,
            ledger=ledger,
        )
    assert request.llm is not None  # wants_mitigation: llm or answerer; answerer handled
    if s.mode == "premium":
        if request.verification_llms:
            verifiers, judge = list(request.verification_llms), request.judge_llm or request.llm
            return cross_model(
                *start, verifiers=verifiers, judge=judge, settings=settings, ledger=ledger
            )
        logger.warning("premium mode without verification_llms: falling back to self-refine")
    return self_refine(*start, llm=request.llm, settings=settings, ledger=ledger)


def mitigate(request: MitigationRequest, runtime: Runtime) -> MitigationResult:
    """Run the request's loop with blocking calls.

    Args:
        request: What to mitigate and with which models.
        runtime: The guard's detector and NLI model.

    Returns:
        The loop's result.
    """
    ledger = Ledger(deadline=request.deadline)
    return drive(_loop(request, ledger), runtime, ledger)


async def amitigate(request: MitigationRequest, runtime: Runtime) -> MitigationResult:
    """Async :func:`mitigate`: the loop's calls use ``acomplete`` / ``aretrieve``."""
    ledger = Ledger(deadline=request.deadline)
    return await adrive(_loop(request, ledger), runtime, ledger)
