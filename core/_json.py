r"""Strict JSON reading for text that comes from outside: request bodies, files, replies.

``json.loads`` accepts things a guard must not: the last of two duplicate keys wins
silently, ``NaN`` and ``Infinity`` are numbers, a 5,000-digit integer raises a bare
``ValueError``, deep nesting raises ``RecursionError`` and ``"\ud800"`` becomes a
string no encoder can write. :func:`loads_strict` refuses each with a
:class:`JSONFormatError` whose message says what is wrong; callers turn it into their
own typed error (a 400, a bad record, a malformed reply).
"""

from __future__ import annotations

import codecs
import json
import math
from typing import Any

from ._errors import InvalidInputError

# Public through the core package: the service, the client and the command line use it.
__all__ = ["JSONFormatError", "loads_strict"]

#: Deepest nesting accepted; every shape the package reads is a few levels deep.
MAX_DEPTH = 32
#: Longest integer accepted, in digits (ids and counts; far below Python's own limit).
MAX_INT_DIGITS = 64


class JSONFormatError(InvalidInputError):
    """Text that is not acceptable JSON; the message says why.

    Part of the package's one error hierarchy: an :class:`InvalidInputError` (so a
    ``TruthLensError`` and a ``ValueError``).

    Attributes:
        line: The line of a syntax error (1-based), when there is one.
    """

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def loads_strict(data: bytes | str, *, allow_bom: bool = False) -> Any:
    """Parse JSON text, refusing what ``json.loads`` lets through.

    Args:
        data: UTF-8 bytes or text.
        allow_bom: Skip a leading UTF-8 byte-order mark (files written by some editors);
            HTTP bodies must not carry one (RFC 8259, section 8.1).

    Returns:
        The parsed value.

    Raises:
        JSONFormatError: For bytes that are not UTF-8, invalid JSON, duplicate keys,
            ``NaN`` / ``Infinity`` or numbers out of range, integers over
            :data:`MAX_INT_DIGITS` digits, nesting deeper than :data:`MAX_DEPTH`, or
            strings holding lone surrogates.
    """
    text = _text(data, allow_bom=allow_bom)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_object,
            parse_int=_int,
            parse_float=_float,
            parse_constant=_constant,
        )
    except json.JSONDecodeError as exc:
        raise JSONFormatError(
            f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", line=exc.lineno
        ) from None
    except RecursionError:
        raise JSONFormatError(f"not valid JSON: nested deeper than {MAX_DEPTH} levels") from None
    _check_tree(value)
    return value


def _text(data: bytes | str, *, allow_bom: bool) -> str:
    if isinstance(data, str):
        return data[1:] if allow_bom and data.startswith("\ufeff") else data
    if allow_bom and data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONFormatError(f"not UTF-8 text (byte {exc.start + 1})") from None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise JSONFormatError(f"not valid JSON: the key {_shown(key)} appears twice")
        out[key] = value
    return out


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise JSONFormatError(
            f"a number of {len(digits.lstrip('-'))} digits is too long (at most {MAX_INT_DIGITS})"
        )
    return int(digits)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONFormatError(f"the number {_shown(text)} is out of range")
    return value


def _constant(name: str) -> Any:
    raise JSONFormatError(f"not valid JSON: {name} is not a JSON number")


def _check_tree(value: Any) -> None:
    """Depth and string checks, without recursion (the value may be deep)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _check_string(node)
            continue
        if not isinstance(node, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise JSONFormatError(f"not valid JSON: nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            for key, item in node.items():
                _check_string(key)
                stack.append((item, depth + 1))
        else:
            stack.extend((item, depth + 1) for item in node)


def _check_string(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        raise JSONFormatError(
            f"a string holds a lone surrogate (\\u{code:04x}), which is not Unicode text"
        ) from None


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "...")
