"""Tests of ``core/mitigation/_defence.py``: passage filtering, the constrained prompt and
degradation per scenario.
"""

from __future__ import annotations

import pytest

from tests._fakes import make_engine
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import InvalidInputError
from truthlens_integrations.core.mitigation import (
    SCENARIOS,
    Passage,
    build_constrained_prompt,
    degrade,
    degrade_verdict,
    filter_passages,
)
from truthlens_integrations.core.models import Detector


def test_filter_passages() -> None:
    long = "The Eiffel Tower was built from 1887 to 1889 in Paris for the fair."
    kept = filter_passages(
        [
            Passage(text=long, score=0.9),
            Passage(text=long + " ", score=0.95),  # duplicate
            Passage(text="Too short.", score=0.99),
            Passage(text=long.replace("fair", "World Fair expo"), score=0.2),  # low score
            Passage(
                text="Gustave Eiffel's company designed and built the tower.",
                score=0.8,
                metadata={"authority": 0.1},
            ),
            "An unscored plain-text passage about the tower's iron lattice design.",
        ],
        min_score=0.5,
        min_chars=20,
        min_authority=0.5,
    )
    assert [p.text for p in kept] == [long, kept[1].text]
    assert kept[1].text.startswith("An unscored")


def test_constrained_prompt_numbers_and_cites() -> None:
    messages = build_constrained_prompt("When?", ["Doc one.", "Doc two."])
    user = messages[1].content
    assert '<document index="1">' in user and '<document index="2">' in user
    assert "[1], [2]" in user and "do not contain" in user


@pytest.mark.parametrize(
    ("scenario", "threshold"),
    [
        ("medical", 0.9),
        ("legal", 0.85),
        ("customer_service", 0.7),
        ("general", 0.7),
        ("entertainment", 0.6),
    ],
)
def test_degradation_per_scenario(scenario: str, threshold: float) -> None:
    assert SCENARIOS[scenario].threshold == threshold
    assert degrade("A.", confidence=threshold, scenario=scenario).level == "approved"
    warned = degrade("A.", confidence=threshold - 0.1, scenario=scenario)
    assert warned.level == "warning" and warned.text.endswith("A.")
    rejected = degrade("A.", score=1.0 - (threshold - 0.3), scenario=scenario)
    assert rejected.level == "rejected" and rejected.text == SCENARIOS[scenario].fallback
    with pytest.raises(InvalidInputError):
        degrade("A.")


# -- layer 4 on a verdict: what it shows, never an unchecked or withheld answer ---------------


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_an_answer_the_guard_did_not_check_is_never_approved(
    detector: Detector, scenario: str
) -> None:
    unchecked = make_engine(detector).guard(
        context=[], question=EIFFEL_QUESTION, answer="The Eiffel Tower is 330 meters tall."
    )
    assert not unchecked.checked
    shown = degrade_verdict(unchecked, scenario=scenario)
    assert shown.level == "rejected" and shown.confidence == 0.0
    assert shown.text == SCENARIOS[scenario].fallback


def test_a_blocked_answer_stays_withheld(detector: Detector) -> None:
    policy = {"hallucination": {"hallucination_action": "block", "use_nli": False}}
    blocked = make_engine(detector, policy).guard(
        context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
    )
    assert blocked.blocked
    for scenario in ("entertainment", "medical"):
        shown = degrade_verdict(blocked, scenario=scenario, scenarios={
            scenario: SCENARIOS[scenario].model_copy(update={"threshold": 0.0})
        })  # fmt: skip
        assert "1950" not in shown.text and shown.level == "rejected"


def test_a_checked_answer_is_degraded_at_one_minus_its_score(detector: Detector) -> None:
    verdict = make_engine(detector).guard(
        context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer="It was built in 1887-1889."
    )
    assert verdict.checked and verdict.score is not None
    shown = degrade_verdict(verdict, scenario="general")
    assert shown.confidence == pytest.approx(1.0 - verdict.score)
    assert shown == degrade(verdict.output or "", score=verdict.score, scenario="general")
