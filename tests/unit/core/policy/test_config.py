"""A policy error that lists the allowed keys lists them all."""

from __future__ import annotations

import pytest

from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.policy import load_policy
from truthlens_integrations.core.policy._config import HallucinationSettings


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
