"""The kinds of cases a new user tried (issue 41), on the real bundled detector.

Negation flips, swapped roles and wrongly restated numbers must be flagged; the correct
restatements beside them must pass. The shipped default still misses five of the twelve;
those are marked ``xfail(strict=True)`` with the score it gives them (the fp32 graph's; the
int8 graph, the default on CPUs with VNNI, is within 0.02 on each), so a detector that
gets one right turns its mark into a failure that asks for the mark to go. The claim
check trained for them (``lab/records/claim_check``) did not pass its selection rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core._calibration._map import calibrated_score
from truthlens_integrations.core._text import AnswerText
from truthlens_integrations.core.models import load_detector
from truthlens_integrations.core.models._bundled import bundled_detector_path
from truthlens_integrations.core.models.detection._claims import claim_logits
from truthlens_integrations.core.models.detection._rules import conflict_marks

pytestmark = pytest.mark.slow

REFUNDS = "Returns are accepted within 30 days of delivery. Shipping fees are not refundable."
X200 = (
    "The X200 laptop weighs 1.3 kg. Its display is 14-inch, non-touch, with a 2560x1600 "
    "resolution. Battery life is rated at 12 hours."
)
PRIZES = (
    "Marie Curie received the Nobel Prize in Physics in 1903, shared with Pierre Curie and "
    "Henri Becquerel. She received the Nobel Prize in Chemistry in 1911 for the discovery of "
    "polonium and radium."
)
LOVELACE = (
    "Ada Lovelace published notes on Charles Babbage's Analytical Engine in 1843. Her notes "
    "include what is regarded as the first published algorithm for a machine."
)
SPEED = "The new compiler gives an average speed-up of 1.25x on the benchmark suite."
EIFFEL = "The Eiffel Tower was built from 1887 to 1889 and is 330 metres tall."

#: (case, context, a wrong answer, a correct restatement), each a claim about the context.
CASES = [
    (
        "refund",
        REFUNDS,
        "Yes, and the shipping fees are refunded too.",
        "Returns are accepted within 30 days, but shipping fees are not refunded.",
    ),
    (
        "touch",
        X200,
        "Yes, the X200 has a 14-inch touchscreen display.",
        "No, the X200's 14-inch display is not a touchscreen.",
    ),
    (
        "prizes",
        PRIZES,
        "Marie Curie won the Nobel Prize in Chemistry in 1903 and the Nobel Prize in Physics "
        "in 1911.",
        "Marie Curie won the Physics prize in 1903 and the Chemistry prize in 1911.",
    ),
    (
        "roles",
        LOVELACE,
        "Charles Babbage published notes on Ada Lovelace's Analytical Engine in 1843.",
        "Ada Lovelace published notes on Babbage's Analytical Engine in 1843.",
    ),
    (
        "ratio",
        SPEED,
        "The new compiler is about 1.6 times as fast on average.",
        "The new compiler is about 1.25 times as fast on average.",
    ),
    (
        "year",
        EIFFEL,
        "The Eiffel Tower was built in 1950.",
        "It was built between 1887 and 1889 and stands 330 metres tall.",
    ),
]
#: What the shipped default still gets wrong, with the score it gives (issue 41 is open).
KNOWN_FAILURES = {
    ("wrong", "refund"): "a negation flip passes (0.28)",
    ("wrong", "touch"): "a negation flip passes (0.33)",
    ("wrong", "prizes"): "swapped years pass (0.15)",
    ("wrong", "roles"): "swapped roles pass (0.07)",
    ("right", "ratio"): "a correct restatement of 1.25x is flagged (0.72)",
}


def _params(kind: str) -> list[object]:
    out = []
    for case, context, wrong, right in CASES:
        why = KNOWN_FAILURES.get((kind, case))
        marks = [pytest.mark.xfail(strict=True, reason=f"issue 41: {why}")] if why else []
        answer = wrong if kind == "wrong" else right
        out.append(pytest.param(context, answer, id=f"{kind}-{case}", marks=marks))
    return out


@pytest.fixture(scope="module")
def detector():  # type: ignore[no-untyped-def]
    return load_detector()


@pytest.mark.parametrize(("context", "answer"), _params("wrong"))
def test_a_wrong_claim_is_flagged(detector, context: str, answer: str) -> None:  # type: ignore[no-untyped-def]
    result = detector.detect(context=[context], question=None, answer=answer)
    assert result.detected, f"{answer!r} passed with {result.score:.2f}"


@pytest.mark.parametrize(("context", "answer"), _params("right"))
def test_a_correct_restatement_passes(detector, context: str, answer: str) -> None:  # type: ignore[no-untyped-def]
    result = detector.detect(context=[context], question=None, answer=answer)
    assert not result.detected, f"{answer!r} flagged with {result.score:.2f}"


def test_a_folder_whose_map_weighs_the_claim_term_reads_each_sentence_with_the_nli_branch(
    tmp_path: Path,
) -> None:
    """The term's plumbing on the real models: the score is the map with the branch's reading."""
    source = bundled_detector_path()
    for file in source.iterdir():
        if file.name != "config.json":
            (tmp_path / file.name).symlink_to(file)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    config["truthlens"]["response_calibration"]["claim"] = 1.0
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")

    shipped = load_detector()
    weighed = load_detector(str(tmp_path), strategy="evidence", aggregation="calibrated")
    assert shipped._claim_check is None  # the shipped map does not weigh the term
    assert weighed._claim_check is not None
    item = DetectionInput(
        context=[REFUNDS], question=None, answer="Yes, and the shipping fees are refunded too."
    )
    result = weighed.detect_batch([item])[0]
    claims = claim_logits(weighed._claim_check, item.answer, item.context)
    assert len(claims) == 1
    text = AnswerText.of(item.answer)
    expected = calibrated_score(
        weighed._response,
        text,
        result.tokens,
        weighed._absent_words(item),
        token_threshold=weighed.config.token_threshold,
        conflicts=conflict_marks(text, item.context),
        claims=claims,
    )
    assert result.score == pytest.approx(expected)
    assert result.score != pytest.approx(shipped.detect_batch([item])[0].score)
