"""Standard mode: self-refine with the same model (design section 5.4)."""

from __future__ import annotations

from collections.abc import Sequence

from .._errors import LLMError, LLMTimeoutError
from ..llm import LLM
from ._loop import LoopSettings, Recorder
from ._ops import Generate, Ledger, Loop, assess, generate
from ._prompts import absurd_reason, build_answer_messages, build_refine_messages, clean_output
from ._results import Assessment, IterationKind, MitigationStatus

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

    A model that hands back an answer it already gave (small models echo the answer
    they were asked to fix, and greedy decoding repeats itself exactly) gets one fresh,
    grounded prompt instead of the refine prompt (a ``regenerate`` round); if that
    repeats an earlier answer too, the loop stops with ``answer_stagnation`` rather
    than spend the remaining rounds on identical calls.

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
    seen = {_key(initial.answer)}
    kind: IterationKind = "refine"
    for _ in range(settings.max_iterations):
        if rec.reached(rec.best):
            break
        rec.start()
        current = rec.best
        if kind == "refine":
            build = settings.options.refine_messages or build_refine_messages
            messages = build(
                context=context, question=question, answer=current.answer, spans=current.spans
            )
        else:
            messages = build_answer_messages(context=context, question=question)
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
            rec.record(kind, None, error=error)
            break
        except LLMError as exc:
            status, error = "llm_error", str(exc)
            rec.record(kind, None, error=error)
            break
        text = clean_output(response.text)
        reason = absurd_reason(text, reference=current.answer)
        if reason is not None:
            rec.record(kind, None, error=reason, answer=response.text)
            continue
        repeated = _key(text) in seen
        seen.add(_key(text))
        if repeated and kind == "regenerate":
            rec.record(kind, None, error="repeats an earlier answer", answer=text)
            status = "answer_stagnation"
            break
        candidate = yield from assess(context, text)
        rec.record(kind, candidate)
        kind = "regenerate" if repeated else "refine"
    if rec.reached(rec.best):
        status = "converged"
    return rec.result("self_refine", status, context=context, error=error)


def _key(answer: str) -> str:
    """An answer compared for repeats: case and spacing do not make it new."""
    return " ".join(answer.lower().split())
