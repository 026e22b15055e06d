"""Import optional dependencies with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from ._errors import MissingDependencyError

__all__ = ["require"]


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming ``extra``.

    Args:
        module: Dotted module name, e.g. ``"langchain_core.runnables"``.
        extra: The extra of ``truthlens-integrations`` that installs it.
        feature: What needs the module, for the message.

    Returns:
        The imported module.

    Raises:
        MissingDependencyError: If the module is not importable.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".", 1)[0]
        raise MissingDependencyError(top, extra, feature) from exc
