from __future__ import annotations

import random
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from truthlens_integrations.core import ConfigError, InvalidInputError
from truthlens_integrations.core.policy import (
    DomainClassifier,
    EmbeddingDomainClassifier,
    LexiconDomainClassifier,
    Policy,
    Router,
    load_policy,
)
from truthlens_integrations.core.policy._adaptive import ModeSelector
from truthlens_integrations.core.policy._config import DEFAULT_WARNING_TEMPLATE
from truthlens_integrations.core.policy._router import DOMAIN_COST_RATIOS, threshold_for_cost
from truthlens_integrations.core.policy._signals import KeywordMatcher

REPO = Path(__file__).resolve().parents[1]
POLICIES = REPO / "cookbook" / "policies"
DESIGN = Path("/work/shared/design/policies")
GLOBAL = POLICIES / "truthlens_global.yaml"
DECISIONS = POLICIES / "truthlens_decisions.yaml"
HALUGATE_DECISION = POLICIES / "halugate_decision.yaml"
HALUGATE_FULL = POLICIES / "halugate_full.yaml"
ALL_FILES = [GLOBAL, DECISIONS, HALUGATE_DECISION, HALUGATE_FULL]


class FixedDomains:
    """Domain classifier returning fixed scores (for rule logic, not classification)."""

    domains = ("healthcare", "finance", "support", "internal", "creative", "general")

    def __init__(self, scores: Mapping[str, float]) -> None:
        self.scores = dict(scores)
        self.calls = 0

    def classify(self, text: str) -> Mapping[str, float]:
        self.calls += 1
        return self.scores


class FactCheck:
    """Deterministic fact-check signal: factual when the prompt is a wh-question."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str) -> tuple[bool, float]:
        self.calls += 1
        factual = text.lower().startswith(("when", "who", "what", "where", "how many"))
        return factual, 0.9


@pytest.fixture(scope="module")
def design_router() -> Router:
    return Router(load_policy([GLOBAL, DECISIONS]))


# --- loading -----------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_each_design_file_loads(path: Path) -> None:
    policy = load_policy(path)
    assert isinstance(policy, Policy)


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_cookbook_copies_are_exact(path: Path) -> None:
    design = DESIGN / path.name
    if not design.exists():
        pytest.skip("design folder not available")
    assert path.read_bytes() == design.read_bytes()
    assert (REPO / "tests" / "data" / "policies" / path.name).read_bytes() == design.read_bytes()


def test_global_block_values() -> None:
    g = load_policy(GLOBAL).hallucination
    assert g.enabled is True
    assert g.model_id == "models/lettucedetect-large-modernbert-en-v1"
    assert g.use_cpu is False
    assert g.default_mode == "standard"
    assert g.threshold == 0.6
    assert g.warning_template.startswith("⚠️ **注意**")
    assert g.standard.max_iterations == 3
    assert g.standard.convergence_threshold == 0.4
    assert g.premium.verification_models == ("claude-3-sonnet", "gpt-4-turbo")
    assert g.premium.judge_model == "llama-3.1-70b"
    assert g.premium.max_iterations == 5
    assert g.premium.require_consensus is True


def test_halugate_full_models_and_settings() -> None:
    policy = load_policy(HALUGATE_FULL)
    m = policy.hallucination_mitigation
    assert (m.fact_check_model.model_id, m.fact_check_model.threshold) == (
        "models/halugate-sentinel",
        0.6,
    )
    assert m.hallucination_model.threshold == 0.8
    assert m.nli_model.threshold == 0.9
    assert m.nli_model.use_cpu is True
    assert [r.name for r in policy.fact_check_rules] == ["needs_fact_check", "no_fact_check_needed"]
    s = policy.settings_for("verified-factual")
    assert s.enabled and s.use_nli and s.include_hallucination_details
    assert s.hallucination_action == "header"
    assert s.unverified_factual_action == "header"


def test_defaults_when_none() -> None:
    policy = load_policy(None)
    assert policy.decisions == ()
    s = policy.settings_for(None)
    assert s.enabled is True
    assert s.mode == "lightweight"
    assert s.max_iterations == 0
    assert s.threshold == 0.5
    assert s.hallucination_action == "body"  # lightweight mode: a visible warning
    assert s.unverified_factual_action == "header"
    assert s.include_hallucination_details is False
    assert s.warning_template == DEFAULT_WARNING_TEMPLATE
    assert policy.hallucination_mitigation.fact_check_model.threshold == 0.6


def test_yaml_text_dict_and_pathlike_sources(tmp_path: Path) -> None:
    text = "hallucination:\n  threshold: 0.25\n  default_mode: premium\n"
    from_text = load_policy(text)
    from_dict = load_policy({"hallucination": {"threshold": 0.25, "default_mode": "premium"}})
    file = tmp_path / "p.yaml"
    file.write_text(text, encoding="utf-8")
    assert from_text == from_dict == load_policy(file) == load_policy(str(file))
    assert from_text.settings_for(None).max_iterations == 5  # premium default
    assert load_policy(from_text) is from_text
    assert load_policy(None) == Policy() == load_policy("{}")


def test_merged_sources_fall_back_to_global() -> None:
    merged = load_policy([GLOBAL, DECISIONS])
    only = load_policy(DECISIONS)
    # financial_advisor sets no warning template: the global file's applies.
    assert merged.settings_for("financial_advisor").warning_template.startswith("⚠️ **注意**")
    assert only.settings_for("financial_advisor").warning_template == DEFAULT_WARNING_TEMPLATE
    # creative_writing sets no mode: the global default_mode applies.
    assert merged.settings_for("creative_writing").mode == "standard"
    assert only.settings_for("creative_writing").mode == "lightweight"
    # customer_support's explicit max_iterations beats the mode's.
    assert merged.settings_for("customer_support").max_iterations == 2
    assert merged.settings_for("financial_advisor").threshold == 0.5
    assert merged.settings_for(None).threshold == 0.6


def test_merge_later_scalar_wins_and_lists_concatenate() -> None:
    policy = load_policy(
        [
            GLOBAL,
            {"hallucination": {"threshold": 0.2}},
            HALUGATE_DECISION,
            DECISIONS,
        ]
    )
    assert policy.hallucination.threshold == 0.2
    assert policy.hallucination.default_mode == "standard"  # kept from the first source
    assert len(policy.decisions) == 6


# --- malformed ---------------------------------------------------------------


def one_decision(name: str, rules: dict[str, object], **extra: object) -> dict[str, object]:
    """A policy holding the one decision ``name``."""
    return {"decisions": [{"name": name, "rules": rules, **extra}]}


def _decision(**plugin: object) -> dict[str, object]:
    return {
        "name": "d",
        "rules": {"conditions": [{"type": "domain", "name": "general"}]},
        "plugins": [{"type": "hallucination", "configuration": plugin}],
    }


BAD = [
    (
        {"decisions": [_decision(), _decision(), {**_decision(threshold=1.5), "name": "x"}]},
        "decisions[2].plugins[0].configuration.threshold: must be between 0 and 1",
    ),
    ({"hallucination": {"threshold": -0.1}}, "hallucination.threshold: must be between 0 and 1"),
    (
        {"hallucination_mitigation": {"nli_model": {"threshold": 9}}},
        "hallucination_mitigation.nli_model.threshold: must be between 0 and 1",
    ),
    ({"hallucination": {"treshold": 0.5}}, "unknown key 'treshold'; did you mean 'threshold'?"),
    ({"decisions": [{**_decision(), "prio": 3}]}, "decisions[0].prio: unknown key"),
    ({"surprise": {}}, "surprise: unknown key 'surprise'"),
    ({"hallucination": {"enabled": "maybe"}}, "hallucination.enabled: must be true or false"),
    ({"hallucination": {"threshold": "high"}}, "hallucination.threshold: must be a number"),
    (
        {"hallucination": {"standard": {"max_iterations": 2.5}}},
        "hallucination.standard.max_iterations: must be an integer",
    ),
    ({"hallucination": {"default_mode": "turbo"}}, "hallucination.default_mode: must be one of"),
    (
        {"decisions": [_decision(hallucination_action="warn")]},
        "decisions[0].plugins[0].configuration.hallucination_action: must be one of",
    ),
    ({"decisions": [_decision(), _decision()]}, "decisions[1].name: duplicate name 'd'"),
    (
        {"decisions": [{**_decision(), "plugins": [{"type": "cache"}]}]},
        "decisions[0].plugins[0].type: must be one of 'hallucination'",
    ),
    (
        {"decisions": [{"name": "a", "rules": {"operator": "XOR", "conditions": []}}]},
        "decisions[0].rules.operator: must be one of",
    ),
    (
        {"decisions": [{"name": "a", "rules": {"conditions": []}}]},
        "decisions[0].rules.conditions: must not be empty",
    ),
    ({"decisions": [{"name": "a"}]}, "decisions[0].rules: required key is missing"),
    (
        {"decisions": [{"name": "a", "rules": {"conditions": [{"type": "keyword", "name": "x"}]}}]},
        "decisions[0].rules.conditions[0].name: unknown keyword list 'x'",
    ),
    (
        {
            "decisions": [
                {"name": "a", "rules": {"conditions": [{"type": "fact_check", "name": "y"}]}}
            ]
        },
        "decisions[0].rules.conditions[0]: unknown fact-check signal 'y'",
    ),
    (
        {"decisions": [{"name": "a", "rules": {"conditions": [{"type": "vibe", "name": "y"}]}}]},
        "decisions[0].rules.conditions[0].type: must be one of",
    ),
    ({"fact_check_rules": [{"name": "maybe"}]}, "fact_check_rules[0].name: unknown fact-check"),
    ({"decisions": {"name": "a"}}, "decisions: must be a list"),
    ("- just\n- a list\n", "a policy must be a mapping"),
    ("hallucination: [unclosed\n", "invalid YAML at line 2"),
]


@pytest.mark.parametrize(("config", "expected"), BAD)
def test_malformed_configs_name_the_key_path(config: object, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_policy(config)  # type: ignore[arg-type]
    assert expected in str(info.value)


def test_error_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("hallucination:\n  threshold: 2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml: hallucination\.threshold: must be between"):
        load_policy(bad)
    broken = tmp_path / "broken.yaml"
    broken.write_text("decisions:\n  - name: [x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.yaml: invalid YAML"):
        load_policy(broken)
    with pytest.raises(ConfigError, match=r"missing\.yaml: policy file not found"):
        load_policy(tmp_path / "missing.yaml")


def test_merged_error_points_at_the_source_file(tmp_path: Path) -> None:
    rules = "decisions:\n  - name: {}\n    rules:\n      conditions:\n"
    extra = tmp_path / "extra.yaml"
    extra.write_text(
        rules.format("medical_assistant") + "        - {type: domain, name: healthcare}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_policy([DECISIONS, extra])
    assert "duplicate name 'medical_assistant'" in str(info.value)
    bad = tmp_path / "bad_threshold.yaml"
    bad.write_text(
        rules.format("z") + "        - {type: domain, name: general}\n    plugins:\n"
        "      - type: hallucination\n        configuration: {threshold: 3}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_policy([DECISIONS, bad])
    # Index and file of the item in its own file, not in the merged list.
    assert "bad_threshold.yaml: decisions[0].plugins[0].configuration.threshold" in str(info.value)


def test_config_error_is_not_a_pydantic_traceback() -> None:
    with pytest.raises(ConfigError) as info:
        load_policy({"hallucination": {"threshold": 5}})
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


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
    policy = load_policy(HALUGATE_FULL)  # fact_check_model.threshold 0.6
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


def test_keyword_matcher_word_boundaries() -> None:
    matcher = KeywordMatcher(["pill", "side effect"])
    assert matcher("One pill a day")
    assert not matcher("I spilled the tea")
    assert matcher("Any SIDE EFFECT?")
    assert KeywordMatcher(["Apple"], case_sensitive=True).matches("apple Apple") == ["Apple"]
    assert KeywordMatcher(["药物"])("这种药物安全吗")


# --- domain classifiers ------------------------------------------------------------


def test_lexicon_classifier_scores() -> None:
    clf = LexiconDomainClassifier()
    assert isinstance(clf, DomainClassifier)
    scores = clf.classify("My doctor changed my medication after the diagnosis")
    assert scores["healthcare"] > 0.9
    assert scores["general"] < 0.1
    assert clf.classify("What is the capital of France?")["general"] == 1.0
    assert set(clf.domains) == {
        "healthcare",
        "finance",
        "support",
        "internal",
        "creative",
        "general",
    }


def _bag_of_words(vocab: Sequence[str]) -> object:
    def embed(texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            words = text.lower().replace(",", " ").replace(".", " ").split()
            out.append([float(words.count(v)) for v in vocab])
        return out

    return embed


def test_embedding_classifier_with_a_deterministic_encoder() -> None:
    vocab = [
        "symptoms",
        "medication",
        "stocks",
        "bonds",
        "poem",
        "story",
        "refund",
        "order",
        "wiki",
    ]
    calls: list[int] = []
    bow = _bag_of_words(vocab)

    def embed(texts: Sequence[str]) -> list[list[float]]:
        calls.append(len(texts))
        return bow(texts)  # type: ignore[operator, no-any-return]

    clf = EmbeddingDomainClassifier(
        embed,
        {
            "healthcare": ["symptoms and medication", "medication"],
            "finance": "stocks and bonds",
            "creative": "a poem or a story",
            "support": "refund for my order",
            "internal": "wiki",
        },
    )
    scores = clf.classify("Which medication helps these symptoms?")
    assert max(scores, key=lambda d: scores[d]) == "healthcare"
    assert scores["healthcare"] > 0.9
    assert abs(sum(scores.values()) - 1.0) < 1e-9
    clf.classify("Write a poem")
    assert calls == [6, 1, 1]  # descriptions embedded once
    policy = load_policy(DECISIONS)
    router = Router(policy, domain_classifier=clf)
    assert router.route("Are bonds safer than stocks?").decision == "financial_advisor"
    assert router.route("Tell me a story").decision == "creative_writing"


def test_embedding_classifier_with_policy_descriptions_rejects_unknown_domain() -> None:
    clf = EmbeddingDomainClassifier(_bag_of_words(["x"]), {"only": "x"})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown domain 'healthcare'"):
        Router(load_policy(DECISIONS), domain_classifier=clf)
    assert set(load_policy(None).domain_descriptions()) == set(LexiconDomainClassifier().domains)


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


# --- Thompson sampling -------------------------------------------------------------


def test_thompson_sampling_converges_to_the_better_mode() -> None:
    truth = {"lightweight": 0.3, "standard": 0.5, "premium": 0.8}
    selector = ModeSelector(seed=7)
    env = random.Random(11)
    picks = []
    for _ in range(1500):
        mode = selector.select("medical_assistant")
        picks.append(mode)
        selector.feedback("medical_assistant", mode, env.random() < truth[mode])
    late = picks[-300:]
    assert late.count("premium") / len(late) > 0.85
    means = {m: selector.expected_success("medical_assistant", m) for m in truth}
    assert max(means, key=lambda m: means[m]) == "premium"
    # Other decisions keep their own, untouched posteriors.
    assert selector.posterior("financial_advisor", "premium") == (1.0, 1.0)


def test_thompson_sampling_is_reproducible_with_a_seed() -> None:
    def run(seed: int) -> list[str]:
        selector = ModeSelector(seed=seed)
        out = []
        for i in range(50):
            mode = selector.select(None)
            selector.feedback(None, mode, i % 3 == 0)
            out.append(mode)
        return out

    assert run(3) == run(3)


def test_mode_selector_is_thread_safe() -> None:
    selector = ModeSelector(modes=("standard", "premium"), seed=1)

    def work() -> None:
        for _ in range(500):
            mode = selector.select("d")
            selector.feedback("d", mode, success=True)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = sum(selector.posterior("d", m)[0] - 1.0 for m in ("standard", "premium"))
    assert total == 2000


def test_mode_selector_validation() -> None:
    with pytest.raises(ConfigError):
        ModeSelector(modes=())
    with pytest.raises(ConfigError):
        ModeSelector(modes=("turbo",))  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ModeSelector(modes=("standard",)).feedback("d", "premium", success=True)


def test_router_uses_selector_only_where_mode_is_not_pinned() -> None:
    selector = ModeSelector(modes=("premium",), seed=0)
    policy = load_policy([GLOBAL, DECISIONS, HALUGATE_DECISION])
    router = Router(
        policy,
        domain_classifier=LexiconDomainClassifier(),
        fact_check=FactCheck(),
        mode_selector=selector,
    )
    pinned = router.route("Is ibuprofen safe for my fever?")
    assert (pinned.decision, pinned.mode_source, pinned.settings.mode) == (
        "medical_assistant",
        "decision",
        "premium",
    )
    unpinned = router.route("When was the Eiffel Tower built?")
    assert unpinned.decision == "factual-query-with-verification"
    assert (unpinned.mode_source, unpinned.settings.mode) == ("adaptive", "premium")
    assert unpinned.settings.max_iterations == 5  # the premium block's
