"""Numbers that cite a source are not quantities (issue 27, candidate 19)."""

from __future__ import annotations

import pytest

from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core._quantities import citation_numbers, extract_quantities
from truthlens_integrations.core.models.detection._adjust import _number_verdicts, uncounted_spans
from truthlens_integrations.core.models.detection._calibration_file import answer_evidence


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


def test_a_citation_gets_no_verdict_and_a_real_number_still_does() -> None:
    context = ["passage 1: The Eiffel Tower was built from 1887 to 1889."]
    answer = "It was built from 1887 to 1889 (Passage 1) and opened in 1950 [2]."

    verdicts = [(answer[s:e], v) for s, e, v in _number_verdicts(answer, context)]

    assert verdicts == [("1887", "present"), ("1889", "present"), ("1950", "conflict")]


def test_the_absent_word_count_leaves_citations_out() -> None:
    item = DetectionInput(
        answer="It is tall [1]. It is 7 years old, per Passage 3 (documents 1 and 2).",
        context=["The tower is tall and old, per the guide."],
    )

    absent, _ = answer_evidence(item)

    # whole citations are left out, noun and numbers (candidates 19 and 35); the
    # unsupported "7" is not
    assert [key for _, key in absent] == ["#7", "year"]
    spans = uncounted_spans(item.answer, item.context, None)
    assert [item.answer[a:b] for a, b in spans] == ["[1]", "Passage 3", "documents 1 and 2"]


def test_a_citation_shaped_number_with_a_unit_is_an_amount() -> None:
    # candidate 26: not a way around the unit rule
    context = ["passage 1: The Eiffel Tower is 330 metres tall and the walk is 5 km long."]

    def verdicts(answer: str) -> list[tuple[str, str]]:
        return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, context)]

    assert verdicts("The Eiffel Tower is [50] metres tall.") == [("50] metres", "conflict")]
    assert verdicts("The walk is Passage 5 km long.") == [("5 km", "present")]
    # a citation followed by any other word is still a citation
    assert verdicts("As [2] says, it is 330 metres tall.") == [("330 metres", "present")]
