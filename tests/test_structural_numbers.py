"""List-item and source-citation numbers are not quantities (issue 27, candidate 18)."""

from __future__ import annotations

import pytest

from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core._quantities import extract_quantities, structural_numbers
from truthlens_integrations.core.models.detection._adjust import _number_verdicts, uncounted_spans
from truthlens_integrations.core.models.detection._calibration_file import answer_evidence


@pytest.mark.parametrize(
    ("text", "structural"),
    [
        ("Steps:\n1. Preheat.\n2. **Roast** it.\n  3) Rest.", ["1", "2", "3"]),
        ("It was built in 1887 (Passages 1, 2, and 3).", ["1", "2", "3"]),
        ("As Document 2 and Source 4 say [1] [2, 3], it works.", ["2", "4", "1", "2", "3"]),
        ("passage 1: The tower is 300 m tall.\npassage 2: More.", ["1", "2"]),
    ],
)
def test_list_and_citation_numbers_are_found(text: str, structural: list[str]) -> None:
    assert [text[a:b] for a, b in structural_numbers(text)] == structural


def test_they_are_no_quantities_and_the_amounts_stay() -> None:
    text = "1. The tower is 300 m tall (Passage 2).\n2. It opened in 1889.\n1.5 million visit."
    found = [(q.value, q.unit) for q in extract_quantities(text)]
    assert found == [(300.0, "m"), (1889.0, None), (1.5, "million")]


@pytest.mark.parametrize(
    "text",
    [
        "1.5 million people came.",  # a decimal at the start of a line
        "In 2016. The 3 cups.",  # a year ending a sentence, a count
        "Section 2 and article 5 apply.",  # identifiers that are claims
        "Sources: 12 reports.",
    ],
)
def test_amounts_are_not_read_as_structure(text: str) -> None:
    assert structural_numbers(text) == []


def test_a_list_number_gets_no_verdict_and_a_real_number_still_does() -> None:
    context = ["passage 1: The Eiffel Tower was built from 1887 to 1889."]
    answer = "Two facts:\n1. It was built from 1887 to 1889 (Passage 1).\n2. It opened in 1950."

    verdicts = [(answer[s:e], v) for s, e, v in _number_verdicts(answer, context)]

    assert verdicts == [("1887", "present"), ("1889", "present"), ("1950", "conflict")]


def test_the_absent_word_count_leaves_list_numbers_out() -> None:
    item = DetectionInput(
        answer="1. It is tall.\n2. It is 7 years old, per Passage 3.",
        context=["The tower is tall and old, per the guide."],
    )

    absent, _ = answer_evidence(item)

    # the list numbers and the citation's number are left out; the unsupported "7" is not
    assert [key for _, key in absent] == ["#7", "year", "passage"]
    assert len(uncounted_spans(item.answer, item.context, None)) == 3
