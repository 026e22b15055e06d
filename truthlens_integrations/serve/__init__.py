"""The guard as a service on Ray Serve (``truthlens serve``), for the ``serve`` extra.

Example:
    >>> from truthlens_integrations.serve import start_local  # doctest: +SKIP
    >>> service = start_local("policy.yaml", port=8000)  # doctest: +SKIP
    >>> detector = load_detector(service.url)  # doctest: +SKIP
    >>> service.stop()  # doctest: +SKIP

Names load on first use; ``ray`` is imported only then, and a missing ``serve`` extra
raises an ``ImportError`` naming ``pip install 'truthlens-integrations[serve]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthlens_integrations.core._adapter_api import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from ._app import TruthLensService, build_app, service_app
    from ._runner import LocalService, deploy, start_local

__all__ = [
    "LocalService",
    "TruthLensService",
    "build_app",
    "deploy",
    "service_app",
    "start_local",
]

_LAZY = {
    "TruthLensService": "._app",
    "build_app": "._app",
    "service_app": "._app",
    "LocalService": "._runner",
    "deploy": "._runner",
    "start_local": "._runner",
}


__getattr__, __dir__ = _lazy_attributes(__name__, _LAZY)
