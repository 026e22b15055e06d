"""Tests of ``core/models/detection/_evidence_detector.py``: the evidence detector, and the
bundled detector on real cases.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import BUNDLED, EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION, needs_weights
from truthlens_integrations.core._text import AnswerText
from truthlens_integrations.core._types import (
    DetectionInput,
    DetectionStatus,
)
from truthlens_integrations.core.models.detection import TransformerDetector, load_detector
from truthlens_integrations.core.models.detection._evidence_detector import EvidenceDetector
from truthlens_integrations.core.models.detection._lexical import absent_word_count

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


@needs_weights
def test_the_response_score_reuses_the_token_stages_rule_verdicts(
    bundled: EvidenceDetector, monkeypatch: pytest.MonkeyPatch
) -> None:
    from truthlens_integrations.core.models.detection import _rules as _adjust

    answer = "The Lumen Museum opened in 1991. It is not free on Sundays."
    calls: list[str] = []
    original = _adjust.negation_verdicts

    def counted(text: str | AnswerText, context: object) -> object:
        calls.append(AnswerText.of(text).text)  # the answer, with its sentences split once
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
