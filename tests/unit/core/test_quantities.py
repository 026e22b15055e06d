"""Tests of ``core/_quantities.py``: reading quantities: halves, decades, centuries, clock
times, glued units, citations, dates, scales.
"""

from __future__ import annotations

import pytest

from tests.conftest import EIFFEL_CONTEXT
from truthlens_integrations.core._quantities import (
    TIME_OF_DAY,
    ContextQuantities,
    citation_numbers,
    extract_quantities,
)

# -- A half in words or as a fraction is one amount with its unit (issue 27, candidates 20, 21).


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
    # a date in digits is one date, read both ways, with its year (issue 51)
    (date, year) = extract_quantities("Due 1/2/2020.")
    assert {date.value, *date.readings} == {20200102.0, 20200201.0} and year.value == 2020.0
    assert [(q.value, q.unit) for q in extract_quantities("Add 3 1/2 cups.")] == [
        (3.0, None),
        (1.0, None),
        (2.0, "cup"),
    ]


def test_halves_close_together_and_far_apart_are_each_read_once() -> None:
    filler = " ".join(["The river runs past the old mill and the bridge."] * 40)
    text = f"Walk half a mile and three and a half miles. {filler} It takes an hour and a half."
    found = [(q.value, q.unit, text[q.start : q.end]) for q in extract_quantities(text)]
    assert found == [
        (0.5, "mile", "half a mile"),
        (3.5, "mile", "three and a half miles"),
        (1.5, "hour", "an hour and a half"),
    ]


# -- Number, year and unit alignment of flagged spans against the context. -----------------


def test_extracts_values_units_and_years() -> None:
    found = extract_quantities("Built 1887-1889, 330 meters tall, about 2,400 people, A320, 3rd.")
    assert [(q.value, q.unit, q.is_year) for q in found] == [
        (1887.0, None, True),
        (1889.0, None, True),
        (330.0, "meter", False),
        (2400.0, "people", False),
    ]


# -- Numbers that cite a source are not quantities (issue 27, candidate 19). ---------------


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("It was built in 1887 (Passages 1, 2, and 3).", ["1", "2", "3"]),
        ("As Document 2 and Source 4 say [1] [2, 3], it works.", ["2", "4", "1", "2", "3"]),
        ("passage 1: The tower is 300 m tall.\npassage 2: More.", ["1", "2"]),
        ("See context 2 or snippet #3.", ["2", "3"]),
    ],
)
def test_citation_numbers_are_found(text: str, cited: list[str]) -> None:
    assert [text[a:b] for a, b in citation_numbers(text)] == cited


def test_they_are_no_quantities_and_the_amounts_stay() -> None:
    text = "The tower is 300 m tall (Passage 2). It opened in 1889 [3]. 1.5 million visit."
    found = [(q.value, q.unit) for q in extract_quantities(text)]
    assert found == [(300.0, "m"), (1889.0, None), (1.5, "million")]


@pytest.mark.parametrize(
    "text",
    [
        "1. Preheat the oven.\n2. Roast it.",  # list numbers are read as before
        "In 2016. The 3 cups.",  # a year ending a sentence, a count
        "Section 2 and article 5 apply.",  # identifiers that are claims
        "Sources: 12 reports. The passage of 1832.",
        "It costs [$40] (see [2020] report).",
    ],
)
def test_other_numbers_are_not_read_as_citations(text: str) -> None:
    assert citation_numbers(text) == []


# -- Clock times are one quantity, a time of day (issue 27, candidates 17 and 25). ---------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Open 11:00 AM to 9 PM.", [(660.0, "11:00 AM"), (1260.0, "9 PM")]),
        ("The alert comes at 2:20 p.m. EDT.", [(860.0, "2:20 p.m.")]),
        ("Hours: 11:0-21:0", [(660.0, "11:0"), (1260.0, "21:0")]),
        ("It closes at 12 am and opens at 12 pm.", [(0.0, "12 am"), (720.0, "12 pm")]),
    ],
)
def test_a_clock_time_is_read_as_minutes_after_midnight(
    text: str, expected: list[tuple[float, str]]
) -> None:
    found = extract_quantities(text)
    assert [(q.value, text[q.start : q.end]) for q in found] == expected
    assert all(q.unit == TIME_OF_DAY and not q.is_year for q in found)


def test_no_time_is_read_where_there_is_none() -> None:
    # an hour past 12 with am/pm, minutes past 59, "amps" and a year stay what they were
    for text in ("It draws 5 amps.", "at 13 pm", "at 10:75", "It opened in 1950."):
        assert all(q.unit != TIME_OF_DAY for q in extract_quantities(text)), text


# -- Decades and centuries are spans of years (issue 27, RULE_candidate37.md and 39). ------


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


# -- A number with its unit glued on is an amount (issue 27, RULE_candidate36.md and 38).


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


# -- Issue 29, core side: text that evades the checks, model folders, options, policy, mitigation.


FACT = "The Eiffel Tower was built in 1950 and is 500 meters tall."


RIGHT = "The Eiffel Tower was built in 1889 and is 330 meters tall."


# -- numbers must come from a statement about the same thing ----------------------------------

DISTRACTOR = "In 1950 a 500 meters long bridge was built in Lyon."


def test_numbers_are_judged_against_statements_about_the_same_thing() -> None:
    known = ContextQuantities([EIFFEL_CONTEXT, DISTRACTOR])
    verdicts = [known.judge(q, FACT) for q in extract_quantities(FACT)]
    assert verdicts == ["conflict", "conflict"]
    # With nothing else about the subject, the distractor is all there is (as before).
    alone = ContextQuantities([DISTRACTOR])
    assert [alone.judge(q, FACT) for q in extract_quantities(FACT)] == ["present", "present"]
    # A statement sharing the subject supports the number.
    about = ContextQuantities(["The Eiffel Tower was completed in 1889.", DISTRACTOR])
    year = extract_quantities(RIGHT)[0]
    assert about.judge(year, RIGHT) == "present"


# -- Issue 43, text that evades the checks: every entry point, look-alikes, instructions, units.


def test_eras_and_roman_years_are_read_only_where_a_year_is_meant() -> None:
    bc = extract_quantities("Rome was founded in 753 BC, Athens earlier.")
    assert [(q.value, q.is_year) for q in bc] == [(-753.0, True)]
    assert [q.value for q in extract_quantities("built in MCML")] == [1950.0]
    # capitals that are initials or names stay words
    for text in ("born in MD", "MCML was the code", "a MIX of styles", "in CIVIL law"):
        assert extract_quantities(text) == [], text


def test_dates_temperatures_and_scales_are_read_as_amounts() -> None:
    iso, written = extract_quantities("1889-03-31"), extract_quantities("on 31 March 1889")
    assert iso[0].value == written[0].value == 18890331.0
    assert [q.value for q in iso if q.is_year] == [1889.0]  # its year still reads as a year
    assert [q.unit for q in extract_quantities("212 °F, 100 °C and 5 degrees Celsius")] == [
        "°f",
        "°c",
        "°c",
    ]
    assert extract_quantities("1.2 thousand")[0].unit == "thousand"
