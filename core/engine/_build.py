"""Building the engine an adapter uses, from its keyword arguments.

Apart from the options (``_options``), which the engine itself reads: this module needs
the engine class, and the options module must not.
"""

from __future__ import annotations

from .._arguments import kind
from .._errors import ConfigError, InvalidArgumentError
from ._engine import TruthLens
from ._options import SplitOptions

__all__ = ["engine_from"]


def engine_from(engine: object, config: object, split: SplitOptions, where: str) -> TruthLens:
    """The engine an adapter uses: ``engine``, one built from ``config``, or a derived one.

    Args:
        engine: The engine the caller passed, or ``None``.
        config: A policy source for a new engine (only without ``engine``).
        split: The adapter's sorted keyword arguments (see :func:`split_options`).
        where: The constructor, for messages.

    Returns:
        ``engine`` itself when no engine option or knob was given; otherwise a copy
        with them applied (loaded models shared), or a new engine built from
        ``config`` with them.

    Raises:
        ConfigError: If both ``engine`` and ``config`` are given.
        InvalidArgumentError: If ``engine`` is not a ``TruthLens``.
    """
    knobs = split.knobs.model_dump(exclude_none=True)
    if engine is None:
        return TruthLens.from_config(config, **knobs, **split.engine)  # type: ignore[arg-type]
    if not isinstance(engine, TruthLens):
        raise InvalidArgumentError(f"{where}: engine must be a TruthLens, got {kind(engine)}")
    if config is not None:
        raise ConfigError(f"{where}: pass either engine or config, not both")
    if knobs or split.engine:
        return engine.derive(**knobs, **split.engine)
    return engine
