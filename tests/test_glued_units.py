"""A number with its unit glued on is an amount (issue 27, RULE_candidate36.md)."""

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
    ],
)
def test_a_glued_unit_is_read_with_its_number(text: str, expected: tuple[float, str, str]) -> None:
    found = extract_quantities(text)
    assert [(q.value, q.unit, text[q.start : q.end]) for q in found] == [expected]


@pytest.mark.parametrize(
    "text",
    ["A 5G network.", "A 4K screen.", "On the 2nd floor.", "An mp3 file."],
)
def test_what_only_looks_glued_is_no_amount(text: str) -> None:
    assert extract_quantities(text) == []


def test_a_glued_amount_is_judged_against_the_context() -> None:
    context = ["The Eiffel Tower is 330 metres tall and cost 7.8 million francs."]

    def verdicts(answer: str) -> list[tuple[str, str]]:
        return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, context)]

    assert verdicts("It is 330m tall.") == [("330m", "present")]
    assert verdicts("It is 500m tall.") == [("500m", "conflict")]
    assert verdicts("It cost \u20ac7.8m.") == [("7.8m", "present")]


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
