"""Tests of ``core/observability/_tracing.py``: OpenTelemetry spans per stage."""

from __future__ import annotations

import sys

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tests._samples import ANSWER, SPANS
from truthlens_integrations.core.observability import Tracer
from truthlens_integrations.core.observability._tracing import HALLUCINATION_EVENT

# --- tracing -------------------------------------------------------------------


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracer(exporter: InMemorySpanExporter) -> Tracer:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Tracer(provider)


def test_a_span_per_stage_with_parent(tracer: Tracer, exporter: InMemorySpanExporter) -> None:
    with tracer.stage("guard", decision="medical_assistant", mode="premium") as guard:
        with tracer.stage("classifier") as classifier:
            needed = True
            classifier.set_attribute("truthlens.fact_check_needed", needed)
        with tracer.stage("detector"):
            pass
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"truthlens.guard", "truthlens.classifier", "truthlens.detector"}
    root = spans["truthlens.guard"]
    assert root.attributes is not None
    assert root.attributes["truthlens.decision"] == "medical_assistant"
    assert root.attributes["truthlens.stage"] == "guard"
    for child in ("truthlens.classifier", "truthlens.detector"):
        parent = spans[child].parent
        assert parent is not None
        assert parent.span_id == root.context.span_id
    classifier_attrs = spans["truthlens.classifier"].attributes
    assert classifier_attrs is not None
    assert classifier_attrs["truthlens.fact_check_needed"] is True
    assert guard.elapsed_s > 0
    assert root.attributes["truthlens.latency_ms"] == pytest.approx(guard.elapsed_ms)


def test_hallucination_span_events(tracer: Tracer, exporter: InMemorySpanExporter) -> None:
    with tracer.stage("nli") as stage:
        for span in SPANS:
            stage.record_hallucination_span(span, action="block", include_details=False)
    with tracer.stage("decision"):
        tracer.record_hallucination_span(SPANS[0], action="header", include_details=True)
    finished = {s.name: s for s in exporter.get_finished_spans()}
    events = finished["truthlens.nli"].events
    assert [e.name for e in events] == [HALLUCINATION_EVENT, HALLUCINATION_EVENT]
    first = events[0].attributes
    assert first is not None
    assert first["truthlens.span.start"] == ANSWER.index("1950")
    assert first["truthlens.span.end"] == ANSWER.index("1950") + 4
    assert first["truthlens.span.nli_label"] == "contradiction"
    assert first["truthlens.span.severity"] == 4
    assert first["truthlens.action"] == "block"
    assert "truthlens.span.text" not in first
    detailed = finished["truthlens.decision"].events[0].attributes
    assert detailed is not None
    assert detailed["truthlens.span.text"] == "1950"
    assert detailed["truthlens.action"] == "header"


def test_stage_records_exceptions(tracer: Tracer, exporter: InMemorySpanExporter) -> None:
    with pytest.raises(RuntimeError), tracer.stage("detector"):
        raise RuntimeError("model crashed")
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert any(e.name == "exception" for e in span.events)


def test_tracer_is_a_noop_without_opentelemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    tracer = Tracer()
    assert not tracer.enabled
    with tracer.stage("detector") as stage:
        stage.set_attribute("a", 1)
        stage.record_hallucination_span(SPANS[0], action="header", include_details=True)
    tracer.record_hallucination_span(SPANS[0], action="header")
    assert stage.span is None
    assert stage.elapsed_s >= 0
