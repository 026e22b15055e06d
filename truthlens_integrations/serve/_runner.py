"""Start the service on a local Ray instance, or deploy it to an existing cluster."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from truthlens_integrations.core import require
from truthlens_integrations.core.policy import PolicySource, load_policy

__all__ = ["LocalService", "deploy", "start_local"]

logger = logging.getLogger(__name__)

_LOOPBACK = ("127.0.0.1", "localhost", "::1")

#: Ray's shared-memory object store; the service passes small JSON, not tensors.
DEFAULT_OBJECT_STORE_BYTES = 200 * 1024 * 1024


@dataclass
class LocalService:
    """A running service and, when it started one, its local Ray instance.

    Attributes:
        url: Base URL clients use (``load_detector(url)``).
        owns_ray: Whether :meth:`stop` shuts Ray down too (it started it).
        temp_dir: Ray's session folder (logs), removed by :meth:`stop` when owned.
        metrics_url: Ray's Prometheus endpoint, when a metrics port was given.
    """

    url: str
    owns_ray: bool
    temp_dir: str | None = None
    metrics_url: str | None = None
    _stopped: bool = field(default=False, repr=False)

    def stop(self) -> None:
        """Remove the application; shut Ray down if this process started it."""
        if self._stopped:
            return
        self._stopped = True
        ray = require("ray", extra="serve", feature="truthlens serve")
        serve: Any = require("ray.serve", extra="serve", feature="truthlens serve")
        if self.owns_ray:
            serve.shutdown()
            ray.shutdown()
            if self.temp_dir is not None:
                shutil.rmtree(self.temp_dir, ignore_errors=True)
        else:
            from ._app import APP_NAME

            serve.delete(APP_NAME)


def _init_local_ray(
    *, num_cpus: int | None, object_store_bytes: int, metrics_port: int | None
) -> str:
    ray = require("ray", extra="serve", feature="truthlens serve")
    # A short path: Ray's unix sockets live under it and have a ~107 character limit.
    temp_dir = tempfile.mkdtemp(prefix="tlray-")
    options: dict[str, Any] = {
        "num_cpus": num_cpus or os.cpu_count() or 1,
        "object_store_memory": object_store_bytes,
        "include_dashboard": False,
        "log_to_driver": False,
        "configure_logging": False,
        "_temp_dir": temp_dir,
    }
    if metrics_port is not None:
        options["_metrics_export_port"] = metrics_port
    ray.init(**options)
    return temp_dir


def start_local(
    policy: PolicySource = None,
    *,
    host: str | None = None,
    port: int | None = None,
    num_cpus: int | None = None,
    object_store_bytes: int = DEFAULT_OBJECT_STORE_BYTES,
    metrics_port: int | None = None,
    **overrides: Any,
) -> LocalService:
    """Start Ray on this machine (unless already running) and deploy the service.

    Args:
        policy: The policy: its ``service`` block sets host, port, replicas, batching.
        host: Overrides ``service.host``.
        port: Overrides ``service.port``.
        num_cpus: CPUs Ray may use (default: all of this machine's).
        object_store_bytes: Size of Ray's object store.
        metrics_port: Port of Ray's Prometheus endpoint (``/metrics``: the service's
            ``ray_truthlens_serve_*`` and Ray Serve's own metrics); Ray picks one if unset.
        **overrides: Other ``service`` fields (``replicas=2``, ``max_batch_size=1``).

    Returns:
        The running service; call :meth:`LocalService.stop` to end it.
    """
    loaded = load_policy(policy)
    host = host or loaded.service.host
    port = port or loaded.service.port
    if host in _LOOPBACK and "ray" not in sys.modules:
        # Ray swaps a loopback node address for the machine's network address; this
        # switch (read when ray is imported) keeps a local-only service on loopback.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = require("ray", extra="serve", feature="truthlens serve")
    owns = not ray.is_initialized()
    temp_dir = None
    if owns:
        temp_dir = _init_local_ray(
            num_cpus=num_cpus, object_store_bytes=object_store_bytes, metrics_port=metrics_port
        )
    try:
        url = _run(loaded, host=host, port=port, overrides=overrides)
    except BaseException:
        if owns:
            ray.shutdown()
        raise
    metrics_url = None
    if owns and metrics_port is not None:
        metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    return LocalService(url=url, owns_ray=owns, temp_dir=temp_dir, metrics_url=metrics_url)


def deploy(
    policy: PolicySource = None,
    *,
    address: str,
    host: str | None = None,
    port: int | None = None,
    **overrides: Any,
) -> LocalService:
    """Deploy the service to an existing Ray cluster; it keeps running after we exit.

    Args:
        policy: The policy.
        address: The cluster: ``"auto"`` (this node belongs to it), ``"host:6379"``,
            or ``"ray://head:10001"`` (Ray Client).
        host: Overrides ``service.host`` (used only if Serve is not running there yet).
        port: Overrides ``service.port`` (same).
        **overrides: Other ``service`` fields.

    Returns:
        The deployed service (:meth:`LocalService.stop` deletes the application).
    """
    ray = require("ray", extra="serve", feature="truthlens serve")
    loaded = load_policy(policy)
    ray.init(address=address, log_to_driver=False, configure_logging=False)
    url = _run(
        loaded,
        host=host or loaded.service.host,
        port=port or loaded.service.port,
        overrides=overrides,
    )
    return LocalService(url=url, owns_ray=False)


def _run(policy: Any, *, host: str, port: int, overrides: dict[str, Any]) -> str:
    from ray import serve

    from ._app import APP_NAME, service_app

    serve.start(http_options={"host": host, "port": port})
    serve.run(service_app(policy, **overrides), name=APP_NAME, route_prefix="/", blocking=False)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # noqa: S104 - a comparison
    return f"http://{shown}:{port}"
