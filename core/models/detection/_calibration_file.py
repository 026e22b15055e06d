"""A user's response calibration: the file ``truthlens calibrate`` writes and routes read.

The file holds a length-safe response map fitted on the user's own labelled answers
(:func:`fit_response_map`) and the threshold chosen for their precision or false-alarm
target. A policy route points to it (``calibration: path/to/calib.json``); the engine
then re-scores that route's answers with the map (the token probabilities and spans do
not change) and flags them at the file's threshold unless the route sets its own.
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
from ..._types import DetectionInput, DetectionResult, DetectionStatus, TokenScore
from ._adjust import conflict_marks, count_conflicts, uncounted_spans
from ._lexical import absent_words
from ._response import (
    ResponseCalibration,
    ResponseSignals,
    calibrated_score,
    response_signals,
)

__all__ = [
    "CALIBRATION_FORMAT",
    "CalibrationFile",
    "answer_evidence",
    "answer_signals",
    "check_calibration_detector",
    "read_calibration_file",
    "rescore",
    "resolve_calibration",
]


def answer_evidence(
    item: DetectionInput, *, rules: bool = True
) -> tuple[list[tuple[int, str]], tuple[list[int], list[int]]]:
    """What a response map reads of an answer besides its tokens, as the bundled detector reads it.

    Returns:
        The answer's absent content words as ``(start, key)`` (what
        ``_adjust.uncounted_spans`` names left out), and with
        ``rules`` where the unit and negation rules find a conflict
        (``_adjust.conflict_marks``; a pass over the context, no model), else no marks.
    """
    skip = uncounted_spans(item.answer, item.context, item.question)
    marks = conflict_marks(item.answer, item.context) if rules else ([], [])
    return absent_words(item, skip), marks


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


def rescore(
    item: DetectionInput, result: DetectionResult, calibration: CalibrationFile, threshold: float
) -> DetectionResult:
    """``result`` with its score from the file's map and its decision at ``threshold``.

    Results that were not checked (unverifiable) are returned unchanged: a calibration
    never turns "not checked" into a verdict.
    """
    if not result.grounded:
        return result
    response = ResponseCalibration.from_entry(calibration.response_calibration)
    absent, marks = answer_evidence(item, rules=response.reads_rules)
    score = calibrated_score(
        response,
        item.answer,
        result.tokens,
        absent,
        token_threshold=calibration.token_threshold,
        conflicts=marks,
    )
    detected = score >= threshold
    return result.model_copy(
        update={
            "score": score,
            "threshold": threshold,
            "detected": detected,
            "status": DetectionStatus.HALLUCINATED if detected else DetectionStatus.SUPPORTED,
        }
    )
