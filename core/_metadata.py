"""The ``Verdict.metadata`` dict: the design's response headers as plain strings.

Keys are lower-case HTTP header names so that any adapter or HTTP layer can emit
them unchanged. Values follow the design's examples: ``true`` / ``false``, scores
with four decimals, whole milliseconds, and spans joined by ``"; "``
(``x-vsr-hallucination-spans: 1950; 500 meters``).

An answer that was not checked never reads as clean: ``x-truthlens-checked`` is
``false``, ``x-truthlens-not-checked-reason`` says why, the score is ``n/a`` and both
``detected`` headers are ``unknown`` rather than ``false``. ``x-truthlens-enabled`` is
the route's setting, as the verdict's ``enabled``; ``x-truthlens-checked`` says whether
this answer was checked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._types import HallucinationSpan

__all__ = ["METADATA_KEYS", "SPAN_SEPARATOR", "build_metadata", "format_spans"]

METADATA_KEYS: tuple[str, ...] = (
    "x-truthlens-enabled",
    "x-truthlens-mode",
    "x-truthlens-score",
    "x-truthlens-detected",
    "x-truthlens-iterations",
    "x-truthlens-latency-ms",
    "x-vsr-fact-check-needed",
    "x-vsr-hallucination-detected",
    "x-vsr-hallucination-spans",
    "x-vsr-nli-contradictions",
    "x-vsr-max-severity",
    "x-vsr-unverified-factual-response",
    "x-vsr-verification-context-missing",
    "x-truthlens-checked",
    "x-truthlens-not-checked-reason",
    "x-truthlens-context-instructions",
    "x-truthlens-context-not-read",
)

SPAN_SEPARATOR = "; "
_UNSAFE = re.compile(r"[\x00-\x1f\x7f;]+")


def _flag(value: bool) -> str:
    return "true" if value else "false"


def format_spans(spans: Sequence[HallucinationSpan], *, include_text: bool) -> str:
    """Spans as one header value.

    Args:
        spans: The verdict's spans, in answer order.
        include_text: Span texts (``1950; 500 meters``) when true; otherwise only
            character offsets (``27-31; 45-55``), so a withheld answer does not leak.

    Returns:
        The spans joined by ``"; "``; control characters and ``;`` inside a span
        text become spaces so the list stays parseable and the header stays valid.
    """
    if include_text:
        parts = [" ".join(_UNSAFE.sub(" ", s.text).split()) for s in spans]
    else:
        parts = [f"{s.start}-{s.end}" for s in spans]
    return SPAN_SEPARATOR.join(parts)


def _span_headers(spans: Sequence[HallucinationSpan], *, include_details: bool) -> dict[str, str]:
    """The three headers that describe the kept spans."""
    contradictions = sum(1 for s in spans if s.nli_label == "contradiction")
    severity = max((s.severity or 0 for s in spans), default=0)
    return {
        "x-vsr-hallucination-spans": format_spans(spans, include_text=include_details),
        "x-vsr-nli-contradictions": str(contradictions),
        "x-vsr-max-severity": str(severity),
    }


def build_metadata(
    *,
    enabled: bool,
    mode: str,
    score: float | None = None,
    detected: bool | None = False,
    iterations: int = 0,
    latency_ms: float = 0.0,
    fact_check_needed: bool = False,
    spans: Sequence[HallucinationSpan] = (),
    unverified_factual: bool = False,
    context_missing: bool = False,
    include_details: bool = True,
    not_checked_reason: str | None = None,
    context_instructions: int = 0,
    context_not_read: int = 0,
) -> dict[str, str]:
    """Build the metadata dict with exactly the keys of :data:`METADATA_KEYS`.

    Args:
        enabled: Whether detection is enabled for the route (not: whether it ran).
        mode: The operating mode.
        score: Response hallucination score (``n/a`` when ``None``).
        detected: Whether the score reached the threshold (``unknown`` when ``None``).
        iterations: Refinement iterations performed.
        latency_ms: Detection / mitigation latency, written in whole milliseconds.
        fact_check_needed: The prompt classifier's verdict.
        spans: The spans that survived the NLI filter (labels and severities set).
        unverified_factual: A factual prompt was answered without grounding.
        context_missing: There was no context to verify against.
        include_details: Span texts in ``x-vsr-hallucination-spans`` (else offsets).
        not_checked_reason: Why the answer was not checked (``NotCheckedReason``);
            ``None`` when it was. Then score ``n/a`` and ``detected`` ``unknown``.
        context_instructions: Passages left out: they carry instructions, and
        context_not_read: they are in a language the detector does not read.

    Returns:
        Header name to header value, all strings.
    """
    checked = not_checked_reason is None
    found = _flag(detected) if checked and detected is not None else "unknown"
    metadata = {
        "x-truthlens-enabled": _flag(enabled),
        "x-truthlens-mode": mode,
        "x-truthlens-score": f"{score:.4f}" if checked and score is not None else "n/a",
        "x-truthlens-detected": found,
        "x-truthlens-iterations": str(int(iterations)),
        "x-truthlens-latency-ms": str(round(latency_ms)),
        "x-vsr-fact-check-needed": _flag(fact_check_needed),
        "x-vsr-hallucination-detected": found,
        **_span_headers(spans, include_details=include_details),
        "x-vsr-unverified-factual-response": _flag(unverified_factual),
        "x-vsr-verification-context-missing": _flag(context_missing),
        "x-truthlens-checked": _flag(checked),
        "x-truthlens-not-checked-reason": not_checked_reason or "",
        "x-truthlens-context-instructions": str(int(context_instructions)),
        "x-truthlens-context-not-read": str(int(context_not_read)),
    }
    assert tuple(metadata) == METADATA_KEYS  # keeps the key list and the dict in step
    return metadata
