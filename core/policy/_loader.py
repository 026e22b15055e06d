"""Load a :class:`Policy` from YAML files, YAML text or dicts, with readable errors."""

from __future__ import annotations

import difflib
import logging
import os
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .._errors import ConfigError
from ._config import Policy

__all__ = ["PolicySource", "load_policy"]

logger = logging.getLogger(__name__)

PolicySource = str | os.PathLike[str] | Mapping[str, Any] | Policy | None
"""One source: a file path, YAML text, a dict, a ready :class:`Policy`, or ``None``."""

# Sections whose lists are concatenated when several sources are merged.
_LIST_SECTIONS = ("fact_check_rules", "keyword_rules", "domains", "decisions")
_YAML_SUFFIXES = (".yaml", ".yml", ".json")


def load_policy(source: PolicySource | Sequence[PolicySource] = None) -> Policy:
    """Build a policy from one source or several merged ones.

    A ``str`` is a file path when it is one line ending in ``.yaml``, ``.yml`` or
    ``.json`` or names an existing file; any other string is YAML text. With a list
    of sources (e.g. the design's global file and its decisions file), mappings are
    merged key by key, later sources winning for scalars, and the list sections
    (``decisions``, ``keyword_rules``, ``domains``, ``fact_check_rules``) are
    concatenated; a name defined twice is an error.

    Args:
        source: A path, YAML text, a dict, a :class:`Policy`, a list of these, or
            ``None`` for the built-in defaults.

    Returns:
        The validated policy.

    Raises:
        ConfigError: If a file is missing or unreadable, the YAML is invalid, or the
            content does not validate; the message names the file and key path.
    """
    if isinstance(source, Policy):
        return source
    if source is None:
        return Policy()
    if isinstance(source, Sequence) and not isinstance(source, str | bytes):
        sources = list(source)
    else:
        sources = [source]
    merged: dict[str, Any] = {}
    origins: dict[str, list[tuple[str, int]]] = {key: [] for key in _LIST_SECTIONS}
    labels: list[str] = []
    for item in sources:
        label, data = _read(item)
        labels.append(label)
        _merge_into(merged, data, label, origins)
    try:
        policy = Policy.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, labels, origins)) from None
    logger.debug(
        "loaded policy from %s: %d decisions",
        ", ".join(labels),
        len(policy.decisions),
    )
    return policy


def _read(source: PolicySource) -> tuple[str, dict[str, Any]]:
    if source is None:
        return "<defaults>", {}
    if isinstance(source, Policy):
        return "<policy>", source.model_dump(by_alias=True, exclude_unset=True)
    if isinstance(source, Mapping):
        return "<dict>", _top_mapping(dict(source), "<dict>")
    if isinstance(source, os.PathLike) or _looks_like_path(source):
        path = Path(source)
        label = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{label}: policy file not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{label}: cannot read policy file: {exc}") from None
        return label, _parse_yaml(text, label)
    if isinstance(source, str):
        return "<yaml>", _parse_yaml(source, "<yaml>")
    raise ConfigError(
        f"a policy source must be a path, YAML text, a dict or a Policy, "
        f"got {type(source).__name__}"
    )


def _looks_like_path(source: object) -> bool:
    if not isinstance(source, str) or "\n" in source:
        return False
    return source.strip().lower().endswith(_YAML_SUFFIXES) or Path(source).is_file()


def _parse_yaml(text: str, label: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{label}: invalid YAML{where}: {problem}") from None
    return _top_mapping(data, label)


def _top_mapping(data: object, label: str) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{label}: a policy must be a mapping of sections, got {type(data).__name__}"
        )
    for key in data:
        if not isinstance(key, str):
            raise ConfigError(f"{label}: section names must be strings, got {key!r}")
    return data


def _merge_into(
    merged: dict[str, Any],
    data: Mapping[str, Any],
    label: str,
    origins: dict[str, list[tuple[str, int]]],
) -> None:
    for key, value in data.items():
        if key in _LIST_SECTIONS and isinstance(value, list):
            current = merged.setdefault(key, [])
            if isinstance(current, list):
                current.extend(value)
                origins[key].extend((label, i) for i in range(len(value)))
                continue
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), dict):
            result[key] = _deep_merge(result[key], value)
        else:
            result[key] = value
    return result


def _format_errors(
    exc: ValidationError, labels: list[str], origins: dict[str, list[tuple[str, int]]]
) -> str:
    lines: list[str] = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        label, path = _locate(loc, labels, origins)
        message = _describe(error, loc)
        if not path:
            # Cross-field checks carry their own key paths, one per line.
            lines.extend(f"{label}: {line}" for line in message.splitlines())
        else:
            lines.append(f"{label}: {path}: {message}")
    head = "invalid policy" if len(lines) > 1 else ""
    return "\n".join([head, *lines]) if head else lines[0]


def _locate(
    loc: tuple[int | str, ...], labels: list[str], origins: dict[str, list[tuple[str, int]]]
) -> tuple[str, str]:
    label = labels[0] if len(labels) == 1 else " + ".join(labels)
    parts = list(loc)
    if len(parts) >= 2 and parts[0] in origins and isinstance(parts[1], int):
        section_origins = origins[str(parts[0])]
        if parts[1] < len(section_origins):
            label, parts[1] = section_origins[parts[1]]
    return label, _join_path(parts)


def _join_path(parts: Sequence[int | str]) -> str:
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _describe(error: ErrorDetails, loc: tuple[int | str, ...]) -> str:
    kind = error["type"]
    given = error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        return _unknown_key(loc)
    if kind == "missing":
        return "required key is missing"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '?')}, got {given!r}"
    if kind in {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}:
        return f"{error['msg'].lower()}, got {given!r}"
    if kind == "too_short":
        return f"must not be empty, got {given!r}"
    type_names = {
        "bool_type": "true or false",
        "bool_parsing": "true or false",
        "float_type": "a number",
        "float_parsing": "a number",
        "int_type": "an integer",
        "int_parsing": "an integer",
        "int_from_float": "an integer",
        "string_type": "a string",
        "dict_type": "a mapping",
        "model_type": "a mapping",
        "model_attributes_type": "a mapping",
        "tuple_type": "a list",
        "list_type": "a list",
    }
    if kind in type_names:
        return f"must be {type_names[kind]}, got {type(given).__name__} {given!r}"
    return f"{error['msg']} (got {given!r})"


def _unknown_key(loc: tuple[int | str, ...]) -> str:
    key = str(loc[-1]) if loc else "?"
    known = _known_keys(loc[:-1])
    hint = ""
    if known:
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; allowed: {', '.join(known)}"
    return f"unknown key {key!r}{hint}"


def _known_keys(parent: tuple[int | str, ...]) -> list[str]:
    """Keys allowed at ``parent``, found by walking the model types along the path."""
    current: Any = Policy
    for part in parent:
        model = _model_in(current)
        if isinstance(part, int):
            current = _item_type(current)
            continue
        if model is None:
            return []
        field = next(
            (f for n, f in model.model_fields.items() if part in (n, f.alias)),
            None,
        )
        if field is None:
            return []
        current = field.annotation
    model = _model_in(current)
    if model is None:
        return []
    return sorted(f.alias or n for n, f in model.model_fields.items())


def _model_in(tp: Any) -> type[BaseModel] | None:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp
    if typing.get_origin(tp) in (Union, types.UnionType):
        for arg in typing.get_args(tp):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _item_type(tp: Any) -> Any:
    if typing.get_origin(tp) in (Union, types.UnionType):
        for arg in typing.get_args(tp):
            if typing.get_args(arg):
                return _item_type(arg)
    args = typing.get_args(tp)
    return args[0] if args else None
