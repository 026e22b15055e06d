"""Framework-free engine: detection, scoring, policy and mitigation.

Its public names are what a user of the core handles directly: every error (from
``_errors``, and ``JSONFormatError`` from ``_json``), the detection types (``_types``) and
the scoring functions (``_scoring``). What the package's own adapters, service, command
line and evaluation harness need besides is in :mod:`._adapter_api`, an internal
interface: not part of the public surface.
"""

from __future__ import annotations

from . import _errors, _types
from ._errors import *  # noqa: F403 - every error is public here
from ._json import JSONFormatError
from ._scoring import noisy_or, optimal_threshold
from ._types import *  # noqa: F403 - every detection type is public here

__all__: list[str] = []
__all__ += _errors.__all__
__all__ += ["JSONFormatError"]
__all__ += _types.__all__
__all__ += ["noisy_or", "optimal_threshold"]
