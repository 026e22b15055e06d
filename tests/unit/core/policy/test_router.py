"""Tests of ``core/policy/_router.py``: routing a prompt to its decision."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from tests._fakes import FactCheck
from tests._paths import DECISIONS, GLOBAL, HALUGATE_DECISION, HALUGATE_FULL
from truthlens_integrations.core import ConfigError, InvalidInputError
from truthlens_integrations.core.policy import Router, load_policy
from truthlens_integrations.core.policy._router import DOMAIN_COST_RATIOS, threshold_for_cost


class FixedDomains:
    """Domain classifier returning fixed scores (for rule logic, not classification)."""

    domains = ("healthcare", "finance", "support", "internal", "creative", "general")

    def __init__(self, scores: Mapping[str, float]) -> None:
        self.scores = dict(scores)
        self.calls = 0

    def classify(self, text: str) -> Mapping[str, float]:
        self.calls += 1
        return self.scores


@pytest.fixture(scope="module")
def design_router() -> Router:
    return Router(load_policy([GLOBAL, DECISIONS]))


# --- malformed ---------------------------------------------------------------


def one_decision(name: str, rules: dict[str, object], **extra: object) -> dict[str, object]:
    """A policy holding the one decision ``name``."""
    return {"decisions": [{"name": name, "rules": rules, **extra}]}


# --- routing with the design files ---------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "decision", "mode", "threshold", "iterations", "enabled"),
    [
        ("What is the right ibuprofen dosage for a child with a fever?", "medical_assistant",
         "premium", 0.3, 5, True),
        ("Should I move my 401k from stocks into bonds?", "financial_advisor", "standard",
         0.5, 4, True),
        ("I want a refund for my order, it arrived broken", "customer_support", "standard",
         0.6, 2, True),
        ("Where is the VPN runbook on the intranet wiki?", "internal_assistant", "lightweight",
         0.7, 0, True),
        ("Write a poem about autumn leaves", "creative_writing", "standard", 0.6, 3, False),
    ],
)  # fmt: skip
def test_design_decisions_route_as_written(
    design_router: Router,
    prompt: str,
    decision: str,
    mode: str,
    threshold: float,
    iterations: int,
    enabled: bool,
) -> None:
    result = design_router.route(prompt)
    assert result.decision == decision
    assert result.settings.mode == mode
    assert result.settings.threshold == threshold
    assert result.settings.max_iterations == iterations
    assert result.settings.enabled is enabled
    assert result.signals


def test_medical_assistant_full_settings(design_router: Router) -> None:
    result = design_router.route("Can I take aspirin with warfarin? I have a headache.")
    assert result.decision == "medical_assistant"
    assert result.priority == 100
    assert result.mode_source == "decision"
    assert result.model_refs == ("gpt-4-turbo",)
    s = result.settings
    assert (s.mode, s.threshold, s.max_iterations, s.require_disclaimer) == (
        "premium",
        0.3,
        5,
        True,
    )
    assert s.verification_models == ("claude-3-sonnet", "gpt-4-turbo")
    assert {h.name for h in result.signals} == {"healthcare", "medical_terms"}


def test_medical_keyword_alone_routes_to_medical(design_router: Router) -> None:
    # OR: the keyword list fires even when the domain classifier sees no healthcare.
    router = Router(design_router.policy, domain_classifier=FixedDomains({"general": 1.0}))
    result = router.route("metformin 500 mg twice daily?")
    assert result.decision == "medical_assistant"
    assert [(h.type, h.name) for h in result.signals] == [("keyword", "medical_terms")]
    assert result.signals[0].matched == ("mg", "metformin")


def test_unmatched_prompt_uses_global_settings(design_router: Router) -> None:
    result = design_router.route("When was the Eiffel Tower built?")
    assert result.decision is None
    assert result.mode_source == "default"
    assert result.settings == design_router.policy.settings_for(None)
    assert result.settings.threshold == 0.6
    assert result.domain_scores["general"] == 1.0


def test_highest_priority_wins_when_several_match(design_router: Router) -> None:
    prompt = "Write a poem about my bank loan"  # creative (20) and finance (90)
    result = design_router.route(prompt)
    assert result.domain_scores["creative"] >= 0.5
    assert result.domain_scores["finance"] >= 0.5
    assert result.decision == "financial_advisor"
    router = Router(design_router.policy, domain_classifier=FixedDomains(dict.fromkeys(
        ("healthcare", "finance", "support", "internal", "creative"), 0.9)))  # fmt: skip
    assert router.route("anything").decision == "medical_assistant"


def test_equal_priority_keeps_file_order() -> None:
    def decision(name: str) -> dict[str, object]:
        return {
            "name": name,
            "priority": 5,
            "rules": {"conditions": [{"type": "keyword", "name": "k", "keywords": ["alpha"]}]},
        }

    policy = load_policy({"decisions": [decision("first"), decision("second")]})
    assert Router(policy).route("alpha").decision == "first"


def test_domain_threshold_controls_firing() -> None:
    policy = load_policy(DECISIONS)
    scores = FixedDomains({"finance": 0.4})
    assert Router(policy, domain_classifier=scores).route("x").decision is None
    assert Router(policy, domain_classifier=scores, domain_threshold=0.3).route("x").decision == (
        "financial_advisor"
    )


# --- AND / OR and fact_check -----------------------------------------------------


def test_and_requires_every_condition() -> None:
    policy = load_policy(HALUGATE_DECISION)
    general = FixedDomains({"general": 0.9})
    health = FixedDomains({"healthcare": 0.9, "general": 0.1})
    signal = FactCheck()
    both = Router(policy, domain_classifier=general, fact_check=signal).route("When was it built?")
    assert both.decision == "factual-query-with-verification"
    assert {(h.type, h.name) for h in both.signals} == {
        ("fact_check", "needs_fact_check"),
        ("domain", "general"),
    }
    assert both.fact_check_needed is True
    assert both.fact_check_confidence == 0.9
    s = both.settings
    assert (s.enabled, s.use_nli, s.hallucination_action) == (True, True, "header")
    not_general = Router(policy, domain_classifier=health, fact_check=signal)
    assert not_general.route("When was it built?").decision is None
    not_factual = Router(policy, domain_classifier=general, fact_check=signal)
    assert not_factual.route("Write me a haiku").decision is None


def test_and_short_circuits_expensive_signals() -> None:
    policy = load_policy(HALUGATE_DECISION)
    signal = FactCheck()
    domains = FixedDomains({"general": 1.0})
    result = Router(policy, domain_classifier=domains, fact_check=signal).route("Write a song")
    # fact_check is the first AND condition and fails: the domain classifier never runs.
    assert result.decision is None
    assert signal.calls == 1
    assert domains.calls == 0


def test_or_needs_any_condition() -> None:
    conditions = [
        {"type": "keyword", "name": "a", "keywords": ["refund"]},
        {"type": "fact_check", "name": "needs_fact_check"},
    ]
    policy = load_policy(one_decision("either", {"operator": "or", "conditions": conditions}))
    router = Router(policy, fact_check=FactCheck())
    assert router.route("I want a refund").decision == "either"
    assert router.route("Who wrote Hamlet?").decision == "either"
    assert router.route("Tell me a joke").decision is None


def test_fact_check_threshold_from_the_classifier_model() -> None:
    policy = load_policy(HALUGATE_FULL)  # fact_check_model.threshold 0.6 (confidence_threshold)
    router = Router(policy)
    assert router.route("q", fact_check=(True, 0.55)).decision is None
    result = router.route("q", fact_check=(True, 0.65))
    assert result.decision == "verified-factual"
    assert result.fact_check_needed is True
    low = router.route("q", fact_check=(True, 0.55))
    assert low.fact_check_needed is False
    assert low.fact_check_confidence == 0.55


def test_no_fact_check_needed_condition() -> None:
    policy = load_policy(
        one_decision(
            "skip",
            {"conditions": [{"type": "fact_check", "name": "no_fact_check_needed"}]},
            plugins=[{"type": "hallucination", "configuration": {"enabled": False}}],
        )
    )
    router = Router(policy, fact_check=FactCheck())
    assert router.route("Write a poem").decision == "skip"
    assert router.route("When did it happen?").decision is None


def test_precomputed_fact_check_avoids_second_classifier_call() -> None:
    signal = FactCheck()
    router = Router(load_policy(HALUGATE_FULL), fact_check=signal)
    assert router.route("Write a poem", fact_check=(True, 0.99)).decision == "verified-factual"
    assert signal.calls == 0


def test_fact_check_condition_without_signal_is_a_config_error() -> None:
    router = Router(load_policy(HALUGATE_FULL))
    with pytest.raises(ConfigError, match="no fact-check signal"):
        router.route("When was the Eiffel Tower built?")


def test_unknown_domain_rejected_by_router() -> None:
    policy = load_policy(
        {"decisions": [{"name": "x", "rules": {"conditions": [{"type": "domain", "name": "law"}]}}]}
    )
    with pytest.raises(
        ConfigError, match=r"decisions\[0\]\.rules\.conditions\[0\]\.name: unknown domain"
    ):
        Router(policy)
    # Declaring the domain in the policy makes it known to the default classifier.
    declared = load_policy(
        {
            "domains": [{"name": "law", "keywords": ["statute", "court"]}],
            "decisions": [
                {"name": "x", "rules": {"conditions": [{"type": "domain", "name": "law"}]}}
            ],
        }
    )
    assert Router(declared).route("Which court hears this appeal?").decision == "x"


def test_keyword_rules_section_and_operators() -> None:
    policy = load_policy(
        {
            "keyword_rules": [
                {"name": "medical_terms", "keywords": ["zorblax"]},
                {"name": "both", "operator": "AND", "keywords": ["alpha", "beta"]},
            ],
            "decisions": [
                {
                    "name": "m",
                    "rules": {"conditions": [{"type": "keyword", "name": "medical_terms"}]},
                },
                {"name": "b", "rules": {"conditions": [{"type": "keyword", "name": "both"}]}},
            ],
        }
    )
    router = Router(policy, domain_classifier=FixedDomains({}))
    assert router.route("take zorblax daily").decision == "m"
    assert router.route("ibuprofen dosage").decision is None  # built-in list replaced
    assert router.route("alpha and beta").decision == "b"
    assert router.route("alpha only").decision is None


# --- threshold helper ------------------------------------------------------------


def test_threshold_for_cost() -> None:
    assert threshold_for_cost(1.0, 0.5) == pytest.approx(0.5)
    assert threshold_for_cost(9.0, 0.5) == pytest.approx(0.1)
    low, high = DOMAIN_COST_RATIOS["healthcare"]
    assert threshold_for_cost(high, 0.3) < threshold_for_cost(low, 0.3)
    creative = threshold_for_cost(DOMAIN_COST_RATIOS["creative"][0], 0.3)
    assert creative > threshold_for_cost(DOMAIN_COST_RATIOS["support"][0], 0.3)
    with pytest.raises(InvalidInputError):
        threshold_for_cost(0.0, 0.5)
    with pytest.raises(InvalidInputError):
        threshold_for_cost(1.0, 1.0)
