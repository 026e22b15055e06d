"""Tests of ``core/llm/_coerce.py``: another framework's model wherever the engine takes an LLM.

docs/engine.md lists LangChain chat models and LlamaIndex LLMs as guard-call tools;
``engine.guard(llm=ChatOpenAI(...))`` was refused ("llm must be an LLM (complete/
acomplete)"), and a LlamaIndex LLM, which has methods of those names taking other
arguments, was called as if it were a core LLM (every round an ``llm_error``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import (
    FakeListChatModel,
    FakeListLLM,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from llama_index.core.llms import MockLLM

from tests._fakes import make_engine
from tests.conftest import EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import InvalidArgumentError
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.testing import scripted_function_llm

WRONG = "The Eiffel Tower was built in 1950."
FIXED = "The Eiffel Tower was built in 1887-1889."  # the keyword detector flags no word
EIFFEL = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION, "answer": WRONG}

MODELS: dict[str, Callable[[], Any]] = {
    "FakeListChatModel": lambda: FakeListChatModel(responses=[FIXED] * 4),
    "GenericFakeChatModel": lambda: GenericFakeChatModel(messages=iter([AIMessage(FIXED)] * 4)),
    "with_retry": lambda: FakeListChatModel(responses=[FIXED] * 4).with_retry(),
    "FakeListLLM": lambda: FakeListLLM(responses=[FIXED] * 4),  # text in, text out
    "llama_index": lambda: scripted_function_llm([FIXED] * 4),
}


@pytest.mark.parametrize("make_model", MODELS.values(), ids=MODELS.keys())
def test_the_engine_refines_with_another_frameworks_model(
    detector: Detector, make_model: Callable[[], Any]
) -> None:
    engine = make_engine(detector, mode="standard", align_quantities=False)
    verdict = engine.guard(**EIFFEL, llm=make_model())
    assert verdict.status == "converged", verdict.mitigation_error
    assert verdict.final_answer == FIXED
    assert verdict.passed is False and verdict.iterations == 1


async def test_the_async_guard_takes_them_too(detector: Detector) -> None:
    engine = make_engine(detector, mode="standard", align_quantities=False)
    verdict = await engine.aguard(**EIFFEL, llm=FakeListChatModel(responses=[FIXED]))
    assert verdict.status == "converged" and verdict.final_answer == FIXED


def test_a_llamaindex_llm_is_wrapped_not_called_as_a_core_llm(detector: Detector) -> None:
    # MockLLM has complete/acomplete of its own (prompt: str): called with the core's
    # arguments, it answered a CompletionResponse and every round was an llm_error.
    engine = make_engine(detector, mode="standard", align_quantities=False, max_iterations=1)
    verdict = engine.guard(**EIFFEL, llm=MockLLM(max_tokens=3))
    assert verdict.mitigation_error is None
    assert [step.answer for step in verdict.history] == [WRONG, "text text text"]


def test_premium_verifiers_and_judge_may_be_chat_models(detector: Detector) -> None:
    engine = make_engine(detector, mode="premium", align_quantities=False, max_iterations=1)
    verdict = engine.guard(
        **EIFFEL,
        llm=FakeListChatModel(responses=[FIXED] * 6),
        verification_llms=[FakeListChatModel(responses=[FIXED] * 6)],
        judge_llm=GenericFakeChatModel(messages=iter([AIMessage('{"answer": 1}')] * 6)),
    )
    assert verdict.mitigation_error is None
    roles = {use.role for use in verdict.cost.models}
    assert "verifier" in roles, roles


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("gpt-4o-mini", "str"),
        (Document("not a model"), "Document"),  # LangChain's, but no model
        (RunnableLambda(lambda x: x), "RunnableLambda"),
    ],
    ids=["a string", "a LangChain document", "a runnable that is no model"],
)
def test_what_is_no_model_is_refused_at_the_call(
    detector: Detector, value: object, named: str
) -> None:
    engine = make_engine(detector, mode="standard")
    with pytest.raises(InvalidArgumentError) as caught:
        engine.guard(**EIFFEL, judge_llm=value)
    message = str(caught.value)
    assert message.startswith("TruthLens.guard: judge_llm must be a truthlens LLM")
    assert "a LangChain chat model or LLM, or a LlamaIndex LLM" in message and named in message


def test_a_wrong_verifier_is_named_by_its_place(detector: Detector) -> None:
    engine = make_engine(detector, mode="premium")
    with pytest.raises(InvalidArgumentError, match=r"verification_llms\[1\] must be"):
        engine.guard(**EIFFEL, verification_llms=[FakeListChatModel(responses=[FIXED]), 42])
