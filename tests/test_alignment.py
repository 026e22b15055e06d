"""Number, year and unit alignment of flagged spans against the context."""

from __future__ import annotations

import pytest

from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT
from truthlens_integrations.core.engine._alignment import align_quantities, extract_quantities


def _span(answer: str, text: str) -> tuple[int, int]:
    start = answer.index(text)
    return start, start + len(text)


def test_extracts_values_units_and_years() -> None:
    found = extract_quantities("Built 1887-1889, 330 meters tall, about 2,400 people, A320, 3rd.")
    assert [(q.value, q.unit, q.is_year) for q in found] == [
        (1887.0, None, True),
        (1889.0, None, True),
        (330.0, "meter", False),
        (2400.0, "people", False),
    ]


@pytest.mark.parametrize(
    ("span", "label"),
    [
        ("1950", "contradiction"),  # a year against the years 1887 and 1889
        ("500", "contradiction"),  # the unit follows the span: 500 meters vs 330 meters
        ("500 meters", "contradiction"),
    ],
)
def test_eiffel_numbers_contradict(span: str, label: str) -> None:
    start, end = _span(EIFFEL_ANSWER, span)
    assert align_quantities([EIFFEL_CONTEXT], EIFFEL_ANSWER, start, end) == (label, 1.0)


def test_spans_without_numbers_are_left_to_the_model() -> None:
    start, end = _span(EIFFEL_ANSWER, "Eiffel Tower")
    assert align_quantities([EIFFEL_CONTEXT], EIFFEL_ANSWER, start, end) is None


def test_numbers_found_in_the_context_are_left_to_the_model() -> None:
    answer = "About 2,400 people visit each hour."
    start, end = _span(answer, "2,400")
    assert align_quantities(["Roughly 2400 people visit per hour."], answer, start, end) is None


def test_a_number_with_nothing_comparable_is_unsupported() -> None:
    answer = "It has 3 restaurants."
    start, end = _span(answer, "3 restaurants")
    context = ["The tower is 330 meters tall."]
    assert align_quantities(context, answer, start, end) == ("neutral", 1.0)


def test_a_year_is_not_compared_with_a_height() -> None:
    answer = "It opened in 1890."
    start, end = _span(answer, "1890")
    assert align_quantities(["It is 330 meters tall."], answer, start, end) == ("neutral", 1.0)
