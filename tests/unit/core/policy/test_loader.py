"""Tests of ``core/policy/_loader.py``: loading policy files: sources, merges, hostile or
broken files.

Before: a 380-byte YAML alias bomb took 48 s and 5.5 GB (the error message rendered
the expanded value), a duplicate key silently won, a 50 MB file was parsed for
minutes, ``threshold: true`` became 1.0 and an empty file gave the defaults.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests._paths import DECISIONS, GLOBAL, HALUGATE_DECISION, HALUGATE_FULL
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.policy import Policy, load_policy
from truthlens_integrations.core.policy._fields import DEFAULT_WARNING_TEMPLATE
from truthlens_integrations.core.policy._loader import MAX_POLICY_BYTES

# -- Hostile or broken policy files are refused with a readable ConfigError (issue 13, item 4).


def billion_laughs(levels: int = 9, width: int = 9, *, under: str = "threshold") -> str:
    """The classic alias bomb: ``width ** levels`` strings from a few hundred bytes."""
    items = ",".join(['"lol"'] * width)
    lines = [f"l0: &l0 [{items}]"]
    for level in range(1, levels):
        refs = ",".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} [{refs}]")
    lines.append(f"hallucination:\n  {under}: *l{levels - 1}")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    bomb = billion_laughs()
    assert len(bomb.encode()) < 500  # a few hundred bytes, 9**9 strings expanded
    file = tmp_path / "bomb.yaml"
    file.write_text(bomb, encoding="utf-8")
    with pytest.raises(ConfigError, match="once aliases are resolved") as info:
        load_policy(file)
    assert str(file) in str(info.value) and "line" in str(info.value)
    assert len(str(info.value)) < 400  # the expanded value is never rendered


def test_too_many_aliases_are_refused() -> None:
    # 150 aliases of a one-item list: small when expanded, but past the alias cap.
    text = "a: &a [1]\nb: [" + ",".join(["*a"] * 150) + "]\n"
    with pytest.raises(ConfigError, match="more than 100 aliases"):
        load_policy(text)


def test_recursive_alias_and_deep_nesting_are_refused() -> None:
    with pytest.raises(ConfigError, match="recursive alias"):
        load_policy("a: &a [1, *a]\n")
    with pytest.raises(ConfigError, match="nested more than"):
        load_policy("a: " + "[" * 500 + "]" * 500 + "\n")


def test_a_few_aliases_and_merge_keys_still_work() -> None:
    text = """
decisions:
  - name: a
    rules: {conditions: [{type: keyword, name: x, keywords: [foo]}]}
    plugins:
      - &plugin
        type: hallucination
        configuration: &strict {hallucination_action: block, response_threshold: 0.3}
  - name: b
    rules: {conditions: [{type: keyword, name: y, keywords: [bar]}]}
    plugins: [*plugin]
  - name: c
    rules: {conditions: [{type: keyword, name: z, keywords: [baz]}]}
    plugins:
      - type: hallucination
        configuration:
          <<: *strict
          hallucination_action: none
"""
    policy = load_policy(text)
    assert policy.settings_for("b").hallucination_action == "block"
    assert policy.settings_for("b").threshold == 0.3
    # A merged key may be overridden: that is not a duplicate.
    assert policy.settings_for("c").hallucination_action == "none"
    assert policy.settings_for("c").threshold == 0.3


def test_duplicate_key_names_the_key_and_both_lines() -> None:
    text = "hallucination:\n  hallucination_action: block\n  hallucination_action: none\n"
    with pytest.raises(ConfigError) as info:
        load_policy(text)
    message = str(info.value)
    assert "duplicate key 'hallucination_action'" in message
    assert "line 3" in message and "first at line 2" in message


def test_duplicate_section_is_refused_too() -> None:
    with pytest.raises(ConfigError, match="duplicate key 'hallucination'"):
        load_policy(
            "hallucination: {response_threshold: 0.2}\nhallucination: {response_threshold: 0.9}\n"
        )


def test_oversized_file_is_refused_without_parsing(tmp_path: Path) -> None:
    file = tmp_path / "big.yaml"
    with file.open("w", encoding="utf-8") as handle:
        handle.write("hallucination:\n  warning_template: '")
        handle.write("x" * (MAX_POLICY_BYTES + 10))
        handle.write("'\n")
    with pytest.raises(ConfigError, match="too large"):
        load_policy(file)
    with pytest.raises(ConfigError, match="too large"):
        load_policy("k: '" + "x" * (MAX_POLICY_BYTES + 10) + "'\n")


def test_long_values_are_shortened_in_messages() -> None:
    text = "hallucination:\n  default_mode: '" + "z" * 50_000 + "'\n"
    with pytest.raises(ConfigError, match="default_mode") as info:
        load_policy(text)
    assert len(str(info.value)) < 400


@pytest.mark.parametrize(
    ("yaml_text", "where", "expected"),
    [
        (
            "hallucination:\n  response_threshold: true\n",
            "hallucination.response_threshold",
            "a number",
        ),
        (
            "hallucination:\n  response_threshold: '0.3'\n",
            "hallucination.response_threshold",
            "a number",
        ),
        ("hallucination:\n  standard:\n    max_iterations: '3'\n", "max_iterations", "integer"),
        ("hallucination:\n  standard:\n    max_iterations: true\n", "max_iterations", "integer"),
        ("hallucination:\n  enabled: 'no'\n", "hallucination.enabled", "true or false"),
        ("hallucination:\n  use_nli: 1\n", "hallucination.use_nli", "true or false"),
        (
            "hallucination_mitigation:\n  nli_model:\n    confidence_threshold: yes\n",
            "nli_model.confidence_threshold",
            "a number",
        ),
    ],
)
def test_no_silent_coercion_of_numbers_and_switches(
    yaml_text: str, where: str, expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected) as info:
        load_policy(yaml_text)
    assert where in str(info.value)


def test_strict_types_hold_for_dicts_too() -> None:
    with pytest.raises(ConfigError, match="a number"):
        load_policy({"hallucination": {"response_threshold": "0.3"}})
    with pytest.raises(ConfigError, match="true or false"):
        load_policy({"decisions": [], "hallucination": {"enabled": "false"}})
    # Integers are still numbers.
    assert (
        load_policy({"hallucination": {"response_threshold": 1}}).hallucination.response_threshold
        == 1.0
    )


@pytest.mark.parametrize("content", ["", "\n\n", "# nothing but a comment\n", "---\n"])
def test_empty_file_is_an_error_not_the_defaults(tmp_path: Path, content: str) -> None:
    file = tmp_path / "empty.yaml"
    file.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match="policy is empty") as info:
        load_policy(file)
    assert str(file) in str(info.value)
    with pytest.raises(ConfigError, match="policy is empty"):
        load_policy(content or "  ")


def test_explicit_empty_mapping_and_none_are_the_defaults() -> None:
    assert load_policy("{}") == Policy() == load_policy(None)


def test_very_long_string_is_yaml_text_not_a_path() -> None:
    # Path.is_file() raises OSError on names longer than the file system allows; the
    # text must be read as YAML and refused as such.
    with pytest.raises(ConfigError, match="<yaml>: invalid YAML"):
        load_policy("k" * 10_000 + ": 1")


# -- Issue 29, core side: text that evades the checks, model folders, options, policy, mitigation.


# -- policy files -------------------------------------------------------------------------------

COERCED = {
    "timeout_s: true": ("timeout_s: true", "service.timeout_s: must be a number, got bool"),
    "retries: true": ("retries: true", "service.retries: must be an integer, got bool"),
    "max_inputs: '10'": ("max_inputs: '10'", "service.max_inputs: must be an integer, got str"),
    "replicas: 2.0": ("replicas: 2.0", "service.replicas: must be an integer, got float"),
    "port: 8000.0": ("port: 8000.0", "service.port: must be an integer"),
    "num_cpus: '1'": ("num_cpus: '1'", "service.num_cpus: must be a number"),
    "unknown autoscaling key": (
        "autoscaling: {min_replicas: 1, max_replica: 4}",
        "unknown key 'max_replica'; did you mean 'max_replicas'?",
    ),
    "autoscaling value as text": (
        "autoscaling: {max_replicas: '4'}",
        "service.autoscaling.max_replicas: must be an integer",
    ),
    "autoscaling bounds": (
        "autoscaling: {min_replicas: 5, max_replicas: 2}",
        "min_replicas (5) is above max_replicas (2)",
    ),
}


@pytest.mark.parametrize(("line", "message"), COERCED.values(), ids=COERCED.keys())
def test_the_service_block_is_as_strict_as_the_rest_of_the_policy(line: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_policy(f"service:\n  {line}\n")


def test_autoscaling_passes_only_the_keys_that_were_set() -> None:
    policy = load_policy(
        "service:\n  autoscaling: {min_replicas: 1, max_replicas: 4, target_ongoing_requests: 2}\n"
    )
    assert policy.service.autoscaling is not None
    assert policy.service.autoscaling.as_ray_config() == {
        "min_replicas": 1,
        "max_replicas": 4,
        "target_ongoing_requests": 2.0,
    }


def test_a_huge_integer_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="more than 4,300 digits"):
        load_policy("service:\n  port: " + "9" * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"service\.port: .*an integer of about 5,001 digits"):
        load_policy({"service": {"port": 10**5000}})


def test_a_nan_is_reported_as_not_a_number() -> None:
    for text in ("hallucination:\n  time_budget_s: .nan\n", "service:\n  timeout_s: .inf\n"):
        with pytest.raises(ConfigError, match="must be a finite number"):
            load_policy(text)


def test_a_large_policy_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    rules = "".join(f"  - name: r{i}\n    keywords: [a{i}, b{i}]\n" for i in range(3000))
    text = "keyword_rules:\n" + rules  # about 100 KiB of valid YAML
    assert 65_536 < len(text) < 1 << 20
    with pytest.raises(ConfigError, match="too large"):
        load_policy(text)
    path = tmp_path / "big.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="too large"):
        load_policy(path)


def test_a_folder_as_policy_path_says_so(tmp_path: Path) -> None:
    for source in (tmp_path, str(tmp_path)):
        with pytest.raises(ConfigError, match="is a folder, not a policy file"):
            load_policy(source)


ALL_FILES = [GLOBAL, DECISIONS, HALUGATE_DECISION, HALUGATE_FULL]


def _decision(**plugin: object) -> dict[str, object]:
    return {
        "name": "d",
        "rules": {"conditions": [{"type": "domain", "name": "general"}]},
        "plugins": [{"type": "hallucination", "configuration": plugin}],
    }


BAD = [
    (
        {
            "decisions": [
                _decision(),
                _decision(),
                {**_decision(response_threshold=1.5), "name": "x"},
            ]
        },
        "decisions[2].plugins[0].configuration.response_threshold: must be between 0 and 1",
    ),
    (
        {"hallucination": {"response_threshold": -0.1}},
        "hallucination.response_threshold: must be between 0 and 1",
    ),
    (
        {"hallucination_mitigation": {"nli_model": {"confidence_threshold": 9}}},
        "hallucination_mitigation.nli_model.confidence_threshold: must be between 0 and 1",
    ),
    (
        {"hallucination": {"treshold": 0.5}},
        "unknown key 'treshold'; did you mean 'response_threshold'?",
    ),
    ({"decisions": [{**_decision(), "prio": 3}]}, "decisions[0].prio: unknown key"),
    ({"surprise": {}}, "surprise: unknown key 'surprise'"),
    ({"hallucination": {"enabled": "maybe"}}, "hallucination.enabled: must be true or false"),
    (
        {"hallucination": {"response_threshold": "high"}},
        "hallucination.response_threshold: must be a number",
    ),
    (
        {"hallucination": {"standard": {"max_iterations": 2.5}}},
        "hallucination.standard.max_iterations: must be an integer",
    ),
    ({"hallucination": {"default_mode": "turbo"}}, "hallucination.default_mode: must be one of"),
    (
        {"decisions": [_decision(hallucination_action="warn")]},
        "decisions[0].plugins[0].configuration.hallucination_action: must be one of",
    ),
    ({"decisions": [_decision(), _decision()]}, "decisions[1].name: duplicate name 'd'"),
    (
        {"decisions": [{**_decision(), "plugins": [{"type": "cache"}]}]},
        "decisions[0].plugins[0].type: must be one of 'hallucination'",
    ),
    (
        {"decisions": [{"name": "a", "rules": {"operator": "XOR", "conditions": []}}]},
        "decisions[0].rules.operator: must be one of",
    ),
    (
        {"decisions": [{"name": "a", "rules": {"conditions": []}}]},
        "decisions[0].rules.conditions: must not be empty",
    ),
    ({"decisions": [{"name": "a"}]}, "decisions[0].rules: required key is missing"),
    (
        {"decisions": [{"name": "a", "rules": {"conditions": [{"type": "keyword", "name": "x"}]}}]},
        "decisions[0].rules.conditions[0].name: unknown keyword list 'x'",
    ),
    (
        {
            "decisions": [
                {"name": "a", "rules": {"conditions": [{"type": "fact_check", "name": "y"}]}}
            ]
        },
        "decisions[0].rules.conditions[0]: unknown fact-check signal 'y'",
    ),
    (
        {"decisions": [{"name": "a", "rules": {"conditions": [{"type": "vibe", "name": "y"}]}}]},
        "decisions[0].rules.conditions[0].type: must be one of",
    ),
    ({"fact_check_rules": [{"name": "maybe"}]}, "fact_check_rules[0].name: unknown fact-check"),
    ({"decisions": {"name": "a"}}, "decisions: must be a list"),
    ("- just\n- a list\n", "a policy must be a mapping"),
    ("hallucination: [unclosed\n", "invalid YAML at line 2"),
]


# --- loading -----------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_each_design_file_loads(path: Path) -> None:
    policy = load_policy(path)
    assert isinstance(policy, Policy)


def test_global_block_values() -> None:
    g = load_policy(GLOBAL).hallucination
    assert g.enabled is True
    assert g.model_id == "models/lettucedetect-large-modernbert-en-v1"
    assert g.use_cpu is False
    assert g.default_mode == "standard"
    assert g.response_threshold == 0.6
    assert g.warning_template.startswith("⚠️ **注意**")
    assert g.standard.max_iterations == 3
    assert g.standard.convergence_threshold == 0.4
    assert g.premium.verification_models == ("claude-3-sonnet", "gpt-4-turbo")
    assert g.premium.judge_model == "llama-3.1-70b"
    assert g.premium.max_iterations == 5
    assert g.premium.require_consensus is True


def test_halugate_full_models_and_settings() -> None:
    policy = load_policy(HALUGATE_FULL)
    m = policy.hallucination_mitigation
    assert (m.fact_check_model.model_id, m.fact_check_model.confidence_threshold) == (
        "models/halugate-sentinel",
        0.6,
    )
    assert m.hallucination_model.token_threshold == 0.8
    assert m.nli_model.confidence_threshold == 0.9
    assert m.nli_model.use_cpu is True
    assert [r.name for r in policy.fact_check_rules] == ["needs_fact_check", "no_fact_check_needed"]
    s = policy.settings_for("verified-factual")
    assert s.enabled and s.use_nli and s.include_hallucination_details
    assert s.hallucination_action == "header"
    assert s.unverified_factual_action == "header"


def test_defaults_when_none() -> None:
    policy = load_policy(None)
    assert policy.decisions == ()
    s = policy.settings_for(None)
    assert s.enabled is True
    assert s.mode == "lightweight"
    assert s.max_iterations == 0
    assert s.threshold == 0.5
    assert s.hallucination_action == "body"  # lightweight mode: a visible warning
    assert s.unverified_factual_action == "header"
    assert s.include_hallucination_details is False
    assert s.warning_template == DEFAULT_WARNING_TEMPLATE
    assert policy.hallucination_mitigation.fact_check_model.confidence_threshold == 0.6


def test_yaml_text_dict_and_pathlike_sources(tmp_path: Path) -> None:
    text = "hallucination:\n  response_threshold: 0.25\n  default_mode: premium\n"
    from_text = load_policy(text)
    from_dict = load_policy(
        {"hallucination": {"response_threshold": 0.25, "default_mode": "premium"}}
    )
    file = tmp_path / "p.yaml"
    file.write_text(text, encoding="utf-8")
    assert from_text == from_dict == load_policy(file) == load_policy(str(file))
    assert from_text.settings_for(None).max_iterations == 5  # premium default
    assert load_policy(from_text) is from_text
    assert load_policy(None) == Policy() == load_policy("{}")


def test_merged_sources_fall_back_to_global() -> None:
    merged = load_policy([GLOBAL, DECISIONS])
    only = load_policy(DECISIONS)
    # financial_advisor sets no warning template: the global file's applies.
    assert merged.settings_for("financial_advisor").warning_template.startswith("⚠️ **注意**")
    assert only.settings_for("financial_advisor").warning_template == DEFAULT_WARNING_TEMPLATE
    # creative_writing sets no mode: the global default_mode applies.
    assert merged.settings_for("creative_writing").mode == "standard"
    assert only.settings_for("creative_writing").mode == "lightweight"
    # customer_support's explicit max_iterations beats the mode's.
    assert merged.settings_for("customer_support").max_iterations == 2
    assert merged.settings_for("financial_advisor").threshold == 0.5
    assert merged.settings_for(None).threshold == 0.6


def test_merge_later_scalar_wins_and_lists_concatenate() -> None:
    policy = load_policy(
        [
            GLOBAL,
            {"hallucination": {"response_threshold": 0.2}},
            HALUGATE_DECISION,
            DECISIONS,
        ]
    )
    assert policy.hallucination.response_threshold == 0.2
    assert policy.hallucination.default_mode == "standard"  # kept from the first source
    assert len(policy.decisions) == 6


@pytest.mark.parametrize(("config", "expected"), BAD)
def test_malformed_configs_name_the_key_path(config: object, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_policy(config)  # type: ignore[arg-type]
    assert expected in str(info.value)


def test_error_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("hallucination:\n  response_threshold: 2\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"bad\.yaml: hallucination\.response_threshold: must be between"
    ):
        load_policy(bad)
    broken = tmp_path / "broken.yaml"
    broken.write_text("decisions:\n  - name: [x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.yaml: invalid YAML"):
        load_policy(broken)
    with pytest.raises(ConfigError, match=r"missing\.yaml: policy file not found"):
        load_policy(tmp_path / "missing.yaml")


def test_merged_error_points_at_the_source_file(tmp_path: Path) -> None:
    rules = "decisions:\n  - name: {}\n    rules:\n      conditions:\n"
    extra = tmp_path / "extra.yaml"
    extra.write_text(
        rules.format("medical_assistant") + "        - {type: domain, name: healthcare}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_policy([DECISIONS, extra])
    assert "duplicate name 'medical_assistant'" in str(info.value)
    bad = tmp_path / "bad_threshold.yaml"
    bad.write_text(
        rules.format("z") + "        - {type: domain, name: general}\n    plugins:\n"
        "      - type: hallucination\n        configuration: {response_threshold: 3}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_policy([DECISIONS, bad])
    # Index and file of the item in its own file, not in the merged list.
    assert "bad_threshold.yaml: decisions[0].plugins[0].configuration.response_threshold" in str(
        info.value
    )


def test_config_error_is_not_a_pydantic_traceback() -> None:
    with pytest.raises(ConfigError) as info:
        load_policy({"hallucination": {"response_threshold": 5}})
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__
