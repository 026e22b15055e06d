"""Evidence-removal records mark the sentence whose backing was removed (``lab.training.removal``)."""

from __future__ import annotations

import json
import random

from lab.training.realdata import Claim
from lab.training.removal import (
    MAX_OTHER_DROP,
    MIN_LOST,
    _grounded,
    _pieces,
    _vocab,
    load_removals,
    removal_variants,
)

CONTEXT = (
    "The Halden bridge opened in 1932 after four years of work. "
    "It carries about 4,200 cars a day across the Tista river. "
    "Its engineer, Ada Moreno, later designed the Oslo ferry terminal.\n"
    "A second crossing opened downstream in 1961. "
    "Tolls were removed from both crossings in 1990."
)
ANSWER = (
    "The Halden bridge opened in 1932 after four years of work. "
    "Ada Moreno, its engineer, went on to design the ferry terminal in Oslo."
)


def _claim(context: str = CONTEXT, answer: str = ANSWER, label: int = 0) -> Claim:
    return Claim("llm_answers/summary", context, "", answer, label, (), "u-1")


def _variants(claim: Claim) -> list[Claim]:
    return removal_variants([claim], per_answer=5, rng=random.Random(0))


def test_the_span_is_the_sentence_whose_backing_is_gone() -> None:
    variants = _variants(_claim())
    assert variants
    for v in variants:
        assert v.label == 1 and v.answer == ANSWER
        ((a, b),) = v.spans or ()
        sentence = v.answer[a:b]
        assert sentence in ANSWER and not sentence.endswith(".")
        # the removal took the sentence's words away from the context...
        words = _vocab(sentence)
        left = set().union(*(p.words for p in _pieces(v.context)))
        assert 1 - _grounded(words, left) >= MIN_LOST
        # ...and left the other sentence its support
        other = ANSWER.replace(sentence, "")
        before = set().union(*(p.words for p in _pieces(CONTEXT)))
        assert _grounded(_vocab(other), before) - _grounded(_vocab(other), left) <= MAX_OTHER_DROP


def test_the_engineer_sentence_loses_exactly_its_passage_sentence() -> None:
    by_span = {ANSWER[v.spans[0][0] : v.spans[0][1]]: v for v in _variants(_claim()) if v.spans}
    v = by_span["Ada Moreno, its engineer, went on to design the ferry terminal in Oslo"]
    assert "Ada Moreno" not in v.context
    assert "opened in 1932" in v.context and "1961" in v.context and "1990" in v.context


def test_unsupported_or_one_sentence_contexts_give_nothing() -> None:
    assert _variants(_claim(label=1)) == []
    # removing the only piece would leave no context to judge against
    assert _variants(_claim(context="The Halden bridge opened in 1932.", answer=ANSWER)) == []


def test_a_json_record_loses_fields_and_stays_json() -> None:
    record = {
        "name": "Harbor Pizzeria",
        "city": "Tucson",
        "categories": "Pizza, Salads",
        "attributes": {"OutdoorSeating": True, "WiFi": False},
        "hours": {"Monday": "8:0-22:0", "Friday": "9:0-21:0"},
        "review_count": 897,
    }
    answer = (
        "Harbor Pizzeria is a pizza and salad place in Tucson with 897 reviews. "
        "Guests can sit outdoors, and WiFi is not offered."
    )
    variants = _variants(_claim(context=json.dumps(record), answer=answer))
    outdoor = [
        v for v in variants if v.spans and "outdoors" in answer[v.spans[0][0] : v.spans[0][1]]
    ]
    assert outdoor
    left = json.loads(outdoor[0].context)
    assert "OutdoorSeating" not in left.get("attributes", {})
    assert left["name"] == "Harbor Pizzeria" and left["review_count"] == 897


def test_committed_answers_give_pairs_with_one_clean_record_per_answer() -> None:
    clean, unsupported = load_removals("test")
    assert len(unsupported) >= 50
    answers = {c.answer for c in clean}
    assert len(answers) == len(clean)
    for v in unsupported:
        assert v.answer in answers and v.source.startswith("removal/")
        ((a, b),) = v.spans or ()
        assert 0 <= a < b <= len(v.answer)
    assert {c.source for c in clean} <= {v.source for v in unsupported}
