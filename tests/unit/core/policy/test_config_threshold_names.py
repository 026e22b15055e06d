"""Each ``threshold`` of a policy is named for what it thresholds; the old name still works.

``hallucination.response_threshold`` and a decision's ``response_threshold`` (the response
score at which an answer is flagged), ``hallucination_model.token_threshold`` (a token),
``fact_check_model.confidence_threshold`` and ``nli_model.confidence_threshold`` (the
confidence a model's label needs). The design's ``threshold`` loads for a release, with a
``DeprecationWarning``, and means exactly what the new name means.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests._paths import DATA
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models import Detector
from truthlens_integrations.core.policy import load_policy
from truthlens_integrations.core.policy._config import HallucinationSettings

POLICIES = DATA / "policies"  # the design's own files


def _route(**configuration: object) -> dict[str, Any]:
    condition = {"type": "keyword", "name": "tower", "keywords": ["tower"]}
    plugin = {"type": "hallucination", "configuration": configuration}
    return {"name": "towers", "rules": {"conditions": [condition]}, "plugins": [plugin]}


OLD_AND_NEW = {
    "hallucination": (
        {"hallucination": {"threshold": 0.7}},
        {"hallucination": {"response_threshold": 0.7}},
        "hallucination.response_threshold",
    ),
    "decision": (
        {"decisions": [_route(threshold=0.3)]},
        {"decisions": [_route(response_threshold=0.3)]},
        "decisions[0].plugins[0].configuration.response_threshold",
    ),
    "fact_check_model": (
        {"hallucination_mitigation": {"fact_check_model": {"threshold": 0.8}}},
        {"hallucination_mitigation": {"fact_check_model": {"confidence_threshold": 0.8}}},
        "hallucination_mitigation.fact_check_model.confidence_threshold",
    ),
    "hallucination_model": (
        {"hallucination_mitigation": {"hallucination_model": {"threshold": 0.7}}},
        {"hallucination_mitigation": {"hallucination_model": {"token_threshold": 0.7}}},
        "hallucination_mitigation.hallucination_model.token_threshold",
    ),
    "nli_model": (
        {"hallucination_mitigation": {"nli_model": {"threshold": 0.8}}},
        {"hallucination_mitigation": {"nli_model": {"confidence_threshold": 0.8}}},
        "hallucination_mitigation.nli_model.confidence_threshold",
    ),
}


@pytest.mark.parametrize(("old", "new", "use"), OLD_AND_NEW.values(), ids=OLD_AND_NEW.keys())
def test_an_old_name_warns_and_loads_as_the_new_one(
    old: dict[str, Any], new: dict[str, Any], use: str
) -> None:
    with pytest.warns(DeprecationWarning, match=re.escape(f"use {use}")):
        from_old = load_policy(old)
    assert from_old == load_policy(new)


def test_the_design_files_load_as_the_current_names_say() -> None:
    with pytest.warns(DeprecationWarning, match="hallucination_model.token_threshold"):
        design = load_policy(POLICIES / "halugate_full.yaml")
    models = design.hallucination_mitigation
    assert models.fact_check_model.confidence_threshold == 0.6
    assert models.hallucination_model.token_threshold == 0.8
    assert models.nli_model.confidence_threshold == 0.9
    with pytest.warns(DeprecationWarning, match="decisions"):
        routed = load_policy(
            [POLICIES / "truthlens_global.yaml", POLICIES / "truthlens_decisions.yaml"]
        )
    assert routed.hallucination.response_threshold == 0.6
    assert routed.settings_for(routed.decisions[0].name).threshold == 0.3


def test_a_source_with_new_names_overrides_one_with_old_names() -> None:
    with pytest.warns(DeprecationWarning, match="hallucination.threshold is deprecated"):
        merged = load_policy(
            [POLICIES / "truthlens_global.yaml", {"hallucination": {"response_threshold": 0.2}}]
        )
    assert merged.hallucination.response_threshold == 0.2


def test_both_names_at_once_and_unknown_keys_are_refused() -> None:
    with pytest.raises(ConfigError, match="give response_threshold only"):
        load_policy({"hallucination": {"threshold": 0.4, "response_threshold": 0.5}})
    with pytest.raises(ConfigError, match="give token_threshold only"):
        load_policy(
            {
                "hallucination_mitigation": {
                    "hallucination_model": {"threshold": 0.4, "token_threshold": 0.5}
                }
            }
        )
    with pytest.raises(ConfigError, match="unknown key 'thresholds'"):
        load_policy({"hallucination": {"thresholds": 0.4}})
    with pytest.raises(ConfigError, match="unknown key 'token_threshold'"):
        load_policy({"hallucination": {"token_threshold": 0.4}})  # a name of another block


def test_old_attribute_reads_and_direct_construction_still_work() -> None:
    with pytest.warns(DeprecationWarning, match="hallucination.response_threshold"):
        settings = HallucinationSettings(threshold=0.3)  # type: ignore[call-arg]
    assert settings.response_threshold == 0.3
    with pytest.warns(DeprecationWarning, match="read .response_threshold"):
        assert settings.threshold == 0.3
    models = load_policy(None).hallucination_mitigation
    with pytest.warns(DeprecationWarning, match="read .token_threshold"):
        assert models.hallucination_model.threshold == 0.5
    with pytest.warns(DeprecationWarning, match="read .confidence_threshold"):
        assert models.nli_model.threshold == 0.9


@pytest.mark.parametrize("name", OLD_AND_NEW.keys())
def test_the_guard_decides_the_same_under_either_name(detector: Detector, name: str) -> None:
    old, new, _ = OLD_AND_NEW[name]
    with pytest.warns(DeprecationWarning, match="threshold is deprecated"):
        before = TruthLens.from_config(old, detector=detector)
    after = TruthLens.from_config(new, detector=detector)
    said = [
        engine.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
        for engine in (before, after)
    ]
    first, second = (v.to_dict() for v in said)
    first.pop("latency_ms"), second.pop("latency_ms")
    (
        first["metadata"].pop("x-truthlens-latency-ms"),
        second["metadata"].pop("x-truthlens-latency-ms"),
    )
    assert first == second
