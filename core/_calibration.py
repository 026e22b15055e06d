"""The calibration file ``truthlens calibrate`` writes and policy routes point to.

Read and checked here, with no model code, so a policy can validate the file it names
when it loads (the response map itself is :class:`ResponseCalibration` in
``core.models.detection``).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._errors import ConfigError

__all__ = [
    "CALIBRATION_FORMAT",
    "RESPONSE_COEFFICIENTS",
    "CalibrationFile",
    "read_calibration_file",
]

#: The coefficient keys of a response map, in the order the detector reads them (one
#: definition for the bundled folder's map and for calibration files).
RESPONSE_COEFFICIENTS = (
    "max_logit",
    "sentence_peak",
    "log_sentences",
    "absent_words",
    "absent_numbers",
    "flagged_tokens",
    "number_conflicts",
    "negation_conflicts",
    "rule_floor",
    "bias",
)
_COEFFICIENTS = frozenset(RESPONSE_COEFFICIENTS)
_REQUIRED = ("max_logit", "log_sentences", "bias")


def _check_map(entry: dict[str, Any]) -> None:
    unknown = set(entry) - _COEFFICIENTS - {"fitted_on"}
    if unknown:
        raise ValueError(f"response_calibration: unknown key(s) {sorted(unknown)}")
    for key in _REQUIRED:
        if key not in entry:
            raise ValueError(f"response_calibration: missing {key!r}")
    for key, value in entry.items():
        if key == "fitted_on":
            if not isinstance(value, str):
                raise ValueError("response_calibration: 'fitted_on' must be a string")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"response_calibration: {key!r} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"response_calibration: {key!r} must be finite")
        if key == "rule_floor" and not 0.0 <= value <= 1.0:
            raise ValueError(f"response_calibration: 'rule_floor' must be in [0, 1], got {value}")


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
        _check_map(value)
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
