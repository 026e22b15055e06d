"""Tests of ``core/policy/_adaptive.py``: the adaptive mode selector."""

from __future__ import annotations

import random
import threading

import pytest

from tests._fakes import FactCheck
from tests._paths import DECISIONS, GLOBAL, HALUGATE_DECISION
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.policy import LexiconDomainClassifier, Router, load_policy
from truthlens_integrations.core.policy._adaptive import ModeSelector

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
