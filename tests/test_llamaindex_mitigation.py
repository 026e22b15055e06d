"""TruthLensQueryEngine with mitigation: standard refinement, retrieval feedback, premium.

Real: the keyword detector, the VectorStoreIndex and its retrieval (bag-of-words
embedding), LlamaIndex's synthesizer, the engine's mitigation loops. STAND-INS: the
LLMs (``ScriptedLLM``), the prompt classifier and, for premium mode, the NLI model.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests import _llamaindex_support as support
from tests._fakes import AlwaysFactual
from tests._llamaindex_support import (
    HISTORY_DOC,
    NO_DATES_ANSWER,
    QUESTION,
    REWRITTEN_QUERY,
    RIGHT_ANSWER,
    VISITOR_DOC,
    WRONG_ANSWER,
    RuleNLI,
    ScriptedLLM,
)
from truthlens_integrations.core import BlockedResponseError
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.llamaindex_adapter import (
    LlamaIndexLLM,
    TruthLensMitigationIterationEvent,
    TruthLensNodePostprocessor,
    TruthLensQueryEngine,
    get_verdict,
)


def make_engine(detector: Detector, mode: str = "standard", **hallucination: Any) -> TruthLens:
    options: dict[str, Any] = {"default_mode": mode, "standard": {"max_iterations": 2}}
    return support.make_engine(detector, **{**options, **hallucination})


async def ask(
    index: Any, detector: Detector, llm: ScriptedLLM, use_async: bool, **options: Any
) -> tuple[Any, Verdict]:
    """``QUESTION`` through a guarded query engine on ``llm`` (sync or async), and its verdict."""
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    qe = TruthLensQueryEngine(inner, engine=make_engine(detector), **options)
    response = await qe.aquery(QUESTION) if use_async else qe.query(QUESTION)
    verdict = get_verdict(response)
    assert verdict is not None
    return response, verdict


# -- standard: re-synthesis with the inner engine's LLM ------------------------------------


@pytest.mark.parametrize("use_async", [False, True])
async def test_standard_mode_refines_with_the_inner_engines_llm(
    index, detector, collected, use_async: bool
) -> None:
    llm = ScriptedLLM()
    response, verdict = await ask(index, detector, llm, use_async)
    assert verdict.status == "converged" and verdict.strategy == "self_refine"
    assert response.response == NO_DATES_ANSWER == verdict.final_answer
    assert verdict.original_answer == WRONG_ANSWER and verdict.original_score is not None
    assert [h.kind for h in verdict.history] == ["initial", "refine"]
    headers = response.metadata["truthlens"]["metadata"]
    assert headers["x-truthlens-iterations"] == "1" and headers["x-truthlens-detected"] == "false"
    # the refinement went through the inner engine's LlamaIndex LLM, after its QA call
    assert len(llm.prompts) == 2 and "Corrected answer" in llm.prompts[1]
    assert VISITOR_DOC in llm.prompts[1] and "[[1950]]" in llm.prompts[1]
    steps = [e for e in collected if isinstance(e, TruthLensMitigationIterationEvent)]
    assert [(s.index, s.kind, s.accepted) for s in steps] == [(1, "refine", True)]


def test_a_given_llm_replaces_the_inner_one(index, detector) -> None:
    inner_llm, refiner = ScriptedLLM(), ScriptedLLM()
    inner = index.as_query_engine(llm=inner_llm, similarity_top_k=1)
    qe = TruthLensQueryEngine(inner, engine=make_engine(detector), llm=refiner)
    qe.query(QUESTION)
    assert len(inner_llm.prompts) == 1 and len(refiner.prompts) == 1


def test_refinement_that_cannot_fix_the_answer_is_blocked(index, detector) -> None:
    llm = ScriptedLLM(always_wrong=True)
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    engine = make_engine(detector, hallucination_action="block")
    qe = TruthLensQueryEngine(inner, engine=engine, blocked_message="Withheld.")
    response = qe.query(QUESTION)
    verdict = get_verdict(response)
    # the scripted model gives the same wrong answer to the refine and the fresh prompt
    assert verdict is not None and verdict.status == "answer_stagnation"
    assert verdict.iterations == 2 and verdict.blocked and response.response == "Withheld."
    with pytest.raises(BlockedResponseError):
        TruthLensQueryEngine(inner, engine=engine, on_block="raise").query(QUESTION)


def test_lightweight_route_does_not_call_the_llm(index, detector) -> None:
    llm = ScriptedLLM()
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    qe = TruthLensQueryEngine(inner, engine=make_engine(detector, mode="lightweight"))
    verdict = get_verdict(qe.query(QUESTION))
    assert verdict is not None and verdict.status == "not_run" and len(llm.prompts) == 1


# -- retrieval feedback: the rewritten query finds the missing document -------------------------


@pytest.mark.parametrize("use_async", [False, True])
async def test_retrieval_feedback_requeries_and_accumulates_source_nodes(
    index, detector, collected, use_async: bool
) -> None:
    llm = ScriptedLLM()
    response, verdict = await ask(index, detector, llm, use_async, retrieval_feedback=True)
    assert verdict.strategy == "retrieval_feedback" and verdict.status == "success"
    # the first retrieval missed the dates; the rewritten query found them
    assert response.response == RIGHT_ANSWER == verdict.final_answer
    assert [n.node.get_content() for n in response.source_nodes] == [VISITOR_DOC, HISTORY_DOC]
    retrieve = verdict.history[-1]
    assert retrieve.kind == "retrieve" and retrieve.query == REWRITTEN_QUERY
    assert retrieve.new_passages == 1
    assert verdict.final_context == [VISITOR_DOC, HISTORY_DOC]
    # the inner engine's LLM answered twice: the question, then the rewritten query
    qa_prompts = [p for p in llm.prompts if "search quer" not in p.lower()]
    assert len(qa_prompts) == 2 and HISTORY_DOC in qa_prompts[1]
    steps = [e for e in collected if isinstance(e, TruthLensMitigationIterationEvent)]
    assert [(s.kind, s.query, s.new_passages) for s in steps] == [("retrieve", REWRITTEN_QUERY, 1)]


def test_retrieval_feedback_with_postprocessor_filters_and_keeps_evidence(index, detector) -> None:
    llm = ScriptedLLM()
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    post = TruthLensNodePostprocessor(min_length=20, evidence_action="drop")
    qe = TruthLensQueryEngine(
        inner, engine=make_engine(detector), retrieval_feedback=True, node_postprocessor=post
    )
    response = qe.query(QUESTION)
    # the visitor document supports nothing in "built from 1887 to 1889": dropped
    assert response.response == RIGHT_ANSWER
    assert [n.node.get_content() for n in response.source_nodes] == [HISTORY_DOC]


# -- premium: LlamaIndex LLMs as verifiers and judge ---------------------------------------------


def test_premium_mode_uses_llamaindex_verifiers(index, detector) -> None:
    engine = TruthLens.from_config(
        {"hallucination": {"default_mode": "premium", "premium": {"max_iterations": 1}}},
        detector=detector,
        fact_checker=AlwaysFactual(),
        nli=RuleNLI(),
    )
    # the inner engine sees both documents but its LLM still says 1950
    inner = index.as_query_engine(llm=ScriptedLLM(always_wrong=True), similarity_top_k=2)
    verifiers = [ScriptedLLM(), ScriptedLLM()]
    judge = ScriptedLLM()
    qe = TruthLensQueryEngine(inner, engine=engine, verification_llms=verifiers, judge_llm=judge)
    response = qe.query(QUESTION)
    verdict = get_verdict(response)
    assert verdict is not None and verdict.strategy == "cross_model"
    assert all(len(v.prompts) == 1 for v in verifiers)  # each verifier answered once
    assert verdict.history[1].kind == "cross_check"
    assert verdict.converged and "1950" not in (response.response or "")
    assert "1887" in (response.response or "")
    models = {m.role for m in verdict.cost.models}
    assert "verifier" in models


def test_llms_of_both_kinds_are_accepted(index, detector) -> None:
    inner = index.as_query_engine(llm=ScriptedLLM(), similarity_top_k=1)
    core_llm = LlamaIndexLLM(ScriptedLLM())
    qe = TruthLensQueryEngine(inner, engine=make_engine(detector), llm=core_llm)
    assert get_verdict(qe.query(QUESTION)).status == "converged"  # type: ignore[union-attr]
    with pytest.raises(TypeError, match="LlamaIndex LLM"):
        TruthLensQueryEngine(inner, engine=make_engine(detector), llm="gpt-4")  # type: ignore[arg-type]


# -- prompts: what get_prompts shows is what the loops send ----------------------------------


def test_updated_refine_prompt_is_what_the_llm_receives(index, detector) -> None:
    from llama_index.core.prompts import PromptTemplate

    llm = ScriptedLLM()
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    qe = TruthLensQueryEngine(inner, engine=make_engine(detector))
    qe.update_prompts(
        {
            "refine_prompt": PromptTemplate(
                "DOCS {context_str} Q {query_str} A {answer} BAD {spans} -> corrected answer:"
            )
        }
    )
    qe.query(QUESTION)
    refine = llm.prompts[1]
    assert "DOCS <context>" in refine and f"Q {QUESTION}" in refine
    assert "A The Eiffel Tower was built in [[1950]]." in refine and 'BAD 1. "1950"' in refine
    assert "never instructions" in refine  # the engine's system message stays in front
    with pytest.raises(ValueError, match="available"):
        qe.update_prompts({"refine_prompt": PromptTemplate("{context_str} {documents}")})


def test_updated_query_rewrite_prompt_drives_the_feedback_loop(index, detector) -> None:
    from llama_index.core.base.llms.types import ChatMessage as LIChatMessage
    from llama_index.core.prompts import ChatPromptTemplate

    llm = ScriptedLLM()
    inner = index.as_query_engine(llm=llm, similarity_top_k=1)
    rewrite = ChatPromptTemplate(
        message_templates=[
            LIChatMessage(role="system", content="Reply with JSON for a search query."),
            LIChatMessage(role="user", content="Q={query_str} LAST={last_query} MISSING={spans}"),
        ]
    )
    qe = TruthLensQueryEngine(
        inner, engine=make_engine(detector), retrieval_feedback=True, query_rewrite_prompt=rewrite
    )
    response = qe.query(QUESTION)
    sent = [p for p in llm.prompts if "search query" in p.lower()]
    assert len(sent) == 1
    assert f"Q={QUESTION} LAST={QUESTION} MISSING=- 1950" in sent[0]
    assert "never instructions" not in sent[0]  # the chat template's own system message
    assert response.response == RIGHT_ANSWER
