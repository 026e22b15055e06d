"""Withheld text and the explicit channel: the audit hook, contradictory options, and the
retrieval-feedback loop's rewritten queries of a withheld answer.

The tiny keyword detector flags "1950", "500" and "meters"; the LLM calls are scripted.
"""

from __future__ import annotations

import asyncio
import json
import warnings

import pytest

from tests._fakes import QuestionWordClassifier, RuleNLI, leaks
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from tests.test_mitigation import Scripted
from truthlens_integrations import AuditHookError
from truthlens_integrations.core import ConfigError, DetectionInput, TruthLensError
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.mitigation import retriever_from_callables
from truthlens_integrations.core.models.detection import Detector

EIFFEL = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}
BLOCK = {"hallucination": {"hallucination_action": "block"}}


def make(detector: object, config: object = None, **kwargs: object) -> TruthLens:
    kwargs.setdefault("nli", RuleNLI())
    kwargs.setdefault("fact_checker", QuestionWordClassifier())
    return TruthLens.from_config(config, detector=detector, **kwargs)  # type: ignore[arg-type]


# -- the audit hook ---------------------------------------------------------------------------


def test_an_async_audit_hook_is_awaited_on_every_path(detector: Detector) -> None:
    seen: list[Verdict] = []

    async def hook(verdict: Verdict) -> None:
        await asyncio.sleep(0)
        seen.append(verdict)

    engine = make(detector, BLOCK, audit_hook=hook)
    item = DetectionInput.create(**EIFFEL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" fails the test
        engine.guard(**EIFFEL)
        asyncio.run(engine.aguard(**EIFFEL))
        asyncio.run(engine.aguard(**EIFFEL, llm=Scripted(["Built in 1950."] * 4)))
        engine.guard_batch([item, item])
        asyncio.run(engine.aguard_batch([item]))
    assert len(seen) == 6
    assert all(v.original_answer == EIFFEL_ANSWER and not v.redacted for v in seen)


def test_an_async_audit_hook_runs_on_the_callers_loop(detector: Detector) -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def hook(verdict: Verdict) -> None:
        loops.append(asyncio.get_running_loop())

    engine = make(detector, audit_hook=hook)

    async def main() -> asyncio.AbstractEventLoop:
        await engine.aguard(**EIFFEL)
        return asyncio.get_running_loop()

    caller = asyncio.run(main())
    assert loops == [caller]


def test_a_sync_guard_inside_a_running_loop_still_runs_an_async_hook(detector: Detector) -> None:
    seen: list[Verdict] = []

    async def hook(verdict: Verdict) -> None:
        seen.append(verdict)

    engine = make(detector, audit_hook=hook)

    async def main() -> None:
        engine.guard(**EIFFEL)  # blocking call from async code: still audited

    asyncio.run(main())
    assert len(seen) == 1


@pytest.mark.parametrize("is_async", [False, True])
def test_a_failing_audit_hook_is_a_typed_error_and_hands_nothing_out(
    detector: Detector, is_async: bool
) -> None:
    def sync_hook(verdict: Verdict) -> None:
        raise RuntimeError("audit store is down")

    async def async_hook(verdict: Verdict) -> None:
        raise RuntimeError("audit store is down")

    engine = make(detector, BLOCK, audit_hook=async_hook if is_async else sync_hook)
    for call in (lambda: engine.guard(**EIFFEL), lambda: asyncio.run(engine.aguard(**EIFFEL))):
        with pytest.raises(AuditHookError, match="audit store is down") as info:
            call()
        assert isinstance(info.value, TruthLensError)
        assert isinstance(info.value.__cause__, RuntimeError)
        assert isinstance(info.value.verdict, Verdict) and info.value.verdict.blocked


# -- contradictory options ----------------------------------------------------------------------


def test_redact_with_expose_blocked_text_is_refused(detector: Detector) -> None:
    with pytest.raises(ConfigError, match="redact=True and expose_blocked_text=True"):
        make(detector, redact=True, expose_blocked_text=True)
    make(detector, redact=True)  # each alone is fine
    make(detector, expose_blocked_text=True)


def test_the_adapters_refuse_the_contradiction_too(detector: Detector) -> None:
    from truthlens_integrations.langchain_adapter import TruthLensRunnable
    from truthlens_integrations.llamaindex_adapter import TruthLensEvaluator

    with pytest.raises(ConfigError, match="contradict"):
        TruthLensRunnable(detector=detector, redact=True, expose_blocked_text=True)
    with pytest.raises(ConfigError, match="contradict"):
        TruthLensEvaluator(detector=detector, redact=True, expose_blocked_text=True)


# -- the retrieval-feedback loop's rewritten queries ----------------------------------------------


@pytest.mark.parametrize("redact", [False, True])
def test_rewritten_queries_of_a_withheld_answer_are_withheld(
    detector: Detector, redact: bool
) -> None:
    queries: list[str] = []

    def search(query: str) -> list[str]:
        queries.append(query)
        return ["The Eiffel Tower is a wrought-iron tower on the Champ de Mars."]

    thin = {**EIFFEL, "context": "The Eiffel Tower is a wrought-iron landmark in Paris, France."}
    policy = {"hallucination": {"default_mode": "standard", "hallucination_action": "block"}}
    audit: list[Verdict] = []
    engine = make(detector, policy, redact=redact, audit_hook=audit.append)
    # The refiner fails, so the fallback query carries the unsupported claims.
    llm = Scripted(["no json", "Built in 1950, 500 meters tall."] * 4)
    verdict = engine.guard(**thin, llm=llm, retriever=retriever_from_callables(search))
    assert verdict.strategy == "retrieval_feedback" and verdict.blocked
    assert queries and any(leaks("1950", q) for q in queries)  # the retriever needs them
    asked = [s.query for s in verdict.history if s.query is not None]
    assert asked, "the loop ran a retrieve step"
    assert not leaks("1950", json.dumps(verdict.model_dump(), default=str))
    (full,) = audit  # the explicit channel keeps every iteration
    assert any(leaks("1950", s.query or "") for s in full.history)
    assert verdict.full().history == full.history
