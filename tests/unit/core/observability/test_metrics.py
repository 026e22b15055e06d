"""Tests of ``core/observability/_metrics.py``: Prometheus metrics."""

from __future__ import annotations

import sys

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from truthlens_integrations.core.observability import Metrics

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
