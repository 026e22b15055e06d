"""Tests of ``core/policy/_signals.py``: the routing signals: keyword matchers and domain
classifiers.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tests._paths import DECISIONS
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.policy import (
    DomainClassifier,
    EmbeddingDomainClassifier,
    LexiconDomainClassifier,
    Router,
    load_policy,
)
from truthlens_integrations.core.policy._signals import KeywordMatcher


def _bag_of_words(vocab: Sequence[str]) -> object:
    def embed(texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            words = text.lower().replace(",", " ").replace(".", " ").split()
            out.append([float(words.count(v)) for v in vocab])
        return out

    return embed


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
