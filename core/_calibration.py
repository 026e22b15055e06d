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
    "BUNDLED_CALIBRATIONS",
    "CALIBRATION_FORMAT",
    "RESPONSE_COEFFICIENTS",
    "CalibrationFile",
    "bundled_calibration_names",
    "read_calibration_file",
    "resolve_calibration",
]

#: The calibration files that ship with the package, each selected by its name (``rag``).
BUNDLED_CALIBRATIONS = Path(__file__).resolve().parent / "_bundled" / "calibrations"

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
    "rule_sentence_floor",
    "bias",
)
_COEFFICIENTS = frozenset(RESPONSE_COEFFICIENTS)
_REQUIRED = ("max_logit", "log_sentences", "bias")


def _check_long_map(entry: Any) -> None:
    where = "response_calibration: long_answers"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected an object")
    unknown = set(entry) - (_COEFFICIENTS - {"rule_floor", "rule_sentence_floor"})
    unknown -= {"from_sentences"}
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}")
    start = entry.get("from_sentences")
    if isinstance(start, bool) or not isinstance(start, int) or start < 2:
        raise ValueError(f"{where}: 'from_sentences' must be an int >= 2, got {start!r}")
    _check_map({k: v for k, v in entry.items() if k != "from_sentences"})


def _check_map(entry: dict[str, Any]) -> None:
    unknown = set(entry) - _COEFFICIENTS - {"fitted_on", "long_answers"}
    if unknown:
        raise ValueError(f"response_calibration: unknown key(s) {sorted(unknown)}")
    for key in _REQUIRED:
        if key not in entry:
            raise ValueError(f"response_calibration: missing {key!r}")
    for key, value in entry.items():
        if key == "long_answers":
            _check_long_map(value)
            continue
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
        if key == "rule_sentence_floor" and value not in (0, 1):
            raise ValueError(
                f"response_calibration: 'rule_sentence_floor' must be 0 or 1, got {value}"
            )


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


def bundled_calibration_names() -> tuple[str, ...]:
    """The names of the bundled calibration files (``("rag",)``), sorted."""
    return tuple(sorted(p.stem for p in BUNDLED_CALIBRATIONS.glob("*.json")))


def resolve_calibration(name_or_path: str | os.PathLike[str]) -> Path:
    """The file behind a calibration setting: a bundled name's file, else the path itself.

    A string equal to a bundled name (``"rag"``) selects the bundled file; any other
    string, and every :class:`os.PathLike`, is a path (``./rag`` reads a file named
    ``rag``).

    Raises:
        ConfigError: If it is neither a bundled name nor an existing file (the message
            lists the bundled names).
    """
    names = bundled_calibration_names()
    if isinstance(name_or_path, str) and name_or_path in names:
        return BUNDLED_CALIBRATIONS / f"{name_or_path}.json"
    file = Path(name_or_path)
    if not file.exists():
        raise ConfigError(
            f"calibration {str(name_or_path)!r} is neither a bundled calibration "
            f"({', '.join(names)}) nor an existing file"
        )
    return file


def read_calibration_file(path: str | os.PathLike[str]) -> CalibrationFile:
    """Read and validate a calibration file, or the bundled one a name selects.

    Args:
        path: A bundled calibration's name (:func:`bundled_calibration_names`: ``"rag"``,
            the map fitted on RAG answers) or the path of a file ``truthlens calibrate``
            wrote.

    Raises:
        ConfigError: If it names no bundled calibration and no existing file, or the file
            is unreadable, not JSON (``NaN`` included), or malformed.
    """
    file = resolve_calibration(path)
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
