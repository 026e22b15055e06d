"""OpenTelemetry spans per pipeline stage (a no-op without opentelemetry)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .._types import HallucinationSpan
from ._logging import import_optional

if TYPE_CHECKING:
    from opentelemetry.trace import Span, TracerProvider

__all__ = ["HALLUCINATION_EVENT", "SPAN_PREFIX", "StageSpan", "Tracer", "hallucination_attributes"]

logger = logging.getLogger(__name__)

SPAN_PREFIX = "truthlens."
HALLUCINATION_EVENT = "truthlens.hallucination_span"
AttributeValue = str | bool | int | float


def hallucination_attributes(
    span: HallucinationSpan, *, action: str, include_details: bool
) -> dict[str, AttributeValue]:
    """Event attributes of one hallucination span.

    Args:
        span: The span, with its NLI fields when the explainer ran.
        action: The action taken (header, body, block, none).
        include_details: Add the span text; off by default in policies, since the
            text may be what a ``block`` action withheld.

    Returns:
        ``truthlens.span.*`` attributes (unset NLI fields are left out).
    """
    attrs: dict[str, AttributeValue] = {
        "truthlens.span.start": span.start,
        "truthlens.span.end": span.end,
        "truthlens.span.confidence": span.confidence,
        "truthlens.action": action,
    }
    if span.nli_label is not None:
        attrs["truthlens.span.nli_label"] = span.nli_label
    if span.nli_confidence is not None:
        attrs["truthlens.span.nli_confidence"] = span.nli_confidence
    if span.severity is not None:
        attrs["truthlens.span.severity"] = span.severity
    if include_details:
        attrs["truthlens.span.text"] = span.text
    return attrs


class StageSpan:
    """Handle of one stage: its OpenTelemetry span (or ``None``) and its duration.

    Attributes:
        name: Stage name.
        span: The OpenTelemetry span; ``None`` when tracing is off.
        elapsed_s: Seconds the stage took; set when the ``with`` block exits.
    """

    def __init__(self, name: str, span: Span | None) -> None:
        self.name = name
        self.span = span
        self.elapsed_s = 0.0

    @property
    def elapsed_ms(self) -> float:
        """Milliseconds the stage took."""
        return self.elapsed_s * 1000.0

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        """Set an attribute on the stage span (ignored when tracing is off)."""
        if self.span is not None:
            self.span.set_attribute(key, value)

    def add_event(self, name: str, attributes: Mapping[str, AttributeValue] | None = None) -> None:
        """Add an event to the stage span (ignored when tracing is off)."""
        if self.span is not None:
            self.span.add_event(name, dict(attributes or {}))

    def record_hallucination_span(
        self, span: HallucinationSpan, *, action: str, include_details: bool = False
    ) -> None:
        """Add a ``truthlens.hallucination_span`` event (see :func:`hallucination_attributes`)."""
        self.add_event(
            HALLUCINATION_EVENT,
            hallucination_attributes(span, action=action, include_details=include_details),
        )


class Tracer:
    """Opens one OpenTelemetry span per pipeline stage, named ``truthlens.<stage>``.

    Without opentelemetry installed (the ``observability`` extra) the stages still
    time themselves, and everything else is a no-op.

    Args:
        tracer_provider: Provider to take the tracer from; ``None`` uses the global one.
        name: Instrumentation scope name.
        enabled: ``False`` turns tracing off.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        name: str = "truthlens_integrations",
        enabled: bool = True,
    ) -> None:
        self._tracer: Any = None
        self._trace: Any = None
        missing = "opentelemetry is not installed; tracing is disabled"
        trace = import_optional("opentelemetry.trace", logger, missing) if enabled else None
        if trace is None:
            return
        self._trace = trace
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self._tracer = provider.get_tracer(name)

    @property
    def enabled(self) -> bool:
        """Whether spans are produced."""
        return self._tracer is not None

    @contextmanager
    def stage(self, name: str, **attributes: AttributeValue) -> Iterator[StageSpan]:
        """Run a block as one stage span, the current span inside it.

        An exception raised in the block is recorded on the span and re-raised.

        Args:
            name: Stage name, e.g. ``classifier``, ``detector``, ``nli``, ``guard``.
            **attributes: Span attributes (``truthlens.`` is prepended to their names).

        Yields:
            The stage handle; its ``elapsed_s`` is set on exit.
        """
        start = time.perf_counter()
        if self._tracer is None:
            handle = StageSpan(name, None)
            try:
                yield handle
            finally:
                handle.elapsed_s = time.perf_counter() - start
            return
        attrs = {f"truthlens.{k}": v for k, v in attributes.items()}
        attrs["truthlens.stage"] = name
        with self._tracer.start_as_current_span(SPAN_PREFIX + name, attributes=attrs) as span:
            handle = StageSpan(name, span)
            try:
                yield handle
            finally:
                handle.elapsed_s = time.perf_counter() - start
                span.set_attribute("truthlens.latency_ms", handle.elapsed_ms)

    def record_hallucination_span(
        self,
        span: HallucinationSpan,
        *,
        action: str,
        include_details: bool = False,
        stage: StageSpan | None = None,
    ) -> None:
        """Add a hallucination event to ``stage``'s span, or to the current span.

        Args:
            span: The hallucination span.
            action: The action taken.
            include_details: Add the span text.
            stage: Stage to attach to; the current OpenTelemetry span by default.
        """
        attrs = hallucination_attributes(span, action=action, include_details=include_details)
        if stage is not None:
            stage.add_event(HALLUCINATION_EVENT, attrs)
        elif self._trace is not None:
            current = self._trace.get_current_span()
            if current.is_recording():
                current.add_event(HALLUCINATION_EVENT, attrs)
