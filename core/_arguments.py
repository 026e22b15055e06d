"""Checks of keyword arguments shared by every public constructor and loader.

One implementation of the rules the brief sets for options: an unknown keyword is an
:class:`UnknownArgumentError` that suggests the closest known one, and a value pydantic
refuses becomes an :class:`InvalidArgumentError` naming the argument, never a raw
``ValidationError``. The engine's options, the adapters and ``load_detector`` all use
these.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from pydantic import ValidationError

from ._errors import UnknownArgumentError

__all__ = ["describe_error", "kind", "reject_unknown"]


def describe_error(error: ValidationError, where: str) -> str:
    """A one-line message for a validation error: each field, the value, what is wrong."""
    parts = []
    for problem in error.errors():
        field = ".".join(str(p) for p in problem["loc"]) or "value"
        value = repr(problem.get("input"))
        if len(value) > 60:
            value = value[:57] + "..."
        parts.append(f"{field}={value}: {problem['msg']}")
    return f"{where}: " + "; ".join(parts)


def reject_unknown(given: Iterable[str], known: Iterable[str], where: str) -> None:
    """Raise for keyword arguments ``where`` does not take, suggesting the closest ones.

    Args:
        given: The keyword arguments received.
        known: Every keyword ``where`` takes.
        where: The constructor, for the message (``"TruthLensRunnable"``).

    Raises:
        UnknownArgumentError: If any name in ``given`` is not in ``known``.
    """
    names = sorted(set(known))
    unknown = [k for k in given if k not in names]
    if not unknown:
        return
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        parts.append(f"{name!r}{hint}")
    raise UnknownArgumentError(
        f"{where} got unknown argument{'s' if len(unknown) > 1 else ''} "
        f"{', '.join(parts)}; it takes: {', '.join(names)}"
    )


def kind(value: object) -> str:
    """A short description of ``value`` for error messages: type, and repr when short."""
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}" if len(text) <= 40 else type(value).__name__
