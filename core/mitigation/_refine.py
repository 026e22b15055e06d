"""Standard mode: self-refine with the same model (design section 5.4)."""

from __future__ import annotations

from collections.abc import Sequence

from .._errors import LLMError, LLMTimeoutError
from ..llm import LLM
from ._loop import LoopSettings, Recorder
from ._ops import Generate, Ledger, Loop, assess, generate
from ._prompts import absurd_reason, build_refine_messages, clean_output
from ._results import Assessment, MitigationStatus

__all__ = ["self_refine"]


def self_refine(
    *,
    context: Sequence[str],
    question: str | None,
    initial: Assessment,
    llm: LLM,
    settings: LoopSettings,
    ledger: Ledger,
) -> Loop:
    """Detect -> refine prompt -> regenerate -> detect, until converged or out of rounds.

    Each round refines the best answer so far (never a worse one), so a bad round
    cannot drag later rounds down. Empty or absurd output is a failed round; an LLM
    error or timeout stops the loop with the best answer.

    Args:
        context: Grounding passages.
        question: The user's question.
        initial: The original answer's assessment.
        llm: The model that refines (the same model that answered, ideally).
        settings: Rounds, convergence threshold and generation options.
        ledger: The request's cost ledger.

    Returns:
        The loop, to run with ``drive`` / ``adrive``; it returns a ``MitigationResult``.
    """
    rec = Recorder(initial, ledger, settings.convergence_threshold)
    status: MitigationStatus = "max_iterations_reached"
    error: str | None = None
    for _ in range(settings.max_iterations):
        if rec.reached(rec.best):
            break
        rec.start()
        current = rec.best
        build = settings.options.refine_messages or build_refine_messages
        messages = build(
            context=context, question=question, answer=current.answer, spans=current.spans
        )
        try:
            response = yield from generate(
                Generate(
                    llm,
                    tuple(messages),
                    role="generator",
                    max_tokens=settings.options.max_tokens,
                    temperature=settings.options.temperature,
                )
            )
        except LLMTimeoutError as exc:
            status, error = "llm_timeout", str(exc)
            rec.record("refine", None, error=error)
            break
        except LLMError as exc:
            status, error = "llm_error", str(exc)
            rec.record("refine", None, error=error)
            break
        text = clean_output(response.text)
        reason = absurd_reason(text, reference=current.answer)
        if reason is not None:
            rec.record("refine", None, error=reason, answer=response.text)
            continue
        candidate = yield from assess(context, text)
        rec.record("refine", candidate)
    if rec.reached(rec.best):
        status = "converged"
    return rec.result("self_refine", status, context=context, error=error)
