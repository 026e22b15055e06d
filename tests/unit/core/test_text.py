"""Tests of ``core/_text.py``: the sentence rule."""

from __future__ import annotations

from truthlens_integrations.core.models.detection._evidence import split_sentences

# -- selection (pure Python) ------------------------------------------------------------


def test_sentences_keep_decimals_and_ranges_whole() -> None:
    text = "It is 4.2 km long. Built 1887-1889. Open daily!\nTickets: 25 euros"
    parts = [text[a:b] for a, b in split_sentences(text)]
    assert parts == ["It is 4.2 km long.", "Built 1887-1889.", "Open daily!", "Tickets: 25 euros"]


def test_sentence_ends_after_quotes_brackets_and_repeated_marks() -> None:
    # The end mark stays with its sentence; closing quotes and brackets after it and the
    # white space go to the gap; a line break ends a sentence without a mark.
    text = 'He said "Stop." Then he left!.. Really?!\n\nNext line\nWhy? (Nobody knows.) End'
    assert [text[a:b] for a, b in split_sentences(text)] == [
        'He said "Stop.',
        "Then he left!..",
        "Really?!",
        "Next line",
        "Why?",
        "(Nobody knows.",
        "End",
    ]
    assert split_sentences("") == []
    assert split_sentences(" .\n") == [(1, 2)]
