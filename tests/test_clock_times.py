"""Clock times are one quantity, a time of day (issue 27, candidates 17 and 25)."""

from __future__ import annotations

import pytest

from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core._quantities import TIME_OF_DAY, extract_quantities
from truthlens_integrations.core.models.detection._adjust import _number_verdicts
from truthlens_integrations.core.models.detection._calibration_file import answer_evidence


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


def test_a_time_is_judged_against_the_records_times_only() -> None:
    record = ["{'hours': {'Monday': '11:0-21:0', 'Friday': '11:0-22:0'}, 'stars': 4.5}"]

    def verdicts(answer: str) -> list[tuple[str, str]]:
        return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, record)]

    assert verdicts("It is open from 11 AM to 9 PM.") == [("11 AM", "present"), ("9 PM", "present")]
    assert verdicts("On Friday it is open until 10 PM.") == [("10 PM", "present")]
    assert verdicts("It opens at 10 AM.") == [("10 AM", "conflict")]
    # a plain number is never matched against a time's minutes, nor a time against a number
    assert verdicts("It has 4.5 stars.") == [("4.5", "present")]
    assert verdicts("It opens at 4:30 AM.") == [("4:30 AM", "conflict")]


def test_a_clock_time_is_judged_by_the_rule_not_counted_as_absent_words() -> None:
    record = ["{'hours': {'Monday': '11:0-21:0'}, 'city': 'Santa Barbara'}"]
    item = DetectionInput(answer="It is open from 11 AM to 9 PM in Santa Barbara.", context=record)

    absent, _ = answer_evidence(item)

    # "11 AM" and "9 PM" are the rule's to judge (present here); only "open" is absent
    assert [key for _, key in absent] == ["open"]
