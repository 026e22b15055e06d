"""Tests of ``core/_types.py``: the detection types: unreadable or malformed text is never
scored as if it had been checked.

An answer made only of NULs or zero-width spaces used to come out ``supported`` with
no token scored, and a lone surrogate reached the tokenizer as an untyped ``TypeError``.
The detector here is the real tiny keyword model (it flags "1950", "500", "meters").
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests._fakes import AlwaysFactual
from truthlens_integrations.core import DetectionInput, DetectionStatus, InvalidInputError
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import Detector

CONTEXT = ["the tower was built in 1887 and is 330 meters tall."]


@pytest.mark.parametrize(
    "answer",
    [
        "\x00\x00\x00",  # NULs
        "\u200b\u200b\u200b",  # zero-width spaces
        "\u200b \x00\ufeff\u2060\n",  # a mix of format, control and space characters
        "\ue000\ue001",  # private-use code points: no tokenizer knows them
    ],
)
def test_answer_without_readable_characters_is_a_typed_error(
    detector: Detector, answer: str
) -> None:
    with pytest.raises(InvalidInputError, match="no readable characters"):
        detector.detect(context=CONTEXT, question="when?", answer=answer)


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("answer", {"answer": "\udc80"}),
        ("answer", {"answer": "built in 1950 \udc80"}),
        ("question", {"question": "when\ud800?"}),
        (r"context\[1\]", {"context": ["the tower.", "built \udfff in 1887"]}),
    ],
)
def test_lone_surrogates_are_a_typed_error_naming_the_field(
    detector: Detector, field: str, kwargs: dict[str, object]
) -> None:
    call: dict[str, object] = {"context": CONTEXT, "question": "when?", "answer": "built."}
    call.update(kwargs)
    with pytest.raises(InvalidInputError, match=rf"{field} is not valid Unicode"):
        detector.detect(**call)  # type: ignore[arg-type]


def test_unreadable_context_is_not_grounding(detector: Detector) -> None:
    for context in (["\x00\x00"], ["\u200b", "  \ufeff "], "\u2060\x00"):
        result = detector.detect(context=context, question="when?", answer="built in 1950.")
        assert result.status is DetectionStatus.UNVERIFIABLE
        assert not result.detected and result.coverage.context_windows == 0


def test_unreadable_passages_are_dropped_beside_readable_ones(detector: Detector) -> None:
    item = DetectionInput.create(
        context=["\x00", CONTEXT[0], "\u200b"], question="\u200b", answer="built in 1950."
    )
    assert item.context == (CONTEXT[0],)
    assert item.question is None
    result = detector.detect_batch([item])[0]
    assert result.status is DetectionStatus.HALLUCINATED  # "1950" is flagged: it was checked


def test_readable_text_with_stray_control_characters_is_still_checked(
    detector: Detector,
) -> None:
    answer = "built\x00 in\u200b 1950."
    result = detector.detect(context=CONTEXT, question="when?", answer=answer)
    assert result.status is DetectionStatus.HALLUCINATED
    assert [s.text for s in result.spans] == ["1950"]


def test_direct_construction_applies_the_same_rules() -> None:
    with pytest.raises(ValidationError, match="no readable characters"):
        DetectionInput(context=tuple(CONTEXT), answer="\x00")
    with pytest.raises(ValidationError, match="not valid Unicode"):
        DetectionInput(context=tuple(CONTEXT), answer="\udc80")
    assert DetectionInput(context=("\u200b",), answer="ok").grounded is False


class _NoNLI:
    model_id = "no-nli"

    def explain(self, pairs: list[tuple[str, str]]) -> list[tuple[str, float]]:
        return [("neutral", 0.9) for _ in pairs]


def test_the_guard_refuses_unreadable_answers_and_context(detector: Detector) -> None:
    engine = TruthLens.from_config(
        None,
        detector=detector,
        fact_checker=AlwaysFactual(),
        nli=_NoNLI(),
        align_quantities=False,
    )
    with pytest.raises(InvalidInputError, match="no readable characters"):
        engine.guard(context=CONTEXT, question="when?", answer="\u200b\u200b")
    with pytest.raises(InvalidInputError, match="not valid Unicode"):
        engine.guard(context=CONTEXT, question="when?", answer="\udc80")
    verdict = engine.guard(context=["\x00\x00"], question="when?", answer="built in 1950.")
    assert verdict.detection is None or verdict.detection.status is DetectionStatus.UNVERIFIABLE
    assert verdict.context_missing and not verdict.passed


# -- issue 51: an answer the detector could not check has no score --------------------------


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        ([], "The tower was built in 1950."),  # no grounding
        (CONTEXT, "The tower was built in 1\u202e889\u202c."),  # shown in another order
    ],
)
def test_an_unverifiable_result_has_no_score_anywhere(
    detector: Detector, context: list[str], answer: str
) -> None:
    from truthlens_integrations.core import DetectionResult

    result = detector.detect(context=context, question="When was it built?", answer=answer)
    assert result.status is DetectionStatus.UNVERIFIABLE
    assert result.score is None and not result.detected
    dumped = result.model_dump(mode="json")  # `truthlens detect --json`, the service's reply
    assert dumped["score"] is None
    assert DetectionResult.model_validate(dumped) == result  # the service client reads it back
    for score in (0.0, 0.073):  # a number beside "unverifiable" reads as a check
        with pytest.raises(ValidationError, match="unverifiable result has no score"):
            DetectionResult.model_validate({**dumped, "score": score})
    checked = {**dumped, "status": "supported"}
    with pytest.raises(ValidationError, match="supported result needs a score"):
        DetectionResult.model_validate(checked)
