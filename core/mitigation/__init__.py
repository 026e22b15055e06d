"""Mitigation: self-refine (standard), cross-model verification (premium), retrieval feedback.

The guard runs these for a flagged answer when given a model::

    verdict = guard.guard(context=docs, question=q, answer=a, llm=my_llm)
    verdict.final_answer, verdict.status, verdict.iterations, verdict.cost.llm_calls

Loops are written once as generators of operations (:mod:`._ops`) and run by a sync
driver (``complete``) or an async one (``acomplete``). Everything the loops call out
to is a small protocol: :class:`~truthlens_integrations.core.llm.LLM`,
:class:`Retriever`, :class:`GroundedAnswerer`.

Public: the options, the result and the protocols a caller implements, and the design's
defence layers around the guard (:func:`filter_passages`, :func:`build_constrained_prompt`,
:func:`degrade_verdict` and :func:`degrade` with its :data:`SCENARIOS`). The loops'
building blocks are private modules here.
"""

from __future__ import annotations

from ._defence import (
    SCENARIOS,
    Degradation,
    Passage,
    Scenario,
    build_constrained_prompt,
    degrade,
    degrade_verdict,
    filter_passages,
)
from ._loop import MitigationOptions
from ._protocols import (
    GroundedAnswer,
    GroundedAnswerer,
    Retriever,
    answerer_from_callables,
    retriever_from_callables,
)
from ._results import Iteration, IterationKind, MitigationResult, MitigationStatus, Strategy

__all__ = [
    "SCENARIOS",
    "Degradation",
    "GroundedAnswer",
    "GroundedAnswerer",
    "Iteration",
    "IterationKind",
    "MitigationOptions",
    "MitigationResult",
    "MitigationStatus",
    "Passage",
    "Retriever",
    "Scenario",
    "Strategy",
    "answerer_from_callables",
    "build_constrained_prompt",
    "degrade",
    "degrade_verdict",
    "filter_passages",
    "retriever_from_callables",
]
