"""Observability: Prometheus metrics, OpenTelemetry spans and structured logging.

Everything here works without the ``observability`` extra: metrics and spans then
become no-ops, and stages still time themselves.
"""

from __future__ import annotations

from ._logging import JsonFormatter, get_logger
from ._metrics import Metrics
from ._tracing import Tracer

__all__ = [
    "JsonFormatter",
    "Metrics",
    "Tracer",
    "get_logger",
]
