"""The calibration file ``truthlens calibrate`` writes and policy routes point to.

Read and checked here, with no model code, so a policy can validate the file it names
when it loads (the response map itself is :class:`~._map.ResponseCalibration`). The
rules a stored map is read by, a file's or a model folder's, are :func:`check_response_map`.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._errors import ConfigError
from .._json import JSONFormatError, loads_strict
from ._signals import COEFFICIENTS, TERMS

__all__ = [
    "CALIBRATION_FORMAT",
    "MAX_CALIBRATION_BYTES",
    "MAX_COEFFICIENT",
    "CalibrationFile",
    "check_calibration_detector",
    "check_response_map",
    "is_bundled",
    "read_calibration_file",
]

_COEFFICIENTS = frozenset(COEFFICIENTS)
# Terms a file's map may not hold: no fit writes them (see _signals.Term.fitted).
_UNFITTED = frozenset(t.name for t in TERMS if not t.fitted)
_REQUIRED = ("max_logit", "log_sentences", "bias")
# The terms that read the detector's hallucination logit: a map must weigh at least one
# of them, or the detector's reading would not move the score at all.
_DETECTOR_TERMS = ("max_logit", "sentence_peak")

#: The largest magnitude a coefficient (the bias included) may have. Fitted maps stay
#: well under 20 (the fit's ridge penalty keeps them finite and small); larger values
#: only decide by overflow of the logistic function.
MAX_COEFFICIENT = 100.0

#: The largest calibration file read (a fitted file is a few KiB).
MAX_CALIBRATION_BYTES = 1 << 20

#: What a calibration file's ``model`` says for the bundled detector, and the model id
#: the bundled detector reports (``load_detector()``).
_BUNDLED = "bundled"
_BUNDLED_MODEL_ID = "truthlens-bundled-detector"
_BUNDLED_FOLDER = Path(__file__).resolve().parents[1] / "_bundled" / "detector"


# What a model folder's map may hold besides its coefficients (what the fit measured).
_FOLDER_KEYS = frozenset({"threshold", "metrics", "features"})
_FLOORS = frozenset({"rule_floor", "rule_sentence_floor"})


def check_response_map(entry: Any, *, where: str, in_file: bool) -> None:
    """The one set of rules a response map is read by, wherever it comes from.

    A calibration file's map (checked when the file is read: a policy that names it, or
    ``truthlens eval --calibration``) and a model folder's own map (``truthlens.
    response_calibration`` in its ``config.json``, checked when the model loads and when
    :meth:`ResponseCalibration.from_entry` reads it) go through these rules, with the same
    messages. A file must also be length-safe and in range (:func:`_check_direction`): it
    is fitted by a user on a few labels; a shipped folder's map may lower the score of
    longer answers (``log_sentences < 0``) but never weigh the token model negatively.

    Args:
        entry: The map, as read from JSON.
        where: What the messages start with (``response_calibration``).
        in_file: Whether the map is a calibration file's (else a model folder's).

    Raises:
        ConfigError: Naming ``where`` and the key.
    """
    allowed = _COEFFICIENTS | {"fitted_on", "long_answers"}
    if in_file:
        _refuse_unfitted(entry, where)
    _check_coefficients(entry, where, allowed if in_file else allowed | _FOLDER_KEYS)
    if "fitted_on" in entry and not isinstance(entry["fitted_on"], str):
        raise ConfigError(f"{where}: 'fitted_on' must be a string")
    inner = entry.get("long_answers")
    long_where = f"{where}: long_answers"
    if inner is not None or "long_answers" in entry:
        if in_file:
            _refuse_unfitted(inner, long_where)
        _check_coefficients(inner, long_where, (_COEFFICIENTS - _FLOORS) | {"from_sentences"})
        start = inner.get("from_sentences")
        if isinstance(start, bool) or not isinstance(start, int) or start < 2:
            raise ConfigError(f"{long_where}: 'from_sentences' must be an int >= 2, got {start!r}")
    for part, at in ((entry, where), (inner, long_where)):
        if not isinstance(part, dict):
            continue
        if in_file:
            _check_direction(part, at)
        elif part.get("max_logit", 0) < 0:
            raise ConfigError(f"{at}: 'max_logit' is {part['max_logit']!r}; it must be >= 0")


def _refuse_unfitted(entry: Any, where: str) -> None:
    """Refuse, in a file's map, a term no fit writes (the claim term), at any level.

    The claim check runs inside the detector folder that owns it; a route's file re-scores
    the detector's result and has no claim check to read, so the term would be ignored.
    """
    if not isinstance(entry, dict):
        return
    for key in sorted(set(entry) & _UNFITTED):
        raise ConfigError(
            f"{where}: {key!r} belongs to a detector folder's own map, not to a calibration file"
        )


def _check_coefficients(entry: Any, where: str, allowed: frozenset[str]) -> None:
    """An object of known keys whose coefficients are finite numbers, the required ones set."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected an object, got {type(entry).__name__}")
    unknown = set(entry) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}")
    for key in _REQUIRED:
        if key not in entry:
            raise ConfigError(f"{where}: missing {key!r}")
    for key in _COEFFICIENTS & set(entry):
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: {key!r} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ConfigError(f"{where}: {key!r} must be finite, got {value!r}")
        if key == "rule_floor" and not 0.0 <= value <= 1.0:
            raise ConfigError(f"{where}: 'rule_floor' must be in [0, 1], got {value!r}")
        if key == "rule_sentence_floor" and value not in (0, 1):
            raise ConfigError(f"{where}: 'rule_sentence_floor' must be 0 or 1, got {value!r}")


def _check_direction(entry: dict[str, Any], where: str) -> None:
    """Refuse a map that scores a more-hallucinated answer lower, or decides by overflow.

    Every signal but the bias is a maximum or a count that grows with evidence of an
    unsupported claim, so a negative coefficient would lower the score of an answer with
    more such evidence (an all-negative map passed a wrong answer at 0.0).
    """
    for key, value in entry.items():
        if key not in _COEFFICIENTS or key in _FLOORS:
            continue
        if abs(value) > MAX_COEFFICIENT:
            raise ConfigError(
                f"{where}: {key!r} is {value!r}; a coefficient's magnitude must be at most "
                f"{MAX_COEFFICIENT:g}"
            )
        if key != "bias" and value < 0:
            raise ConfigError(
                f"{where}: {key!r} is {value!r}; every coefficient but 'bias' must be >= 0 "
                "(more evidence of an unsupported claim must never lower the score)"
            )
    if not any(entry.get(key, 0) > 0 for key in _DETECTOR_TERMS):
        raise ConfigError(
            f"{where}: 'max_logit' or 'sentence_peak' must be > 0 (the map must read the "
            "detector's hallucination logit)"
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
        claim_check: For a file fitted with a claim checker in a cascade: the policy's
            ``claim_check`` block it was fitted with, holding the fitted ``weight`` and
            ``bias``. The threshold is then the cascade's. A policy that points a route
            to the file checks it against its own block (``core.policy``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    format: str
    model: str
    response_calibration: dict[str, Any]
    threshold: float = Field(ge=0.0, le=1.0)
    token_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    target: dict[str, float] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)
    claim_check: dict[str, Any] | None = None

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
        try:
            check_response_map(value, where="response_calibration", in_file=True)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
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
    """Read and validate a calibration file ``truthlens calibrate`` wrote.

    Only a regular file of at most :data:`MAX_CALIBRATION_BYTES` is read, once (a device
    such as ``/dev/zero`` would be read until memory ran out, a FIFO would block).

    Args:
        path: The file's path.

    Raises:
        ConfigError: If the file does not exist, is not a regular file, is too large,
            unreadable, not UTF-8, not JSON (``NaN`` included), holds a key twice, or is
            malformed. The message names the file once. (Whether its map still flags the
            package's planted wrong answers is :func:`~._planted.load_calibration_file`'s.)
    """
    file = Path(path)
    if not file.exists():
        raise ConfigError(f"calibration file {file}: no such file")
    try:
        raw = _read_regular_file(file)
    except ValueError as exc:
        raise ConfigError(f"calibration file {file}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"calibration file {file}: cannot read it: {exc.strerror}") from None
    try:
        # The one strict reader: duplicate keys, NaN, over-long numbers, bad bytes.
        data = loads_strict(raw, allow_bom=True)
    except JSONFormatError as exc:
        raise ConfigError(f"calibration file {file}: {exc}") from None
    try:
        parsed = CalibrationFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"calibration file {file}: {_problems(exc)}") from None
    return parsed


def _read_regular_file(file: Path) -> bytes:
    """The bytes of ``file`` if it is a regular file within the size cap.

    Opened without blocking and checked on the open handle, so a FIFO or device swapped
    in after a check is refused as well.

    Raises:
        ValueError: If it is not a regular file or is larger than the cap.
        OSError: If it cannot be opened or read.
    """
    fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read(MAX_CALIBRATION_BYTES + 1)
    if info.st_size > MAX_CALIBRATION_BYTES or len(raw) > MAX_CALIBRATION_BYTES:
        raise ValueError(
            f"is larger than {MAX_CALIBRATION_BYTES:,} bytes (a calibration file is a few KiB)"
        )
    return raw


def _problems(exc: ValidationError) -> str:
    """The validation problems, one ``field: message`` each, without the input values."""
    lines = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        # the map's own checks name their key already; the whole file's name none
        named = not where or message.startswith(f"{where}:")
        lines.append(message if named else f"{where}: {message}")
    return "; ".join(lines)


def check_calibration_detector(calibration: CalibrationFile, model_id: str | None) -> None:
    """Refuse a calibration file on a detector other than the one it was fitted for.

    A response map reads one detector's token probabilities; on another detector it
    scores silently wrong.

    Args:
        calibration: The parsed file (its ``model`` names the detector it was fitted for).
        model_id: The detector's ``model_id``, or ``None`` for the bundled detector.

    Raises:
        ConfigError: If they differ; the message starts "was fitted for" (callers name
            the file or route before it) and says how to fit one for this detector.
    """
    fitted, used = _detector_name(calibration.model), _detector_name(model_id)
    if fitted == used or _same_folder(fitted, used):
        return
    fit_for = "" if used == _BUNDLED else f" --model {used}"
    raise ConfigError(
        f"was fitted for {_describe(fitted)} and cannot score {_describe(used)}; fit one "
        f"for it with `truthlens calibrate{fit_for} --data FILE --out FILE`"
    )


def is_bundled(model: str | None) -> bool:
    """Whether a calibration file's ``model`` (or a detector's id) names the bundled detector."""
    return _detector_name(model) == _BUNDLED


def _describe(name: str) -> str:
    return "the bundled detector" if name == _BUNDLED else f"the detector {name!r}"


def _detector_name(model_id: str | None) -> str:
    """``bundled`` for the bundled detector (in process or behind the service), else the id."""
    if model_id is None or model_id == _BUNDLED:
        return _BUNDLED
    if model_id == _BUNDLED_MODEL_ID or model_id.startswith(_BUNDLED_MODEL_ID + "@"):
        return _BUNDLED
    if _same_folder(model_id, str(_BUNDLED_FOLDER)):  # the bundled folder, loaded by path
        return _BUNDLED
    return model_id


def _same_folder(a: str, b: str) -> bool:
    """Whether two model names are paths of one existing folder (``./m`` and ``/abs/m``)."""
    try:
        return Path(a).is_dir() and Path(b).is_dir() and Path(a).samefile(b)
    except OSError:
        return False
