"""Tests of ``core/policy/_config.py``: the policy's configuration models: messages and the
unverified action.
"""

from __future__ import annotations

import pytest

from tests.conftest import EIFFEL_CONTEXT, EIFFEL_QUESTION, needs_weights
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.policy import load_policy
from truthlens_integrations.core.policy._settings import HallucinationSettings

# -- A policy error that lists the allowed keys lists them all. ----------------------------


def _allowed(message: str) -> list[str]:
    return message.split("; allowed: ", 1)[1].split(", ")


def test_an_unknown_key_lists_every_allowed_key_uncut() -> None:
    # The list used to be cut at 300 characters: "..., unverified_factual_action, use..."
    expected = sorted(f.alias or n for n, f in HallucinationSettings.model_fields.items())
    with pytest.raises(ConfigError) as caught:
        load_policy({"hallucination": {"calibraton": "calib.json"}})
    assert _allowed(str(caught.value)) == expected


def test_what_the_user_wrote_is_still_cut_but_not_the_allowed_keys() -> None:
    with pytest.raises(ConfigError) as caught:
        load_policy({"hallucination": {"x" * 5000: 1}})
    message = str(caught.value)
    assert len(message) < 1000
    assert "x" * 400 not in message
    assert _allowed(message)[-1] == "warning_template"


# -- Issue 29, core side: text that evades the checks, model folders, options, policy, mitigation.


RUNES = " ".join(["ᚠᚢᚦᚨᚱᚲ ᚷᚹᚺᚾᛁᛃ ᛇᛈᛉᛊᛏᛒ ᛖᛗᛚᛜᛞᛟ"] * 8)


@needs_weights
def test_an_unverifiable_answer_is_blocked_where_wrong_ones_are(blocking: TruthLens) -> None:
    verdict = blocking.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=RUNES).full()
    assert verdict.not_checked_reason == "unverifiable" and verdict.unverified
    assert verdict.blocked and verdict.output is None
    # Said explicitly, the policy's unverified action holds.
    shown = blocking.derive(
        policy=load_policy(
            {
                "hallucination": {
                    "hallucination_action": "block",
                    "unverified_factual_action": "header",
                }
            }
        )
    ).guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=RUNES)
    assert not shown.blocked and shown.unverified and shown.output == RUNES


def test_the_unverified_action_follows_a_block_action_unless_set() -> None:
    def resolved(config: dict[str, object]) -> str:
        return load_policy(config).settings_for(None).unverified_factual_action

    assert resolved({}) == "header"
    assert resolved({"hallucination": {"hallucination_action": "block"}}) == "block"
    assert resolved({"hallucination": {"hallucination_action": "body"}}) == "header"
    explicit = {"hallucination_action": "block", "unverified_factual_action": "body"}
    assert resolved({"hallucination": explicit}) == "body"
    routed = {
        "decisions": [
            {
                "name": "strict",
                "rules": {"conditions": [{"type": "keyword", "name": "x", "keywords": ["x"]}]},
                "plugins": [
                    {"type": "hallucination", "configuration": {"hallucination_action": "block"}}
                ],
            }
        ]
    }
    assert load_policy(routed).settings_for("strict").unverified_factual_action == "block"
