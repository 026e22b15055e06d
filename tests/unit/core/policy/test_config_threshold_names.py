"""Each ``threshold`` of a policy is named for what it thresholds; a bare ``threshold`` is refused.

``hallucination.response_threshold`` and a decision's ``response_threshold`` (the response
score at which an answer is flagged), ``hallucination_model.token_threshold`` (a token),
``fact_check_model.confidence_threshold`` and ``nli_model.confidence_threshold`` (the
confidence a model's label needs). The design documents write ``threshold`` everywhere; the
reader refuses it with an error that names the key to write, and the cookbook's copies of the
design's files are those files with each threshold named.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests._paths import DATA, POLICIES
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.policy import load_policy
from truthlens_integrations.core.policy._settings import HallucinationSettings

DESIGN = DATA / "policies"  # the design's own files, as the design documents give them


def _route(**configuration: object) -> dict[str, Any]:
    condition = {"type": "keyword", "name": "tower", "keywords": ["tower"]}
    plugin = {"type": "hallucination", "configuration": configuration}
    return {"name": "towers", "rules": {"conditions": [condition]}, "plugins": [plugin]}


BARE = {
    "hallucination": ({"hallucination": {"threshold": 0.7}}, "response_threshold"),
    "decision": ({"decisions": [_route(threshold=0.3)]}, "response_threshold"),
    "fact_check_model": (
        {"hallucination_mitigation": {"fact_check_model": {"threshold": 0.8}}},
        "confidence_threshold",
    ),
    "hallucination_model": (
        {"hallucination_mitigation": {"hallucination_model": {"threshold": 0.7}}},
        "token_threshold",
    ),
    "nli_model": (
        {"hallucination_mitigation": {"nli_model": {"threshold": 0.8}}},
        "confidence_threshold",
    ),
}


@pytest.mark.parametrize(("policy", "name"), BARE.values(), ids=BARE.keys())
def test_a_bare_threshold_is_refused_with_the_key_to_write(
    policy: dict[str, Any], name: str
) -> None:
    with pytest.raises(ConfigError, match=f"'threshold' is not a policy key; write {name}"):
        load_policy(policy)


def test_direct_construction_refuses_it_too() -> None:
    with pytest.raises(ValueError, match="write response_threshold"):
        HallucinationSettings(threshold=0.3)  # type: ignore[call-arg]


def _named(text: str) -> str:
    """The design's YAML with each ``threshold`` key named as its block reads it."""
    names = {
        "fact_check_model": "confidence_threshold",
        "hallucination_model": "token_threshold",
        "nli_model": "confidence_threshold",
    }
    out, block = [], "response_threshold"
    for line in text.splitlines(keepends=True):
        key = line.strip().split(":", 1)[0]
        if key in names:
            block = names[key]
        elif re.match(r"^\S", line):  # a top-level block: thresholds there are the response's
            block = "response_threshold"
        out.append(re.sub(r"^(\s*)threshold:", rf"\1{block}:", line))
    return "".join(out)


@pytest.mark.parametrize("path", sorted(DESIGN.glob("*.yaml")), ids=lambda p: p.name)
def test_the_cookbook_copies_are_the_design_files_with_named_thresholds(path: Path) -> None:
    design = path.read_text(encoding="utf-8")
    copy = (POLICIES / path.name).read_text(encoding="utf-8")
    assert copy == _named(design)
    assert load_policy(POLICIES / path.name) == load_policy(yaml.safe_load(copy))


def test_the_design_files_themselves_are_refused_where_they_say_threshold() -> None:
    with pytest.raises(ConfigError, match="write token_threshold") as raised:
        load_policy(DESIGN / "halugate_full.yaml")
    assert "halugate_full.yaml" in str(raised.value)


def test_unknown_keys_near_a_threshold_name_are_refused() -> None:
    with pytest.raises(ConfigError, match="unknown key 'thresholds'"):
        load_policy({"hallucination": {"thresholds": 0.4}})
    with pytest.raises(ConfigError, match="unknown key 'token_threshold'"):
        load_policy({"hallucination": {"token_threshold": 0.4}})  # a name of another block


# -- a response threshold declared by what a mistake costs (the design's proposition 1) ----


@pytest.mark.parametrize(
    ("cost", "threshold"),
    [
        ({"ratio": 1}, 0.5),
        ({"ratio": 9}, 0.1),
        ({"ratio": 0.25}, 0.8),
        ({"ratio": 10, "prior": 0.2}, 1 / 41),
    ],
)
def test_a_cost_declares_the_response_threshold(cost: dict[str, float], threshold: float) -> None:
    policy = load_policy({"hallucination": {"cost": cost}, "decisions": [_route(cost=cost)]})
    assert policy.hallucination.response_threshold == pytest.approx(threshold)
    assert policy.settings_for("towers").threshold == pytest.approx(threshold)


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ({"cost": {"ratio": 2}, "response_threshold": 0.3}, "give response_threshold or cost"),
        ({"cost": {"ratio": 0}}, "cost.ratio"),
        ({"cost": {"ratio": -1}}, "cost.ratio"),
        ({"cost": {"ratio": 2, "prior": 1.0}}, "cost.prior"),
        ({"cost": {"ratio": 2, "prior": 0}}, "cost.prior"),
        ({"cost": {"ratio": True}}, "cost.ratio"),
        ({"cost": {"ratio": float("nan")}}, "cost.ratio"),
        ({"cost": {"ration": 2}}, "cost.ration"),
        ({"cost": 3}, "cost"),
    ],
)
def test_a_cost_that_declares_nothing_sensible_is_refused(block: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(said)):
        load_policy({"hallucination": block})
    with pytest.raises(ConfigError, match=re.escape(said)):
        load_policy({"decisions": [_route(**block)]})


def test_the_threshold_knob_still_wins_over_a_declared_cost() -> None:
    from truthlens_integrations.core.engine import PolicyKnobs

    policy = load_policy({"hallucination": {"cost": {"ratio": 9}}})
    assert PolicyKnobs(threshold=0.7).apply(policy).hallucination.response_threshold == 0.7
