"""Tests of ``core/mitigation/_defence.py``: passage filtering, the constrained prompt and
degradation per scenario.
"""

from __future__ import annotations

import pytest

from truthlens_integrations.core import InvalidInputError
from truthlens_integrations.core.mitigation import Passage
from truthlens_integrations.core.mitigation._defence import (
    SCENARIOS,
    build_constrained_prompt,
    degrade,
    filter_passages,
)


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
