"""Tests of a route's calibration file fitted with a claim checker (``core/policy/_config.py``).

The file holds the cascade's threshold and the checker's fitted weight: the policy must
name the same checker with the same cascade settings, and the route then runs with the
file's weight and bias.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._samples import valid_calibration_file
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.policy import load_policy
from truthlens_integrations.core.policy._settings import ClaimCheckSettings

FITTED = {"checker": "bundled", "when": "always", "weight": 2.5, "bias": -0.75}


def _file(folder: Path, claim_check: Any) -> str:
    content = valid_calibration_file() | {"claim_check": claim_check}
    path = folder / "cascade.json"
    path.write_text(json.dumps(content))
    return str(path)


def _policy(file: str, claim_check: dict[str, Any] | None) -> dict[str, Any]:
    policy: dict[str, Any] = {
        "decisions": [
            {
                "name": "fitted",
                "rules": {"conditions": [{"type": "fact_check", "name": "needs_fact_check"}]},
                "plugins": [{"type": "hallucination", "configuration": {"calibration": file}}],
            }
        ]
    }
    if claim_check is not None:
        policy["hallucination"] = {"claim_check": claim_check}
    return policy


def test_the_route_runs_with_the_files_weight_and_others_with_the_policys(tmp_path: Path) -> None:
    policy = load_policy(_policy(_file(tmp_path, FITTED), {"checker": "bundled", "when": "always"}))
    route = policy.settings_for("fitted").claim_check
    assert route is not None and (route.weight, route.bias) == (2.5, -0.75)
    unrouted = policy.settings_for(None).claim_check
    assert unrouted is not None and (unrouted.weight, unrouted.bias) == (1.0, 0.0)


def test_a_file_fitted_with_a_checker_needs_the_policy_to_name_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="fitted with the claim checker 'bundled' in a cascade"):
        load_policy(_policy(_file(tmp_path, FITTED), None))


@pytest.mark.parametrize(
    ("own", "words"),
    [
        ({"checker": "bundled"}, "when: policy 'uncertain', file 'always'"),
        ({"checker": "http://localhost:8080/v1", "when": "always"}, "checker: policy"),
    ],
)
def test_other_cascade_settings_than_the_fit_are_refused(
    tmp_path: Path, own: dict[str, Any], words: str
) -> None:
    with pytest.raises(ConfigError, match=words):
        load_policy(_policy(_file(tmp_path, FITTED), own))


def test_the_policys_own_weight_does_not_count_as_a_difference(tmp_path: Path) -> None:
    own = {"checker": "bundled", "when": "always", "weight": 0.5}
    route = load_policy(_policy(_file(tmp_path, FITTED), own)).settings_for("fitted").claim_check
    assert route is not None and route.weight == 2.5


@pytest.mark.parametrize(
    ("block", "words"),
    [
        (FITTED | {"weight": 99.0}, r"claim_check\.weight"),
        (FITTED | {"colour": "red"}, r"claim_check\.colour"),
        ("bundled", "claim_check"),
    ],
)
def test_a_broken_claim_check_in_the_file_names_the_file(
    tmp_path: Path, block: Any, words: str
) -> None:
    with pytest.raises(ConfigError, match=words) as caught:
        load_policy(_policy(_file(tmp_path, block), {"checker": "bundled", "when": "always"}))
    assert "cascade.json" in str(caught.value)


@pytest.mark.parametrize(
    ("block", "score", "sent"),
    [
        ({}, 0.5, True),
        ({}, 0.81, False),
        ({"band": [0.1, 0.3]}, 0.2, True),
        ({"when": "flagged"}, 0.6, True),
        ({"when": "flagged"}, 0.59, False),
        ({"when": "always"}, 0.0, True),
    ],
)
def test_which_scores_the_cascade_sends(block: dict[str, Any], score: float, sent: bool) -> None:
    assert ClaimCheckSettings.model_validate(block).sends(score, threshold=0.6) is sent


def test_the_policy_keeps_the_servers_time_limit(tmp_path: Path) -> None:
    fitted = {"checker": "http://localhost:8080/v1", "when": "always", "weight": 2.0, "bias": 0.0}
    own = {"checker": "http://localhost:8080/v1", "when": "always", "timeout_s": 90.0}
    route = load_policy(_policy(_file(tmp_path, fitted), own)).settings_for("fitted").claim_check
    assert route is not None and (route.timeout_s, route.weight) == (90.0, 2.0)
