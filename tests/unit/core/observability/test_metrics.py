from __future__ import annotations

import json
import logging
import sys

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client import CollectorRegistry, generate_latest

from truthlens_integrations.core import HallucinationSpan
from truthlens_integrations.core._metadata import METADATA_KEYS, build_metadata, format_spans
from truthlens_integrations.core.observability import JsonFormatter, Metrics, Tracer, get_logger
from truthlens_integrations.core.observability._logging import log_event
from truthlens_integrations.core.observability._tracing import HALLUCINATION_EVENT

ANSWER = "The Eiffel Tower was built in 1950 and is 500 meters tall."


def _span(text: str, label: str | None, severity: int | None) -> HallucinationSpan:
    start = ANSWER.index(text)
    return HallucinationSpan(
        start=start,
        end=start + len(text),
        text=text,
        confidence=0.92,
        nli_label=label,  # type: ignore[arg-type]
        nli_confidence=0.95 if label else None,
        severity=severity,
    )


SPANS = [_span("1950", "contradiction", 4), _span("500 meters", "contradiction", 4)]


# --- metrics -------------------------------------------------------------------


def test_metrics_read_back_from_a_registry() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    assert metrics.enabled
    metrics.record_detection(
        decision="medical_assistant", mode="premium", detected=True, score=0.92, iterations=2
    )
    metrics.record_detection(
        decision="medical_assistant", mode="premium", detected=True, score=0.71, iterations=3
    )
    metrics.record_detection(decision=None, mode="lightweight", detected=False, score=0.05)
    metrics.observe_latency(mode="premium", operation="detector", seconds=0.045)
    metrics.record_model_use(model="gpt-4-turbo", role="verifier", count=2)
    metrics.record_model_use(model="gpt-4-turbo", role="verifier")

    get = registry.get_sample_value
    labels = {"decision": "medical_assistant", "mode": "premium"}
    assert get("truthlens_detections_total", {**labels, "detected": "true"}) == 2
    assert get("truthlens_detections_total", {**labels, "detected": "false"}) is None
    assert (
        get(
            "truthlens_detections_total",
            {"decision": "default", "mode": "lightweight", "detected": "false"},
        )
        == 1
    )
    assert get("truthlens_score_count", labels) == 2
    assert get("truthlens_score_sum", labels) == pytest.approx(1.63)
    assert get("truthlens_score_bucket", {**labels, "le": "0.8"}) == 1
    assert get("truthlens_iterations_sum", labels) == 5
    assert get("truthlens_iterations_count", {"decision": "default", "mode": "lightweight"}) is None
    latency = {"mode": "premium", "operation": "detector"}
    assert get("truthlens_latency_seconds_count", latency) == 1
    assert get("truthlens_latency_seconds_bucket", {**latency, "le": "0.05"}) == 1
    assert get("truthlens_latency_seconds_bucket", {**latency, "le": "0.025"}) == 0
    assert get("truthlens_models_used_total", {"model": "gpt-4-turbo", "role": "verifier"}) == 3
    text = generate_latest(registry).decode()
    for family in (
        "truthlens_detections_total",
        "truthlens_score",
        "truthlens_latency_seconds",
        "truthlens_iterations",
        "truthlens_models_used",
    ):
        assert f"# TYPE {family}" in text


def test_metrics_created_twice_share_collectors() -> None:
    registry = CollectorRegistry()
    first = Metrics(registry)
    second = Metrics(registry)
    first.record_model_use(model="m", role="detector")
    second.record_model_use(model="m", role="detector")
    assert (
        registry.get_sample_value("truthlens_models_used_total", {"model": "m", "role": "d"})
        is None
    )
    assert (
        registry.get_sample_value("truthlens_models_used_total", {"model": "m", "role": "detector"})
        == 2
    )


def test_metrics_on_the_default_registry_twice() -> None:
    from prometheus_client import REGISTRY

    Metrics().record_model_use(model="default-reg", role="detector")
    Metrics().record_model_use(model="default-reg", role="detector")
    labels = {"model": "default-reg", "role": "detector"}
    assert REGISTRY.get_sample_value("truthlens_models_used_total", labels) == 2


def test_metrics_reuse_collectors_registered_by_someone_else() -> None:
    from prometheus_client import Counter

    registry = CollectorRegistry()
    Counter("truthlens_models_used", "x", ("model", "role"), registry=registry)
    Metrics(registry).record_model_use(model="m", role="r")
    assert (
        registry.get_sample_value("truthlens_models_used_total", {"model": "m", "role": "r"}) == 1
    )


def test_metrics_are_a_noop_without_prometheus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    metrics = Metrics()
    assert not metrics.enabled
    metrics.record_detection(decision="d", mode="standard", detected=True, score=0.5, iterations=1)
    metrics.observe_latency(mode="standard", operation="nli", seconds=0.01)
    metrics.record_model_use(model="m", role="r")


def test_metrics_disabled_flag() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry, enabled=False)
    metrics.record_model_use(model="m", role="r")
    assert (
        registry.get_sample_value("truthlens_models_used_total", {"model": "m", "role": "r"})
        is None
    )


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


# --- metadata ------------------------------------------------------------------


def test_metadata_detected_path() -> None:
    meta = build_metadata(
        enabled=True,
        mode="standard",
        score=0.92,
        detected=True,
        iterations=2,
        latency_ms=76.4,
        fact_check_needed=True,
        spans=SPANS,
    )
    assert tuple(meta) == METADATA_KEYS
    assert len(METADATA_KEYS) == 16
    assert all(isinstance(v, str) for v in meta.values())
    assert meta == {
        "x-truthlens-enabled": "true",
        "x-truthlens-mode": "standard",
        "x-truthlens-score": "0.9200",
        "x-truthlens-detected": "true",
        "x-truthlens-iterations": "2",
        "x-truthlens-latency-ms": "76",
        "x-vsr-fact-check-needed": "true",
        "x-vsr-hallucination-detected": "true",
        "x-vsr-hallucination-spans": "1950; 500 meters",
        "x-vsr-nli-contradictions": "2",
        "x-vsr-max-severity": "4",
        "x-vsr-unverified-factual-response": "false",
        "x-vsr-verification-context-missing": "false",
        "x-truthlens-checked": "true",
        "x-truthlens-not-checked-reason": "",
        "x-truthlens-context-instructions": "0",
    }


def test_metadata_unverified_path_and_hidden_details() -> None:
    meta = build_metadata(
        enabled=False,
        mode="lightweight",
        fact_check_needed=True,
        unverified_factual=True,
        context_missing=True,
        not_checked_reason="no_grounding",
    )
    assert meta["x-truthlens-enabled"] == "false"
    # not checked never reads as clean
    assert meta["x-truthlens-score"] == "n/a"
    assert meta["x-truthlens-detected"] == meta["x-vsr-hallucination-detected"] == "unknown"
    assert meta["x-truthlens-checked"] == "false"
    assert meta["x-truthlens-not-checked-reason"] == "no_grounding"
    assert meta["x-vsr-unverified-factual-response"] == "true"
    assert meta["x-vsr-verification-context-missing"] == "true"
    assert meta["x-vsr-hallucination-spans"] == ""
    assert meta["x-vsr-max-severity"] == "0"
    mixed = [_span("1950", "neutral", 2), _span("500 meters", None, None)]
    hidden = build_metadata(enabled=True, mode="standard", spans=mixed, include_details=False)
    assert hidden["x-vsr-hallucination-spans"] == "30-34; 42-52"
    assert hidden["x-vsr-nli-contradictions"] == "0"
    assert hidden["x-vsr-max-severity"] == "2"


def test_span_texts_are_header_safe() -> None:
    odd = HallucinationSpan(start=0, end=9, text="a;\nb\r\tc", confidence=0.9)
    assert format_spans([odd], include_text=True) == "a b c"


# --- logging -------------------------------------------------------------------


def test_structured_log_event(caplog: pytest.LogCaptureFixture) -> None:
    logger = get_logger("guard")
    assert logger.name == "truthlens_integrations.guard"
    assert get_logger("truthlens_integrations.x").name == "truthlens_integrations.x"
    with caplog.at_level(logging.INFO, logger="truthlens_integrations"):
        log_event(logger, "guard.verdict", decision="medical_assistant", score=0.92, spans=2)
    (record,) = caplog.records
    assert record.truthlens == {  # type: ignore[attr-defined]
        "event": "guard.verdict",
        "decision": "medical_assistant",
        "score": 0.92,
        "spans": 2,
    }
    assert "guard.verdict" in record.getMessage()
    assert "score=0.92" in record.getMessage()
    payload = json.loads(JsonFormatter().format(record))
    assert payload["event"] == "guard.verdict"
    assert payload["decision"] == "medical_assistant"
    assert payload["level"] == "INFO"


def test_log_event_skips_work_below_level(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="truthlens_integrations"):
        log_event(get_logger("quiet"), "debug.thing", level=logging.DEBUG, x=1)
    assert caplog.records == []
