"""Start the service on a local Ray instance, or deploy it to an existing cluster."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Unpack

from truthlens_integrations.core import ServiceError
from truthlens_integrations.core._adapter_api import ReplicaKwargs, ServiceKwargs, require
from truthlens_integrations.core.policy import Policy, PolicySource

from ._policy import resolved_policy

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
        """Remove the application; shut Ray down if this process started it.

        First the application (its replicas finish their requests and exit). Then,
        when this process started Ray, Ray itself, which ends every process of that
        instance, Serve's controller and proxy included. ``serve.shutdown()`` is left
        out there: it asks the controller to shut itself down, the controller kills
        itself, and Ray reports the killed call on stderr ("Task
        ServeController.graceful_shutdown failed. There are infinite retries
        remaining ...") on every healthy stop.
        """
        if self._stopped:
            return
        self._stopped = True
        ray = require("ray", extra="serve", feature="truthlens serve")
        serve: Any = require("ray.serve", extra="serve", feature="truthlens serve")
        from ._app import APP_NAME

        serve.delete(APP_NAME)
        if self.owns_ray:
            ray.shutdown()
            if self.temp_dir is not None:
                shutil.rmtree(self.temp_dir, ignore_errors=True)


def check_port_free(host: str, port: int) -> None:
    """Refuse a port another process listens on, before Ray starts.

    Ray Serve's proxy shares its port with a second service started on it (both then
    answer, each a share of the requests). A plain bind fails where something listens.

    Raises:
        ServiceError: Naming the address and port.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # A port left in TIME_WAIT by an earlier run is free; a listening one is not.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ServiceError(
                    f"port {port} on {host} is already in use (another service listens "
                    "there); stop it or choose another port with --port"
                ) from None
            raise ServiceError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _init_local_ray(
    temp_dir: str, *, num_cpus: int | None, object_store_bytes: int, metrics_port: int | None
) -> None:
    ray = require("ray", extra="serve", feature="truthlens serve")
    # No dashboard UI. Ray 2.x still starts its API server (ray/dashboard/dashboard.py
    # without the dashboard's modules: job and state APIs, on the node's address) and a
    # ray::DashboardAgent with every node; no ray.init option turns them off.
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


def _clean_up(ray: Any, temp_dir: str | None) -> None:
    """Stop what a failed start began: Serve, Ray, and Ray's session folder."""
    try:
        if ray.is_initialized():
            serve: Any = require("ray.serve", extra="serve", feature="truthlens serve")
            serve.shutdown()
    except Exception:  # best effort; Ray goes down next
        logger.debug("serve.shutdown after a failed start failed", exc_info=True)
    finally:
        ray.shutdown()
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


def start_local(
    policy: PolicySource = None,
    *,
    host: str | None = None,
    port: int | None = None,
    num_cpus: int | None = None,
    object_store_bytes: int = DEFAULT_OBJECT_STORE_BYTES,
    metrics_port: int | None = None,
    **overrides: Unpack[ReplicaKwargs],
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

    Raises:
        ConfigError: For a bad policy or option (checked before Ray starts).
        ServiceError: If the port is in use (checked before Ray starts).
    """
    loaded = resolved_policy(policy, host=host, port=port, **overrides)
    host, port = loaded.service.host, loaded.service.port
    check_port_free(host, port)
    if host in _LOOPBACK and "ray" not in sys.modules:
        # Ray swaps a loopback node address for the machine's network address; this
        # switch (read when ray is imported) keeps a local-only service on loopback.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = require("ray", extra="serve", feature="truthlens serve")
    owns = not ray.is_initialized()
    temp_dir = None
    try:
        if owns:
            # A short path: Ray's unix sockets live under it (~107 character limit).
            temp_dir = tempfile.mkdtemp(prefix="tlray-")
            _init_local_ray(
                temp_dir,
                num_cpus=num_cpus,
                object_store_bytes=object_store_bytes,
                metrics_port=metrics_port,
            )
        url = _run(loaded, host=host, port=port)
    except BaseException:
        if owns:
            _clean_up(ray, temp_dir)
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
    **overrides: Unpack[ServiceKwargs],
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
    loaded = resolved_policy(policy, host=host, port=port, **overrides)
    ray.init(address=address, log_to_driver=False, configure_logging=False)
    url = _run(loaded, host=loaded.service.host, port=loaded.service.port)
    return LocalService(url=url, owns_ray=False)


def _run(policy: Policy, *, host: str, port: int) -> str:
    from ray import serve

    from ._app import APP_NAME, service_app

    serve.start(http_options={"host": host, "port": port})
    serve.run(service_app(policy), name=APP_NAME, route_prefix="/", blocking=False)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # noqa: S104 - a comparison
    return f"http://{shown}:{port}"
