"""Sample data the tests share: spans on the Eiffel answer, a valid calibration file."""

from __future__ import annotations

from truthlens_integrations.core import HallucinationSpan

ANSWER = "The Eiffel Tower was built in 1950 and is 500 meters tall."


def span(text: str, label: str | None, severity: int | None) -> HallucinationSpan:
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


SPANS = [span("1950", "contradiction", 4), span("500 meters", "contradiction", 4)]


def valid_calibration_file() -> dict[str, object]:
    return {
        "format": "truthlens-response-calibration/1",
        "model": "bundled",
        "response_calibration": {"max_logit": 0.5, "log_sentences": 0.1, "bias": -1.0},
        "threshold": 0.4,
    }
