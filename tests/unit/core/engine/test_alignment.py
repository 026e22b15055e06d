"""Tests of ``core/engine/_alignment.py``: numbers, years and units of flagged spans aligned
against the context.
"""

from __future__ import annotations

import pytest

from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT
from truthlens_integrations.core.engine._alignment import align_quantities, extract_quantities


def _span(answer: str, text: str) -> tuple[int, int]:
    start = answer.index(text)
    return start, start + len(text)


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


def test_a_unit_of_the_same_dimension_is_compared_by_amount() -> None:
    context = ["The trail is 4.2 km long and weighs nothing.", "It cost 3 million euros."]
    for answer, label in [
        ("It is 4.2 miles long.", ("contradiction", 1.0)),  # the same digits, another unit
        ("It is 2.6 miles long.", None),  # 4.2 km written in miles
        ("It is 4200 meters long.", None),
        ("It is 3 miles long.", ("contradiction", 1.0)),  # 2.61 miles is not "3"
        ("It cost 3 billion euros.", ("contradiction", 1.0)),
        ("It cost 3 million euros.", None),
    ]:
        number = extract_quantities(answer)[0]
        assert align_quantities(context, answer, number.start, number.end) == label, answer


def test_a_round_number_is_read_with_its_precision() -> None:
    assert [q.decimals for q in extract_quantities("2.65 m, 7 m, 540 m, 1,200 m")] == [2, 0, -1, -2]
    context = ["It weighs 1,200 pounds."]
    answer = "It weighs about 540 kg."  # 544 kg, rounded to tens
    number = extract_quantities(answer)[0]
    assert align_quantities(context, answer, number.start, number.end) is None


def test_numbers_in_words_are_read_and_one_is_not() -> None:
    found = extract_quantities("A three-year warranty, twenty-five people, one of the best.")
    assert [(q.value, q.unit) for q in found] == [(3.0, "year"), (25.0, "people")]
    answer = "It has a three-year warranty."
    number = extract_quantities(answer)[0]
    assert (
        align_quantities(["The 3-year warranty covers parts."], answer, number.start, number.end)
        is None
    )
    assert align_quantities(
        ["The 2-year warranty covers parts."], answer, number.start, number.end
    ) == (
        "contradiction",
        1.0,
    )
