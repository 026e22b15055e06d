"""Tests of ``core/models/detection/_evidence.py``: evidence selection: units, budgets, order,
long contexts.
"""

from __future__ import annotations

import random

from truthlens_integrations.core._types import DetectionInput
from truthlens_integrations.core.models.detection._evidence import (
    ContextIndex,
    answer_units,
    fill_budget,
    plan_rows,
)


def _words(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def test_units_cover_every_sentence_and_respect_the_budget() -> None:
    answer = "One two three. Four five six seven. " + " ".join(["word"] * 30) + ". End."
    units = answer_units(answer, lambda t: len(t.split()), unit_tokens=8)
    covered = "".join(answer[a:b] for a, b in units).replace(" ", "")
    assert covered == answer.replace(" ", "")
    assert all(len(answer[a:b].split()) <= 8 for a, b in units)
    assert units == sorted(units)


def test_a_long_question_leaves_room_for_evidence() -> None:
    # A question longer than the evidence budget (a dialogue history, several questions
    # joined) used to push every row past the model's window: ContextTooLongError.
    index = ContextIndex(["The bridge opened in 1932. It spans the Selva river."])
    question = " ".join(f"turn{i} said something about the weather" for i in range(200))
    rows = plan_rows(
        index, question, "The bridge opened in 1932.",
        count_many=_words, unit_tokens=16, evidence_tokens=64,
    )  # fmt: skip
    prompt_words = len(rows[0].prompt.split())
    assert prompt_words <= 64
    assert "1932" in rows[0].prompt  # the evidence still fits
    assert rows[0].prompt.split("\n")[0].endswith("turn199 said something about the weather")


def test_evidence_combines_sentences_far_apart() -> None:
    filler = [f"Passage {i} talks about gardens, rivers and weather number {i}." for i in range(60)]
    passages = [
        "The Harbor Bridge was designed by Anna Berg.",
        *filler,
        "Its opening took place in 1932 after six years of work on the Harbor Bridge.",
    ]
    rows = plan_rows(
        ContextIndex(passages),
        None,
        "The Harbor Bridge was designed by Anna Berg and opened in 1932.",
        count_many=_words,
        unit_tokens=48,
        evidence_tokens=64,
    )
    assert len(rows) == 1
    assert "Anna Berg" in rows[0].prompt
    assert "1932" in rows[0].prompt
    assert "weather number" not in rows[0].prompt.split("\n")[0]


def test_every_sentence_of_a_unit_gets_its_own_evidence() -> None:
    # Each "tower" sentence shares three rare words with the first answer sentence, the
    # museum sentence only one with the second. One query for the whole unit ranked every
    # tower sentence first and the budget ran out before the museum sentence.
    extras = [("lift", "shop", "garden"), ("cinema", "library", "bakery"),
              ("chapel", "gallery", "terrace"), ("pool", "stage", "market")]  # fmt: skip
    tower = [f"The tower has a {a} and a {b} and a {c}." for a, b, c in extras]
    museum = ["The museum opened in 1793.", "The museum has many rooms.", "It opened daily."]
    listed = ", ".join(word for triple in extras for word in triple)
    answer = f"The tower has a {listed}. The museum opened in 1793."
    rows = plan_rows(
        ContextIndex([*tower, *museum]), None, answer,
        count_many=_words, unit_tokens=48, evidence_tokens=36,
    )  # fmt: skip
    assert len(rows) == 1  # one unit of two sentences
    assert "1793" in rows[0].prompt
    assert "The tower has" in rows[0].prompt


def test_selection_does_not_depend_on_passage_order() -> None:
    passages = [f"The {c} museum opened in {1900 + i} and has {i + 2} floors." for i, c in
                enumerate(["red", "blue", "green", "white", "black", "old", "new"])]  # fmt: skip
    answer = "The green museum opened in 1902. It has 9 floors."
    reference = plan_rows(ContextIndex(passages), "When?", answer, count_many=_words,
                          unit_tokens=8, evidence_tokens=40)  # fmt: skip
    rng = random.Random(3)
    for _ in range(12):
        shuffled = passages[:]
        rng.shuffle(shuffled)
        rows = plan_rows(ContextIndex(shuffled), "When?", answer, count_many=_words,
                         unit_tokens=8, evidence_tokens=40)  # fmt: skip
        assert rows == reference


def test_cost_grows_with_the_answer_not_the_context() -> None:
    small = [f"Fact {i}: the tower number {i} is {i} meters tall." for i in range(10)]
    huge = small * 400
    answer = "Tower number 3 is 3 meters tall."
    for context in (small, huge):
        rows = plan_rows(ContextIndex(context), None, answer, count_many=_words,
                         unit_tokens=48, evidence_tokens=64)  # fmt: skip
        assert len(rows) == 1
        assert sum(_words([rows[0].prompt])) <= 64


def test_fill_budget_takes_the_best_that_fit_then_the_sentence_before() -> None:
    index = ContextIndex(["One two. Three four five six. Seven.", "Eight nine ten eleven."])
    texts = [s.text for s in index.sentences]
    ranked = [(3.0, texts.index("Three four five six.")), (2.0, texts.index("Eight nine ten eleven.")),
              (1.0, texts.index("Seven."))]  # fmt: skip
    # 5 + 5 tokens (a separator each) fill 10; "Seven." no longer fits
    chosen = fill_budget(index, ranked, _words, 10)
    assert {texts[i] for i in chosen} == {"Three four five six.", "Eight nine ten eleven."}
    # with room left, the sentence before a chosen one comes too, at half its score
    chosen = fill_budget(index, ranked[:1], _words, 9)
    assert {texts[i]: score for i, score in chosen.items()} == {
        "Three four five six.": 3.0,
        "One two.": 1.5,
    }


def test_detection_input_is_what_the_selection_sees() -> None:
    item = DetectionInput.create(context=["a.", "b."], question=None, answer="c.")
    assert ContextIndex(item.context).passages == ["a.", "b."]
