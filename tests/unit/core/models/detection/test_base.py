"""Tests of ``core/models/detection/_base.py``: what every token detector's result shows.

Issue 51: a new user saw spans on "so" and "is". A span with no content word (a function
word, punctuation or a symbol alone) is scored but not shown; a span holding a content
word, or a word that changes a claim ("not", "all", "may"), is shown whole.
"""

from __future__ import annotations

import pytest

from tests._tiny_models import build_keyword_model
from truthlens_integrations.core._text import says_something
from truthlens_integrations.core.models.detection import Detector, load_detector

CONTEXT = '{"name": "Eiffel Tower", "built": "1887-1889"}'


@pytest.fixture(scope="module")
def marks_is_and_1950(tmp_path_factory: pytest.TempPathFactory) -> Detector:
    folder = build_keyword_model(tmp_path_factory.mktemp("is"), ["is", "1950"])
    return load_detector(folder, aggregation="noisy_or")


def test_a_span_on_a_function_word_alone_is_not_shown(marks_is_and_1950: Detector) -> None:
    result = marks_is_and_1950.detect(
        context=CONTEXT, question=None, answer="It was built in 1950 and it is old."
    )
    assert [span.text for span in result.spans] == ["1950"]


def test_it_still_counts_in_the_score(marks_is_and_1950: Detector) -> None:
    # The answer is flagged on what the model read; no span is left to point at.
    result = marks_is_and_1950.detect(
        context=CONTEXT, question=None, answer="It was built in 1889 and it is old."
    )
    assert result.detected and result.spans == []


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("so", False),
        ("is", False),
        ("on the", False),
        (", ", False),
        (")", False),
        ("$", False),
        ("not", True),  # a negation changes the claim
        ("all", True),
        ("may", True),
        ("before", True),
        ("cannot", True),
        ("isn't", True),
        ("1950", True),
        ("so it cannot", True),
        ("Paris", True),
    ],
)
def test_what_says_something(text: str, shown: bool) -> None:
    assert says_something(text) is shown


def test_the_stand_in_marks_the_function_word(marks_is_and_1950: Detector) -> None:
    # It reads "is" as a token of its own and marks it, or the tests above prove nothing.
    result = marks_is_and_1950.detect(context=CONTEXT, question=None, answer="It is old.")
    assert any(t.text == "is" and t.probability > 0.5 for t in result.tokens)
