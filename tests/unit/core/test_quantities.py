"""A half in words or as a fraction is one amount with its unit (issue 27, candidates 20, 21)."""

from __future__ import annotations

import pytest

from truthlens_integrations.core._quantities import extract_quantities
from truthlens_integrations.core.models.detection._adjust import _number_verdicts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It circles the sun every five and half years.", (5.5, "year", "five and half years")),
        ("Leave it on for half an hour.", (0.5, "hour", "half an hour")),
        ("The walk takes an hour and a half.", (1.5, "hour", "an hour and a half")),
        ("It lasted two hours and a half.", (2.5, "hour", "two hours and a half")),
        ("The trail is 3 and a half miles long.", (3.5, "mile", "3 and a half miles")),
        ("About one and a half million people came.", (1.5, "million", "one and a half million")),
    ],
)
def test_a_half_is_one_quantity(text: str, expected: tuple[float, str, str]) -> None:
    found = extract_quantities(text)
    assert [(q.value, q.unit, text[q.start : q.end]) for q in found] == [expected]


def test_a_half_of_something_that_is_no_unit_is_not_an_amount() -> None:
    assert extract_quantities("Add half a dozen eggs.") == []
    # the count is read as before, without the half
    assert [(q.value, q.unit) for q in extract_quantities("two and a half people")] == [(2.0, None)]


def test_the_same_amount_in_digits_and_in_words_agrees() -> None:
    def verdicts(answer: str, context: str) -> list[tuple[str, str]]:
        return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, [context])]

    orbit = "The asteroid circles the sun every five and half years, Mainzer said."
    assert verdicts("It orbits the sun every 5.5 years.", orbit) == [("5.5 years", "present")]
    assert verdicts("It orbits the sun every 6 years.", orbit) == [("6 years", "conflict")]
    mask = "Apply it to your scalp and leave it on for half an hour."
    assert verdicts("Leave it on your scalp for 30 minutes.", mask) == [("30 minutes", "present")]
    assert verdicts("Leave it on your scalp for 45 minutes.", mask) == [("45 minutes", "conflict")]
    # and the other way round: the answer's words against the context's digits
    assert verdicts("It takes an hour and a half.", "The walk takes 90 minutes.") == [
        ("an hour and a half", "present")
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Gestation is 6 1/2 months.", (6.5, "month", "6 1/2 months")),
        ("Gestation is 6-1/2 months.", (6.5, "month", "6-1/2 months")),
        ("Gestation is 6\u00bd months.", (6.5, "month", "6\u00bd months")),
        ("A 1/2 mile walk.", (0.5, "mile", "1/2 mile")),
    ],
)
def test_a_half_as_a_fraction_is_one_quantity(text: str, expected: tuple[float, str, str]) -> None:
    found = extract_quantities(text)
    assert [(q.value, q.unit, text[q.start : q.end]) for q in found] == [expected]


def test_a_date_or_a_count_is_no_fraction() -> None:
    assert [q.value for q in extract_quantities("Due 1/2/2020.")] == [1.0, 2.0, 2020.0]
    assert [(q.value, q.unit) for q in extract_quantities("Add 3 1/2 cups.")] == [
        (3.0, None),
        (1.0, None),
        (2.0, "cup"),
    ]


def test_a_half_in_words_agrees_with_the_same_half_as_a_fraction() -> None:
    context = ["Gestation for mule deer is seven months, for white-tailed deer 6 1/2 months."]
    answer = "Whitetails carry for six and a half months, mule deer for seven months."

    verdicts = [(answer[s:e], v) for s, e, v in _number_verdicts(answer, context)]

    assert verdicts == [("six and a half months", "present"), ("seven months", "present")]


def test_halves_close_together_and_far_apart_are_each_read_once() -> None:
    filler = " ".join(["The river runs past the old mill and the bridge."] * 40)
    text = f"Walk half a mile and three and a half miles. {filler} It takes an hour and a half."
    found = [(q.value, q.unit, text[q.start : q.end]) for q in extract_quantities(text)]
    assert found == [
        (0.5, "mile", "half a mile"),
        (3.5, "mile", "three and a half miles"),
        (1.5, "hour", "an hour and a half"),
    ]
