"""Typed records the evaluation readers produce and the harness consumes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core import DetectionInput, NLILabel

__all__ = ["EvalExample", "GoldSpan", "NLIExample"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GoldSpan(_Frozen):
    """A human-annotated hallucinated span: character offsets into the answer."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    label: str | None = Field(default=None, description="Annotation type, e.g. 'Evident Conflict'.")

    @model_validator(mode="after")
    def _check_bounds(self) -> GoldSpan:
        if self.end < self.start:
            raise ValueError(f"gold span end {self.end} is before its start {self.start}")
        return self


class EvalExample(_Frozen):
    """One labelled (context, question, answer) triple of a detection benchmark.

    Attributes:
        id: Identifier unique within its data set.
        dataset: Data set name (``ragtruth``, ``halueval``, ``faithbench``).
        task_type: Group for per-task metrics (RAGTruth ``QA`` / ``Summary`` / ``Data2txt``,
            HaluEval ``qa`` / ``dialogue`` / ``summarization``, FaithBench ``Summary``).
        context: Grounding passages.
        question: The question or instruction; ``None`` for summarisation.
        answer: The response to check.
        hallucinated: Gold example label.
        gold_spans: Gold hallucinated spans of the answer (empty when clean).
        has_span_labels: Whether the data set marks spans at all; examples without
            span labels (HaluEval) are left out of the token and character metrics.
        prompt: The prompt the generating LLM saw, when the data set defines one
            (RAGTruth, rebuilt from its templates); for reference and LettuceDetect's
            ``predict_prompt``, not used by the harness.
        baselines: Predictions of other systems stored in the data (``True`` means
            hallucinated), e.g. FaithBench's HHEM and GPT-4 judgements.
        source_id: What the answer was written over (a RAGTruth source, a question),
            for fits cross-validated by source; ``None`` when the data set has none.
        generator: The LLM that wrote the answer, when the data set names it.
    """

    id: str
    dataset: str
    task_type: str
    context: tuple[str, ...]
    question: str | None = None
    answer: str
    hallucinated: bool
    gold_spans: tuple[GoldSpan, ...] = ()
    has_span_labels: bool = True
    prompt: str | None = None
    baselines: dict[str, bool] = Field(default_factory=dict)
    source_id: str | None = None
    generator: str | None = None

    def to_input(self) -> DetectionInput:
        """The detector input of this example."""
        return DetectionInput.create(
            context=list(self.context), question=self.question, answer=self.answer
        )


class NLIExample(_Frozen):
    """One premise / hypothesis pair with its gold NLI label."""

    id: str
    premise: str
    hypothesis: str
    label: NLILabel


def make_example(
    dataset: str,
    ident: str,
    task_type: str,
    context: Iterable[str],
    question: str | None,
    answer: str,
    **fields: Any,
) -> EvalExample:
    """An :class:`EvalExample` of ``dataset``: the fields every reader fills, then its own.

    Args:
        dataset: The data set's name.
        ident: The example's id within it.
        task_type: Its group for per-task metrics.
        context: Its grounding passages.
        question: The question, or ``None``.
        answer: The answer to check.
        **fields: The data set's other fields (``hallucinated``, ``gold_spans``, ...).

    Returns:
        The example.
    """
    return EvalExample(
        id=ident,
        dataset=dataset,
        task_type=task_type,
        context=tuple(context),
        question=question,
        answer=answer,
        **fields,
    )


def marked(spans: Iterable[GoldSpan]) -> dict[str, Any]:
    """The label fields of an answer whose unsupported parts are ``spans`` (none: clean)."""
    ordered = tuple(sorted(spans, key=lambda s: (s.start, s.end)))
    return {"hallucinated": bool(ordered), "gold_spans": ordered}
