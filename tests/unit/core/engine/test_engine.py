"""Tests of ``core/engine/_engine.py``: the guard pipeline end to end, its time budget and
audit hook.

The detector is a real (tiny) transformer: ``keyword_model_dir`` flags exactly the
words "1950", "500" and "meters". The NLI explainer and prompt classifier below are
RULE-BASED STAND-INS for the models, written so every label is predictable by hand;
the bundled models are exercised by the last test when their weights are installed.
"""

from __future__ import annotations

import asyncio
import json
import math
import pickle
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

import truthlens_integrations
from tests._fakes import (
    CountingDetector,
    FixedNLI,
    QuestionWordClassifier,
    RuleNLI,
    Scripted,
    make_engine,
)
from tests._paths import POLICIES
from tests._tiny_models import build_nli_model
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations import AuditHookError
from truthlens_integrations.core import (
    BlockedResponseError,
    ConfigError,
    Decision,
    DetectionInput,
    InvalidArgumentError,
    InvalidInputError,
    ModelLoadError,
    ModelNotAvailableError,
    TruthLensError,
    UnknownArgumentError,
)
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.engine._premise import answer_sentence, select_premise
from truthlens_integrations.core.engine._verdict import REDACTED
from truthlens_integrations.core.llm import ChatMessage, LLMResponse
from truthlens_integrations.core.mitigation import retriever_from_callables
from truthlens_integrations.core.models import Detector, FactCheckClassifier, NLIExplainer
from truthlens_integrations.core.models.nli import TransformersNLIExplainer, map_nli_labels
from truthlens_integrations.core.observability import Metrics, Tracer
from truthlens_integrations.core.observability._tracing import HALLUCINATION_EVENT
from truthlens_integrations.core.policy._fields import DEFAULT_WARNING_TEMPLATE

# -- The guard pipeline end to end, on a detector whose output is known in advance. --------


EIFFEL = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}


def make(detector: Detector, config: object = None, **kwargs: object) -> TruthLens:
    # These tests check how NLI labels are used; test_alignment.py covers the override.
    kwargs.setdefault("align_quantities", False)
    return make_engine(detector, config, **kwargs)


def action_policy(action: str, **extra: object) -> dict[str, object]:
    return {"hallucination": {"hallucination_action": action, **extra}}


def test_stand_ins_satisfy_the_protocols() -> None:
    assert isinstance(RuleNLI(), NLIExplainer)
    assert isinstance(QuestionWordClassifier(), FactCheckClassifier)


def test_lazy_top_level_exports() -> None:
    assert truthlens_integrations.TruthLens is TruthLens
    assert truthlens_integrations.Verdict is Verdict


# -- the three paths ---------------------------------------------------------------------


def test_non_factual_prompt_passes_without_detection_when_the_policy_skips_it(
    detector: Detector,
) -> None:
    counting = CountingDetector(detector)
    nli = RuleNLI()
    skip = {"hallucination": {"skip_non_factual_grounded": True}}
    engine = make(counting, skip, nli=nli)  # type: ignore[arg-type]
    verdict = engine.guard(
        context=EIFFEL_CONTEXT, question="Write a poem about the Eiffel Tower", answer=EIFFEL_ANSWER
    )
    assert verdict.decision is Decision.PASS and verdict.passed
    assert counting.batches == 0 and nli.calls == []
    assert verdict.fact_check_needed is False and verdict.fact_check_confidence == 0.9
    assert verdict.score is None and verdict.detection is None and verdict.spans == []
    assert verdict.output == EIFFEL_ANSWER and verdict.action is None
    assert set(verdict.latency_ms) == {"classifier", "routing", "total"}
    # enabled is the route's setting, on both surfaces; checked says it was skipped
    assert verdict.enabled and verdict.metadata["x-truthlens-enabled"] == "true"
    assert verdict.metadata["x-vsr-fact-check-needed"] == "false"
    # Not checked is never clean: the verdict and the headers say so.
    assert not verdict.checked and verdict.not_checked_reason == "non_factual"
    assert verdict.status == "not_checked"
    assert verdict.metadata["x-truthlens-checked"] == "false"
    assert verdict.metadata["x-truthlens-not-checked-reason"] == "non_factual"
    assert verdict.metadata["x-truthlens-detected"] == "unknown"
    assert verdict.metadata["x-vsr-hallucination-detected"] == "unknown"
    assert verdict.metadata["x-truthlens-score"] == "n/a"


@pytest.mark.parametrize(
    "question",
    [
        "Summarize the document.",
        "Give me the height of the tower.",
        "Tell me about the Eiffel Tower.",
    ],
)
def test_grounded_answers_are_checked_whatever_the_classifier_says(
    detector: Detector, question: str
) -> None:
    # Issue 13: these read as non-factual to the classifier, and the wrong answer passed.
    counting = CountingDetector(detector)
    engine = make(counting, action_policy("block"))  # type: ignore[arg-type]
    verdict = engine.guard(context=EIFFEL_CONTEXT, question=question, answer=EIFFEL_ANSWER)
    assert verdict.fact_check_needed is False  # the stand-in classifier: no '?'
    assert counting.batches == 1 and verdict.checked
    assert verdict.blocked and verdict.output is None and verdict.status == "not_run"
    assert verdict.metadata["x-truthlens-checked"] == "true"
    assert verdict.metadata["x-truthlens-detected"] == "true"


def test_non_factual_prompt_without_grounding_is_not_checked_and_says_so(
    detector: Detector,
) -> None:
    verdict = make(detector).guard(context=None, question="Write a poem", answer="Roses are red.")
    assert verdict.passed and not verdict.unverified
    assert verdict.status == "not_checked" and verdict.not_checked_reason == "no_grounding"
    assert verdict.metadata["x-truthlens-checked"] == "false"
    assert verdict.metadata["x-truthlens-score"] == "n/a"


def test_disabled_route_is_not_checked(detector: Detector) -> None:
    verdict = make(detector, {"hallucination": {"enabled": False}}).guard(**EIFFEL)
    assert verdict.passed and verdict.status == "not_checked"
    assert verdict.not_checked_reason == "disabled"
    assert verdict.metadata["x-truthlens-detected"] == "unknown"


@pytest.mark.parametrize("context", [None, "", [], ["  "]])
def test_factual_prompt_without_grounding_is_unverified(
    detector: Detector, context: object
) -> None:
    counting = CountingDetector(detector)
    engine = make(counting, action_policy("header", unverified_factual_action="body"))  # type: ignore[arg-type]
    verdict = engine.guard(context=context, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)  # type: ignore[arg-type]
    assert counting.batches == 0
    assert verdict.unverified and verdict.context_missing and verdict.fact_check_needed
    assert verdict.decision is Decision.MITIGATE and verdict.action == "body"
    said = "Not checked: there was no context to check it against."
    assert verdict.output == f"{EIFFEL_ANSWER}\n\n{DEFAULT_WARNING_TEMPLATE} {said}"
    assert verdict.metadata["x-vsr-unverified-factual-response"] == "true"
    assert verdict.metadata["x-vsr-verification-context-missing"] == "true"
    # not checked: neither "false" (clean) nor "true"
    assert verdict.metadata["x-vsr-hallucination-detected"] == "unknown"
    assert verdict.status == "not_checked" and verdict.not_checked_reason == "no_grounding"


def test_unverified_factual_block(detector: Detector) -> None:
    engine = make(detector, action_policy("header", unverified_factual_action="block"))
    verdict = engine.guard(context=None, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert verdict.blocked and verdict.output is None
    assert verdict.original_answer == REDACTED  # withheld from the caller's copy
    assert verdict.full().original_answer == EIFFEL_ANSWER  # kept for the application


def test_grounded_factual_prompt_runs_full_detection(detector: Detector) -> None:
    nli = RuleNLI()
    verdict = make(detector, nli=nli).guard(**EIFFEL)
    assert verdict.decision is Decision.MITIGATE and verdict.detected
    assert [s.text for s in verdict.spans] == ["1950", "500 meters"]
    assert all(s.nli_label == "contradiction" and s.severity == 4 for s in verdict.spans)
    assert verdict.contradiction_count == 2 and verdict.max_severity == 4
    assert verdict.score is not None and verdict.score >= verdict.threshold == 0.5
    assert verdict.detection is not None and verdict.detection.spans[0].nli_label is None
    assert set(verdict.latency_ms) == {
        "classifier",
        "routing",
        "detector",
        "context",
        "nli",
        "total",
    }
    # one batched NLI call; hypothesis = the answer sentence, premise = the context
    assert len(nli.calls) == 1 and len(nli.calls[0]) == 2
    premise, hypothesis = nli.calls[0][0]
    assert hypothesis == EIFFEL_ANSWER and "1887-1889" in premise
    assert verdict.mode == "lightweight" and verdict.iterations == 0 and verdict.route is None


def test_entailed_span_is_dropped_and_severities_counted(detector: Detector) -> None:
    answer = "The Eiffel Tower was built in 1950. It is 330 meters tall."
    verdict = make(detector).guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=answer)
    assert [s.text for s in verdict.spans] == ["1950"]
    assert [(s.text, s.nli_label) for s in verdict.dropped_spans] == [("meters", "entailment")]
    assert verdict.contradiction_count == 1 and verdict.max_severity == 4
    assert verdict.metadata["x-vsr-nli-contradictions"] == "1"


class _OneLabelNLI(RuleNLI):
    """STAND-IN: every pair gets one label at one confidence."""

    def __init__(self, label: str, confidence: float) -> None:
        super().__init__()
        self.label = (label, confidence)

    def _label(self, premise: str, hypothesis: str) -> tuple[str, float]:
        return self.label


@pytest.mark.parametrize(
    ("confidence", "label", "severity"),
    [(0.95, "contradiction", 4), (0.9, "contradiction", 4), (0.7, "neutral", 2)],
)
def test_a_contradiction_counts_only_when_confident(
    detector: Detector, confidence: float, label: str, severity: int
) -> None:
    # below nli_model.confidence_threshold (0.9) a contradiction refutes nothing, as a weak
    # entailment confirms nothing: both read neutral; the span stays and so does the flag
    nli = _OneLabelNLI("contradiction", confidence)
    verdict = make(detector, nli=nli).guard(**EIFFEL)
    assert verdict.detected and [s.text for s in verdict.spans] == ["1950", "500 meters"]
    assert {(s.nli_label, s.severity) for s in verdict.spans} == {(label, severity)}
    assert all(s.nli_confidence == confidence for s in verdict.spans)
    assert verdict.contradiction_count == (2 if label == "contradiction" else 0)


def test_all_spans_entailed_passes(detector: Detector) -> None:
    verdict = make(detector, nli=FixedNLI("entailment", 0.95)).guard(**EIFFEL)
    assert verdict.decision is Decision.PASS and not verdict.detected
    assert verdict.spans == [] and len(verdict.dropped_spans) == 2
    assert verdict.output == EIFFEL_ANSWER and verdict.action is None


def test_a_score_over_the_threshold_flags_without_a_span(spanless: Detector) -> None:
    # The response score can reach the threshold with no token over the token threshold
    # (here: the largest token probability as the score, spans only above 0.999; the
    # bundled map also reads absent words and length). The engine then agrees with the
    # detector: the answer is flagged, with no span to show. Only NLI finding every span
    # the detector marked entailed lets a high score pass (the test above).
    result = spanless.detect(**EIFFEL)
    assert result.detected and result.spans == []
    verdict = make(spanless, action_policy("body")).guard(**EIFFEL)
    assert verdict.decision is Decision.MITIGATE and verdict.detected
    assert verdict.score == result.score and verdict.spans == []
    assert verdict.output != EIFFEL_ANSWER  # the body action's warning
    clean = "The Eiffel Tower was built from 1887 to 1889 in Paris."
    assert make(spanless).guard(**{**EIFFEL, "answer": clean}).decision is Decision.PASS


def test_weak_entailment_counts_as_neutral_and_neutral_is_severity_two(
    detector: Detector,
) -> None:
    # The README says entailed spans are dropped: none ever stays in verdict.spans.
    # One the NLI model is unsure of (below 0.9) is not confirmed: it counts as neutral.
    weak = make(detector, nli=FixedNLI("entailment", 0.5)).guard(**EIFFEL)
    assert len(weak.spans) == 2 and weak.dropped_spans == []
    assert {(s.nli_label, s.severity, s.nli_confidence) for s in weak.spans} == {
        ("neutral", 2, 0.5)
    }
    assert weak.max_severity == 2
    neutral = make(detector).guard(
        context="The Eiffel Tower stands in Paris.", question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
    )
    assert {s.nli_label for s in neutral.spans} == {"neutral"}
    assert neutral.max_severity == 2 and neutral.contradiction_count == 0


def test_use_nli_false_skips_the_explainer(detector: Detector) -> None:
    nli = RuleNLI()
    verdict = make(detector, action_policy("header", use_nli=False), nli=nli).guard(**EIFFEL)
    assert nli.calls == [] and verdict.detected
    assert all(s.nli_label is None for s in verdict.spans) and verdict.max_severity == 0
    assert "nli" not in verdict.latency_ms and "context" not in verdict.latency_ms


def test_nli_explains_the_spans_of_flagged_answers_only(detector: Detector) -> None:
    # NLI can clear a flagged answer, never flag a passing one (whose verdict shows no
    # span): below the threshold the explainer is not called for the detector's spans.
    assert detector.detect(**EIFFEL).spans
    nli = RuleNLI()
    passed = make(detector, {"hallucination": {"response_threshold": 1.0}}, nli=nli).guard(**EIFFEL)
    assert not passed.detected and nli.calls == []
    assert passed.spans == [] and passed.dropped_spans == []
    assert "nli" not in passed.latency_ms
    flagged = make(detector, nli=nli).guard(**EIFFEL)
    assert flagged.detected and len(nli.calls) == 1
    assert flagged.spans and all(s.nli_label is not None for s in flagged.spans)


def test_clean_answer_passes(detector: Detector) -> None:
    answer = "The Eiffel Tower was built from 1887 to 1889 in Paris."
    verdict = make(detector).guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=answer)
    assert verdict.decision is Decision.PASS and verdict.score is not None
    assert verdict.metadata["x-truthlens-enabled"] == "true"
    assert verdict.metadata["x-truthlens-detected"] == "false"


# -- actions ------------------------------------------------------------------------------


def test_header_action_keeps_text_and_sets_metadata(detector: Detector) -> None:
    verdict = make(detector, action_policy("header", include_hallucination_details=True)).guard(
        **EIFFEL
    )
    assert verdict.action == "header" and verdict.output == EIFFEL_ANSWER and not verdict.blocked
    md = verdict.metadata
    assert md["x-truthlens-detected"] == md["x-vsr-hallucination-detected"] == "true"
    assert md["x-vsr-hallucination-spans"] == "1950; 500 meters"
    assert md["x-vsr-max-severity"] == "4" and md["x-vsr-nli-contradictions"] == "2"
    assert md["x-truthlens-mode"] == "lightweight" and md["x-truthlens-iterations"] == "0"
    assert float(md["x-truthlens-score"]) == pytest.approx(verdict.score, abs=1e-4)


def test_the_warning_names_the_most_severe_spans_first() -> None:
    from truthlens_integrations.core._types import HallucinationSpan
    from truthlens_integrations.core.engine._conclude import flagged_note

    answer = "It stands in Paris, is made of iron, was built in 1950 and is 500 meters tall."

    def span(text: str, confidence: float, severity: int) -> HallucinationSpan:
        start = answer.index(text)
        return HallucinationSpan(
            start=start,
            end=start + len(text),
            text=text,
            confidence=confidence,
            nli_label="contradiction" if severity == 4 else "neutral",
            severity=severity,
        )

    spans = [
        span("Paris", 0.6, 2),
        span("iron", 0.7, 2),
        span("1950", 0.9, 4),
        span("500 meters", 0.95, 4),
    ]
    # the contradictions before the neutral spans, each in answer order, each said as
    # what it is (issue 51: "cannot be verified" was said of a contradiction too)
    assert flagged_note("Check this.", spans) == (
        'Check this. Contradicted by the context: "1950", "500 meters". '
        'Not supported by the context: "Paris" and 1 more.'
    )


def test_a_warned_answer_that_was_not_checked_says_why(detector: Detector) -> None:
    # A warning naming nothing read like a finding; it says the answer was not checked.
    engine = make(detector, {"hallucination": {"unverified_factual_action": "body"}})
    verdict = engine.guard(context=None, question=EIFFEL_QUESTION, answer="In 1950.")
    assert verdict.action == "body" and not verdict.checked
    assert verdict.output is not None
    assert verdict.output.endswith("Not checked: there was no context to check it against.")


def test_header_without_details_writes_offsets_only(detector: Detector) -> None:
    verdict = make(detector, action_policy("header")).guard(**EIFFEL)
    start = EIFFEL_ANSWER.index("1950")
    assert verdict.metadata["x-vsr-hallucination-spans"].startswith(f"{start}-{start + 4}; ")


def test_body_action_appends_the_warning_exactly_once(detector: Detector) -> None:
    template = "WARNING: unverified."
    engine = make(detector, action_policy("body", warning_template=template))
    verdict = engine.guard(**EIFFEL)
    assert verdict.action == "body"
    said = 'Contradicted by the context: "1950", "500 meters".'
    assert verdict.output == f"{EIFFEL_ANSWER}\n\n{template} {said}"
    assert verdict.original_answer == EIFFEL_ANSWER
    # guarding the already-warned output again does not add a second warning
    again = engine.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=verdict.output)
    assert again.output is not None and again.output.count(template) == 1


@pytest.mark.parametrize("details", [True, False])
def test_block_action_returns_a_blocked_verdict(detector: Detector, details: bool) -> None:
    policy = action_policy("block", include_hallucination_details=details)
    verdict = make(detector, policy).guard(**EIFFEL)
    assert verdict.blocked and verdict.output is None and verdict.action == "block"
    assert verdict.decision is Decision.MITIGATE
    assert verdict.redacted and verdict.original_answer == REDACTED  # withheld by default
    assert verdict.full().original_answer == EIFFEL_ANSWER  # kept for audit
    dumped = json.dumps(verdict.to_dict())
    assert "built in 1950" not in dumped and "built in 1950" not in repr(verdict)
    # the withheld text leaks through no header, even with details on
    assert not any("1950" in v or "meters" in v for v in verdict.metadata.values())


def test_block_action_raises_when_configured(detector: Detector) -> None:
    engine = make(detector, action_policy("block"), on_block="raise")
    with pytest.raises(BlockedResponseError) as info:
        engine.guard(**EIFFEL)
    verdict = info.value.verdict
    assert isinstance(verdict, Verdict) and verdict.blocked and verdict.output is None
    assert verdict.full().original_answer == EIFFEL_ANSWER
    assert "1950" not in str(info.value)
    # a clean answer is not blocked
    clean = engine.guard(
        context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer="It was built in 1887."
    )
    assert clean.passed and clean.output == "It was built in 1887."


def test_expose_blocked_text_keeps_the_blocked_answer_in_the_verdict(detector: Detector) -> None:
    engine = make(detector, action_policy("block"), expose_blocked_text=True)
    verdict = engine.guard(**EIFFEL)
    assert verdict.blocked and not verdict.redacted
    assert verdict.original_answer == EIFFEL_ANSWER and verdict.full() is verdict


def test_the_full_verdict_stays_out_of_every_serialisation(detector: Detector) -> None:
    seen: list[Verdict] = []
    engine = make(detector, action_policy("block"), audit_hook=seen.append)
    verdict = engine.guard(**EIFFEL)
    assert seen[0].original_answer == EIFFEL_ANSWER == verdict.full().original_answer
    for text in (json.dumps(verdict.to_dict()), verdict.model_dump_json(), repr(verdict)):
        assert "built in 1950" not in text and "meters tall" not in text
    # a pickle (a checkpointer, a process pool) does not carry the withheld text
    restored = pickle.loads(pickle.dumps(verdict))
    assert b"built in 1950" not in pickle.dumps(verdict) and restored.full() is restored
    # a verdict rebuilt from its dict is the withheld one
    assert Verdict.model_validate(verdict.to_dict()).full().original_answer == REDACTED


def test_on_block_is_the_one_option(detector: Detector) -> None:
    assert TruthLens.from_config(detector=detector).on_block == "message"
    engine = make(detector, action_policy("block"), on_block="raise")
    assert engine.on_block == "raise"
    with pytest.raises(BlockedResponseError):
        engine.guard(**EIFFEL)
    quiet = make(detector, action_policy("block"), on_block="message")
    assert quiet.on_block == "message" and quiet.guard(**EIFFEL).blocked
    # derived engines keep it
    assert quiet.derive(threshold=0.4).on_block == "message"
    with pytest.raises(UnknownArgumentError):
        make(detector, raise_on_block=False)
    with pytest.raises(InvalidArgumentError, match="on_block"):
        make(detector, on_block="response")
    with pytest.raises(InvalidArgumentError, match="blocked_message"):
        make(detector, blocked_message=None)
    assert make(detector, blocked_message="Withheld.").blocked_message == "Withheld."


def test_none_action_only_logs(detector: Detector, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="truthlens_integrations"):
        verdict = make(detector, action_policy("none")).guard(**EIFFEL)
    assert verdict.action == "none" and verdict.output == EIFFEL_ANSWER and not verdict.blocked
    assert verdict.decision is Decision.MITIGATE
    records = [
        r for r in caplog.records if getattr(r, "truthlens", {}).get("event") == "guard.verdict"
    ]
    assert records and records[-1].truthlens["action"] == "none"  # type: ignore[attr-defined]


def test_require_disclaimer_warns_even_clean_answers(detector: Detector) -> None:
    verdict = make(detector, action_policy("header", require_disclaimer=True)).guard(
        context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer="It was built in 1887."
    )
    assert verdict.passed and verdict.output is not None
    assert verdict.output.endswith(DEFAULT_WARNING_TEMPLATE)


# -- routing by the design's policy files ---------------------------------------------------


def test_design_decisions_route_and_apply_their_settings(detector: Detector) -> None:
    design = [POLICIES / "truthlens_global.yaml", POLICIES / "truthlens_decisions.yaml"]
    engine = make(detector, design)
    medical = engine.guard(
        context="Ibuprofen: 10 mg per kg every 6 hours.",
        question="What is the ibuprofen dosage for a child in 1950?",
        answer="The dosage was set in 1950 at 500 mg.",
    )
    assert medical.route == "medical_assistant" and medical.mode == "premium"
    assert medical.threshold == 0.3 and medical.detected
    assert medical.metadata["x-truthlens-mode"] == "premium"
    assert medical.output is not None and "请验证关键事实" in medical.output  # require_disclaimer

    creative = engine.guard(
        context=EIFFEL_CONTEXT,
        question="Can you write a poem about the Eiffel Tower?",
        answer=EIFFEL_ANSWER,
    )
    assert creative.route == "creative_writing" and creative.enabled is False
    assert creative.passed and creative.detection is None and creative.output == EIFFEL_ANSWER

    unmatched = engine.guard(**EIFFEL)
    assert unmatched.route is None and unmatched.mode == "standard"
    assert unmatched.threshold == 0.6 and unmatched.detected


def test_halugate_full_policy(detector: Detector) -> None:
    engine = make(detector, POLICIES / "halugate_full.yaml")
    verdict = engine.guard(**EIFFEL)
    assert verdict.route == "verified-factual" and verdict.detected
    assert verdict.metadata["x-vsr-hallucination-spans"] == "1950; 500 meters"

    # fact-check threshold 0.6 from the file: a 0.55 "needs" is not factual
    class Unsure:
        def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
            return [(True, 0.55) for _ in prompts]

    unsure = make(detector, POLICIES / "halugate_full.yaml", fact_checker=Unsure()).guard(**EIFFEL)
    assert unsure.route is None and not unsure.fact_check_needed
    # ... and the grounded answer is still checked (issue 13: grounding means checking)
    assert unsure.checked and unsure.detected


def test_halugate_decision_policy(detector: Detector) -> None:
    verdict = make(detector, POLICIES / "halugate_decision.yaml").guard(**EIFFEL)
    assert verdict.route == "factual-query-with-verification" and verdict.action == "header"


def test_malformed_config_is_a_config_error(detector: Detector) -> None:
    with pytest.raises(ConfigError, match="threshold"):
        make(detector, {"hallucination": {"response_threshold": 1.5}})


def test_bad_input_is_a_typed_error(detector: Detector) -> None:
    with pytest.raises(InvalidInputError):
        make(detector).guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer="  ")


# -- batch, threads, async --------------------------------------------------------------------


def test_guard_batch_mixes_the_three_paths_with_one_nli_call(detector: Detector) -> None:
    nli = RuleNLI()
    engine = make(detector, action_policy("block"), nli=nli, on_block="raise")
    inputs = [
        DetectionInput.create(**EIFFEL),
        DetectionInput.create(context=None, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER),
        DetectionInput.create(context=EIFFEL_CONTEXT, question="Write a poem", answer="Roses."),
        DetectionInput.create(
            context=EIFFEL_CONTEXT, question="How tall?", answer="It is 500 meters tall."
        ),
    ]
    verdicts = engine.guard_batch(inputs)
    # Batch never raises; the unverified factual answer is withheld on a block route too.
    assert [v.blocked for v in verdicts] == [True, True, False, True]
    assert verdicts[1].unverified and verdicts[2].passed and not verdicts[2].fact_check_needed
    assert len(nli.calls) == 1 and len(nli.calls[0]) == 3
    assert [v.full().original_answer for v in verdicts] == [i.answer for i in inputs]
    assert engine.guard_batch([]) == []


def test_threads_share_one_engine(detector: Detector) -> None:
    engine = make(detector)
    expected = engine.guard(**EIFFEL)
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda _: engine.guard(**EIFFEL), range(8)))
    assert all(v.spans == expected.spans and v.output == expected.output for v in got)


async def test_aguard_matches_guard_and_does_not_block_the_loop(detector: Detector) -> None:
    engine = make(detector, fact_checker=QuestionWordClassifier(delay_s=0.2))
    ticks = 0
    stop = asyncio.Event()

    async def heartbeat() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    beat = asyncio.create_task(heartbeat())
    verdicts = await asyncio.gather(engine.aguard(**EIFFEL), engine.aguard(**EIFFEL))
    stop.set()
    await beat
    assert ticks >= 10  # the loop kept running while the models worked
    sync = engine.guard(**EIFFEL)
    assert all(v.spans == sync.spans and v.output == sync.output for v in verdicts)
    batch = await engine.aguard_batch([DetectionInput.create(**EIFFEL)])
    assert batch[0].spans == sync.spans


# -- observability -------------------------------------------------------------------------------


def test_metrics_read_back_from_a_registry(detector: Detector) -> None:
    registry = CollectorRegistry()
    engine = make(detector, metrics=Metrics(registry))
    engine.guard(**EIFFEL)
    engine.guard(context=None, question="Write a poem", answer="Roses.")
    get = registry.get_sample_value
    detected = {"decision": "default", "mode": "lightweight", "detected": "true"}
    # the poem without context was not checked: counted as unknown, never as clean
    unknown = {**detected, "detected": "unknown"}
    assert get("truthlens_detections_total", detected) == 1
    assert get("truthlens_detections_total", unknown) == 1
    assert get("truthlens_detections_total", {**detected, "detected": "false"}) is None
    assert get("truthlens_score_count", {"decision": "default", "mode": "lightweight"}) == 1
    assert get("truthlens_iterations_count", {"decision": "default", "mode": "lightweight"}) == 1
    for operation, count in [("classifier", 2), ("detector", 1), ("nli", 1), ("total", 2)]:
        labels = {"mode": "lightweight", "operation": operation}
        assert get("truthlens_latency_seconds_count", labels) == count, operation
    used = get("truthlens_models_used_total", {"model": detector.model_id, "role": "detector"})
    assert used == 1
    assert get("truthlens_models_used_total", {"model": "rule-nli", "role": "nli"}) == 2
    assert (
        get("truthlens_models_used_total", {"model": "question-words", "role": "classifier"}) == 2
    )


@pytest.mark.parametrize("details", [True, False])
def test_stage_spans_and_hallucination_events(detector: Detector, details: bool) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    policy = action_policy("body", include_hallucination_details=details)
    make(detector, policy, tracer=Tracer(provider)).guard(**EIFFEL)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {
        "truthlens.guard",
        "truthlens.classifier",
        "truthlens.routing",
        "truthlens.detector",
        "truthlens.context",
        "truthlens.nli",
        "truthlens.action",
    }
    root = spans["truthlens.guard"]
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id
               for n, s in spans.items() if n != "truthlens.guard")  # fmt: skip
    events = [e for e in spans["truthlens.action"].events if e.name == HALLUCINATION_EVENT]
    assert [e.attributes["truthlens.span.start"] for e in events] == [
        EIFFEL_ANSWER.index("1950"),
        EIFFEL_ANSWER.index("500"),
    ]
    assert all(e.attributes["truthlens.span.severity"] == 4 for e in events)
    assert all(e.attributes["truthlens.action"] == "body" for e in events)
    texts = [e.attributes.get("truthlens.span.text") for e in events]
    assert texts == (["1950", "500 meters"] if details else [None, None])


# -- helpers and bundled models ---------------------------------------------------------------


def test_premise_selection_by_word_overlap() -> None:
    context = [
        "Paris is the capital of France. The Eiffel Tower was built from 1887 to 1889.",
        "The Louvre is a museum. The tower is 330 meters tall.",
    ]
    start = EIFFEL_ANSWER.index("1950")
    hypothesis = answer_sentence(EIFFEL_ANSWER, start, start + 4)
    assert hypothesis == EIFFEL_ANSWER
    premise = select_premise(context, hypothesis, top_k=2)
    assert premise == "The Eiffel Tower was built from 1887 to 1889. The tower is 330 meters tall."
    assert answer_sentence("One. Two is 500 meters. Three.", 12, 15) == "Two is 500 meters."


def test_bundled_models_on_the_eiffel_example(detector: Detector) -> None:
    from truthlens_integrations.core.models.classifier import BundledFactCheckAdapter
    from truthlens_integrations.core.models.nli import BundledNLIAdapter

    try:
        nli, checker = BundledNLIAdapter(device="cpu"), BundledFactCheckAdapter(device="cpu")
    except (ModelNotAvailableError, ImportError):
        pytest.skip("bundled NLI / classifier weights are not installed")
    engine = make(detector, nli=nli, fact_checker=checker, align_quantities=True)
    verdict = engine.guard(**EIFFEL)
    assert verdict.fact_check_needed
    assert verdict.detected
    assert [s.text for s in verdict.spans] == ["1950", "500 meters"]
    assert {s.nli_label for s in verdict.spans} == {"contradiction"}
    assert verdict.max_severity == 4 and verdict.contradiction_count == 2


def test_quantity_alignment_overrides_an_entailment_on_changed_numbers(
    detector: Detector,
) -> None:
    engine = make(detector, nli=FixedNLI("entailment", 0.95), align_quantities=True)
    verdict = engine.guard(**EIFFEL)
    assert verdict.detected and not verdict.dropped_spans
    assert [(s.nli_label, s.nli_confidence) for s in verdict.spans] == [
        ("contradiction", 1.0),
        ("contradiction", 1.0),
    ]


# -- Hugging Face NLI backend ------------------------------------------------------------------


THREE_WAY = {0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"}


@pytest.fixture(scope="module")
def contradiction_nli_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_nli_model(tmp_path_factory.mktemp("nli"), THREE_WAY, [0.0, 0.0, 5.0])


def test_transformers_nli_maps_labels_from_the_config(contradiction_nli_dir: Path) -> None:
    explainer = TransformersNLIExplainer(contradiction_nli_dir, device="cpu", batch_size=2)
    assert isinstance(explainer, NLIExplainer)
    assert explainer.labels == {0: "entailment", 1: "neutral", 2: "contradiction"}
    pairs = [(EIFFEL_CONTEXT, EIFFEL_ANSWER)] * 3  # two batches
    got = explainer.explain(pairs)
    expected = math.exp(5) / (math.exp(5) + 2)
    assert [label for label, _ in got] == ["contradiction"] * 3
    assert all(c == pytest.approx(expected, abs=1e-4) for _, c in got)
    with pytest.raises(InvalidInputError):
        explainer.explain([("premise", " ")])


def test_map_nli_labels() -> None:
    assert map_nli_labels({0: "entailment", 1: "not_entailment"}) == {
        0: "entailment",
        1: "neutral",
    }
    with pytest.raises(ModelLoadError, match="not an NLI label"):
        map_nli_labels({0: "POSITIVE", 1: "NEGATIVE"})
    with pytest.raises(ModelLoadError, match="no entailment"):
        map_nli_labels({0: "neutral", 1: "contradiction"})


def test_policy_nli_model_id_is_loaded(detector: Detector, contradiction_nli_dir: Path) -> None:
    policy = {"hallucination_mitigation": {"nli_model": {"model_id": str(contradiction_nli_dir)}}}
    engine = TruthLens.from_config(policy, detector=detector, fact_checker=QuestionWordClassifier())
    verdict = engine.guard(**EIFFEL)
    assert {s.nli_label for s in verdict.spans} == {"contradiction"}
    assert verdict.contradiction_count == 2


def test_missing_policy_nli_model_is_a_typed_error(detector: Detector, tmp_path: Path) -> None:
    policy = {"hallucination_mitigation": {"nli_model": {"model_id": str(tmp_path / "none")}}}
    engine = TruthLens.from_config(policy, detector=detector, fact_checker=QuestionWordClassifier())
    with pytest.raises(ModelNotAvailableError):
        engine.guard(**EIFFEL)


def test_bad_nli_output_is_a_typed_error(detector: Detector) -> None:
    with pytest.raises(ModelLoadError, match="'maybe'"):
        make(detector, nli=FixedNLI("maybe", 0.9)).guard(**EIFFEL)


def test_body_and_disclaimer_together_warn_once(detector: Detector) -> None:
    policy = action_policy("body", require_disclaimer=True)
    verdict = make(detector, policy).guard(**EIFFEL)
    assert verdict.output is not None and verdict.output.count(DEFAULT_WARNING_TEMPLATE) == 1
    assert verdict.output.startswith(f"{EIFFEL_ANSWER}\n\n{DEFAULT_WARNING_TEMPLATE} Contradicted")


def test_missing_question_is_treated_as_factual(detector: Detector) -> None:
    checker = QuestionWordClassifier()
    verdict = make(detector, fact_checker=checker).guard(
        context=EIFFEL_CONTEXT, question=None, answer=EIFFEL_ANSWER
    )
    assert checker.calls == 0 and "classifier" not in verdict.latency_ms
    assert verdict.fact_check_needed and verdict.fact_check_confidence is None
    assert verdict.detected and verdict.decision is Decision.MITIGATE


def test_policy_precision_reaches_every_model_the_engine_loads(
    contradiction_nli_dir: Path,
) -> None:
    import torch

    try:
        from truthlens_integrations.core.models import bundled_detector_path

        bundled_detector_path()
    except (ModelNotAvailableError, ImportError):
        pytest.skip("bundled weights are not installed")
    policy = {
        "hallucination": {"precision": "bfloat16", "use_cpu": True},
        "hallucination_mitigation": {"nli_model": {"model_id": str(contradiction_nli_dir)}},
    }
    engine = TruthLens.from_config(policy)
    verdict = engine.guard(**EIFFEL)
    assert engine.detector._loaded.dtype is torch.bfloat16  # type: ignore[attr-defined]
    assert next(engine.nli._loaded.model.parameters()).dtype is torch.bfloat16  # type: ignore[union-attr]
    shared = engine.fact_checker._shared  # type: ignore[attr-defined]
    assert shared.dtype is torch.bfloat16
    # the bf16 detector still finds the Eiffel errors
    assert verdict.detected and any("1950" in s.text for s in verdict.spans)


def test_unknown_precision_is_a_policy_error() -> None:
    with pytest.raises(ConfigError, match="precision"):
        TruthLens.from_config({"hallucination": {"precision": "int4"}})


# -- Calibration files and the routes that read them, as an attacker would feed them. ------


# -- partly read answers --------------------------------------------------------------------


def test_a_partly_read_answer_under_a_high_threshold_is_not_a_clean_pass() -> None:
    from tests.conftest import BUNDLED
    from truthlens_integrations.core.models.detection import load_detector

    if BUNDLED is None:
        pytest.skip("bundled weights are not here")
    detector = load_detector()
    # 49 of the 110 characters are readable; the model has no tokens for the rest
    answer = "The tower was completed in 1889 and painted red every year. " + "🗼" * 50
    raw = detector.detect(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=answer)
    read = raw.coverage.answer_chars_scored
    # what was read scores above the detector's 0.5 (so it says "hallucinated", not
    # "unverifiable") but below the README's 0.7 for fewer false alarms
    assert read < 0.8 * len(answer.replace(" ", "")) and 0.5 <= raw.score < 0.7, (read, raw.score)
    engine = TruthLens.from_config(threshold=0.7, detector=detector)
    verdict = engine.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=answer)
    assert verdict.not_checked_reason == "unverifiable" and verdict.unverified
    assert verdict.mitigation.status == "not_checked"  # it was "not_needed"
    assert verdict.action == "header"  # the route's unverified action, as for unread input
    assert verdict.detection is not None and f"only {read} of" in (verdict.detection.error or "")
    # read in full, the same first sentence is judged at 0.7 as before
    whole = engine.guard(
        context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=answer[: answer.index(" 🗼")]
    )
    assert whole.not_checked_reason is None


def test_a_partly_read_answer_cleared_by_nli_is_not_a_clean_pass(detector: Detector) -> None:
    # The keyword model flags "meters"; NLI finds "330 meters" entailed by the context and
    # drops the span. Read in full the answer then passes; with 40 characters the model's
    # vocabulary cannot read after it, the unread part was never checked.
    engine = make(detector)
    sentence = "The Eiffel Tower is 330 meters tall."
    whole = engine.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=sentence)
    assert whole.dropped_spans and not whole.detected and whole.not_checked_reason is None
    partly = sentence + " " + "🗼" * 40
    verdict = engine.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=partly)
    assert verdict.dropped_spans and not verdict.detected  # NLI cleared what was read
    assert verdict.not_checked_reason == "unverifiable" and verdict.unverified
    assert verdict.action == "header" and verdict.mitigation.status == "not_checked"


# -- Issue 13, engine side: options said once and checked, time budget, poisoned context, redaction.


GOOD = "The Eiffel Tower was built between 1887 and 1889."


# -- 6. time budget ----------------------------------------------------------------------


class Hanging:
    """SCRIPTED FAKE LLM that never answers until released (a hung provider)."""

    name = "hanging"
    model = "hanging"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def complete(self, messages: Sequence[ChatMessage], **kw: object) -> LLMResponse:
        self.calls += 1
        self.release.wait(60)
        return LLMResponse(text=GOOD, model=self.model, latency_ms=1.0)

    async def acomplete(self, messages: Sequence[ChatMessage], **kw: object) -> LLMResponse:
        self.calls += 1
        await asyncio.sleep(60)
        return LLMResponse(text=GOOD, model=self.model, latency_ms=1.0)


BUDGET = {"hallucination": {"default_mode": "standard", "time_budget_s": 0.5}}


def test_time_budget_ends_a_hanging_async_call_with_llm_timeout(detector: Detector) -> None:
    llm = Hanging()
    started = time.perf_counter()
    verdict = asyncio.run(make_engine(detector, BUDGET).aguard(**EIFFEL, llm=llm))
    assert time.perf_counter() - started < 5.0  # not 60
    assert verdict.status == "llm_timeout" and llm.calls == 1
    assert verdict.final_answer == EIFFEL_ANSWER and verdict.detected  # best so far: original


def test_time_budget_ends_a_hanging_sync_call_with_llm_timeout(detector: Detector) -> None:
    llm = Hanging()
    try:
        started = time.perf_counter()
        verdict = make_engine(detector, BUDGET).guard(**EIFFEL, llm=llm)
        assert time.perf_counter() - started < 5.0
        assert verdict.status == "llm_timeout" and "time budget" in (verdict.mitigation_error or "")
    finally:
        llm.release.set()


def test_budget_spent_before_mitigation_makes_no_call(detector: Detector) -> None:
    class Slow(QuestionWordClassifier):
        pass

    llm = Scripted([GOOD])
    tiny = {"hallucination": {"default_mode": "standard", "time_budget_s": 0.05}}
    engine = make_engine(detector, tiny, fact_checker=Slow(delay_s=0.1))
    verdict = engine.guard(**EIFFEL, llm=llm)
    assert verdict.status == "llm_timeout" and llm.sync_calls == 0


def test_time_budget_also_bounds_a_hanging_retriever(detector: Detector) -> None:
    # Retrieval and pipeline re-runs call LLMs too: the budget covers them.
    release = threading.Event()

    def hang(query: str) -> list[str]:
        release.wait(60)
        return []

    async def ahang(query: str) -> list[str]:
        await asyncio.sleep(60)
        return []

    thin = {**EIFFEL, "context": "The Eiffel Tower is a wrought-iron landmark in Paris, France."}
    policy = {"hallucination": {"default_mode": "standard", "time_budget_s": 0.5}}
    refiner = '{"query": "Eiffel Tower construction dates", "missing_facts": ["year"]}'
    try:
        for retriever in (retriever_from_callables(hang), retriever_from_callables(None, ahang)):
            started = time.perf_counter()
            engine = make_engine(detector, policy)
            if retriever._sync is None:  # type: ignore[attr-defined]
                verdict = asyncio.run(
                    engine.aguard(**thin, llm=Scripted([refiner]), retriever=retriever)
                )
            else:
                verdict = engine.guard(**thin, llm=Scripted([refiner]), retriever=retriever)
            assert time.perf_counter() - started < 5.0
            assert verdict.strategy == "retrieval_feedback" and verdict.status == "llm_timeout"
            assert "the retriever" in (verdict.mitigation_error or "")
    finally:
        release.set()


# -- Withheld text and the explicit channel: the audit hook, contradictory options, and the


BLOCK = {"hallucination": {"hallucination_action": "block"}}


# -- the audit hook ---------------------------------------------------------------------------


def test_an_async_audit_hook_is_awaited_on_every_path(detector: Detector) -> None:
    seen: list[Verdict] = []

    async def hook(verdict: Verdict) -> None:
        await asyncio.sleep(0)
        seen.append(verdict)

    engine = make_engine(detector, BLOCK, audit_hook=hook)
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

    engine = make_engine(detector, audit_hook=hook)

    async def main() -> asyncio.AbstractEventLoop:
        await engine.aguard(**EIFFEL)
        return asyncio.get_running_loop()

    caller = asyncio.run(main())
    assert loops == [caller]


def test_a_sync_guard_inside_a_running_loop_still_runs_an_async_hook(detector: Detector) -> None:
    seen: list[Verdict] = []

    async def hook(verdict: Verdict) -> None:
        seen.append(verdict)

    engine = make_engine(detector, audit_hook=hook)

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

    engine = make_engine(detector, BLOCK, audit_hook=async_hook if is_async else sync_hook)
    for call in (lambda: engine.guard(**EIFFEL), lambda: asyncio.run(engine.aguard(**EIFFEL))):
        with pytest.raises(AuditHookError, match="audit store is down") as info:
            call()
        assert isinstance(info.value, TruthLensError)
        assert isinstance(info.value.__cause__, RuntimeError)
        assert isinstance(info.value.verdict, Verdict) and info.value.verdict.blocked
