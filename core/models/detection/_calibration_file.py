"""A user's response calibration: the file ``truthlens calibrate`` writes and routes read.

The file holds a length-safe response map fitted on the user's own labelled answers
(:func:`fit_response_map`) and the threshold chosen for their precision or false-alarm
target. A policy route points to it (``calibration: path/to/calib.json``); the engine
then re-scores that route's answers with the map (the token probabilities and spans do
not change) and flags them at the file's threshold unless the route sets its own.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..._errors import ConfigError
from ..._types import DetectionInput, DetectionResult, DetectionStatus, TokenScore
from ._adjust import abstentions
from ._lexical import absent_words
from ._response import ResponseCalibration, ResponseSignals, response_signals

__all__ = [
    "CALIBRATION_FORMAT",
    "CalibrationFile",
    "answer_signals",
    "read_calibration_file",
    "rescore",
]

CALIBRATION_FORMAT = "truthlens-response-calibration/1"


class CalibrationFile(BaseModel):
    """The contents of a calibration file (unknown keys, NaN and wrong types rejected).

    Attributes:
        format: Always ``truthlens-response-calibration/1``.
        model: The detector the map was fitted for (``bundled``, a folder, a hub id).
        response_calibration: The map's coefficients (see :class:`ResponseCalibration`).
        threshold: The response score at or above which an answer is flagged.
        token_threshold: The token probability that counted a token as flagged.
        target: How the threshold was chosen (``{"precision": 0.8}``, ``{"false_alarm_rate":
            0.1}`` or ``{}`` for 0.5).
        metrics: What the fit measured on the labelled answers (for the reader).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    format: str
    model: str
    response_calibration: dict[str, Any]
    threshold: float = Field(ge=0.0, le=1.0)
    token_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    target: dict[str, float] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value != CALIBRATION_FORMAT:
            raise ValueError(f"format must be {CALIBRATION_FORMAT!r}, got {value!r}")
        return value

    @field_validator("threshold", "token_threshold")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @field_validator("response_calibration")
    @classmethod
    def _valid_map(cls, value: dict[str, Any]) -> dict[str, Any]:
        ResponseCalibration.from_entry(value)
        return value

    @field_validator("target")
    @classmethod
    def _known_target(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = set(value) - {"precision", "false_alarm_rate"}
        if unknown or any(not (0.0 < v < 1.0) for v in value.values()):
            raise ValueError(
                f"target must be {{'precision' or 'false_alarm_rate': (0, 1)}}: {value}"
            )
        return value

    @property
    def calibration(self) -> ResponseCalibration:
        """The response map."""
        return ResponseCalibration.from_entry(self.response_calibration)


def read_calibration_file(path: str | os.PathLike[str]) -> CalibrationFile:
    """Read and validate a calibration file.

    Raises:
        ConfigError: If the file is missing, not JSON (``NaN`` included), or malformed.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the calibration file {file}: {exc.strerror}") from exc

    def no_constants(name: str) -> float:
        raise ConfigError(f"calibration file {file}: {name} is not a number")

    try:
        raw = json.loads(text, parse_constant=no_constants)
        return CalibrationFile.model_validate(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"calibration file {file} is not valid JSON: {exc.msg}") from exc
    except ValueError as exc:  # pydantic's ValidationError and the map's ConfigError
        raise ConfigError(f"calibration file {file}: {exc}") from exc


def answer_signals(
    item: DetectionInput, tokens: Sequence[TokenScore], *, token_threshold: float = 0.5
) -> ResponseSignals:
    """The response map's signals of one checked answer, as the bundled detector reads them.

    Sentences that only say the sources lack something are left out of the absent words.
    """
    skip = abstentions(item.answer, item.context, item.question)
    absent = absent_words(item, skip)
    return response_signals(
        item.answer,
        tokens,
        [start for start, _ in absent],
        absent_numbers=sum(1 for _, key in absent if key.startswith("#")),
        token_threshold=token_threshold,
    )


def rescore(
    item: DetectionInput, result: DetectionResult, calibration: CalibrationFile, threshold: float
) -> DetectionResult:
    """``result`` with its score from the file's map and its decision at ``threshold``.

    Results that were not checked (unverifiable) are returned unchanged: a calibration
    never turns "not checked" into a verdict.
    """
    if not result.grounded:
        return result
    signals = answer_signals(item, result.tokens, token_threshold=calibration.token_threshold)
    score = calibration.calibration.score(signals)
    detected = score >= threshold
    return result.model_copy(
        update={
            "score": score,
            "threshold": threshold,
            "detected": detected,
            "status": DetectionStatus.HALLUCINATED if detected else DetectionStatus.SUPPORTED,
        }
    )
