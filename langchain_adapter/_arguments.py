"""Constructor checks the adapters share."""

from __future__ import annotations

from pydantic import ValidationError

from truthlens_integrations.core import ConfigError, InvalidArgumentError

__all__ = ["check_choice", "check_int", "invalid_arguments"]


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise :class:`ConfigError` unless ``value`` is one of ``choices``."""
    if value not in choices:
        allowed = " or ".join(repr(c) for c in choices)
        raise ConfigError(f"{name} must be {allowed}, got {value!r}")


def check_int(name: str, value: object, where: str) -> None:
    """Raise :class:`InvalidArgumentError` unless ``value`` is an ``int`` (not a ``bool``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{where}: {name} must be an int")


def invalid_arguments(exc: ValidationError, where: str) -> InvalidArgumentError:
    """A pydantic model's validation error as the package's error, one problem a field.

    Args:
        exc: The error the model's constructor raised.
        where: The constructor, for the message.

    Returns:
        The error to raise (``from None``: pydantic's long report adds nothing).
    """
    parts = []
    for problem in exc.errors():
        field = ".".join(str(p) for p in problem["loc"][:1]) or "value"
        parts.append(f"{field}: {problem['msg']}")
    return InvalidArgumentError(f"{where}: " + "; ".join(dict.fromkeys(parts)))
