"""Tests of ``core/engine/_verdict.py``: what a verdict holds and what redaction withholds from
the caller.
"""

from __future__ import annotations

import json
import logging

import pytest

from tests._fakes import Scripted, leaks, make_engine
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core.engine import Verdict
from truthlens_integrations.core.engine._verdict import VERDICT_FIELDS
from truthlens_integrations.core.mitigation import retriever_from_callables
from truthlens_integrations.core.models.detection import Detector

EIFFEL = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}


# -- 10. redaction -----------------------------------------------------------------------


def test_the_leak_check_ignores_digits_inside_a_number() -> None:
    assert leaks("1950", '{"answer": "built in 1950."}')
    assert not leaks("1950", '{"score": 0.2802709997195050}')


def test_redaction_keeps_hallucinated_text_from_the_caller_but_not_the_audit(
    detector: Detector, caplog: pytest.LogCaptureFixture
) -> None:
    audit: list[Verdict] = []
    policy = {
        "hallucination": {
            "hallucination_action": "block",
            "include_hallucination_details": True,
            "default_mode": "standard",
        }
    }
    engine = make_engine(detector, policy, redact=True, audit_hook=audit.append)
    llm = Scripted(["The Eiffel Tower was built in 1950, is 500 meters tall."] * 6)
    with caplog.at_level(logging.DEBUG, logger="truthlens_integrations"):
        verdict = engine.guard(**EIFFEL, llm=llm)
    assert verdict.blocked and verdict.redacted
    shown = verdict.model_dump_json()
    for secret in ("1950", "500 meters", EIFFEL_ANSWER):
        assert not leaks(secret, shown)
        assert not any(leaks(secret, r.getMessage()) for r in caplog.records)
    assert verdict.metadata["x-vsr-hallucination-spans"] == "30-34; 42-52"
    assert verdict.history and all(s.answer in (None, "[redacted]") for s in verdict.history)
    (full,) = audit
    assert full.original_answer == EIFFEL_ANSWER and not full.redacted
    assert [s.text for s in full.spans] == ["1950", "500 meters"]


def test_without_redaction_the_audit_hook_still_sees_every_verdict(detector: Detector) -> None:
    audit: list[Verdict] = []
    engine = make_engine(detector, audit_hook=audit.append)
    verdict = engine.guard(**EIFFEL)
    assert audit == [verdict] and not verdict.redacted
    assert json.loads(verdict.model_dump_json())["original_answer"] == EIFFEL_ANSWER


# -- Mitigation loops end to end: self-refine, cross-model verification, retrieval feedback.


def test_verdict_fields_exist() -> None:
    for name in ("final_answer", "status", "history", "diff", "cost", "original_score"):
        assert name in VERDICT_FIELDS


# -- Withheld text and the explicit channel: the audit hook, contradictory options, and the


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
    engine = make_engine(detector, policy, redact=redact, audit_hook=audit.append)
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


# -- marks under the threshold (issue 51: `truthlens detect` showed [[cannot]] and SUPPORTED) --


def test_marks_under_the_threshold_are_kept_apart_from_the_findings(detector: Detector) -> None:
    wrong = {**EIFFEL, "answer": "The Eiffel Tower was built in 1950."}
    # the keyword detector scores "1950" 0.99999: a threshold of 1.0 is not reached
    verdict = make_engine(detector, threshold=1.0).guard(**wrong)
    assert verdict.passed and not verdict.detected and verdict.spans == []
    assert [s.text for s in verdict.below_threshold_spans] == ["1950"]
    data = verdict.to_dict()
    assert data["spans"] == [] and data["below_threshold_spans"][0]["text"] == "1950"
    flagged = make_engine(detector).guard(**wrong)
    assert [s.text for s in flagged.spans] == ["1950"] and flagged.below_threshold_spans == []
    hidden = make_engine(detector, threshold=1.0, redact=True).guard(**wrong)
    assert not leaks("1950", json.dumps(hidden.to_dict()["below_threshold_spans"]))


def test_an_answer_not_checked_has_no_marks_at_all(detector: Detector) -> None:
    verdict = make_engine(detector).guard(context=None, question="Why?", answer="In 1950.")
    assert not verdict.checked and verdict.below_threshold_spans == [] and verdict.spans == []
