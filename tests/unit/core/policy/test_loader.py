"""Hostile or broken policy files are refused with a readable ConfigError (issue 13, item 4).

Before: a 380-byte YAML alias bomb took 48 s and 5.5 GB (the error message rendered
the expanded value), a duplicate key silently won, a 50 MB file was parsed for
minutes, ``threshold: true`` became 1.0 and an empty file gave the defaults.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.policy import Policy, load_policy
from truthlens_integrations.core.policy._loader import MAX_POLICY_BYTES


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
        configuration: &strict {hallucination_action: block, threshold: 0.3}
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
        load_policy("hallucination: {threshold: 0.2}\nhallucination: {threshold: 0.9}\n")


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
        ("hallucination:\n  threshold: true\n", "hallucination.threshold", "a number"),
        ("hallucination:\n  threshold: '0.3'\n", "hallucination.threshold", "a number"),
        ("hallucination:\n  standard:\n    max_iterations: '3'\n", "max_iterations", "integer"),
        ("hallucination:\n  standard:\n    max_iterations: true\n", "max_iterations", "integer"),
        ("hallucination:\n  enabled: 'no'\n", "hallucination.enabled", "true or false"),
        ("hallucination:\n  use_nli: 1\n", "hallucination.use_nli", "true or false"),
        (
            "hallucination_mitigation:\n  nli_model:\n    threshold: yes\n",
            "nli_model.threshold",
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
        load_policy({"hallucination": {"threshold": "0.3"}})
    with pytest.raises(ConfigError, match="true or false"):
        load_policy({"decisions": [], "hallucination": {"enabled": "false"}})
    # Integers are still numbers.
    assert load_policy({"hallucination": {"threshold": 1}}).hallucination.threshold == 1.0


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
