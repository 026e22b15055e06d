"""Standard mode: self-refine with the same model."""

from __future__ import annotations

from collections.abc import Generator, Sequence

from .._errors import LLMError
from ..llm import LLM, ChatMessage
from ._loop import LoopSettings, MitigationOptions, Recorder, ask_model
from ._ops import Ledger, Loop, Op, assess
from ._prompts import build_answer_messages, build_refine_messages
from ._results import Assessment, IterationKind, MitigationStatus

__all__ = ["self_refine"]


def self_refine(
    context: Sequence[str],
    question: str | None,
    initial: Assessment,
    *,
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
    than spend the remaining rounds on identical calls. A refine prompt is never sent
    twice: after a rejected round the best answer, and so its refine prompt, is the one
    already sent, so the next round regenerates instead (the README demo spent a third
    of its time on SmolLM2 writing the rejected answer again).

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
    rec = Recorder(initial, ledger, settings.convergence_threshold, grounding=[question, *context])
    status, error = yield from _rounds(rec, context, question, llm, settings)
    return rec.result("self_refine", status, context=context, error=error, success="converged")


def _rounds(
    rec: Recorder,
    context: Sequence[str],
    question: str | None,
    llm: LLM,
    settings: LoopSettings,
) -> Generator[Op, object, tuple[MitigationStatus, str | None]]:
    """Run the rounds; return the status and error to stop with."""
    seen = {_key(rec.best.answer)}
    refined: set[str] = set()  # the answers whose refine prompt was sent
    kind: IterationKind = "refine"
    for current in rec.each_round(settings.max_iterations):
        if kind == "refine" and _key(current.answer) in refined:
            kind = "regenerate"  # the same prompt again would buy the same answer
        if kind == "refine":
            refined.add(_key(current.answer))
        messages = _messages(kind, context, question, current, settings.options)
        try:
            raw = yield from ask_model(llm, messages, role="generator", options=settings.options)
        except LLMError as exc:
            return rec.failed(kind, exc)
        text = rec.usable(kind, raw, reference=current.answer)
        if text is None:
            continue
        repeated = _key(text) in seen
        seen.add(_key(text))
        if repeated and kind == "regenerate":
            rec.record(kind, None, error="repeats an earlier answer", answer=text)
            return "answer_stagnation", None
        candidate = yield from assess(context, text)
        rec.record(kind, candidate)
        kind = "regenerate" if repeated else "refine"
    return "max_iterations_reached", None


def _messages(
    kind: IterationKind,
    context: Sequence[str],
    question: str | None,
    current: Assessment,
    options: MitigationOptions,
) -> list[ChatMessage]:
    """The refine prompt, or a fresh grounded prompt after a repeated answer."""
    if kind == "regenerate":
        return build_answer_messages(context=context, question=question)
    build = options.refine_messages or build_refine_messages
    return build(context=context, question=question, answer=current.answer, spans=current.spans)


def _key(answer: str) -> str:
    """An answer compared for repeats: case and spacing do not make it new."""
    return " ".join(answer.lower().split())
