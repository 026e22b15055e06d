"""A user's response calibration: the file ``truthlens calibrate`` writes and routes read.

The file holds a length-safe response map fitted on the user's own labelled answers
(:func:`fit_response_map`) and the threshold chosen for their precision or false-alarm
target. A policy route points to it (``calibration: path/to/calib.json``); the engine
then re-scores that route's answers with the map (the token probabilities and spans do
not change) and flags them at the file's threshold unless the route sets its own.

The response score's calibration is owned by ``_response.py`` (the map, the score and
the rescoring with a route's map: :class:`RouteCalibration`); the file is read and
checked by ``core/_calibration.py``. This module keeps the names the calibrate command
and the model lab import.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..._calibration import (
    CALIBRATION_FORMAT,
    CalibrationFile,
    check_calibration_detector,
    read_calibration_file,
    resolve_calibration,
)
from ..._types import DetectionInput, TokenScore
from ._adjust import count_conflicts
from ._response import (
    ResponseSignals,
    RouteCalibration,
    answer_evidence,
    rescore,
    response_signals,
)

__all__ = [
    "CALIBRATION_FORMAT",
    "CalibrationFile",
    "RouteCalibration",
    "answer_evidence",
    "answer_signals",
    "check_calibration_detector",
    "read_calibration_file",
    "rescore",
    "resolve_calibration",
]


def answer_signals(
    item: DetectionInput,
    tokens: Sequence[TokenScore],
    *,
    token_threshold: float = 0.5,
    rules: bool = True,
) -> ResponseSignals:
    """The response map's signals of one checked answer, as the bundled detector reads them.

    The absent words and, with ``rules``, the rules' conflict counts of
    :func:`answer_evidence` (without, they are 0).
    """
    absent, marks = answer_evidence(item, rules=rules)
    return response_signals(
        item.answer,
        tokens,
        [start for start, _ in absent],
        absent_numbers=sum(1 for _, key in absent if key.startswith("#")),
        token_threshold=token_threshold,
        rule_conflicts=count_conflicts(item.answer, marks),
    )
