"""Tests of ``core/engine/_claim_stage.py``: the cascade's claim checker behind the detector.

Detector: the lexical reference (it reads words, so its score is known for these
answers); NLI and prompt classifier: the rule-based stand-ins. The checkers are scripted
objects that implement the claim-checker contract, so each test knows what was judged.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests._fakes import make_engine
from tests._samples import valid_calibration_file
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core._calibration._claim import combined_score
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models import load_detector
from truthlens_integrations.core.models.claims import (
    Claim,
    ClaimJudgement,
    judged,
    not_checked,
)

CONTEXT = [
    "The Eiffel Tower was built from 1887 to 1889 in Paris. It is 330 meters tall. "
    "Gustave Eiffel's company designed and built it."
]
QUESTION = "When was the Eiffel Tower built?"
#: The lexical detector scores this 0.6: inside the default band of 0.2-0.8.
RIGHT = "The Eiffel Tower was finished in 1889 in Paris. It is 330 meters tall."


class Scripted:
    """A claim checker that says what ``judge`` says of each claim, and counts calls."""

    name = "scripted"

    def __init__(self, judge: Callable[[Claim], ClaimJudgement]) -> None:
        self.judge = judge
        self.seen: list[Claim] = []

    def check(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
        self.seen.extend(claims)
        return [self.judge(c) for c in claims]


def says(p: float, label: Any = None) -> Scripted:
    return Scripted(lambda c: judged(c, "scripted", p, label=label))


def engine(checker: object, **claim_check: Any) -> TruthLens:
    policy: dict[str, Any] = {"hallucination": {"claim_check": claim_check}}
    return make_engine(load_detector("lexical"), policy, claim_checker=checker)


def guard(e: TruthLens, answer: str = RIGHT) -> Any:
    return e.guard(context=CONTEXT, question=QUESTION, answer=answer)


def detector_score(answer: str = RIGHT) -> float:
    plain = make_engine(load_detector("lexical"))
    score = guard(plain, answer).score
    assert score is not None
    return float(score)


def test_uncertain_answers_go_to_the_checker_and_others_do_not() -> None:
    score = detector_score()
    inside = says(0.9)
    guard(engine(inside, band=[score - 0.05, score + 0.05]))
    assert [c.text for c in inside.seen] == [
        "The Eiffel Tower was finished in 1889 in Paris.",
        "It is 330 meters tall.",
    ]
    outside = says(0.9)
    verdict = guard(engine(outside, band=[0.0, score - 0.05]))
    assert outside.seen == []
    assert verdict.claim_check is None
    assert verdict.score == pytest.approx(score)


def test_flagged_reads_only_flagged_answers() -> None:
    score = detector_score()
    checker = says(0.9)
    guard(engine(checker, when="flagged"))  # 0.6 reaches the default threshold 0.5
    assert checker.seen
    unflagged = says(0.9)
    e = make_engine(
        load_detector("lexical"),
        {
            "hallucination": {
                "response_threshold": min(1.0, score + 0.1),
                "claim_check": {"when": "flagged"},
            }
        },
        claim_checker=unflagged,
    )
    guard(e)
    assert unflagged.seen == []


def test_the_score_combines_the_detector_and_the_worst_claim() -> None:
    score = detector_score()
    worst, other = 0.3, 0.9
    checker = Scripted(lambda c: judged(c, "s", worst if "330" in c.text else other))
    verdict = guard(engine(checker, when="always", weight=1.5, bias=-0.25))
    z = math.log(score / (1 - score)) + 1.5 * math.log((1 - worst) / worst) - 0.25
    assert verdict.score == pytest.approx(1 / (1 + math.exp(-z)))
    assert verdict.claim_check.detector_score == pytest.approx(score)
    assert verdict.claim_check.score == pytest.approx(verdict.score)


def test_supported_claims_clear_an_uncertain_answer() -> None:
    verdict = guard(engine(says(0.97), when="always"))
    assert verdict.checked
    assert verdict.detected is False
    assert verdict.score is not None
    assert verdict.score < 0.1
    assert all(j.label == "supported" for j in verdict.claim_check.judgements)


def test_a_rejected_claim_is_a_span_with_the_checkers_label() -> None:
    answer = "The Eiffel Tower was built from 1887 to 1889 in Paris. It is not in France at all."
    checker = Scripted(
        lambda c: (
            judged(c, "s", 0.05, label="contradiction")
            if "France" in c.text
            else judged(c, "s", 0.95)
        )
    )
    verdict = guard(engine(checker, when="always"), answer)
    assert verdict.detected is True
    spans = [(s.text, s.nli_label) for s in verdict.spans if "France" in s.text]
    assert spans == [("It is not in France at all.", "contradiction")]
    [span] = [s for s in verdict.spans if "France" in s.text]
    assert answer[span.start : span.end] == span.text


def test_a_claim_not_judged_leaves_an_unflagged_answer_not_checked() -> None:
    checker = Scripted(
        lambda c: not_checked(c, "s", "timeout") if "330" in c.text else judged(c, "s", 0.99)
    )
    verdict = guard(engine(checker, when="always"))
    assert verdict.checked is False
    assert verdict.not_checked_reason == "unverifiable"
    assert verdict.score is None
    assert verdict.detected is None
    assert "claim check" in (verdict.detection.error or "")
    assert verdict.claim_check.not_checked == 1


def test_a_claim_not_judged_cannot_clear_what_a_judged_claim_flags() -> None:
    checker = Scripted(
        lambda c: not_checked(c, "s", "timeout") if "330" in c.text else judged(c, "s", 0.01)
    )
    verdict = guard(engine(checker, when="always"))
    assert verdict.checked is True
    assert verdict.detected is True


@pytest.mark.parametrize(
    "broken",
    [
        lambda claims: [],  # too few judgements
        lambda claims: ["supported" for _ in claims],  # not judgements
        lambda claims: (_ for _ in ()).throw(RuntimeError("boom")),  # raises
    ],
    ids=["too-few", "not-judgements", "raises"],
)
def test_a_broken_checker_judges_nothing(broken: Callable[[list[Claim]], Any]) -> None:
    class Broken:
        name = "broken"

        def check(self, claims: list[Claim]) -> Any:
            return broken(claims)

    verdict = guard(engine(Broken(), when="always"))
    assert verdict.checked is False
    assert all(not j.checked and j.reason for j in verdict.claim_check.judgements)


def test_a_blocked_verdict_withholds_the_claims() -> None:
    e = make_engine(
        load_detector("lexical"),
        {"hallucination": {"hallucination_action": "block", "claim_check": {"when": "always"}}},
        claim_checker=says(0.02, "contradiction"),
    )
    verdict = guard(e, "The Eiffel Tower was finished in 1889. It is 500 meters tall.")
    assert verdict.blocked
    shown = verdict.to_dict()["claim_check"]["judgements"]
    assert {j["claim"]["text"] for j in shown} == {"[redacted]"}
    assert "500 meters" not in str(verdict.to_dict())
    full = verdict.full().claim_check.judgements
    assert [j.claim.text for j in full][1] == "It is 500 meters tall."


def test_claims_point_into_the_callers_answer() -> None:
    hidden = "The Eiffel\u200b Tower was finished in 1889 in Paris. It is 330 meters tall."
    checker = says(0.05)
    verdict = guard(engine(checker, when="always"), hidden)
    for j in verdict.claim_check.judgements:
        assert hidden[j.claim.start : j.claim.end] == j.claim.text
    assert "\u200b" not in checker.seen[0].text  # the checker read the normalised text


def test_the_option_alone_runs_with_the_default_band() -> None:
    checker = says(0.97)
    e = make_engine(load_detector("lexical"), claim_checker=checker)
    verdict = guard(e)
    assert checker.seen  # 0.6 lies in the default band
    assert verdict.claim_check.when == "uncertain"


def test_aguard_reads_the_same() -> None:
    e = engine(says(0.2), when="always")
    sync = guard(e)
    other = asyncio.run(e.aguard(context=CONTEXT, question=QUESTION, answer=RIGHT))
    assert other.score == pytest.approx(sync.score)
    assert [j.supported for j in other.claim_check.judgements] == [
        j.supported for j in sync.claim_check.judgements
    ]


@pytest.mark.parametrize(
    ("block", "words"),
    [
        ({"checker": "bundled", "protocol": "json"}, "protocol"),
        ({"checker": "http://127.0.0.1:8080/v1", "trust_remote_code": True}, "trust_remote_code"),
        ({"checker": "/models/judge.gguf", "model": "judge"}, "a gguf checker"),
        ({"checker": "org/minicheck", "timeout_s": 5.0}, "a sequence checker"),
        ({"band": [0.6, 0.4]}, "low < high"),
        ({"when": "always", "band": [0.1, 0.9]}, "band applies"),
        ({"when": "sometimes"}, "when"),
        ({"weight": True}, "weight"),
    ],
)
def test_the_policy_block_refuses_what_does_not_fit(block: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        TruthLens.from_config({"hallucination": {"claim_check": block}})


def test_a_route_fitted_with_the_checker_scores_with_the_files_weight(tmp_path: Path) -> None:
    file = valid_calibration_file() | {
        "model": "lexical",
        "threshold": 0.5,
        "claim_check": {"checker": "scripted", "when": "always", "weight": 3.0, "bias": -1.0},
    }
    (tmp_path / "cascade.json").write_text(json.dumps(file))
    policy = {
        "hallucination": {"claim_check": {"checker": "scripted", "when": "always"}},
        "decisions": [
            {
                "name": "fitted",
                "rules": {"conditions": [{"type": "fact_check", "name": "needs_fact_check"}]},
                "plugins": [
                    {
                        "type": "hallucination",
                        "configuration": {"calibration": str(tmp_path / "cascade.json")},
                    }
                ],
            }
        ],
    }
    e = make_engine(load_detector("lexical"), policy, claim_checker=says(0.3))
    routed = guard(e)  # a "When ..." question: the fact-check route, the file's map
    assert routed.route == "fitted"
    before = routed.claim_check.detector_score
    assert routed.score == pytest.approx(combined_score(before, 0.3, 3.0, -1.0))
    unrouted = e.guard(context=CONTEXT, question="Tell me about the tower.", answer=RIGHT)
    assert unrouted.route is None
    score = unrouted.claim_check.detector_score
    assert unrouted.score == pytest.approx(combined_score(score, 0.3, 1.0, 0.0))
