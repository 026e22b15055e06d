"""Prometheus metrics with the design's names and labels (a no-op without prometheus_client)."""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError
from ._logging import import_optional

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = [
    "ITERATION_BUCKETS",
    "LATENCY_BUCKETS",
    "METRIC_NAMES",
    "SCORE_BUCKETS",
    "Metrics",
]

logger = logging.getLogger(__name__)

#: Family names; prometheus_client exposes counters with a ``_total`` sample suffix
#: (``truthlens_models_used_total``), as the OpenMetrics format requires.
METRIC_NAMES = (
    "truthlens_detections_total",
    "truthlens_score",
    "truthlens_latency_seconds",
    "truthlens_iterations",
    "truthlens_models_used",
)
SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
ITERATION_BUCKETS = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0)
NO_DECISION = "default"


@dataclass(frozen=True)
class _Collectors:
    detections: Any
    score: Any
    latency: Any
    iterations: Any
    models: Any


# One set of collectors per registry, so creating Metrics twice on the same registry
# reuses them instead of failing with "Duplicated timeseries".
_BY_REGISTRY: weakref.WeakKeyDictionary[Any, _Collectors] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _existing(registry: Any, name: str) -> Any:
    # prometheus_client has no public lookup by name; read its index defensively.
    index = getattr(registry, "_names_to_collectors", {})
    return index.get(name)


def _make(prom: Any, registry: Any) -> _Collectors:
    def build(kind: str, name: str, doc: str, labels: tuple[str, ...], **kw: Any) -> Any:
        try:
            return getattr(prom, kind)(name, doc, labels, registry=registry, **kw)
        except ValueError:
            found = _existing(registry, name)
            if found is None:
                raise
            if tuple(getattr(found, "_labelnames", ())) != labels:
                raise ConfigError(
                    f"metric {name!r} is already registered with other labels "
                    f"{getattr(found, '_labelnames', ())}"
                ) from None
            return found

    return _Collectors(
        detections=build(
            "Counter",
            "truthlens_detections_total",
            "Total detection operations.",
            ("decision", "mode", "detected"),
        ),
        score=build(
            "Histogram",
            "truthlens_score",
            "Distribution of response hallucination scores.",
            ("decision", "mode"),
            buckets=SCORE_BUCKETS,
        ),
        latency=build(
            "Histogram",
            "truthlens_latency_seconds",
            "Processing latency per operation.",
            ("mode", "operation"),
            buckets=LATENCY_BUCKETS,
        ),
        iterations=build(
            "Histogram",
            "truthlens_iterations",
            "Refinement iterations per request.",
            ("decision", "mode"),
            buckets=ITERATION_BUCKETS,
        ),
        models=build(
            "Counter",
            "truthlens_models_used",
            "Model calls by role.",
            ("model", "role"),
        ),
    )


class Metrics:
    """The design's Prometheus metrics; every method is a no-op without prometheus_client.

    Args:
        registry: Registry to register on; ``None`` uses prometheus_client's global
            ``REGISTRY`` (what ``start_http_server`` and ``generate_latest`` expose).
            Creating several :class:`Metrics` on one registry shares the collectors.
        enabled: ``False`` makes every method a no-op.

    Raises:
        ConfigError: If another library registered one of the names with other labels.
    """

    def __init__(self, registry: CollectorRegistry | None = None, *, enabled: bool = True) -> None:
        self._c: _Collectors | None = None
        missing = "prometheus_client is not installed; metrics are disabled"
        prom = import_optional("prometheus_client", logger, missing) if enabled else None
        if prom is None:
            return
        target = registry if registry is not None else prom.REGISTRY
        with _LOCK:
            collectors = _BY_REGISTRY.get(target)
            if collectors is None:
                collectors = _BY_REGISTRY[target] = _make(prom, target)
        self._c = collectors

    @property
    def enabled(self) -> bool:
        """Whether metrics are recorded."""
        return self._c is not None

    def record_detection(
        self,
        *,
        decision: str | None,
        mode: str,
        detected: bool | None,
        score: float | None = None,
        iterations: int | None = None,
    ) -> None:
        """Count one detection and observe its score and iterations.

        Args:
            decision: Decision name; ``None`` is recorded as ``default``.
            mode: Operating mode.
            detected: Whether the answer was flagged; ``None`` (label ``unknown``)
                when it was not checked, so a not-checked answer is never counted clean.
            score: Response score, when detection produced one.
            iterations: Refinement iterations, when the mode ran any loop.
        """
        if self._c is None:
            return
        name = decision or NO_DECISION
        label = "unknown" if detected is None else "true" if detected else "false"
        self._c.detections.labels(name, mode, label).inc()
        if score is not None:
            self._c.score.labels(name, mode).observe(score)
        if iterations is not None:
            self._c.iterations.labels(name, mode).observe(iterations)

    def observe_latency(self, *, mode: str, operation: str, seconds: float) -> None:
        """Observe the latency of one operation (``classifier``, ``detector``, ``nli``, ...)."""
        if self._c is not None:
            self._c.latency.labels(mode, operation).observe(seconds)

    def record_model_use(self, *, model: str, role: str, count: int = 1) -> None:
        """Count calls of a model in a role (``detector``, ``verifier``, ``judge``, ...)."""
        if self._c is not None:
            self._c.models.labels(model, role).inc(count)
