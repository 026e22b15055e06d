"""One owner per decision: ``core/_decision.py`` decides flagged, unverified, action, blocked.

The policy resolves a route's threshold and unverified action with its rules, the engine
decides each answer with :func:`decide_answer` (one frozen record), and no other product
module picks an action.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from tests._paths import REPO as ROOT
from tests._samples import valid_calibration_file
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import (
    Coverage,
    DetectionResult,
    DetectionStatus,
    HallucinationSpan,
)
from truthlens_integrations.core._decision import (
    AnswerDecision,
    decide_answer,
    detected_at,
    flagged,
    route_threshold,
    unverified_action,
)
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models import Detector
from truthlens_integrations.core.policy import load_policy

SPAN = HallucinationSpan(start=0, end=4, text="1950", confidence=0.9)


def _result(
    score: float, *, threshold: float = 0.5, spans: list[HallucinationSpan] | None = None
) -> DetectionResult:
    return DetectionResult(
        answer="1950 is wrong.",
        spans=[SPAN] if spans is None else spans,
        score=score,
        threshold=threshold,
        detected=score >= threshold,
        status=DetectionStatus.HALLUCINATED if score >= threshold else DetectionStatus.SUPPORTED,
        coverage=Coverage(answer_chars=14, answer_chars_scored=14, max_length=512),
        model_id="test",
        latency_ms=0.0,
    )


def _settings(**plugin: object) -> object:
    policy = load_policy(
        {
            "decisions": [
                {
                    "name": "r",
                    "rules": {"conditions": [{"type": "keyword", "name": "r", "keywords": ["x"]}]},
                    "plugins": [{"type": "hallucination", "configuration": plugin}],
                }
            ]
        }
    )
    return policy.settings_for("r")


def test_the_record_is_one_frozen_answer() -> None:
    decided = decide_answer(
        _settings(hallucination_action="block"),
        _result(0.9),
        kept=[SPAN],
        grounded=True,
        factual=True,
    )
    assert decided == AnswerDecision(
        flagged=True,
        original_flagged=True,
        unverified=False,
        action="block",
        blocked=True,
        threshold=0.5,
        not_checked=None,
        why="score 0.900 reaches the threshold 0.5",
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        decided.blocked = False  # type: ignore[misc]


@pytest.mark.parametrize(
    ("score", "kept", "spans", "expected"),
    [
        (0.49, [SPAN], [SPAN], False),  # below the threshold
        (0.5, [SPAN], [SPAN], True),  # at it: flagged
        (0.9, [], [SPAN], False),  # NLI found every span entailed: cleared
        (0.9, [], [], True),  # a high score without any span flags the whole answer
    ],
)
def test_flagged(
    score: float, kept: list[HallucinationSpan], spans: list[HallucinationSpan], expected: bool
) -> None:
    assert flagged(_result(score, spans=spans), kept, 0.5) is expected


def test_the_detectors_own_detected_is_used_where_it_decided_at_the_threshold() -> None:
    # A route's calibration re-scores and decides at the route's threshold: that call
    # stands. A detector that decided at another threshold has its score read at this one.
    said = _result(0.6, threshold=0.5).model_copy(update={"detected": False})
    assert detected_at(said, 0.5) is False
    assert detected_at(_result(0.6, threshold=0.5), 0.7) is False
    assert detected_at(_result(0.6, threshold=0.5), 0.55) is True


def test_unverified_answers_get_the_unverified_action() -> None:
    blocking = _settings(hallucination_action="block")
    ungrounded = decide_answer(blocking, None, grounded=False, factual=True)
    assert (ungrounded.unverified, ungrounded.action, ungrounded.blocked) == (True, "block", True)
    assert ungrounded.not_checked == "no_grounding" and not ungrounded.checked
    # a prompt that is not factual without grounding is not unverified: it passes
    creative = decide_answer(blocking, None, grounded=False, factual=False)
    assert (creative.unverified, creative.action, creative.blocked) == (False, None, False)
    disabled = decide_answer(_settings(enabled=False), None, grounded=True, factual=True)
    assert disabled.not_checked == "disabled" and disabled.action is None


def test_a_partly_read_answer_cleared_by_nli_is_unverified() -> None:
    decided = decide_answer(
        _settings(), _result(0.9), kept=[], grounded=True, factual=True, partly_read=True
    )
    assert decided.not_checked == "unverifiable" and decided.unverified
    assert decided.action == "header" and not decided.flagged


def test_the_mitigated_answer_decides_the_action() -> None:
    fixed = decide_answer(
        _settings(), _result(0.9), kept=[SPAN], grounded=True, factual=True, final_flagged=False
    )
    assert fixed.original_flagged and not fixed.flagged and fixed.action is None
    assert fixed.why.endswith("the mitigated answer is clear")


def test_the_route_rules() -> None:
    assert route_threshold(0.7, 0.3, 0.5) == 0.7  # the route's own threshold first
    assert route_threshold(None, 0.3, 0.5) == 0.3  # then its calibration file's
    assert route_threshold(None, None, 0.5) == 0.5  # then the global one
    assert unverified_action(None, None, "block") == "block"  # never shown where a wrong one is not
    assert unverified_action(None, None, "body") == "header"
    assert unverified_action("none", "block", "block") == "none"  # set on the route: it holds
    assert unverified_action(None, "body", "block") == "body"  # set globally


def test_the_policy_resolves_by_the_same_rules(tmp_path: Path) -> None:
    s = _settings(hallucination_action="block")
    assert s.unverified_factual_action == "block"  # type: ignore[attr-defined]
    file = tmp_path / "calib.json"
    file.write_text(json.dumps(valid_calibration_file()))
    rag = _settings(calibration=str(file))
    assert rag.threshold == rag.calibration.threshold  # type: ignore[attr-defined]


def test_the_engine_decides_by_the_record(detector: Detector) -> None:
    engine = TruthLens.from_config(
        {"hallucination": {"hallucination_action": "block"}}, detector=detector
    )
    verdict = engine.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert verdict.detected and verdict.blocked and verdict.action == "block"
    unchecked = engine.guard(context=None, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert unchecked.unverified and unchecked.blocked


def _compares_with_block(path: Path) -> bool:
    """Whether the module compares anything with ``"block"``: a decision to block."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Constant) and s.value == "block" for s in sides):
                return True
    return False


def test_one_file_decides_block() -> None:
    deciding = [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "core").rglob("*.py"))
        if _compares_with_block(path)
    ]
    assert deciding == ["core/_decision.py"]
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    assert "`core/_decision.py`" in text  # the file a maintainer is told decides block


def test_the_duplicates_are_gone() -> None:
    from truthlens_integrations.core.engine import _conclude, _stages
    from truthlens_integrations.core.policy import _config

    assert not hasattr(_stages, "is_flagged")
    assert not hasattr(_stages, "_route_rescore")
    assert not hasattr(_conclude, "_action")
    assert not hasattr(_conclude, "not_checked")
    assert not hasattr(_config, "_unverified_action")
