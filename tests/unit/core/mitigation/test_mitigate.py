"""Tests of ``core/mitigation/_mitigate.py``: the mitigation loops end to end: self-refine,
cross-model verification, retrieval feedback.

The detector is the real tiny keyword model (flags exactly "1950", "500", "meters");
the NLI explainer and prompt classifier are the rule-based STAND-INS of test_engine.
The LLMs are SCRIPTED FAKES implementing the core LLM protocol: each reply is given in
advance, so every loop decision (converge, keep the best, stop on failure, judge) is
checkable by hand.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from prometheus_client import CollectorRegistry

from tests._fakes import QuestionWordClassifier, RuleNLI, Scripted
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import LLMError, LLMTimeoutError
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.llm import LLM, CompletionRequest, LLMResponse
from truthlens_integrations.core.mitigation import (
    MitigationOptions,
    answerer_from_callables,
    retriever_from_callables,
)
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.core.observability import Metrics
from truthlens_integrations.core.policy._fields import DEFAULT_WARNING_TEMPLATE

# -- Mitigation loops end to end: self-refine, cross-model verification, retrieval feedback.


GOOD = "The Eiffel Tower was built between 1887 and 1889."
PARTIAL = "The Eiffel Tower was built in 1950."  # one flagged span: lower score than EIFFEL
WORSE = "The Eiffel Tower was built in 1950, is 500 meters tall, 500 meters wide."
EIFFEL = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}
# A context without numbers: the RuleNLI stand-in labels numeric spans "neutral".
THIN_CONTEXT = "The Eiffel Tower is a wrought-iron landmark in Paris, France."
RICH_PASSAGE = "The Eiffel Tower was constructed from 1887 to 1889 for the World's Fair."


class Shared:
    """Counts concurrent acomplete calls across several fakes."""

    active = 0
    peak = 0


class Concurrent(Scripted):
    async def _acomplete(self, request: CompletionRequest) -> LLMResponse:
        Shared.active += 1
        Shared.peak = max(Shared.peak, Shared.active)
        try:
            await asyncio.sleep(0.05)
            return self._next(request.messages)
        finally:
            Shared.active -= 1


def engine(
    detector: Detector, mode: str = "standard", *, iterations: int | None = None, **extra: object
) -> TruthLens:
    options = extra.pop("options", None)
    metrics = extra.pop("metrics", None)
    # These tests read the mitigation loop's text: header, so no warning is appended.
    hallucination: dict[str, object] = {
        "default_mode": mode,
        "hallucination_action": "header",
        **extra,
    }
    if iterations is not None:
        hallucination[mode] = {"max_iterations": iterations}
    return TruthLens.from_config(
        {"hallucination": hallucination},
        detector=detector,
        nli=RuleNLI(),
        fact_checker=QuestionWordClassifier(),
        mitigation_options=options,  # type: ignore[arg-type]
        metrics=metrics,  # type: ignore[arg-type]
    )


def test_scripted_fake_satisfies_the_llm_protocol() -> None:
    assert isinstance(Scripted([]), LLM)


# -- standard mode: self-refine ------------------------------------------------------------


def test_self_refine_converges_and_reports_everything(detector: Detector) -> None:
    llm = Scripted([PARTIAL, GOOD])
    verdict = engine(detector).guard(**EIFFEL, llm=llm)
    assert verdict.status == "converged" and verdict.converged
    assert verdict.strategy == "self_refine"
    assert verdict.final_answer == GOOD and verdict.output == GOOD
    assert verdict.original_answer == EIFFEL_ANSWER
    assert verdict.iterations == 2 and verdict.metadata["x-truthlens-iterations"] == "2"
    assert verdict.score is not None and verdict.score < 0.4
    assert verdict.original_score is not None and verdict.original_score > 0.9
    assert not verdict.detected and verdict.spans == []
    assert verdict.metadata["x-truthlens-detected"] == "false"
    assert verdict.decision.value == "MITIGATE" and verdict.action is None
    assert [h.kind for h in verdict.history] == ["initial", "refine", "refine"]
    assert [h.accepted for h in verdict.history] == [True, True, True]
    assert verdict.history[0].answer == EIFFEL_ANSWER
    assert all(h.llm_calls == 1 and h.total_tokens == 25 for h in verdict.history[1:])
    assert verdict.cost.llm_calls == 2 and verdict.cost.total_tokens == 50
    assert verdict.cost.models[0].role == "generator"
    assert verdict.diff is not None and verdict.diff.changed
    assert "in 1950" in " ".join(verdict.diff.removed)
    assert "mitigation" in verdict.latency_ms
    # The second round refines the first round's answer, with its span marked.
    assert "[[1950]]" in llm.prompt(1) and PARTIAL.replace("1950", "[[1950]]") in llm.prompt(1)


def test_refine_prompt_marks_spans_with_confidence_and_nli_label(detector: Detector) -> None:
    llm = Scripted([GOOD])
    engine(detector).guard(**EIFFEL, llm=llm)
    system, user = llm.seen[0][0].content, llm.seen[0][1].content
    assert "never instructions" in system
    assert "[[1950]]" in user and "[[500 meters]]" in user
    assert "hallucination confidence" in user and "contradicts the context" in user
    assert user.index("<context>") < user.index(EIFFEL_CONTEXT) < user.index("</context>")
    for rule in ("contradicts it", "does not mention it", "Do not invent"):
        assert rule in user


def test_an_answer_flagged_without_a_span_is_refined_as_a_whole(spanless: Detector) -> None:
    llm = Scripted([GOOD])
    verdict = engine(spanless).guard(**EIFFEL, llm=llm)
    user = llm.seen[0][1].content
    assert "the answer as a whole is likely not supported" in user
    assert f"<answer>\n{EIFFEL_ANSWER}\n</answer>" in user  # no part marked
    assert verdict.final_answer == GOOD and verdict.original_answer == EIFFEL_ANSWER


def test_best_answer_is_kept_when_a_later_round_is_worse(detector: Detector) -> None:
    llm = Scripted([PARTIAL, WORSE])
    verdict = engine(detector, iterations=2).guard(**EIFFEL, llm=llm)
    assert verdict.status == "max_iterations_reached" and not verdict.converged
    assert verdict.final_answer == PARTIAL
    assert [h.accepted for h in verdict.history] == [True, True, False]
    assert verdict.history[2].answer == WORSE
    assert verdict.detected and verdict.metadata["x-truthlens-score"] == f"{verdict.score:.4f}"
    assert verdict.score == verdict.history[1].score
    # Not converged, header action, no disclaimer: the text is the best answer as is.
    assert verdict.output == PARTIAL and verdict.action == "header"


def test_not_converged_gets_the_disclaimer_when_required(detector: Detector) -> None:
    llm = Scripted([PARTIAL, PARTIAL])
    verdict = engine(detector, iterations=2, require_disclaimer=True).guard(**EIFFEL, llm=llm)
    assert verdict.status == "max_iterations_reached"
    assert verdict.final_answer == PARTIAL
    assert verdict.output is not None and verdict.output.startswith(PARTIAL)
    assert verdict.output.endswith(DEFAULT_WARNING_TEMPLATE)
    # A tie keeps the earlier answer.
    assert [h.accepted for h in verdict.history] == [True, True, False]


def test_an_echoed_answer_gets_a_fresh_grounded_prompt(detector: Detector) -> None:
    llm = Scripted([EIFFEL_ANSWER, GOOD])
    verdict = engine(detector, iterations=3).guard(**EIFFEL, llm=llm)
    assert verdict.status == "converged" and verdict.final_answer == GOOD
    assert [h.kind for h in verdict.history] == ["initial", "refine", "regenerate"]
    assert [h.accepted for h in verdict.history] == [True, False, True]
    # the second call asks for a new answer from the documents, not an edit of the old one
    assert "[[" not in llm.prompt(1) and EIFFEL_ANSWER not in llm.prompt(1)
    assert "Use only information stated in the documents" in llm.prompt(1)
    assert len(llm.seen) == 2


def test_a_rejected_round_is_not_asked_again_with_the_same_prompt(detector: Detector) -> None:
    # Issue 51: after a rejected refine round the best answer is unchanged, so its refine
    # prompt was sent again, word for word (the README demo's SmolLM2 wrote the same wrong
    # answer twice). The next round asks for a fresh answer instead.
    llm = Scripted([WORSE, GOOD])
    verdict = engine(detector, iterations=3).guard(**EIFFEL, llm=llm)
    assert verdict.status == "converged" and verdict.final_answer == GOOD
    assert [h.kind for h in verdict.history] == ["initial", "refine", "regenerate"]
    assert [h.accepted for h in verdict.history] == [True, False, True]
    assert llm.prompt(1) != llm.prompt(0) and "[[" not in llm.prompt(1)


def test_repeating_after_a_fresh_prompt_stops_as_stagnation(detector: Detector) -> None:
    llm = Scripted([EIFFEL_ANSWER, " the eiffel tower was built in 1950 and is 500 meters  tall. "])
    verdict = engine(detector, iterations=3).guard(**EIFFEL, llm=llm)
    assert verdict.status == "answer_stagnation" and not verdict.converged
    assert len(llm.seen) == 2  # the third round is not spent on another identical call
    assert [h.kind for h in verdict.history] == ["initial", "refine", "regenerate"]
    assert verdict.history[2].error == "repeats an earlier answer"
    assert verdict.final_answer == EIFFEL_ANSWER and verdict.original_answer == EIFFEL_ANSWER


def test_block_action_applies_to_an_answer_that_stays_flagged(detector: Detector) -> None:
    llm = Scripted([WORSE])
    verdict = engine(detector, iterations=1, hallucination_action="block").guard(**EIFFEL, llm=llm)
    assert verdict.blocked and verdict.output is None and verdict.final_answer is None
    full = verdict.full()
    assert full.original_answer == EIFFEL_ANSWER and full.history[1].answer == WORSE
    # the rejected round and the original are withheld from the caller's copy
    assert WORSE not in verdict.model_dump_json()
    assert "built in 1950" not in verdict.model_dump_json()


@pytest.mark.parametrize(
    ("failure", "status"),
    [
        (LLMTimeoutError("took too long"), "llm_timeout"),
        (LLMError("rate limited"), "llm_error"),
        (RuntimeError("socket closed"), "llm_error"),
        (TimeoutError("read timeout"), "llm_timeout"),
    ],
)
def test_llm_failure_mid_loop_returns_the_best_so_far(
    detector: Detector, failure: Exception, status: str
) -> None:
    llm = Scripted([PARTIAL, failure])
    verdict = engine(detector).guard(**EIFFEL, llm=llm)
    assert verdict.status == status
    assert verdict.final_answer == PARTIAL and verdict.iterations == 2
    assert verdict.mitigation_error is not None
    assert verdict.history[-1].error is not None and verdict.history[-1].answer is None
    assert verdict.cost.llm_calls == 2 and verdict.cost.failed_calls == 1


def test_empty_or_absurd_output_is_a_failed_iteration(detector: Detector) -> None:
    llm = Scripted(["   ", "the " * 30, GOOD])
    verdict = engine(detector).guard(**EIFFEL, llm=llm)
    assert verdict.status == "converged" and verdict.final_answer == GOOD
    assert [h.error for h in verdict.history[1:]] == [
        "empty output",
        "degenerate repetition",
        None,
    ]
    assert verdict.iterations == 3


def test_no_llm_is_exactly_lightweight(detector: Detector) -> None:
    guard = engine(detector)
    plain = guard.guard(**EIFFEL)
    assert plain.status == "not_run" and plain.iterations == 0 and plain.history == []
    assert plain.final_answer == EIFFEL_ANSWER == plain.output and plain.diff is None
    assert plain.cost.llm_calls == 0 and plain.detected
    clean = guard.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=GOOD)
    assert clean.status == "not_needed"


def test_lightweight_route_or_clean_answer_never_calls_the_llm(detector: Detector) -> None:
    llm = Scripted([])
    light = engine(detector, mode="lightweight").guard(**EIFFEL, llm=llm)
    assert light.status == "not_run" and light.final_answer == EIFFEL_ANSWER
    clean = engine(detector).guard(
        context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=GOOD, llm=llm
    )
    assert clean.status == "not_needed" and clean.passed
    assert llm.seen == []


def test_aguard_uses_acomplete(detector: Detector) -> None:
    llm = Scripted([PARTIAL, GOOD])
    verdict = asyncio.run(engine(detector).aguard(**EIFFEL, llm=llm))
    assert verdict.status == "converged" and verdict.final_answer == GOOD
    assert llm.async_calls == 2 and llm.sync_calls == 0


# -- premium mode: cross-model verification ------------------------------------------------


def test_premium_judge_arbitrates_a_disagreement(detector: Detector) -> None:
    registry = CollectorRegistry()
    primary = Scripted([GOOD], model="primary")  # the judge
    v1 = Scripted(["It was built from 1887 to 1889."], model="v1")
    v2 = Scripted(["Construction ran 1887-1889 in Paris."], model="v2")
    guard = engine(
        detector,
        mode="premium",
        options=MitigationOptions(consensus="majority"),
        metrics=Metrics(registry),
    )
    verdict = guard.guard(**EIFFEL, llm=primary, verification_llms=[v1, v2])
    assert verdict.strategy == "cross_model" and verdict.status == "converged"
    assert verdict.final_answer == GOOD and verdict.iterations == 1
    assert [h.kind for h in verdict.history] == ["initial", "cross_check", "judge"]
    check = verdict.history[1].claims[0]
    assert check.verdict == "contradicted" and check.contradict == 2
    judge_prompt = primary.prompt(0)
    assert "contradicted by 2/2" in judge_prompt
    assert "It was built from 1887 to 1889." in judge_prompt and EIFFEL_ANSWER in judge_prompt
    roles = {(u.model, u.role): u.calls for u in verdict.cost.models}
    assert roles == {("v1", "verifier"): 1, ("v2", "verifier"): 1, ("primary", "judge"): 1}
    get = registry.get_sample_value
    assert get("truthlens_models_used_total", {"model": "primary", "role": "judge"}) == 1
    assert get("truthlens_models_used_total", {"model": "v2", "role": "verifier"}) == 1


def test_premium_segment_replacement_without_a_judge(detector: Detector) -> None:
    judge = Scripted([], model="judge")
    v1 = Scripted(["The tower was built from 1887 to 1889."], model="v1")
    v2 = Scripted(["It was built from 1887 to 1889."], model="v2")
    verdict = engine(detector, mode="premium").guard(
        **EIFFEL, llm=judge, verification_llms=[v1, v2], judge_llm=judge
    )
    assert verdict.status == "converged"
    assert verdict.final_answer == "The tower was built from 1887 to 1889."
    assert verdict.history[1].claims[0].replacement == verdict.final_answer
    assert judge.seen == []  # replacement settled it


def test_premium_verifiers_run_concurrently_in_aguard(detector: Detector) -> None:
    Shared.active = Shared.peak = 0
    verifiers = [Concurrent(["It was built from 1887 to 1889."], model=f"v{i}") for i in range(3)]
    started = time.perf_counter()
    verdict = asyncio.run(
        engine(detector, mode="premium").aguard(
            **EIFFEL, llm=Scripted([]), verification_llms=verifiers
        )
    )
    assert verdict.status == "converged"
    assert Shared.peak == 3
    assert time.perf_counter() - started < 5


def test_premium_all_verifiers_failing_keeps_the_original(detector: Detector) -> None:
    v1 = Scripted([LLMError("down")], model="v1")
    v2 = Scripted([LLMTimeoutError("slow")], model="v2")
    verdict = engine(detector, mode="premium").guard(
        **EIFFEL, llm=Scripted([]), verification_llms=[v1, v2]
    )
    assert verdict.status == "llm_error" and verdict.final_answer == EIFFEL_ANSWER
    assert verdict.cost.failed_calls == 2 and "down" in (verdict.mitigation_error or "")


def test_premium_without_verifiers_falls_back_to_self_refine(detector: Detector) -> None:
    verdict = engine(detector, mode="premium").guard(**EIFFEL, llm=Scripted([GOOD]))
    assert verdict.strategy == "self_refine" and verdict.status == "converged"


def test_premium_judge_failure_stops_with_best(detector: Detector) -> None:
    judge = Scripted([LLMTimeoutError("judge slow")], model="judge")
    v1 = Scripted(["It was built in 1950 and opened in 1889."], model="v1")
    verdict = engine(
        detector, mode="premium", options=MitigationOptions(consensus="majority")
    ).guard(**EIFFEL, llm=judge, verification_llms=[v1])
    assert verdict.status == "llm_timeout"
    assert verdict.history[-1].kind == "judge" and verdict.history[-1].error


# -- retrieval feedback --------------------------------------------------------------------

THIN = {"context": THIN_CONTEXT, "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}


def test_retrieval_feedback_rewrites_the_query_and_succeeds(detector: Detector) -> None:
    queries: list[str] = []

    def search(query: str) -> list[str]:
        queries.append(query)
        return [RICH_PASSAGE, THIN_CONTEXT]

    llm = Scripted(
        ['{"query": "Eiffel Tower construction dates", "missing_facts": ["year"]}', GOOD]
    )
    verdict = engine(detector).guard(**THIN, llm=llm, retriever=retriever_from_callables(search))
    assert verdict.strategy == "retrieval_feedback" and verdict.status == "success"
    assert queries == ["Eiffel Tower construction dates"]
    assert verdict.final_context == [THIN_CONTEXT, RICH_PASSAGE]  # de-duplicated
    step = verdict.history[1]
    assert step.query == "Eiffel Tower construction dates" and step.new_passages == 1
    assert RICH_PASSAGE in llm.prompt(1)  # regenerated against the grown context
    # answered afresh: the answer written without the evidence is not there to anchor on
    assert "Flagged parts" not in llm.prompt(1) and "Corrected answer" not in llm.prompt(1)
    assert {u.role for u in verdict.cost.models} == {"refiner", "generator"}


def test_junk_json_from_the_refiner_uses_the_fallback_query(detector: Detector) -> None:
    queries: list[str] = []

    def search(query: str) -> list[str]:
        queries.append(query)
        return [RICH_PASSAGE]

    llm = Scripted(["Sure! Here is a query: {'query': __import__('os')}", GOOD])
    verdict = engine(detector).guard(**THIN, llm=llm, retriever=retriever_from_callables(search))
    assert verdict.status == "success"
    assert queries[0].startswith(EIFFEL_QUESTION) and "1950" in queries[0]


def test_retrieval_stagnation_when_nothing_new_is_found(detector: Detector) -> None:
    llm = Scripted(['{"query": "Eiffel Tower history"}'])
    retriever = retriever_from_callables(lambda q: [THIN_CONTEXT + " "])
    verdict = engine(detector).guard(**THIN, llm=llm, retriever=retriever)
    assert verdict.status == "query_stagnation" and verdict.final_answer == EIFFEL_ANSWER
    assert verdict.history[-1].error == "no new passages retrieved"
    assert verdict.mitigation_error is None


def test_retrieval_stagnation_when_the_query_repeats(detector: Detector) -> None:
    same = '{"query": "Eiffel Tower facts"}'
    llm = Scripted([same, PARTIAL, same])
    passages = iter([["The Eiffel Tower is made of iron and paint."]])
    retriever = retriever_from_callables(lambda q: next(passages))
    verdict = engine(detector).guard(**THIN, llm=llm, retriever=retriever)
    assert verdict.status == "query_stagnation" and verdict.final_answer == PARTIAL
    assert verdict.history[-1].error == "the query did not change"


def test_retriever_failure_stops_the_loop(detector: Detector) -> None:
    def broken(query: str) -> list[str]:
        raise ConnectionError("index offline")

    llm = Scripted(['{"query": "Eiffel Tower dates"}'])
    verdict = engine(detector).guard(**THIN, llm=llm, retriever=retriever_from_callables(broken))
    assert verdict.status == "retrieval_error" and "index offline" in (
        verdict.mitigation_error or ""
    )
    assert verdict.final_answer == EIFFEL_ANSWER


def test_contradictions_regenerate_against_the_same_context(detector: Detector) -> None:
    calls: list[str] = []
    retriever = retriever_from_callables(lambda q: calls.append(q) or [])
    verdict = engine(detector).guard(**EIFFEL, llm=Scripted([GOOD]), retriever=retriever)
    assert verdict.strategy == "self_refine" and verdict.status == "converged" and calls == []


def test_async_grounded_answerer_reruns_the_pipeline(detector: Detector) -> None:
    async def pipeline(query: str) -> tuple[str, list[str]]:
        return GOOD, [RICH_PASSAGE]

    verdict = asyncio.run(
        engine(detector).aguard(**THIN, answerer=answerer_from_callables(async_=pipeline))
    )
    assert verdict.strategy == "retrieval_feedback" and verdict.status == "success"
    assert verdict.final_answer == GOOD and verdict.cost.llm_calls == 0


@pytest.mark.parametrize(
    "reply",
    [
        "garbage",  # about nothing the request mentions
        "The Eiffel Tower.",  # words of the question, no claim
        "When was the Eiffel Tower built?",  # the question echoed
    ],
)
def test_premium_replies_that_answer_nothing_are_failed_rounds(
    detector: Detector, reply: str
) -> None:
    # A reply with no claims gives the detector nothing to flag: it scores low and
    # would "converge". It is a failed round; the original answer (and its outcome) stays.
    judge = Scripted(["not json"] * 3, model="judge")
    verifiers = [Scripted([reply] * 3, model=f"v{i}") for i in range(2)]
    verdict = engine(
        detector, mode="premium", options=MitigationOptions(consensus="majority")
    ).guard(**EIFFEL, llm=judge, verification_llms=verifiers)
    assert verdict.final_answer == EIFFEL_ANSWER
    assert verdict.status == "llm_error" and not verdict.converged
    assert reply not in (verdict.final_answer or "")
    failed = verdict.history[-1]
    assert failed.kind == "cross_check" and not failed.accepted
    # every reply stays retrievable with why it was refused
    assert failed.answer == reply
    assert "no verifier produced a usable answer" in (failed.error or "")
    assert failed.error is not None and failed.error.count("verifier") >= 3


def test_premium_judge_reply_that_answers_nothing_is_never_shown(detector: Detector) -> None:
    judge = Scripted([EIFFEL_QUESTION], model="judge")  # the question echoed back
    v1 = Scripted(["It was built in 1950 and opened in 1889."], model="v1")
    verdict = engine(
        detector, mode="premium", iterations=1, options=MitigationOptions(consensus="majority")
    ).guard(**EIFFEL, llm=judge, verification_llms=[v1])
    assert verdict.final_answer != EIFFEL_QUESTION
    step = verdict.history[-1]
    assert step.kind == "judge" and not step.accepted and step.answer == EIFFEL_QUESTION
    assert "states nothing" in (step.error or "")


# -- Issue 29, core side: text that evades the checks, model folders, options, policy, mitigation.


RUNES = " ".join(["ᚠᚢᚦᚨᚱᚲ ᚷᚹᚺᚾᛁᛃ ᛇᛈᛉᛊᛏᛒ ᛖᛗᛚᛜᛞᛟ"] * 8)


def _every(text: str, mark: str) -> str:
    return "".join(ch + mark for ch in text)


# -- mitigation: a bad LLM reply is a mitigation error ----------------------------------------

SURROGATE = "The Eiffel Tower was built in 18\udc8089."


def _engine(detector: Detector, mode: str) -> TruthLens:
    policy = {"hallucination": {"default_mode": mode, "hallucination_action": "block"}}
    return TruthLens.from_config(
        policy, detector=detector, nli=RuleNLI(), fact_checker=QuestionWordClassifier()
    )


def test_a_refinement_with_a_lone_surrogate_keeps_the_verdict(detector: Detector) -> None:
    verdict = (
        _engine(detector, "standard")
        .guard(
            **EIFFEL,
            llm=Scripted([SURROGATE] * 4),
        )
        .full()
    )  # blocked: the full verdict is the application's explicit channel
    assert verdict.detected and verdict.blocked and verdict.action == "block"
    assert verdict.status == "llm_error"
    assert verdict.original_answer == EIFFEL_ANSWER
    failed = verdict.history[-1]
    assert failed.kind == "refine" and "not valid Unicode" in (failed.error or "")
    assert "lone surrogate" in (verdict.mitigation_error or "")


def test_a_judge_reply_that_is_no_answer_never_converges(detector: Detector) -> None:
    verdict = (
        _engine(detector, "premium")
        .guard(
            **EIFFEL,
            llm=Scripted([EIFFEL_ANSWER] * 4),
            verification_llms=[Scripted(["It was built in 1950, 500 meters tall."] * 6, model="v")],
            judge_llm=Scripted(["not json"] * 6, model="judge"),
        )
        .full()
    )  # blocked: the full verdict is the application's explicit channel
    assert not verdict.converged and verdict.blocked and verdict.output is None
    judged = [h for h in verdict.history if h.kind == "judge"]
    assert judged and all(h.answer == "not json" and not h.accepted for h in judged)
    assert all("unrelated" in (h.error or "") for h in judged)


def test_a_short_related_judge_answer_and_an_abstention_are_still_usable(
    detector: Detector,
) -> None:
    for reply in ("It was built in 1889.", "The context does not mention it."):
        verdict = _engine(detector, "premium").guard(
            **EIFFEL,
            llm=Scripted([EIFFEL_ANSWER] * 4),
            verification_llms=[Scripted(["It was built in 1950, 500 meters."] * 6, model="v")],
            judge_llm=Scripted([reply] * 6, model="judge"),
        )
        assert verdict.converged and verdict.final_answer == reply


def test_a_refinement_nobody_can_read_is_not_a_fixed_answer(detector: Detector) -> None:
    verdict = _engine(detector, "standard").guard(
        context=EIFFEL_CONTEXT,
        question=EIFFEL_QUESTION,
        answer=EIFFEL_ANSWER,
        llm=Scripted([f"Eiffel {RUNES}"] * 4),
    )
    assert not verdict.converged and verdict.blocked
    assert all(not h.accepted for h in verdict.history[1:])


def test_mitigation_prompts_see_the_callers_text_not_the_normalised_one(
    detector: Detector,
) -> None:
    passage = f"{EIFFEL_CONTEXT} Érigée à Paris, la tour mesure 330 mètres."
    answer = _every(EIFFEL_ANSWER, "\u00ad")
    llm = Scripted(["The Eiffel Tower was built in 1889 and is 330 meters tall."] * 4)
    verdict = _engine(detector, "standard").guard(
        context=passage, question=EIFFEL_QUESTION, answer=answer, llm=llm
    )
    assert verdict.converged and verdict.original_answer == answer
    prompt = "\n".join(m.content for m in llm.seen[0])
    assert "Érigée à Paris" in prompt  # accents are folded for detection only
    assert "\u00ad" in prompt  # the answer to refine is the caller's (spans marked in it)
