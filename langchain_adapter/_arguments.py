"""Constructor checks the agent adapters share (graph guard and middleware)."""

from __future__ import annotations

from truthlens_integrations.core import ConfigError, InvalidArgumentError

__all__ = ["check_choice", "check_int"]


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise :class:`ConfigError` unless ``value`` is one of ``choices``."""
    if value not in choices:
        allowed = " or ".join(repr(c) for c in choices)
        raise ConfigError(f"{name} must be {allowed}, got {value!r}")


def check_int(name: str, value: object, where: str) -> None:
    """Raise :class:`InvalidArgumentError` unless ``value`` is an ``int`` (not a ``bool``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{where}: {name} must be an int")
