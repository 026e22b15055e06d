"""Evidence selection and the evidence detector: order, long contexts, refusals, coverage."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tests.conftest import BUNDLED, EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION, needs_weights
from truthlens_integrations.core._types import (
    DetectionConfig,
    DetectionInput,
    DetectionStatus,
    TokenScore,
)
from truthlens_integrations.core.models.detection import TransformerDetector, load_detector
from truthlens_integrations.core.models.detection._adjust import (
    abstentions,
    adjust_tokens,
    hedge_verdicts,
    negation_verdicts,
)
from truthlens_integrations.core.models.detection._evidence import (
    ContextIndex,
    answer_units,
    fill_budget,
    plan_rows,
    split_sentences,
)
from truthlens_integrations.core.models.detection._evidence_detector import EvidenceDetector
from truthlens_integrations.core.models.detection._lexical import absent_word_count


def _words(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


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


# -- the detector with the tiny model ----------------------------------------------------


def test_tiny_evidence_detector_offsets_and_coverage(tiny_bert_dir: Path) -> None:
    detector = EvidenceDetector(tiny_bert_dir)
    answer = "alice visited rome in 1920. bob sold the tower in 1950."
    context = ["alice visited rome in 1920.", "bob sold the tower.", "carol owned a garden."]
    result = detector.detect(context=context, question="when?", answer=answer)
    assert result.status is not DetectionStatus.UNVERIFIABLE
    assert all(answer[t.start : t.end] == t.text for t in result.tokens)
    assert result.coverage.evidence_sentences is not None
    assert result.coverage.context_sentences == 3
    assert result.coverage.answer_chars_scored == sum(len(t.text) for t in result.tokens)


def test_token_counts_are_the_tokenizers_even_after_a_truncating_call(
    tiny_bert_dir: Path,
) -> None:
    detector = EvidenceDetector(tiny_bert_dir)
    tokenizer = detector._loaded.tokenizer
    texts = ["alice visited rome in 1920 and sold the old tower", "bob", ""]
    expected = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    assert expected[0] > 4
    assert detector._count_many(texts) == expected
    # another user of the shared tokenizer (the NLI branch) truncates and pads
    tokenizer(texts, truncation=True, max_length=4, padding="max_length")
    assert detector._count_many(texts) == expected
    assert detector._count_many([]) == []


def test_load_detector_picks_the_strategy(tiny_bert_dir: Path) -> None:
    assert type(load_detector(tiny_bert_dir)) is TransformerDetector
    assert type(load_detector(tiny_bert_dir, strategy="evidence")) is EvidenceDetector
    with pytest.raises(Exception, match="unknown strategy"):
        load_detector(tiny_bert_dir, strategy="everything")


# -- early exit: the KeyError and a randomized comparison with the exact path ----------


def test_pieces_that_stop_in_different_rounds_do_not_crash(tiny_bert_dir: Path) -> None:
    # A long answer (several pieces) over a context of many windows: some pieces stop
    # after their first window, others go on. This raised KeyError in _forward_in_rounds.
    context = [f"alice visited rome in 19{i:02d} with bob and carol." for i in range(40)]
    answer = " ".join(f"alice visited rome in 19{i:02d}." for i in range(0, 80, 3))
    config = DetectionConfig(max_length=128, token_threshold=0.5, max_windows=400)
    detector = TransformerDetector(tiny_bert_dir, config=config)
    result = detector.detect(context=context, question="when?", answer=answer)
    assert result.coverage.answer_pieces > 1
    assert result.coverage.context_windows > 1


@pytest.mark.parametrize("seed", range(6))
def test_early_exit_gives_the_exact_verdict(tiny_bert_dir: Path, seed: int) -> None:
    rng = random.Random(seed)
    words = ["alice", "bob", "carol", "rome", "paris", "tower", "bridge", "built", "sold"]
    context = [
        " ".join(rng.choice(words) for _ in range(rng.randint(4, 30))) + "."
        for _ in range(rng.randint(1, 25))
    ]
    answer = " ".join(
        " ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + "."
        for _ in range(rng.randint(1, 12))
    )
    window = rng.choice([128, 160, 256])
    threshold = rng.choice([0.3, 0.5, 0.6])
    base = {"max_length": window, "token_threshold": threshold, "max_windows": 500}
    fast = TransformerDetector(tiny_bert_dir, config=DetectionConfig(**base, early_exit=True))
    exact = TransformerDetector(tiny_bert_dir, config=DetectionConfig(**base, early_exit=False))
    a = fast.detect(context=context, question="who?", answer=answer)
    b = exact.detect(context=context, question="who?", answer=answer)
    assert [(s.start, s.end) for s in a.spans] == [(s.start, s.end) for s in b.spans]
    assert a.detected == b.detected
    assert a.score == pytest.approx(b.score)


# -- unreadable text ------------------------------------------------------------------------


def test_unreadable_answer_is_unverifiable_not_supported(tiny_bert_dir: Path) -> None:
    # the tiny vocabulary has no token for these characters: everything is [UNK]
    detector = TransformerDetector(tiny_bert_dir)
    result = detector.detect(context=["alice visited rome."], question=None, answer="ሰላም ነው ✨✨")
    assert result.status is DetectionStatus.UNVERIFIABLE
    assert not result.detected
    assert result.coverage.answer_chars_scored == 0


# -- the bundled detector ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundled() -> EvidenceDetector:
    if BUNDLED is None:
        pytest.skip("bundled weights are not here")
    detector = load_detector()
    assert isinstance(detector, EvidenceDetector)
    return detector


SEVEN = [
    "The Lumen Museum opened in 1987 in the old harbor district.",
    "Its founder, Clara Voss, served as director until 2004.",
    "The museum's main hall is 40 meters long and holds 300 paintings.",
    "Admission is free on Sundays; on other days tickets cost 12 euros.",
    "In 1995 the museum added a sculpture garden designed by Ivo Lind.",
    "The building was renovated between 2015 and 2017.",
    "About 250,000 people visit the museum every year.",
]


@needs_weights
def test_bundled_verdict_does_not_depend_on_passage_order(bundled: EvidenceDetector) -> None:
    answer = (
        "The Lumen Museum opened in 1991. Clara Voss led it until 2004, "
        "and its sculpture garden was added in 1995."
    )
    reference = bundled.detect(context=SEVEN, question="Tell me about the museum.", answer=answer)
    rng = random.Random(7)
    for _ in range(12):
        shuffled = SEVEN[:]
        rng.shuffle(shuffled)
        result = bundled.detect(context=shuffled, question="Tell me about the museum.",
                                answer=answer)  # fmt: skip
        assert [(s.start, s.end) for s in result.spans] == [
            (s.start, s.end) for s in reference.spans
        ]
        assert result.score == pytest.approx(reference.score, abs=1e-6)


@needs_weights
def test_bundled_catches_an_error_in_a_20000_word_context(bundled: EvidenceDetector) -> None:
    rng = random.Random(11)
    subjects = ["The council", "A local team", "The company", "The school", "The orchestra",
                "A research group", "The festival", "The hospital", "The library", "The club"]  # fmt: skip
    verbs = ["announced", "reviewed", "discussed", "published", "approved", "postponed"]
    objects = ["a new budget", "its annual report", "a training plan", "the summer schedule",
               "a safety review", "the parking rules", "a partnership", "the river cleanup"]  # fmt: skip
    filler = []
    while sum(len(s.split()) for s in filler) < 20_000:
        filler.append(
            f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} on "
            f"{rng.choice(['Monday', 'Tuesday', 'Friday'])} after {rng.randint(2, 40)} meetings."
        )
    needle = "The Harbor Bridge over the Selva river was opened to traffic in 1932."
    filler.insert(len(filler) // 2, needle)
    passages = [" ".join(filler[i : i + 20]) for i in range(0, len(filler), 20)]
    question = "When was the Harbor Bridge opened?"
    wrong = bundled.detect(
        context=passages, question=question,
        answer="The Harbor Bridge over the Selva river was opened to traffic in 1995.",
    )  # fmt: skip
    assert wrong.detected
    assert any("1995" in s.text for s in wrong.spans)
    right = bundled.detect(
        context=passages, question=question,
        answer="The Harbor Bridge over the Selva river was opened to traffic in 1932.",
    )  # fmt: skip
    assert not any("1932" in s.text for s in right.spans)


@needs_weights
def test_bundled_catches_a_dropped_negation_and_a_unit_swap(bundled: EvidenceDetector) -> None:
    context = [
        "The new trail is 4.2 km long and opened on June 12, 2023.",
        "The ceramic bowls are not dishwasher safe and should be washed by hand.",
    ]

    def check(question: str, answer: str) -> tuple[bool, list[str]]:
        result = bundled.detect(context=context, question=question, answer=answer)
        return result.detected, [s.text for s in result.spans]

    dishwasher = "Can the bowls go in the dishwasher?"
    assert check(dishwasher, "The ceramic bowls are dishwasher safe.") == (
        True,
        ["dishwasher safe"],
    )
    assert check(
        dishwasher, "No, the ceramic bowls are not dishwasher safe; wash them by hand."
    ) == (
        False,
        [],
    )
    detected, spans = check("How long is the trail?", "The trail is 4.2 miles long.")
    assert detected and len(spans) == 1 and "4.2 miles" in spans[0] and "trail" not in spans[0]
    assert not check("How long is the trail?", "The trail is 4.2 kilometers long.")[0]


@needs_weights
def test_bundled_lets_a_hedge_on_a_correct_answer_through(bundled: EvidenceDetector) -> None:
    # The demo's corrected answer to the demo's question: "currently" was its only
    # flagged word.
    answer = "The Eiffel Tower was built in 1887-1889, and it is currently 330 meters tall."
    question = "When was the Eiffel Tower built and how tall is it?"
    result = bundled.detect(context=[EIFFEL_CONTEXT], question=question, answer=answer)
    assert not result.detected and result.spans == []


@needs_weights
def test_bundled_checks_an_answer_to_a_very_long_question(bundled: EvidenceDetector) -> None:
    question = " ".join(["Tell me everything you know about the history of this bridge."] * 60)
    result = bundled.detect(
        context=["The Harbor Bridge over the Selva river was opened to traffic in 1932."],
        question=question,
        answer="The Harbor Bridge was opened to traffic in 1995.",
    )
    assert result.detected
    assert any("1995" in s.text for s in result.spans)


@needs_weights
@pytest.mark.parametrize(
    "refusal",
    [
        "The provided information does not mention who the CEO is.",
        "I'm sorry, but the passages do not say who the CEO of the company is.",
    ],
)
def test_bundled_does_not_flag_refusals(bundled: EvidenceDetector, refusal: str) -> None:
    context = [
        "Northwind Foods was founded in 1998 in Oslo. It sells frozen vegetables in 12 "
        "countries. Its chief financial officer is Mara Lind.",
    ]
    result = bundled.detect(context=context, question="Who is the CEO?", answer=refusal)
    assert not result.detected, result.spans


@needs_weights
def test_bundled_leaves_an_abstention_out_of_the_absent_word_count(
    bundled: EvidenceDetector,
) -> None:
    # The response score reads the answer's absent words; an abstention's "provided
    # information ... mention" would otherwise count, though its tokens are left unflagged.
    context = ["Northwind Foods was founded in 1998. Its CFO is Mara Lind."]
    refusal = DetectionInput.create(
        context=context,
        question="Who is the CEO?",
        answer="The provided information does not mention who the CEO is.",
    )
    assert absent_word_count(refusal) > 0
    assert bundled._absent_word_starts(refusal) == []
    named = DetectionInput.create(
        context=context,
        question="Who is the CEO?",
        answer="The passages do not say who the CEO is, but it is John Smith.",
    )
    assert len(bundled._absent_word_starts(named)) == absent_word_count(named) > 0


@needs_weights
def test_bundled_eiffel_acceptance(bundled: EvidenceDetector) -> None:
    result = bundled.detect(context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION,
                            answer=EIFFEL_ANSWER)  # fmt: skip
    flagged = "".join(s.text for s in result.spans)
    assert result.detected
    assert "1950" in flagged
    assert "Paris" not in flagged
    assert 0.0 <= result.score <= 1.0


@needs_weights
def test_bundled_unreadable_answer_is_unverifiable(bundled: EvidenceDetector) -> None:
    result = bundled.detect(context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION,
                            answer="埃菲尔铁塔建于一八八九年🗼🗼")  # fmt: skip
    assert result.status is DetectionStatus.UNVERIFIABLE
    assert not result.detected


def test_detection_input_is_what_the_selection_sees() -> None:
    item = DetectionInput.create(context=["a.", "b."], question=None, answer="c.")
    assert ContextIndex(item.context).passages == ["a.", "b."]


# -- the explicit number and abstention rules ------------------------------------------------


def _tokens(answer: str, p: float) -> list[TokenScore]:
    return [
        TokenScore(start=m.start(), end=m.end(), text=m.group(), probability=p)
        for m in re.finditer(r"[\w.,]+", answer)
    ]


def _probability(tokens: list[TokenScore], text: str) -> float:
    return next(t.probability for t in tokens if t.text.rstrip(".,") == text)


def test_numbers_are_aligned_with_the_context() -> None:
    context = ["The trail is 4.2 km long and was opened in 1932.", "About 2,400 people walk it."]
    answer = "The 4.2 km trail opened in 1995 and 2400 people walk it. It is 7 miles long."
    out = adjust_tokens(_tokens(answer, 0.5), answer, context, None)
    assert out[1].probability < 0.5  # "4.2" with the context's unit: copied
    assert _probability(out, "1995") >= 0.85  # a year where the context has another year
    assert _probability(out, "2400") < 0.5  # "2,400" by value
    assert out[-3].text == "7" and out[-3].probability >= 0.6  # nothing comparable: raised


def test_a_count_in_words_is_aligned_but_not_raised_when_unseen() -> None:
    context = ["Two engineers founded the firm in 2019. It offers a 3-year warranty."]
    answer = "The two engineers offer a three-year warranty to four clients."
    out = adjust_tokens(_tokens(answer, 0.55), answer, context, None)
    assert _probability(out, "three") < 0.5  # "3-year" in the context
    assert _probability(out, "four") == 0.55  # nothing to compare: left to the model


def test_a_unit_swap_conflicts_and_a_stated_conversion_is_copied() -> None:
    context = ["The trail is 4.2 km long. The project cost 3 million dollars."]
    swapped = "The trail is 4.2 miles long and cost 3 billion dollars."
    out = adjust_tokens(_tokens(swapped, 0.3), swapped, context, None)
    # the unit word is the error, so it is raised with the digits
    for text in ("4.2", "miles", "3", "billion"):
        assert _probability(out, text) >= 0.85, text
    converted = "The trail is about 2.6 miles long and cost 3,000,000 dollars."
    out = adjust_tokens(_tokens(converted, 0.5), converted, context, None)
    assert _probability(out, "2.6") < 0.5 and _probability(out, "miles") < 0.5
    # "3,000,000" is the amount the context's "3 million" states (issue 43: scale words
    # are amounts), so it is copied, not new
    assert _probability(out, "3,000,000") < 0.5
    wrong = "The trail is about 2.6 miles long and cost 4,000,000 dollars."
    out = adjust_tokens(_tokens(wrong, 0.5), wrong, context, None)
    assert _probability(out, "4,000,000") >= 0.6


def test_a_dropped_or_added_negation_is_raised_and_a_copied_one_lowered() -> None:
    context = ["Care: the ceramic bowls are not dishwasher safe; wash them by hand."]
    dropped = "The ceramic bowls are dishwasher safe."
    out = adjust_tokens(_tokens(dropped, 0.3), dropped, context, None)
    assert _probability(out, "dishwasher") >= 0.85 and _probability(out, "safe") >= 0.85
    assert _probability(out, "bowls") == 0.3  # the words that agree are left to the model
    kept = "No, the ceramic bowls are not dishwasher safe."
    out = adjust_tokens(_tokens(kept, 0.6), kept, context, None)
    assert _probability(out, "not") < 0.5 and _probability(out, "No") < 0.5
    added = "The ceramic bowls are never dishwasher safe or oven safe."
    positive = ["The ceramic bowls are dishwasher safe and oven safe."]
    out = adjust_tokens(_tokens(added, 0.3), added, positive, None)
    assert _probability(out, "never") >= 0.85


def test_a_dropped_negation_blames_the_predicate_not_who_it_is_about() -> None:
    context = ["The new budget was not approved by Amara Osei."]
    answer = "Amara Osei approved the new budget."
    out = adjust_tokens(_tokens(answer, 0.3), answer, context, None)
    assert _probability(out, "approved") >= 0.85
    # "by Amara Osei" names the agent; the answer names her truly
    assert _probability(out, "Amara") == 0.3 and _probability(out, "Osei") == 0.3
    # the denied verb is found in the form the answer's subject takes
    context = ["The city museum does not open on national public holidays."]
    answer = "The city museum opens on national public holidays."
    marks = [answer[a:b] for a, b, v in negation_verdicts(answer, context) if v == "conflict"]
    assert "opens" in marks


def test_a_yes_or_no_particle_is_judged_by_the_claim_after_it() -> None:
    answer = "No, the ceramic bowls hold soup."
    tokens = _tokens(answer, 0.2)
    tokens[0] = tokens[0].model_copy(update={"probability": 0.9})
    out = adjust_tokens(tokens, answer, ["The ceramic bowls hold soup."], None)
    assert _probability(out, "No") == 0.2  # as suspicious as what it asserts
    wrong = "Yes, it was built in 1950."
    tokens = [
        t.model_copy(update={"probability": 0.9 if t.text in {"Yes,", "1950."} else 0.1})
        for t in _tokens(wrong, 0.1)
    ]
    out = adjust_tokens(tokens, wrong, ["It was built in 1889."], None)
    assert out[0].probability >= 0.85  # the claim after it is unsupported: it stays
    alone = adjust_tokens(_tokens("No.", 0.9), "No.", ["The bowls hold soup."], None)
    assert alone[0].probability == 0.9  # nothing after it to judge it by


def test_negation_aligns_whole_words_only() -> None:
    answer = "The bowls are not dishwasher safe."
    assert negation_verdicts(answer, ["The bowls are dishwasher safe."]) == [(14, 17, "conflict")]
    # the same letters inside longer words ("bowls_x", "dishwasher_safe") are other words
    assert negation_verdicts(answer, ["The bowls_x are dishwasher_safe."]) == []


def test_negation_is_compared_only_with_sentences_that_say_the_same_thing() -> None:
    # One aligned sentence agrees: no conflict though another one negates.
    context = ["The bowls are dishwasher safe.", "The lids of the bowls are not dishwasher safe."]
    answer = "The bowls are dishwasher safe."
    assert negation_verdicts(answer, context) == []
    # Too few shared words to align: the rule stays out ("not only" is no negation either).
    assert negation_verdicts("Bowls are nice.", ["Bowls are not nice."]) == []
    only = "The bowls are not only dishwasher safe but also oven safe."
    assert negation_verdicts(only, ["The bowls are dishwasher safe and oven safe."]) == []
    just = "The cost covers not just tuition fees but also books and lab fees."
    assert negation_verdicts(just, ["The cost covers tuition fees, books and lab fees."]) == []


def test_a_not_after_a_comma_is_a_contrast_not_a_negation() -> None:
    # ", not X" corrects what precedes it: the claim is not negated (RULE_candidate15.md)
    contrast = "Healthy weight loss is tied to caloric intake and expenditure, not bowel movements."
    rather = ["Your caloric intake and expenditure, rather than your bowel movements, are tied to"
              " healthy weight loss."]  # fmt: skip
    assert negation_verdicts(contrast, rather) == []
    flipped = "Healthy weight loss is not tied to caloric intake and expenditure."
    assert [v for *_, v in negation_verdicts(flipped, rather)] == ["conflict"]


def test_a_context_negation_denies_a_compound_not_the_next_phrase() -> None:
    # "not dishwasher safe" denies both words; "not familiar with the ..." only "familiar"
    context = ["Few people are not familiar with the for-profit college story."]
    answer = "The for-profit college story is told by few people."
    assert negation_verdicts(answer, context) == []
    flipped = "Few people are familiar with the for-profit college story."
    marks = [flipped[a:b] for a, b, v in negation_verdicts(flipped, context) if v == "conflict"]
    assert marks == ["familiar"]


def test_abstentions_are_not_flagged_but_a_named_answer_is() -> None:
    context = ["Northwind Foods was founded in 1998. Its CFO is Mara Lind."]
    refusal = "The provided information does not mention who the CEO is."
    out = adjust_tokens(_tokens(refusal, 0.9), refusal, context, "Who is the CEO?")
    assert max(t.probability for t in out) <= 0.05
    named = "The passages do not say who the CEO is, but it is John Smith."
    out = adjust_tokens(_tokens(named, 0.9), named, context, "Who is the CEO?")
    assert max(t.probability for t in out) == 0.9


def test_a_hedge_on_a_grounded_claim_is_lowered_and_on_an_invented_one_kept() -> None:
    context = ['{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters"}']
    grounded = "The Eiffel Tower is currently 330 meters tall."
    out = adjust_tokens(_tokens(grounded, 0.6), grounded, context, None)
    assert _probability(out, "currently") < 0.5
    assert _probability(out, "tall") == 0.6  # only the hedge is let through
    invented = "The Eiffel Tower is currently owned by a hotel chain."
    out = adjust_tokens(_tokens(invented, 0.6), invented, context, None)
    assert _probability(out, "currently") == 0.6
    assert hedge_verdicts("No hedge here.", context, None) == []


def test_not_listed_is_an_abstention_only_when_it_names_the_sources() -> None:
    context = ["Northwind Foods was founded in 1998 and is listed on a stock exchange."]
    assert abstentions("The CEO is not listed in the provided text.", context, None)
    assert not abstentions("Northwind Foods is not listed on a stock exchange.", context, None)


@needs_weights
def test_the_response_score_reuses_the_token_stages_rule_verdicts(
    bundled: EvidenceDetector, monkeypatch: pytest.MonkeyPatch
) -> None:
    from truthlens_integrations.core.models.detection import _adjust

    answer = "The Lumen Museum opened in 1991. It is not free on Sundays."
    calls: list[str] = []
    original = _adjust.negation_verdicts

    def counted(text: str, context: object) -> object:
        calls.append(text)
        return original(text, context)  # type: ignore[arg-type]

    _adjust._rule_verdicts.cache_clear()
    monkeypatch.setattr(_adjust, "negation_verdicts", counted)
    try:
        assert bundled._response is not None and bundled._response.reads_rules
        memoised = bundled.detect(context=SEVEN, question=None, answer=answer)
        assert calls == [answer]  # the token stage's pass, read again by the response score
        _adjust._rule_verdicts.cache_clear()
        calls.clear()
        # read afresh, the rules give the same result; another context is read afresh
        fresh = bundled.detect(context=SEVEN, question=None, answer=answer)
        assert calls == [answer]
        assert fresh.score == memoised.score and fresh.spans == memoised.spans
        bundled.detect(context=SEVEN[:3], question=None, answer=answer)
        assert calls == [answer, answer]
    finally:
        _adjust._rule_verdicts.cache_clear()
