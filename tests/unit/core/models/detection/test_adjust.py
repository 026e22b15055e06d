"""Decades and centuries are spans of years (issue 27, RULE_candidate37.md and 39)."""

from __future__ import annotations

import pytest

from tests.conftest import needs_weights
from truthlens_integrations import TruthLens
from truthlens_integrations.core._quantities import extract_quantities
from truthlens_integrations.core.models.detection._adjust import _number_verdicts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Built in the 1950s.", (1950.0, 10, "1950s")),
        ("The 1880's boom.", (1880.0, 10, "1880's")),
        ("In the 2020s.", (2020.0, 10, "2020s")),
        ("A 1950s-era car.", (1950.0, 10, "1950s")),
        ("Paris in the 1800s.", (1800.0, 100, "1800s")),  # mostly a century
    ],
)
def test_a_decade_is_a_year_standing_for_its_years(
    text: str, expected: tuple[float, int, str]
) -> None:
    found = extract_quantities(text)
    assert [(q.value, q.years, text[q.start : q.end]) for q in found] == [expected]
    assert all(q.is_year and q.unit is None for q in found)


@pytest.mark.parametrize("text", ["The 50s.", "In 1955s.", "Model A1950s.", "1950ss"])
def test_what_is_not_a_decade_is_not_read_as_one(text: str) -> None:
    assert all(q.years == 1 for q in extract_quantities(text))


def test_a_single_year_is_still_one_year() -> None:
    (year,) = extract_quantities("It opened in 1950.")
    assert (year.value, year.years, year.is_year) == (1950.0, 1, True)


def _verdicts(answer: str, context: list[str]) -> list[tuple[str, str]]:
    return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, context)]


def test_a_decade_of_an_answer_is_judged_by_the_years_it_holds() -> None:
    context = ["The Eiffel Tower was built from 1887 to 1889."]
    assert _verdicts("It was built in the 1950s.", context) == [("1950s", "conflict")]
    assert _verdicts("It was built in the 1880s.", context) == [("1880s", "present")]
    assert _verdicts("It was built in the 1800s.", context) == [("1800s", "present")]


def test_a_year_inside_a_context_decade_says_more_but_does_not_conflict() -> None:
    context = ["The bridge was built in the 1950s."]
    assert _verdicts("It was built in 1955.", context) == [("1955", "unseen")]
    assert _verdicts("It was built in the 1950s.", context) == [("1950s", "present")]
    assert _verdicts("It was built in 1962.", context) == [("1962", "conflict")]
    assert _verdicts("It was built in the 1960s.", context) == [("1960s", "conflict")]


def test_years_without_a_decade_are_compared_as_before() -> None:
    context = ["The Eiffel Tower was built from 1887 to 1889."]
    assert _verdicts("It was built in 1889.", context) == [("1889", "present")]
    assert _verdicts("It was built in 1950.", context) == [("1950", "conflict")]


@needs_weights
def test_a_wrong_decade_is_caught() -> None:
    # before candidate 37 "1950s" was no number, and the answer passed at 0.46
    engine = TruthLens.from_config(action="block")
    context = ["The Eiffel Tower in Paris was built from 1887 to 1889. It is 330 metres tall."]
    wrong = engine.guard(context=context, question=None, answer="It was built in the 1950s.")
    verdict = wrong.full()
    assert verdict.blocked
    assert any("1950s" in s.text for s in verdict.spans), [s.text for s in verdict.spans]
    right = engine.guard(context=context, question=None, answer="It was built in the 1880s.")
    assert not right.full().blocked, right.score


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Built in the 19th century.", (1800.0, 101, "19th century")),
        ("A 17th-century house.", (1600.0, 101, "17th-century")),
        ("In the nineteenth century.", (1800.0, 101, "nineteenth century")),
        ("The twenty-first century.", (2000.0, 101, "twenty-first century")),
        ("The 11th and 12th centuries.", (1100.0, 101, "12th centuries")),
    ],
)
def test_a_century_is_a_year_standing_for_the_years_it_spans(
    text: str, expected: tuple[float, int, str]
) -> None:
    found = extract_quantities(text)
    assert [(q.value, q.years, text[q.start : q.end]) for q in found] == [expected]
    assert all(q.is_year and q.unit is None for q in found)


@pytest.mark.parametrize(
    "text", ["The 5th century BC.", "The 19th century BCE.", "The 19th of May.", "The 3rd century."]
)
def test_what_is_not_a_readable_century_is_not_read_as_one(text: str) -> None:
    assert all(q.years == 1 for q in extract_quantities(text))


def test_a_century_of_an_answer_is_judged_by_the_years_it_holds() -> None:
    context = ["The Eiffel Tower was built from 1887 to 1889."]
    assert _verdicts("It was built in the 19th century.", context) == [("19th century", "present")]
    assert _verdicts("It was built in the 20th century.", context) == [("20th century", "conflict")]
    # a year inside a context's century says more than the source, it does not conflict
    assert _verdicts("It was built in 1850.", ["It was built in the 19th century."]) == [
        ("1850", "unseen")
    ]


@needs_weights
def test_a_right_century_passes_and_a_wrong_one_is_caught() -> None:
    # before candidate 39 the right "19th century" was blocked (0.59) with the span "19th"
    engine = TruthLens.from_config(action="block")
    context = ["The Eiffel Tower in Paris was built from 1887 to 1889. It is 330 metres tall."]
    right = engine.guard(context=context, question=None, answer="It was built in the 19th century.")
    assert not right.full().blocked, right.score
    wrong = engine.guard(context=context, question=None, answer="It was built in the 20th century.")
    assert wrong.full().blocked, wrong.score


def test_a_context_span_about_something_else_never_hides_a_wrong_year() -> None:
    # RULE_candidate39b.md: the radio masts' century overlapped the wrong "1950", which read
    # "unseen" instead of a conflict with the context's 1887 and 1889
    context = [
        "It was built from 1887 to 1889 as the centrepiece of the 1889 World's Fair.",
        "Radio transmitters were installed at the top of the tower in the early twentieth century.",
    ]
    answer = "The Eiffel Tower was built in 1950."
    assert _verdicts(answer, context) == [("1950", "conflict")]
    decades = ["The tower was built in 1955.", "Its lifts were renewed in the 1980s."]
    assert _verdicts("The tower was built in 1982.", decades) == [("1982", "conflict")]
    # with spans only, an overlap still says more than the source, not something else
    assert _verdicts("The tower was built in 1982.", decades[1:]) == [("1982", "unseen")]
