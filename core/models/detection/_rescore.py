"""Re-scoring a detector's result with a route's response map (a calibration file).

A route that names a calibration file (``calibration:`` in the policy, ``truthlens eval
--calibration``) scores its answers with the file's map: the token probabilities and spans
of the detector's result stay, the score, threshold and decision are the map's. The map
reads what the bundled detector reads of an answer besides its tokens (its absent words and
the rules' conflicts), which :func:`answer_evidence` gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..._calibration._file import CalibrationFile
from ..._calibration._map import ResponseCalibration, calibrated_score
from ..._calibration._signals import ResponseSignals, count_conflicts, response_signals
from ..._decision import reaches
from ..._text import AnswerText
from ..._types import DetectionInput, DetectionResult, DetectionStatus, TokenScore
from ._lexical import absent_words
from ._rules import conflict_marks, uncounted_spans

__all__ = ["RouteCalibration", "answer_evidence", "answer_signals", "rescore"]


def answer_evidence(
    item: DetectionInput, *, rules: bool = True
) -> tuple[list[tuple[int, str]], tuple[list[int], list[int]]]:
    """What a map reads of an answer besides its tokens, as the bundled detector reads it.

    Returns:
        The answer's absent content words as ``(start, key)`` (what the rules'
        ``uncounted_spans`` names left out), and with ``rules`` where the unit and
        negation rules find a conflict (a pass over the context, no model), else no marks.
    """
    text = AnswerText.of(item.answer)
    skip = uncounted_spans(text, item.context, item.question)
    marks = conflict_marks(text, item.context) if rules else ([], [])
    return absent_words(item, skip), marks


def answer_signals(
    item: DetectionInput,
    tokens: Sequence[TokenScore],
    *,
    token_threshold: float = 0.5,
    rules: bool = True,
) -> ResponseSignals:
    """The map's signals of one checked answer, as the bundled detector reads them.

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


@dataclass(frozen=True)
class RouteCalibration:
    """A route's calibration file, read into its map once, and the one rescoring with it.

    Built once per route's file (the engine builds one per decision that names a
    calibration when it is created; ``truthlens eval --calibration`` one per run), so a
    request never re-reads or re-checks the map: :meth:`rescore` is all it runs.

    Attributes:
        response: The file's map.
        token_threshold: The token probability that counted a token as flagged in the fit.
        threshold: The file's threshold (a route's own ``response_threshold`` wins).
    """

    response: ResponseCalibration
    token_threshold: float
    threshold: float

    @classmethod
    def of(cls, calibration: CalibrationFile) -> RouteCalibration:
        """The map of a calibration file (already checked when it was read)."""
        return cls(
            ResponseCalibration.from_entry(calibration.response_calibration),
            token_threshold=calibration.token_threshold,
            threshold=calibration.threshold,
        )

    def rescore(
        self, item: DetectionInput, result: DetectionResult, threshold: float
    ) -> DetectionResult:
        """``result`` scored by the map and decided at ``threshold``: its ``detected`` stands.

        The token probabilities and spans do not change, only the score, the threshold,
        ``detected`` and the status. A result that was not checked (unverifiable) comes
        back unchanged: a calibration never turns "not checked" into a verdict.
        """
        if not result.grounded:
            return result
        absent, marks = answer_evidence(item, rules=self.response.reads_rules)
        score = calibrated_score(
            self.response,
            AnswerText.of(item.answer),
            result.tokens,
            absent,
            token_threshold=self.token_threshold,
            conflicts=marks,
        )
        detected = reaches(score, threshold)
        status = DetectionStatus.HALLUCINATED if detected else DetectionStatus.SUPPORTED
        update = {"score": score, "threshold": threshold, "detected": detected, "status": status}
        return result.model_copy(update=update)


def rescore(
    item: DetectionInput,
    result: DetectionResult,
    calibration: CalibrationFile | RouteCalibration,
    threshold: float,
) -> DetectionResult:
    """``result`` re-scored by a calibration's map and decided at ``threshold``.

    :meth:`RouteCalibration.rescore`; a :class:`CalibrationFile` is read into its map
    first (callers that rescore many answers build the :class:`RouteCalibration` once).
    """
    route = (
        calibration
        if isinstance(calibration, RouteCalibration)
        else RouteCalibration.of(calibration)
    )
    return route.rescore(item, result, threshold)
