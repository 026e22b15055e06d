"""Load a :class:`Policy` from YAML files, YAML text or dicts, with readable errors."""

from __future__ import annotations

import difflib
import logging
import os
import reprlib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .._errors import ConfigError
from ._config import PARSED_CALIBRATIONS, Policy

__all__ = ["PolicySource", "load_policy"]

logger = logging.getLogger(__name__)

PolicySource = str | os.PathLike[str] | Mapping[str, Any] | Policy | None
"""One source: a file path, YAML text, a dict, a ready :class:`Policy`, or ``None``."""

# Sections whose lists are concatenated when several sources are merged.
_LIST_SECTIONS = ("fact_check_rules", "keyword_rules", "domains", "decisions")
_YAML_SUFFIXES = (".yaml", ".yml", ".json")

#: Largest policy file or YAML text accepted. Real policies are a few KiB (the design's
#: examples are 1-2 KiB); the YAML parser reads about 50-100 KiB a second, so a 1 MiB
#: policy took 13 s to refuse. 64 KiB is refused at once and parsed in about a second.
MAX_POLICY_BYTES = 64 * 1024
# Alias uses (``*name``) allowed in one document, and YAML nodes once aliases are
# expanded: a 380-byte "billion laughs" file expands to 9**9 strings, and rendering
# that in an error message took 48 s and 5.5 GB.
_MAX_ALIASES = 100
_MAX_NODES = 100_000
# Nesting depth of YAML collections; PyYAML composes recursively, so without a limit
# `[[[[...` ends in a RecursionError instead of a readable error.
_MAX_DEPTH = 64
# Longest path string tried on the file system before treating it as YAML text.
_MAX_PATH_CHARS = 4096
# Error messages show at most this many problems, each line shortened.
_MAX_PROBLEMS = 20
_MAX_LINE_CHARS = 300
#: Starts the list of allowed keys in an unknown-key message.
_ALLOWED = "; allowed: "


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
        # A Policy among the sources keeps the calibration files it read when it loaded.
        policy = Policy.model_validate(merged, context=_parsed_calibrations(sources))
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, labels, origins)) from None
    logger.debug(
        "loaded policy from %s: %d decisions",
        ", ".join(labels),
        len(policy.decisions),
    )
    return policy


def _parsed_calibrations(sources: list[PolicySource]) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for source in sources:
        if isinstance(source, Policy):
            for d in source.decisions:
                if d.plugin.calibration is not None and d.plugin.calibration_file is not None:
                    parsed[d.plugin.calibration] = d.plugin.calibration_file
    return {PARSED_CALIBRATIONS: parsed}


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
        return label, _parse_yaml(_read_file(path, label), label)
    if isinstance(source, str):
        _check_size(len(source.encode("utf-8", "surrogatepass")), "<yaml>", "policy text")
        return "<yaml>", _parse_yaml(source, "<yaml>")
    raise ConfigError(
        f"a policy source must be a path, YAML text, a dict or a Policy, "
        f"got {type(source).__name__}"
    )


def _looks_like_path(source: object) -> bool:
    if not isinstance(source, str) or "\n" in source or len(source) > _MAX_PATH_CHARS:
        return False
    if source.strip().lower().endswith(_YAML_SUFFIXES):
        return True
    try:
        path = Path(source)
        return path.is_file() or path.is_dir()
    except OSError:  # e.g. a name too long for the file system: not a path
        return False


def _check_size(size: int, label: str, what: str) -> None:
    if size > MAX_POLICY_BYTES:
        raise ConfigError(
            f"{label}: {what} is too large ({size:,} bytes; the limit is "
            f"{MAX_POLICY_BYTES:,}); a policy is a few KiB of settings"
        )


def _read_file(path: Path, label: str) -> str:
    """The file's text; an oversized file is refused before it is read."""
    if path.is_dir():
        raise ConfigError(
            f"{label}: is a folder, not a policy file; pass the YAML file inside it "
            "(e.g. policy.yaml)"
        )
    try:
        _check_size(path.stat().st_size, label, "policy file")
        with path.open("rb") as handle:
            # One byte past the limit: special files report no size in stat().
            raw = handle.read(MAX_POLICY_BYTES + 1)
        _check_size(len(raw), label, "policy file")
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{label}: policy file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{label}: cannot read policy file: {_clip(str(exc))}") from None


class _LimitError(yaml.MarkedYAMLError):
    """A document broke one of the loader's limits; reported like a YAML syntax error."""


class _PolicyLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses alias bombs, deep nesting and duplicate keys.

    PyYAML shares aliased nodes, so loading a "billion laughs" document is cheap; the
    cost comes later, when validation or an error message walks the expanded value.
    The limits are checked on the composed node graph, before any value is built.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > _MAX_ALIASES:
                raise _LimitError(
                    problem=f"more than {_MAX_ALIASES} aliases (*name) in one policy",
                    problem_mark=self._mark(),
                )
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > _MAX_DEPTH:
                raise _LimitError(
                    problem=f"nested more than {_MAX_DEPTH} levels deep",
                    problem_mark=self._mark(),
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _mark(self) -> Any:
        """Where the next event starts, for the error message."""
        return self.peek_event().start_mark  # type: ignore[no-untyped-call]

    def compose_document(self) -> Any:
        node = super().compose_document()
        if node is not None:
            _check_nodes(node)
        return node


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_nodes(root: yaml.Node) -> None:
    """Count values with aliases expanded, refuse cycles, check mappings for duplicates.

    An iterative depth-first walk that expands each node once (aliased nodes are
    shared), so it is linear in the document however large its expansion.
    """
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > _MAX_NODES:
                raise _LimitError(
                    problem=f"expands to more than {_MAX_NODES:,} values once aliases are resolved",
                    problem_mark=node.start_mark,
                )
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise _LimitError(
                problem="an alias refers to a value that contains it (recursive alias)",
                problem_mark=node.start_mark,
            )
        if isinstance(node, yaml.MappingNode):
            _check_duplicate_keys(node)
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _check_duplicate_keys(node: yaml.MappingNode) -> None:
    """Refuse a key written twice in one mapping (plain YAML lets the last one win).

    Keys brought in by a merge (``<<: *defaults``) may be overridden, which is what
    merges are for; only keys written in the mapping itself are compared.
    """
    first: dict[tuple[str, str], yaml.Node] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        seen = first.setdefault((key_node.tag, key_node.value), key_node)
        if seen is not key_node:
            raise _LimitError(
                problem=f"duplicate key {_short(key_node.value)} (first at line "
                f"{seen.start_mark.line + 1}); the second value would silently replace "
                "the first",
                problem_mark=key_node.start_mark,
            )


def _parse_yaml(text: str, label: str) -> dict[str, Any]:
    try:
        data = yaml.load(text, Loader=_PolicyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(_clip(f"{label}: invalid YAML{where}: {problem}")) from None
    except RecursionError:  # a backstop: the depth limit above should come first
        raise ConfigError(f"{label}: invalid YAML: nested too deeply") from None
    except ValueError:
        # An integer longer than Python converts (4,300 digits) fails in the constructor.
        raise ConfigError(
            f"{label}: invalid YAML: a number has more than 4,300 digits; no setting "
            "takes one that large"
        ) from None
    if data is None:
        # An empty file is most likely a truncated or wrong one; guarding with the
        # defaults would apply settings nobody chose.
        raise ConfigError(
            f"{label}: the policy is empty; write the settings to change (an empty "
            "mapping '{}' keeps every default), or pass None for the built-in defaults"
        )
    return _top_mapping(data, label)


def _top_mapping(data: object, label: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(
            f"{label}: a policy must be a mapping of sections, got {type(data).__name__}"
        )
    for key in data:
        if not isinstance(key, str):
            raise ConfigError(f"{label}: section names must be strings, got {_short(key)}")
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
            lines.extend(_clip(f"{label}: {line}") for line in message.splitlines())
        else:
            # The list of allowed keys is ours and short: never cut it (what the user
            # wrote, in the label, path and message, is cut to a readable length).
            message, _, allowed = message.partition(_ALLOWED)
            lines.append(
                _clip(f"{label}: {path}: {message}") + (_ALLOWED + allowed if allowed else "")
            )
    if len(lines) > _MAX_PROBLEMS:
        hidden = len(lines) - _MAX_PROBLEMS
        lines = [*lines[:_MAX_PROBLEMS], f"... and {hidden} more problems"]
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
        return f"must be one of {ctx.get('expected', '?')}, got {_short(given)}"
    if kind in {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}:
        return f"{error['msg'].lower()}, got {_short(given)}"
    if kind == "too_short":
        return f"must not be empty, got {_short(given)}"
    type_names = {
        "bool_type": "true or false",
        "bool_parsing": "true or false",
        "float_type": "a number",
        "float_parsing": "a number",
        "finite_number": "a finite number",
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
        return f"must be {type_names[kind]}, got {type(given).__name__} {_short(given)}"
    return f"{error['msg']} (got {_short(given)})"


def _unknown_key(loc: tuple[int | str, ...]) -> str:
    key = str(loc[-1]) if loc else "?"
    known = _known_keys(loc[:-1])
    hint = ""
    if known:
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"{_ALLOWED}{', '.join(known)}"
    return f"unknown key {_short(key)}{hint}"


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


# Values in messages are shown shortened: a policy value can be megabytes of text or a
# deeply nested structure, and the message is for a human.
_REPR = reprlib.Repr()
_REPR.maxstring = 80
_REPR.maxother = 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4
_REPR.maxlevel = 2


def _short(value: object) -> str:
    """``repr(value)`` cut to a readable length."""
    try:
        return _REPR.repr(value)
    except ValueError:  # an integer too long to print (more than 4,300 digits)
        if isinstance(value, int):
            return f"<an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits>"
        return f"<{type(value).__name__}>"


def _clip(line: str) -> str:
    return line if len(line) <= _MAX_LINE_CHARS else line[: _MAX_LINE_CHARS - 3] + "..."
