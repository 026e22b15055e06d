"""Issue 13, LlamaIndex side: arguments from one definition, typed errors, retries, redaction.

Real tiny keyword detector (flags "1950", "500", "meters"), the STAND-IN prompt
classifier and scripted LlamaIndex LLM of tests/_llamaindex_support.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage as LIChatMessage
from llama_index.core.base.llms.types import ChatResponse
from llama_index.core.llms import MockLLM

from tests._fakes import AlwaysFactual, leaks, option_samples
from tests._llamaindex_support import QUESTION, ScriptedLLM, make_engine
from truthlens_integrations.core import (
    ConfigError,
    InvalidArgumentError,
    UnknownArgumentError,
)
from truthlens_integrations.core.engine import Verdict
from truthlens_integrations.core.engine._options import ENGINE_OPTION_NAMES, POLICY_KNOB_NAMES
from truthlens_integrations.core.engine._tools import ADAPTER_TOOLS
from truthlens_integrations.core.llm import RetryPolicy
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.llamaindex_adapter import (
    CoreLLMAsLlamaIndex,
    LlamaIndexLLM,
    TruthLensDetectionStartEvent,
    TruthLensEvaluator,
    TruthLensNodePostprocessor,
    TruthLensQueryEngine,
)


def inner(index: Any) -> Any:
    return index.as_query_engine(llm=ScriptedLLM(), similarity_top_k=1)


def samples(detector: Detector, index: Any) -> dict[str, Any]:
    retriever = index.as_retriever(similarity_top_k=1)
    return option_samples(
        detector, nli=None, fact_checker=AlwaysFactual(), llm=ScriptedLLM, retriever=retriever
    )


def test_misspelt_arguments_are_rejected_with_a_suggestion(index, detector) -> None:
    engine = make_engine(detector)
    with pytest.raises(UnknownArgumentError, match="did you mean 'retrieval_feedback'"):
        TruthLensQueryEngine(inner(index), engine=engine, retrival_feedback=True)
    with pytest.raises(UnknownArgumentError, match="did you mean 'threshold'"):
        TruthLensEvaluator(engine, threshhold=0.3)
    with pytest.raises(UnknownArgumentError, match="did you mean 'min_score'"):
        TruthLensNodePostprocessor(min_scor=0.5)
    with pytest.raises(UnknownArgumentError, match="did you mean 'num_output'"):
        CoreLLMAsLlamaIndex(None, num_outputs=5)  # type: ignore[arg-type]


def test_wrong_types_fail_at_the_call(index, detector) -> None:
    engine = make_engine(detector)
    with pytest.raises(InvalidArgumentError, match="retrieval_feedback"):
        TruthLensQueryEngine(inner(index), engine=engine, retrieval_feedback="no")
    with pytest.raises(InvalidArgumentError, match="nli"):
        TruthLensQueryEngine(inner(index), nli=42)
    with pytest.raises(InvalidArgumentError, match="LlamaIndex LLM"):
        TruthLensQueryEngine(inner(index), engine=engine, llm="gpt")
    with pytest.raises(InvalidArgumentError, match="retriever"):
        TruthLensQueryEngine(inner(index), engine=engine, retriever="bm25")
    with pytest.raises(ConfigError, match="either engine or config"):
        TruthLensEvaluator(engine, config={})


def _accepts(build: Callable[[dict[str, Any]], Any], name: str, value: Any) -> Any:
    try:
        return build({name: value})
    except UnknownArgumentError as exc:  # pragma: no cover - the failure this test exists for
        raise AssertionError(f"{name} is not accepted: {exc}") from exc


def test_every_option_reaches_the_llamaindex_adapters(index, detector) -> None:
    values = samples(detector, index)
    assert set(values) == {*ENGINE_OPTION_NAMES, *POLICY_KNOB_NAMES, *ADAPTER_TOOLS}
    base = make_engine(detector)
    for name, value in values.items():
        made = _accepts(
            lambda kw: TruthLensQueryEngine(inner(index), engine=base, **kw), name, value
        )
        if name in ENGINE_OPTION_NAMES and value is not None:
            assert getattr(made.engine.options, name) is value, name
    for name in (*ENGINE_OPTION_NAMES, *POLICY_KNOB_NAMES):
        evaluator = _accepts(lambda kw: TruthLensEvaluator(base, **kw), name, values[name])
        if name in ENGINE_OPTION_NAMES and values[name] is not None:
            assert getattr(evaluator.engine.options, name) is values[name]
    knobbed = TruthLensQueryEngine(inner(index), engine=base, mode="standard", threshold=0.9)
    settings = knobbed.engine.policy.settings_for(None)
    assert (settings.mode, settings.threshold) == ("standard", 0.9)


class Flaky(MockLLM):
    """FAKE LlamaIndex LLM: fails twice with a 429-like error, then answers."""

    calls: int = 0

    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        self.calls += 1
        if self.calls <= 2:
            error = RuntimeError("rate limited")
            error.status_code = 429  # type: ignore[attr-defined]
            raise error
        return ChatResponse(message=LIChatMessage(role="assistant", content="Paris"))

    async def achat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        return self.chat(messages, **kwargs)


def test_transient_errors_of_a_llamaindex_llm_are_retried() -> None:
    model = Flaky()
    llm = LlamaIndexLLM(model, retry=RetryPolicy(max_attempts=3, wait_initial=0.0))
    response = llm.complete("Capital of France?")
    assert response.text == "Paris" and response.attempts == 3
    again = LlamaIndexLLM(Flaky(), retry=RetryPolicy(wait_initial=0.0))
    assert asyncio.run(again.acomplete("Capital?")).attempts == 3


def test_redacted_query_engine_leaks_no_hallucinated_text(index, detector, collected) -> None:
    audit: list[Verdict] = []
    guarded = TruthLensQueryEngine(
        inner(index),
        engine=make_engine(detector, hallucination_action="block"),
        redact=True,
        audit_hook=audit.append,
    )
    response = guarded.query(QUESTION)
    assert not leaks("1950", json.dumps(response.metadata, default=str))
    assert "1950" not in (response.response or "")
    starts = [e for e in collected if isinstance(e, TruthLensDetectionStartEvent)]
    assert starts and all("1950" not in e.answer for e in starts)
    assert not any(
        leaks("1950", json.dumps(e.model_dump(), default=str))
        for e in collected
        if "TruthLens" in e.class_name()
    )
    assert audit and "1950" in audit[0].original_answer
