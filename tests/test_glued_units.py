"""A number with its unit glued on is an amount (issue 27, RULE_candidate36.md and 38)."""

from __future__ import annotations

import pytest

from tests.conftest import needs_weights
from truthlens_integrations import TruthLens
from truthlens_integrations.core._quantities import extract_quantities
from truthlens_integrations.core.models.detection._adjust import _number_verdicts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It is 500m tall.", (500.0, "m", "500m")),
        ("A 5km walk.", (5.0, "km", "5km")),
        ("A 20kg bag.", (20.0, "kg", "20kg")),
        ("A 1.5L bottle.", (1.5, "l", "1.5L")),
        ("It cost \u00a39.8m.", (9.8, "million", "9.8m")),  # after a currency sign: million
        ("A $5bn deal.", (5.0, "billion", "5bn")),
        ("A $50k salary.", (50.0, "thousand", "50k")),
        ("It has 500M users.", (500.0, "million", "500M")),
        # any other unit of two to four letters, as its spaced twin (candidate 38)
        ("It has 16GB of RAM.", (16.0, "gb", "16GB")),
        ("A 3.5GHz processor.", (3.5, "ghz", "3.5GHz")),
        ("A 5000mAh battery.", (5000.0, "mah", "5000mAh")),
        ("It runs at 60fps.", (60.0, "fps", "60fps")),
    ],
)
def test_a_glued_unit_is_read_with_its_number(text: str, expected: tuple[float, str, str]) -> None:
    found = extract_quantities(text)
    assert [(q.value, q.unit, text[q.start : q.end]) for q in found] == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "A 5G network.",
        "A 4K screen.",
        "On the 2nd floor.",
        "An mp3 file.",
        "A 3D film.",
        "Version 3.5X.",
    ],
)
def test_what_only_looks_glued_is_no_amount(text: str) -> None:
    assert extract_quantities(text) == []


def test_a_glued_unit_reads_as_its_spaced_twin() -> None:
    for glued, spaced in [("16GB", "16 GB"), ("3.5GHz", "3.5 GHz"), ("100Mbps", "100 Mbps")]:
        (a,), (b,) = extract_quantities(glued), extract_quantities(spaced)
        assert (a.value, a.unit) == (b.value, b.unit)


def test_clock_times_and_version_numbers_read_as_before() -> None:
    (clock,) = extract_quantities("It opens at 10am.")
    assert clock.unit == "time of day"
    assert [(q.value, q.unit) for q in extract_quantities("Python 3.5.2")] == [(3.5, None)]


def test_a_glued_amount_is_judged_against_the_context() -> None:
    context = ["The Eiffel Tower is 330 metres tall and cost 7.8 million francs."]

    def verdicts(answer: str) -> list[tuple[str, str]]:
        return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, context)]

    assert verdicts("It is 330m tall.") == [("330m", "present")]
    assert verdicts("It is 500m tall.") == [("500m", "conflict")]
    assert verdicts("It cost \u20ac7.8m.") == [("7.8m", "present")]
    laptop = ["The laptop has a 3.5 GHz processor and 16 GB of RAM."]
    assert [v for *_, v in _number_verdicts("It has 32GB of RAM.", laptop)] == ["conflict"]
    assert [v for *_, v in _number_verdicts("A 3.5GHz processor.", laptop)] == ["present"]


def test_a_glued_unit_word_is_marked_with_its_conflicting_number() -> None:
    # RULE_candidate40.md: "32GB" is one word; marking only "32" halved the conflict
    laptop = ["The laptop has a 3.5 GHz processor and 16 GB of RAM."]

    def marked(answer: str) -> list[tuple[str, str]]:
        return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, laptop)]

    assert marked("It has 32GB of RAM.") == [("32GB", "conflict")]
    assert marked("It has 32 GB of RAM.") == [("32", "conflict")]  # a spaced word: digits
    assert marked("It has 16GB of RAM.") == [("16", "present")]


@needs_weights
def test_a_wrong_height_with_a_glued_unit_is_caught() -> None:
    # before candidate 36 "500m" was no number, and the answer passed at 0.34
    engine = TruthLens.from_config(action="block")
    context = ["The Eiffel Tower in Paris was built from 1887 to 1889. It is 330 metres tall."]
    answer = "The Eiffel Tower is 500m tall."
    wrong = engine.guard(context=context, question=None, answer=answer).full()
    assert wrong.blocked
    assert any("500m" in s.text for s in wrong.spans), [s.text for s in wrong.spans]
    right = engine.guard(context=context, question=None, answer="The Eiffel Tower is 330m tall.")
    assert not right.full().blocked, right.score


@needs_weights
def test_a_wrong_glued_amount_scores_as_its_spaced_twin() -> None:
    # before candidate 40 the wrong "32GB" scored 0.58 where "32 GB" scored 0.89
    engine = TruthLens.from_config(action="block")
    context = ["The laptop has a 3.5 GHz processor and 16 GB of RAM."]
    glued = engine.guard(context=context, question=None, answer="It has 32GB of RAM.")
    spaced = engine.guard(context=context, question=None, answer="It has 32 GB of RAM.")
    assert glued.full().blocked and glued.score >= spaced.score - 0.05, (glued.score, spaced.score)
    right = engine.guard(context=context, question=None, answer="It has a 3.5GHz processor.")
    assert not right.full().blocked, right.score
