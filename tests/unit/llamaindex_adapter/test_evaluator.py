"""Tests of ``llamaindex_adapter/_evaluator.py``: TruthLensEvaluator: EvaluationResult fields,
async, RetryQueryEngine.
"""

from __future__ import annotations

import pytest
from llama_index.core import Settings
from llama_index.core.evaluation import BaseEvaluator, EvaluationResult
from llama_index.core.query_engine import RetryQueryEngine

from tests._fakes import AlwaysFactual
from tests._llamaindex_support import (
    QUESTION,
    RIGHT_ANSWER,
    VISITOR_DOC,
    WRONG_ANSWER,
    ScriptedLLM,
    build_index,
    make_engine,
)
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.llamaindex_adapter import TruthLensEvaluator


@pytest.fixture
def evaluator(detector: Detector) -> TruthLensEvaluator:
    return TruthLensEvaluator(make_engine(detector))


def test_flagged_answer_fails_with_spans_in_the_feedback(evaluator: TruthLensEvaluator) -> None:
    assert isinstance(evaluator, BaseEvaluator)
    result = evaluator.evaluate(query=QUESTION, response=WRONG_ANSWER, contexts=[VISITOR_DOC])
    assert isinstance(result, EvaluationResult)
    assert result.passing is False and result.invalid_result is False
    assert result.score is not None and result.score < 0.5  # 1 - hallucination score
    assert result.feedback is not None and '"1950"' in result.feedback
    assert result.query == QUESTION and result.contexts == [VISITOR_DOC]


def test_clean_answer_passes(evaluator: TruthLensEvaluator) -> None:
    result = evaluator.evaluate(query=QUESTION, response=RIGHT_ANSWER, contexts=[VISITOR_DOC])
    assert result.passing is True and result.score is not None and result.score > 0.5
    assert result.feedback == "Every part of the answer is supported by the context."


def test_answer_flagged_as_a_whole_fails_and_says_so(spanless: Detector) -> None:
    result = TruthLensEvaluator(make_engine(spanless)).evaluate(
        query=QUESTION, response=WRONG_ANSWER, contexts=[VISITOR_DOC]
    )
    assert result.passing is False
    assert result.feedback is not None and "as a whole" in result.feedback
    assert "Every part" not in result.feedback


def test_no_context_is_never_faithful(evaluator: TruthLensEvaluator) -> None:
    result = evaluator.evaluate(query=QUESTION, response=RIGHT_ANSWER, contexts=[])
    # not checked: no verdict on faithfulness at all (LlamaIndex's invalid result)
    assert result.passing is None and result.score is None and result.invalid_result
    assert result.invalid_reason == "not checked: no_grounding"
    assert result.feedback is not None and "no context" in result.feedback


def test_missing_response_is_an_invalid_result(evaluator: TruthLensEvaluator) -> None:
    result = evaluator.evaluate(query=QUESTION, response="  ", contexts=[VISITOR_DOC])
    assert result.invalid_result and result.passing is None
    assert result.invalid_reason == "no response to evaluate"


async def test_aevaluate_and_evaluate_response(evaluator: TruthLensEvaluator) -> None:
    result = await evaluator.aevaluate(
        query=QUESTION, response=WRONG_ANSWER, contexts=[VISITOR_DOC]
    )
    assert result.passing is False
    response = build_index().as_query_engine(llm=ScriptedLLM(), similarity_top_k=1).query(QUESTION)
    judged = await evaluator.aevaluate_response(query=QUESTION, response=response)  # type: ignore[arg-type]
    assert judged.passing is False and judged.contexts == [VISITOR_DOC]


def test_blocking_engine_still_evaluates(detector: Detector) -> None:
    engine = TruthLens.from_config(
        {"hallucination": {"use_nli": False, "hallucination_action": "block"}},
        detector=detector,
        fact_checker=AlwaysFactual(),
        on_block="raise",
    )
    result = TruthLensEvaluator(engine).evaluate(
        query=QUESTION, response=WRONG_ANSWER, contexts=[VISITOR_DOC]
    )
    assert result.passing is False


def test_inside_retry_query_engine(evaluator: TruthLensEvaluator, monkeypatch) -> None:
    """The first answer fails; RetryQueryEngine re-asks with the spans as feedback.

    The scripted LLM answers correctly once the prompt tells it an answer was bad
    and names the unsupported span: that is exactly what the feedback carries.
    """
    # FeedbackQueryTransformation reads Settings.llm on construction (never calls it
    # here); without this it tries to import the OpenAI integration.
    monkeypatch.setattr(Settings, "_llm", ScriptedLLM())

    class Corrects(ScriptedLLM):
        def reply(self, prompt: str) -> str:
            self.prompts.append(prompt)
            if "previous bad answer" in prompt and '"1950"' in prompt:
                return "The context does not give the year the tower was built."
            return WRONG_ANSWER

    llm = Corrects()
    inner = build_index().as_query_engine(llm=llm, similarity_top_k=1)
    retry = RetryQueryEngine(inner, evaluator, max_retries=2)
    response = retry.query(QUESTION)
    assert str(response) == "The context does not give the year the tower was built."
    assert len(llm.prompts) == 2
    assert "not supported by the context" in llm.prompts[1]


def test_original_question_strips_retry_feedback() -> None:
    from llama_index.core.indices.query.query_transform.feedback_transform import (
        FeedbackQueryTransformation,
    )
    from llama_index.core.schema import QueryBundle

    from truthlens_integrations.llamaindex_adapter._evaluator import original_question

    feedback = EvaluationResult(response=WRONG_ANSWER, feedback='- "1950" is unsupported')
    retried = FeedbackQueryTransformation(llm=ScriptedLLM()).run(
        QueryBundle(QUESTION), {"evaluation": feedback}
    )
    assert retried.query_str != QUESTION and original_question(retried.query_str) == QUESTION
    assert original_question(QUESTION) == QUESTION and original_question(None) is None


def test_guarded_engine_inside_retry_query_engine(evaluator, detector, monkeypatch) -> None:
    from truthlens_integrations.llamaindex_adapter import TruthLensQueryEngine, get_verdict

    monkeypatch.setattr(Settings, "_llm", ScriptedLLM())

    class Corrects(ScriptedLLM):
        def reply(self, prompt: str) -> str:
            self.prompts.append(prompt)
            if "previous bad answer" in prompt:
                return "The context does not give the year the tower was built."
            return WRONG_ANSWER

    engine = TruthLens.from_config(
        {"hallucination": {"use_nli": False}}, detector=detector, fact_checker=AlwaysFactual()
    )
    questions: list[str | None] = []
    real_guard = engine.guard

    def spy(**kwargs):  # type: ignore[no-untyped-def]
        questions.append(kwargs["question"])
        return real_guard(**kwargs)

    monkeypatch.setattr(engine, "guard", spy)
    inner = build_index().as_query_engine(llm=Corrects(), similarity_top_k=1)
    guarded = TruthLensQueryEngine(inner, engine=engine)
    response = RetryQueryEngine(guarded, evaluator, max_retries=1).query(QUESTION)
    assert str(response) == "The context does not give the year the tower was built."
    verdict = get_verdict(response)
    assert verdict is not None and verdict.original_answer == str(response)
    # both rounds were routed and checked against the user's question, not the feedback
    assert questions == [QUESTION, QUESTION]
