"""Tests of ``core/models/detection/_rules.py``: the rule layer's verdicts on numbers,
negations, hedges and abstentions.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import needs_weights
from truthlens_integrations import TruthLens
from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core._types import TokenScore
from truthlens_integrations.core.models.detection._rescore import answer_evidence
from truthlens_integrations.core.models.detection._rules import (
    _number_verdicts,
    abstentions,
    adjust_tokens,
    connectives,
    hedge_verdicts,
    negation_verdicts,
    source_framing,
    uncounted_spans,
)

# -- Decades and centuries are spans of years (issue 27, RULE_candidate37.md and 39). ------


def _verdicts(answer: str, context: list[str]) -> list[tuple[str, str]]:
    return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, context)]


def test_a_decade_of_an_answer_is_judged_by_the_years_it_holds() -> None:
    context = ["The Eiffel Tower was built from 1887 to 1889."]
    assert _verdicts("It was built in the 1950s.", context) == [("1950s", "conflict")]
    assert _verdicts("It was built in the 1880s.", context) == [("1880s", "present")]
    assert _verdicts("It was built in the 1800s.", context) == [("1800s", "present")]


def test_a_year_inside_a_context_decade_says_more_but_does_not_conflict() -> None:
    context = ["The bridge was built in the 1950s."]
    assert _verdicts("It was built in 1955.", context) == [("1955", "unseen")]
    assert _verdicts("It was built in the 1950s.", context) == [("1950s", "present")]
    assert _verdicts("It was built in 1962.", context) == [("1962", "conflict")]
    assert _verdicts("It was built in the 1960s.", context) == [("1960s", "conflict")]


def test_years_without_a_decade_are_compared_as_before() -> None:
    context = ["The Eiffel Tower was built from 1887 to 1889."]
    assert _verdicts("It was built in 1889.", context) == [("1889", "present")]
    assert _verdicts("It was built in 1950.", context) == [("1950", "conflict")]


@needs_weights
def test_a_wrong_decade_is_caught() -> None:
    # before candidate 37 "1950s" was no number, and the answer passed at 0.46
    engine = TruthLens.from_config(action="block")
    context = ["The Eiffel Tower in Paris was built from 1887 to 1889. It is 330 metres tall."]
    wrong = engine.guard(context=context, question=None, answer="It was built in the 1950s.")
    verdict = wrong.full()
    assert verdict.blocked
    assert any("1950s" in s.text for s in verdict.spans), [s.text for s in verdict.spans]
    right = engine.guard(context=context, question=None, answer="It was built in the 1880s.")
    assert not right.full().blocked, right.score


def test_a_century_of_an_answer_is_judged_by_the_years_it_holds() -> None:
    context = ["The Eiffel Tower was built from 1887 to 1889."]
    assert _verdicts("It was built in the 19th century.", context) == [("19th century", "present")]
    assert _verdicts("It was built in the 20th century.", context) == [("20th century", "conflict")]
    # a year inside a context's century says more than the source, it does not conflict
    assert _verdicts("It was built in 1850.", ["It was built in the 19th century."]) == [
        ("1850", "unseen")
    ]


@needs_weights
def test_a_right_century_passes_and_a_wrong_one_is_caught() -> None:
    # before candidate 39 the right "19th century" was blocked (0.59) with the span "19th"
    engine = TruthLens.from_config(action="block")
    context = ["The Eiffel Tower in Paris was built from 1887 to 1889. It is 330 metres tall."]
    right = engine.guard(context=context, question=None, answer="It was built in the 19th century.")
    assert not right.full().blocked, right.score
    wrong = engine.guard(context=context, question=None, answer="It was built in the 20th century.")
    assert wrong.full().blocked, wrong.score


def test_a_context_span_about_something_else_never_hides_a_wrong_year() -> None:
    # RULE_candidate39b.md: the radio masts' century overlapped the wrong "1950", which read
    # "unseen" instead of a conflict with the context's 1887 and 1889
    context = [
        "It was built from 1887 to 1889 as the centrepiece of the 1889 World's Fair.",
        "Radio transmitters were installed at the top of the tower in the early twentieth century.",
    ]
    answer = "The Eiffel Tower was built in 1950."
    assert _verdicts(answer, context) == [("1950", "conflict")]
    decades = ["The tower was built in 1955.", "Its lifts were renewed in the 1980s."]
    assert _verdicts("The tower was built in 1982.", decades) == [("1982", "conflict")]
    # with spans only, an overlap still says more than the source, not something else
    assert _verdicts("The tower was built in 1982.", decades[1:]) == [("1982", "unseen")]


# -- Numbers that cite a source are not quantities (issue 27, candidate 19). ---------------


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


# -- Clock times are one quantity, a time of day (issue 27, candidates 17 and 25). ---------


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


# -- Evidence selection and the evidence detector: order, long contexts, refusals, coverage.


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


# -- A number with its unit glued on is an amount (issue 27, RULE_candidate36.md and 38).


def test_a_glued_amount_is_judged_against_the_context() -> None:
    context = ["The Eiffel Tower is 330 metres tall and cost 7.8 million francs."]

    def verdicts(answer: str) -> list[tuple[str, str]]:
        return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, context)]

    assert verdicts("It is 330m tall.") == [("330m", "present")]
    assert verdicts("It is 500m tall.") == [("500m", "conflict")]
    assert verdicts("It cost \u20ac7.8m.") == [("7.8m", "present")]
    laptop = ["The laptop has a 3.5 GHz processor and 16 GB of RAM."]
    assert [v for *_, v in _number_verdicts("It has 32GB of RAM.", laptop)] == ["conflict"]
    assert [v for *_, v in _number_verdicts("A 3.5GHz processor.", laptop)] == ["present"]


def test_a_glued_unit_word_is_marked_with_its_conflicting_number() -> None:
    # RULE_candidate40.md: "32GB" is one word; marking only "32" halved the conflict
    laptop = ["The laptop has a 3.5 GHz processor and 16 GB of RAM."]

    def marked(answer: str) -> list[tuple[str, str]]:
        return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, laptop)]

    assert marked("It has 32GB of RAM.") == [("32GB", "conflict")]
    assert marked("It has 32 GB of RAM.") == [("32", "conflict")]  # a spaced word: digits
    assert marked("It has 16GB of RAM.") == [("16", "present")]


@needs_weights
def test_a_wrong_height_with_a_glued_unit_is_caught() -> None:
    # before candidate 36 "500m" was no number, and the answer passed at 0.34
    engine = TruthLens.from_config(action="block")
    context = ["The Eiffel Tower in Paris was built from 1887 to 1889. It is 330 metres tall."]
    answer = "The Eiffel Tower is 500m tall."
    wrong = engine.guard(context=context, question=None, answer=answer).full()
    assert wrong.blocked
    assert any("500m" in s.text for s in wrong.spans), [s.text for s in wrong.spans]
    right = engine.guard(context=context, question=None, answer="The Eiffel Tower is 330m tall.")
    assert not right.full().blocked, right.score


@needs_weights
def test_a_wrong_glued_amount_scores_as_its_spaced_twin() -> None:
    # before candidate 40 the wrong "32GB" scored 0.58 where "32 GB" scored 0.89
    engine = TruthLens.from_config(action="block")
    context = ["The laptop has a 3.5 GHz processor and 16 GB of RAM."]
    glued = engine.guard(context=context, question=None, answer="It has 32GB of RAM.")
    spaced = engine.guard(context=context, question=None, answer="It has 32 GB of RAM.")
    assert glued.full().blocked and glued.score >= spaced.score - 0.05, (glued.score, spaced.score)
    right = engine.guard(context=context, question=None, answer="It has a 3.5GHz processor.")
    assert not right.full().blocked, right.score


# -- A half in words or as a fraction is one amount with its unit (issue 27, candidates 20, 21).


def test_the_same_amount_in_digits_and_in_words_agrees() -> None:
    def verdicts(answer: str, context: str) -> list[tuple[str, str]]:
        return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, [context])]

    orbit = "The asteroid circles the sun every five and half years, Mainzer said."
    assert verdicts("It orbits the sun every 5.5 years.", orbit) == [("5.5 years", "present")]
    assert verdicts("It orbits the sun every 6 years.", orbit) == [("6 years", "conflict")]
    mask = "Apply it to your scalp and leave it on for half an hour."
    assert verdicts("Leave it on your scalp for 30 minutes.", mask) == [("30 minutes", "present")]
    assert verdicts("Leave it on your scalp for 45 minutes.", mask) == [("45 minutes", "conflict")]
    # and the other way round: the answer's words against the context's digits
    assert verdicts("It takes an hour and a half.", "The walk takes 90 minutes.") == [
        ("an hour and a half", "present")
    ]


def test_a_half_in_words_agrees_with_the_same_half_as_a_fraction() -> None:
    context = ["Gestation for mule deer is seven months, for white-tailed deer 6 1/2 months."]
    answer = "Whitetails carry for six and a half months, mule deer for seven months."

    verdicts = [(answer[s:e], v) for s, e, v in _number_verdicts(answer, context)]

    assert verdicts == [("six and a half months", "present"), ("seven months", "present")]


# -- The length-aware response calibration: the map, where it applies, and how it is fitted.


def test_rule_conflicts_count_the_rules_verdicts_and_never_fall_with_padding() -> None:
    from truthlens_integrations.core.models.detection._rules import rule_conflicts

    context = [
        "The Eiffel Tower was built from 1887 to 1889. It is 330 meters tall.",
        "The museum is not open on Sundays.",
        "The shop sells maps and postcards.",
    ]
    wrong = "The Eiffel Tower was built in 1950 and is 500 meters tall."
    assert rule_conflicts(wrong, context) == (2, 0)
    assert rule_conflicts("The museum is open on Sundays.", context) == (0, 1)
    assert rule_conflicts("The museum is not open on Sundays.", context) == (0, 0)
    right = "It was built from 1887 to 1889. The shop sells maps and postcards."
    assert rule_conflicts(right, context) == (0, 0)
    padded = " ".join([wrong, "The museum is open on Sundays.", *[right] * 5])
    assert rule_conflicts(padded, context) == (2, 1)


def test_conflict_marks_place_the_rules_verdicts_in_the_answer() -> None:
    from truthlens_integrations.core.models.detection._rules import (
        conflict_marks,
        count_conflicts,
        rule_conflicts,
    )

    context = ["The tower is 330 meters tall.", "The museum is not open on Sundays."]
    answer = "The tower is 500 meters tall. The museum is open on Sundays. It is lovely."
    numbers, negations = conflict_marks(answer, context)
    assert [answer[n : n + 3] for n in numbers] == ["500"]
    assert negations and all(answer.index("museum") <= m < answer.index("It is") for m in negations)
    assert (
        count_conflicts(answer, (numbers, negations)) == rule_conflicts(answer, context) == (1, 1)
    )


# -- Words about the sources and discourse connectives are not absent words. ---------------


@pytest.mark.parametrize(
    ("text", "framing"),
    [
        (
            "Based on the provided passages, Oracle has two CEOs.",
            ["Based on the provided passages"],
        ),
        (
            "Here is a concise summary of the passage: the city closed schools.",
            ["Here is a concise summary of the passage"],
        ),
        ("The passage discusses the closure of the college.", ["The passage discusses"]),
        ("According to the context, it opened in 1990.", ["According to the context"]),
        ("Craters form by impacts (as noted in one passage).", ["as noted in one passage"]),
        (
            "Here's my answer based on the given passages: no.",
            ["Here's my answer", "based on the given passages"],
        ),
        ("The documents say that the bridge is closed.", ["The documents say that"]),
        # candidate 34: headers, "this / these", articles and data
        (
            "**Summary:**  This passage describes the city's growth.",
            ["**Summary:**  ", "This passage describes"],
        ),
        ("Answer: the bridge is closed.", ["Answer: "]),
        ("Intro.\n## Key points:\n- It rained.", ["## Key points:"]),
        ("Based on the data provided, the cafe opens at 7.", ["Based on the data provided"]),
        ("The article discusses the war.", ["The article discusses"]),
        ("These passages focus on tax law.", ["These passages focus on"]),
        ("According to the news article, it rained.", ["According to the news article"]),
    ],
)
def test_source_framing_is_found(text: str, framing: list[str]) -> None:
    assert [text[a:b] for a, b in source_framing(text)] == framing


@pytest.mark.parametrize(
    "text",
    [
        "The report states that sales rose.",  # a report in the world, not the sources
        "Based on his record, he won twice.",
        "The summary of the case was filed in 2019.",
        "Passages of the novel describe the war.",
        "The data shows that revenue rose.",  # a finding, not where the answer comes from
        "Summary statistics: the mean is 5.",
        "This story is about a dog.",
    ],
)
def test_claims_are_not_read_as_framing(text: str) -> None:
    assert source_framing(text) == []


def test_the_framing_is_not_counted_and_the_claim_after_it_is() -> None:
    context = ["Oracle is led by Safra Catz and Clay Magouyrk."]
    framed = DetectionInput(
        answer="Based on the provided passages, Oracle is led by Larry Ellison.",
        context=context,
    )
    plain = DetectionInput(answer="Oracle is led by Larry Ellison.", context=context)
    absent_framed, _ = answer_evidence(framed)
    absent_plain, _ = answer_evidence(plain)
    assert [key for _, key in absent_framed] == [key for _, key in absent_plain]
    assert {key for _, key in absent_plain} >= {"larry", "ellison"}


def test_connectives_are_found_and_left_out_of_the_count() -> None:
    context = ["The museum opens at nine. Entry is free."]
    answer = "However, the museum opens at nine. In summary, entry is free for example."
    assert [answer[a:b] for a, b in connectives(answer)] == ["However", "In summary", "for example"]
    absent, _ = answer_evidence(DetectionInput(answer=answer, context=context))
    assert absent == []
    wrong = "Overall, the museum opens at ten and charges a fee."
    absent, _ = answer_evidence(DetectionInput(answer=wrong, context=context))
    assert {key for _, key in absent} >= {"charge", "fee"}
    assert "overall" not in {key for _, key in absent}
