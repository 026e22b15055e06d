"""Fit a response map on labelled answers: the code behind ``truthlens calibrate``.

The map is a logistic regression on an answer's :class:`ResponseSignals`. Every signal is
a maximum or a count over the answer's sentences, and the fit keeps every coefficient
but the bias at or above zero, so the fitted score is **length safe**: adding sentences
to an answer (supported ones included) never lowers its score, and a wrong claim cannot
be diluted below the threshold by padding. The same fit is used for the bundled
detector's map and for a user's own labelled answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._errors import InvalidInputError
from ._map import ResponseCalibration
from ._signals import FITTED_TERMS, ResponseSignals

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DEFAULT_SIGNALS", "SIGNALS", "fit_response_map", "signal_matrix", "threshold_for"]

# The claim term is a detector folder's own (a calibration file cannot carry it), so no
# fit reads it: the fitted terms of the table (``_signals.TERMS``).
SIGNALS: tuple[str, ...] = tuple(t.name for t in FITTED_TERMS)
"""The map's fitted term names, in :func:`signal_matrix`'s column order."""

DEFAULT_SIGNALS: tuple[str, ...] = SIGNALS[:6]
"""The columns a fit reads unless told: the token and word signals. The unit and negation
rules' counts are left out: fitted on RAG answers they did not keep the hard cases, and
on a small file one
conflict could carry a large weight."""


def signal_matrix(signals: Sequence[ResponseSignals]) -> np.ndarray:
    """One row per answer, one column per name of :data:`SIGNALS`."""
    import numpy as np

    rows = [[t.read(s) for t in FITTED_TERMS] for s in signals]
    return np.asarray(rows, dtype=float).reshape(len(rows), len(SIGNALS))


def _bounded_logistic(
    x: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    l2: float,
    steps: int = 200,
    free: np.ndarray | None = None,
    offset: np.ndarray | None = None,
) -> np.ndarray:
    """Weighted logistic regression with every coefficient but the bias kept >= 0.

    Projected Newton steps: coefficients held at zero whose gradient pushes them below
    stay there; the others take a damped Newton step, clipped back to the bound. Columns
    marked in ``free`` (a boolean per column) take any sign, like the bias. ``offset``
    (one logit per row) is added to the linear score with a fixed coefficient of 1.
    """
    import numpy as np

    z = np.c_[x, np.ones(len(x))]
    base = np.zeros(len(x)) if offset is None else np.asarray(offset, dtype=float)
    n = z.shape[1]
    bounded = np.ones(n - 1, dtype=bool) if free is None else ~np.asarray(free, dtype=bool)
    penalty = np.full(n, l2)
    penalty[-1] = 0.0

    def loss(b: np.ndarray) -> float:
        s = z @ b + base
        return float(np.sum(weights * (np.logaddexp(0, s) - y * s)) + 0.5 * penalty @ (b * b))

    b = np.zeros(n)
    current = loss(b)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ b + base, -40, 40)))
        grad = z.T @ (weights * (p - y)) + penalty * b
        held = np.r_[bounded & (b[:-1] <= 0.0) & (grad[:-1] > 0.0), False]
        free = ~held
        if not free.any():
            break
        hess = (z[:, free] * (weights * p * (1 - p))[:, None]).T @ z[:, free]
        hess += np.diag(penalty[free]) + 1e-9 * np.eye(int(free.sum()))
        step = np.zeros(n)
        step[free] = np.linalg.solve(hess, grad[free])
        t = 1.0
        while t > 1e-8:
            candidate = b - t * step
            candidate[:-1] = np.where(bounded, np.maximum(candidate[:-1], 0.0), candidate[:-1])
            if loss(candidate) <= current:
                break
            t /= 2
        else:
            break
        b = candidate
        previous, current = current, loss(b)
        if previous - current < 1e-10:
            break
    return b


def fit_response_map(
    signals: Sequence[ResponseSignals],
    labels: Sequence[bool],
    *,
    columns: Sequence[str] = DEFAULT_SIGNALS,
    weights: Sequence[float] | None = None,
    l2: float = 1e-2,
    free: Sequence[str] = (),
) -> ResponseCalibration:
    """Fit a length-safe :class:`ResponseCalibration` on labelled answers.

    Args:
        signals: Each answer's :class:`ResponseSignals`.
        labels: ``True`` for an answer with an unsupported claim.
        columns: The signals the map reads (a subset of :data:`SIGNALS`; by default
            :data:`DEFAULT_SIGNALS`).
        weights: Per-answer weights (default 1).
        l2: Ridge penalty on the coefficients (not the bias), so that a small file
            gives a finite, stable map.
        free: Columns (of ``columns``) whose coefficient may take any sign; with a free
            ``log_sentences`` the map may read length as evidence against an error and is
            then not length safe.

    Returns:
        The map; with no ``free`` column its coefficients are all >= 0
        (:attr:`ResponseCalibration.length_safe`).

    Raises:
        InvalidInputError: With fewer than 2 answers of each label, mismatched lengths
            or an unknown column.
    """
    import numpy as np

    if len(signals) != len(labels):
        raise InvalidInputError(f"{len(signals)} answers but {len(labels)} labels")
    unknown = set(columns) - set(SIGNALS)
    if unknown or not columns:
        raise InvalidInputError(f"unknown or no signal columns: {sorted(unknown)}")
    if set(free) - set(columns):
        raise InvalidInputError(f"free columns {sorted(set(free) - set(columns))} are not fitted")
    y = np.asarray([1.0 if v else 0.0 for v in labels])
    positives = int(y.sum())
    if positives < 2 or len(y) - positives < 2:
        raise InvalidInputError(
            f"need at least 2 answers of each label to fit a map; got {positives} with an "
            f"unsupported claim and {len(y) - positives} without"
        )
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    index = [SIGNALS.index(c) for c in columns]
    mask = np.array([c in free for c in columns], dtype=bool)
    b = _bounded_logistic(signal_matrix(signals)[:, index], y, w, l2, free=mask)
    if not np.all(np.isfinite(b)):
        raise InvalidInputError("the fit did not converge")
    coefficients = {c: float(v) for c, v in zip(columns, b[:-1], strict=True)}
    return ResponseCalibration.of({**coefficients, "bias": float(b[-1])})


def threshold_for(
    scores: Sequence[float],
    labels: Sequence[bool],
    *,
    target_precision: float | None = None,
    max_false_alarm_rate: float | None = None,
) -> float:
    """The lowest score threshold that meets a precision target or a false-alarm cap.

    ``target_precision``: the lowest threshold whose precision (flagged answers that are
    unsupported) is at least the target, which flags the most answers that meet it.
    ``max_false_alarm_rate``: the lowest threshold that flags at most that share of the
    supported answers. With neither, 0.5 (the calibrated map's even odds).

    Raises:
        InvalidInputError: If both are given, a value is outside (0, 1), or no
            threshold meets the target on these answers.
    """
    if target_precision is not None and max_false_alarm_rate is not None:
        raise InvalidInputError("give a target precision or a false-alarm cap, not both")
    if target_precision is None and max_false_alarm_rate is None:
        return 0.5
    target = target_precision if target_precision is not None else max_false_alarm_rate
    if isinstance(target, bool) or not isinstance(target, int | float) or not 0 < target < 1:
        raise InvalidInputError(f"the target must be a number in (0, 1), got {target!r}")
    pairs = sorted(zip(scores, labels, strict=True), key=lambda p: -p[0])
    clean = sum(1 for _, gold in pairs if not gold)
    best = None
    flagged_bad = flagged_clean = 0
    for i, (score, gold) in enumerate(pairs):
        flagged_bad += bool(gold)
        flagged_clean += not gold
        if i + 1 < len(pairs) and pairs[i + 1][0] == score:
            continue  # a threshold flags every answer of equal score
        if target_precision is not None:
            ok = flagged_bad / (flagged_bad + flagged_clean) >= target_precision
        else:
            ok = flagged_clean <= max_false_alarm_rate * clean  # type: ignore[operator]
        if ok:
            best = score
        elif max_false_alarm_rate is not None:
            break  # false alarms only grow as the threshold falls
    if best is None:
        raise InvalidInputError(f"no threshold reaches the target {target} on these answers")
    return float(best)
