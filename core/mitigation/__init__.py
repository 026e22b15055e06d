"""Mitigation: self-refine (standard), cross-model verification (premium), retrieval feedback.

The guard runs these for a flagged answer when given a model::

    verdict = guard.guard(context=docs, question=q, answer=a, llm=my_llm)
    verdict.final_answer, verdict.status, verdict.iterations, verdict.cost.llm_calls

Loops are written once as generators of operations (:mod:`._ops`) and run by a sync
driver (``complete``) or an async one (``acomplete``). Everything the loops call out
to is a small protocol: :class:`~truthlens_integrations.core.llm.LLM`,
:class:`Retriever`, :class:`GroundedAnswerer`.
"""

from __future__ import annotations

from ._defence import (
    SCENARIOS,
    Degradation,
    Passage,
    Scenario,
    build_constrained_prompt,
    degrade,
    filter_passages,
)
from ._feedback import (
    RefinedQuery,
    accumulate_context,
    build_refiner_messages,
    fallback_query,
    parse_refined_query,
    retrieval_feedback,
)
from ._loop import LoopSettings, MitigationOptions, Recorder
from ._mitigate import MitigationRequest, amitigate, mitigate, wants_mitigation
from ._ops import Ledger, Runtime, adrive, drive
from ._premium import VERIFIER_STYLES, cross_model, lexical_label, merge_claims, tally_claims
from ._prompts import (
    absurd_reason,
    build_answer_messages,
    build_judge_messages,
    build_refine_messages,
    clean_output,
    defuse,
    format_documents,
    mark_spans,
)
from ._protocols import (
    CallableAnswerer,
    CallableRetriever,
    GroundedAnswer,
    GroundedAnswerer,
    RetrievalError,
    Retriever,
    answerer_from_callables,
    retriever_from_callables,
)
from ._refine import self_refine
from ._results import (
    AnswerDiff,
    Assessment,
    ClaimCheck,
    CostAccount,
    Iteration,
    IterationKind,
    MitigationResult,
    MitigationStatus,
    ModelUse,
    Strategy,
    diff_answers,
)
from ._text import content_words, numbers

__all__ = [
    "SCENARIOS",
    "VERIFIER_STYLES",
    "AnswerDiff",
    "Assessment",
    "CallableAnswerer",
    "CallableRetriever",
    "ClaimCheck",
    "CostAccount",
    "Degradation",
    "GroundedAnswer",
    "GroundedAnswerer",
    "Iteration",
    "IterationKind",
    "Ledger",
    "LoopSettings",
    "MitigationOptions",
    "MitigationRequest",
    "MitigationResult",
    "MitigationStatus",
    "ModelUse",
    "Passage",
    "Recorder",
    "RefinedQuery",
    "RetrievalError",
    "Retriever",
    "Runtime",
    "Scenario",
    "Strategy",
    "absurd_reason",
    "accumulate_context",
    "adrive",
    "amitigate",
    "answerer_from_callables",
    "build_answer_messages",
    "build_constrained_prompt",
    "build_judge_messages",
    "build_refine_messages",
    "build_refiner_messages",
    "clean_output",
    "content_words",
    "cross_model",
    "defuse",
    "degrade",
    "diff_answers",
    "drive",
    "fallback_query",
    "filter_passages",
    "format_documents",
    "lexical_label",
    "mark_spans",
    "merge_claims",
    "mitigate",
    "numbers",
    "parse_refined_query",
    "retrieval_feedback",
    "retriever_from_callables",
    "self_refine",
    "tally_claims",
    "wants_mitigation",
]
