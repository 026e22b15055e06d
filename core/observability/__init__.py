"""Observability: Prometheus metrics, OpenTelemetry spans and structured logging.

Everything here works without the ``observability`` extra: metrics and spans then
become no-ops, and stages still time themselves.
"""

from __future__ import annotations

from ._logging import FIELDS_ATTRIBUTE, JsonFormatter, get_logger, log_event
from ._metrics import (
    ITERATION_BUCKETS,
    LATENCY_BUCKETS,
    METRIC_NAMES,
    SCORE_BUCKETS,
    Metrics,
)
from ._tracing import (
    HALLUCINATION_EVENT,
    SPAN_PREFIX,
    StageSpan,
    Tracer,
    hallucination_attributes,
)

__all__ = [
    "FIELDS_ATTRIBUTE",
    "HALLUCINATION_EVENT",
    "ITERATION_BUCKETS",
    "LATENCY_BUCKETS",
    "METRIC_NAMES",
    "SCORE_BUCKETS",
    "SPAN_PREFIX",
    "JsonFormatter",
    "Metrics",
    "StageSpan",
    "Tracer",
    "get_logger",
    "hallucination_attributes",
    "log_event",
]
