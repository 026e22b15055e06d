"""Sample data the tests share: spans on the Eiffel answer, a valid calibration file."""

from __future__ import annotations

import json
from pathlib import Path

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


# The coefficients of a map ``truthlens calibrate`` fitted for the bundled detector on the
# select split of ragtruth_dev (issue 27's candidate 4a): it reads words and the unit rule.
RAG_MAP = {
    "max_logit": 0.0,
    "sentence_peak": 0.191904,
    "log_sentences": 0.0,
    "absent_words": 1.42506,
    "flagged_tokens": 0.244983,
    "number_conflicts": 7.652218,
    "bias": -5.860455,
}


def rag_map_file(folder: Path) -> Path:
    """:data:`RAG_MAP` as a calibration file for the bundled detector (``rag.json``)."""
    path = folder / "rag.json"
    content = {
        "format": "truthlens-response-calibration/1",
        "model": "bundled",
        "response_calibration": RAG_MAP,
        "threshold": 0.5,
    }
    path.write_text(json.dumps(content))
    return path


def valid_calibration_file() -> dict[str, object]:
    return {
        "format": "truthlens-response-calibration/1",
        "model": "bundled",
        "response_calibration": {"max_logit": 0.5, "log_sentences": 0.1, "bias": -1.0},
        "threshold": 0.4,
    }
