"""Import optional dependencies with an error that names the extra to install, or lazily."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from ._errors import MissingDependencyError

__all__ = ["lazy_attributes", "require"]


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


def lazy_attributes(
    package: str,
    names: Mapping[str, str],
    *,
    before: Callable[[str, str], object] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` / ``__dir__`` pair that imports ``names`` on first use.

    Keeps ``import`` of a package light: a name's module (and what it needs, e.g. torch or
    an optional framework) is imported when the name is first read, then cached in the
    package's namespace.

    Args:
        package: The package's ``__name__``.
        names: Attribute name -> module that defines it (absolute, or relative to
            ``package`` when it starts with a dot).
        before: Called with ``(name, module)`` before the import, e.g. to check an
            optional dependency with :func:`require`.

    Returns:
        ``(__getattr__, __dir__)`` to assign in the package's ``__init__``.
    """

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's own name
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if before is not None:
            before(name, module)
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
