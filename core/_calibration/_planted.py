"""Planted wrong answers every calibration file must still flag.

A calibration file can obey every rule of :func:`~._file.check_response_map` and still switch
the guard off: a bias of -100 scores every answer near 0, a threshold of 1.0 is never
reached, a ``long_answers`` map lets a wrong answer pass once true sentences follow it. So a
file's map, at the file's own threshold, must flag a few answers that are plainly wrong
against their context (a year, a height, a count, a prize changed), alone and followed by
supported sentences. A file that cannot is refused, and the error names the answer it let
through.

What the bundled detector reads of each answer (its tokens, the words the context lacks,
the rules' conflicts) is stored in ``planted.json`` beside this module, so the check runs
the map alone, with no model: a policy checks the file it names when it loads. The
file is rewritten from :data:`PLANTED` when the bundled detector changes (a test fails
until it is).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .._decision import reaches
from .._errors import ConfigError
from .._types import TokenScore
from ._file import CalibrationFile, is_bundled, read_calibration_file
from ._map import ResponseCalibration, calibrated_score
from ._signals import ResponseSignals, logit

__all__ = [
    "PLANTED",
    "PLANTED_FILE",
    "PlantedAnswer",
    "check_flags_planted",
    "check_flags_planted_file",
    "load_calibration_file",
    "planted_answers",
]

PLANTED_FILE = Path(__file__).with_name("planted.json")

_EIFFEL = (
    '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters", '
    '"location": "Paris, France"}'
)
_TOWER = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
    "It was built from 1887 to 1889 as the centrepiece of the 1889 World's Fair.",
    "The tower is 330 meters tall.",
    "It is named after the engineer Gustave Eiffel, whose company designed and built it.",
    "Its base is a square of 125 meters on each side.",
    "The tower received nearly 7 million visitors in 2015.",
]
_CURIE = [
    "Marie Curie won the Nobel Prize in Physics in 1903, shared with Pierre Curie and "
    "Henri Becquerel.",
    "She won the Nobel Prize in Chemistry in 1911 for the discovery of polonium and radium.",
    "She was born in Warsaw in 1867.",
]
_PADDING = (
    " It is named after the engineer Gustave Eiffel, whose company designed and built it."
    " Its base is a square of 125 meters on each side."
    " The tower received nearly 7 million visitors in 2015."
)

#: ``(context, answer)``: each answer is wrong against its context, said plainly.
PLANTED: tuple[tuple[tuple[str, ...], str], ...] = (
    ((_EIFFEL,), "The Eiffel Tower was built in 1950."),
    ((_EIFFEL,), "The Eiffel Tower is 500 meters tall."),
    ((_EIFFEL,), "The Eiffel Tower was built in 1950 and is 500 meters tall."),
    (tuple(_TOWER), "The Eiffel Tower was built in 1950." + _PADDING),
    (tuple(_TOWER), "The tower is 500 meters tall." + _PADDING),
    (tuple(_CURIE), "Marie Curie won the Nobel Prize in Chemistry in 1925."),
    (tuple(_CURIE), "Marie Curie was born in Warsaw in 1901. She won two Nobel Prizes."),
)


@dataclass(frozen=True)
class PlantedAnswer:
    """One planted wrong answer as the bundled detector read it.

    Attributes:
        answer: The wrong answer.
        tokens: The detector's token probabilities.
        absent: The answer's words the context lacks, as ``(start, key)``.
        marks: Where the unit and negation rules find conflicts.
    """

    answer: str
    tokens: tuple[TokenScore, ...]
    absent: tuple[tuple[int, str], ...]
    marks: tuple[tuple[int, ...], tuple[int, ...]]


@cache
def planted_answers() -> tuple[PlantedAnswer, ...]:
    """The planted answers of ``planted.json``, read once."""
    rows = json.loads(PLANTED_FILE.read_text(encoding="utf-8"))
    return tuple(
        PlantedAnswer(
            answer=row["answer"],
            tokens=tuple(
                TokenScore(start=a, end=b, text=row["answer"][a:b], probability=p)
                for a, b, p in row["tokens"]
            ),
            absent=tuple((int(a), str(k)) for a, k in row["absent"]),
            marks=(tuple(row["marks"][0]), tuple(row["marks"][1])),
        )
        for row in rows
    )


def _plain_errors() -> list[tuple[str, ResponseSignals]]:
    """A plainly wrong answer as any detector should read it, alone and after 3 true sentences.

    For a map fitted for another detector, whose tokens the package cannot know: the wrong
    number is read at 0.95 and is the answer's one absent word, in conflict with the
    context's number.
    """
    alone = ResponseSignals(
        max_probability=0.95,
        sentences=1,
        absent_words=1,
        peak=logit(0.95) + math.log(2),
        absent_numbers=1,
        flagged_tokens=1,
        number_conflicts=1,
    )
    padded = ResponseSignals(**{**alone.__dict__, "sentences": 4})
    return [("a wrong number, alone", alone), ("a wrong number after true sentences", padded)]


def check_flags_planted(
    response: ResponseCalibration,
    *,
    threshold: float,
    token_threshold: float,
    bundled: bool,
    where: str,
) -> None:
    """Refuse a map that lets a planted wrong answer pass at ``threshold``.

    Args:
        response: The file's map.
        threshold: The file's threshold.
        token_threshold: The token probability the file counted a token as flagged at.
        bundled: Whether the map was fitted for the bundled detector: then the planted
            answers are read as that detector read them; else as :func:`_plain_errors`.
        where: What the message starts with (the file).

    Raises:
        ConfigError: Naming the first planted answer the map scores under the threshold.
    """
    scored: list[tuple[str, float]] = []
    if bundled:
        scored = [
            (
                repr(p.answer),
                calibrated_score(
                    response,
                    p.answer,
                    p.tokens,
                    p.absent,
                    token_threshold=token_threshold,
                    conflicts=p.marks,
                ),
            )
            for p in planted_answers()
        ]
    else:
        scored = [(name, response.score(signals)) for name, signals in _plain_errors()]
    for name, score in scored:
        if not reaches(score, threshold):
            raise ConfigError(
                f"{where} lets a plainly wrong answer pass: {name} scores "
                f"{score:.3g}, under the file's threshold {threshold:g}. A calibration file must "
                "still flag the package's planted wrong answers (a bias or threshold that "
                "switches the guard off, or a long-answer map that padding defeats); refit it "
                "with `truthlens calibrate` on more labelled answers"
            )


def check_flags_planted_file(calibration: CalibrationFile, *, where: str) -> None:
    """:func:`check_flags_planted` on a parsed file, at its threshold.

    Run once, where a file is read for use or written (not on every validation of the
    parsed file, which the policy's resolved settings repeat per request).

    Raises:
        ConfigError: Naming the answer the map lets pass.
    """
    check_flags_planted(
        ResponseCalibration.from_entry(calibration.response_calibration),
        threshold=calibration.threshold,
        token_threshold=calibration.token_threshold,
        bundled=is_bundled(calibration.model),
        where=where,
    )


def load_calibration_file(path: str | os.PathLike[str]) -> CalibrationFile:
    """A calibration file read for use: well formed, and unable to switch the guard off.

    Raises:
        ConfigError: As :func:`~._file.read_calibration_file`, or if its map lets a planted
            wrong answer pass at its threshold. The message names the file.
    """
    calibration = read_calibration_file(path)
    check_flags_planted_file(
        calibration, where=f"calibration file {path}: its response_calibration"
    )
    return calibration
