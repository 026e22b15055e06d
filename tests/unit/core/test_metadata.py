"""Tests of ``core/_metadata.py``: the verdict's x-* headers."""

from __future__ import annotations

from tests._samples import SPANS, span
from truthlens_integrations.core import HallucinationSpan
from truthlens_integrations.core._metadata import METADATA_KEYS, build_metadata, format_spans

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
    assert len(METADATA_KEYS) == 17
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
        "x-truthlens-context-not-read": "0",
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
    mixed = [span("1950", "neutral", 2), span("500 meters", None, None)]
    hidden = build_metadata(enabled=True, mode="standard", spans=mixed, include_details=False)
    assert hidden["x-vsr-hallucination-spans"] == "30-34; 42-52"
    assert hidden["x-vsr-nli-contradictions"] == "0"
    assert hidden["x-vsr-max-severity"] == "2"


def test_span_texts_are_header_safe() -> None:
    odd = HallucinationSpan(start=0, end=9, text="a;\nb\r\tc", confidence=0.9)
    assert format_spans([odd], include_text=True) == "a b c"
