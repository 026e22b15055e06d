"""The cascade's combined score, and its fit on labelled answers.

An answer the claim checker reads is scored by its detector score and its least
supported claim::

    sigmoid(logit(score) + weight * logit(1 - worst) + bias)

The engine scores with :func:`combined_score`; ``truthlens calibrate --config`` fits
``weight`` and ``bias`` with :func:`fit_claim_weight` on the answers the cascade sends to
the checker, with the detector's calibrated score as a fixed offset. The weight is kept
at or above zero: a claim the checker rejects never lowers an answer's score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .._errors import InvalidInputError
from ._fit import _bounded_logistic
from ._signals import logit

__all__ = ["MAX_CLAIM_BIAS", "MAX_CLAIM_WEIGHT", "ClaimFit", "combined_score", "fit_claim_weight"]

#: The largest claim weight a policy or a fit may give: at 20 a checker's reading already
#: decides alone (its logits are bounded by the floor below).
MAX_CLAIM_WEIGHT = 20.0

#: The largest magnitude of the combined score's bias.
MAX_CLAIM_BIAS = 20.0

# A probability is read as a logit inside these bounds: a checker that answers only
# Yes or No (probability 1 or 0) moves the score by a bounded amount.
_P_FLOOR = 0.01


def _bounded_logit(p: float) -> float:
    return logit(min(1.0 - _P_FLOOR, max(_P_FLOOR, p)))


def combined_score(score: float, worst: float, weight: float, bias: float) -> float:
    """The detector's score with the checker's least supported claim.

    ``sigmoid(logit(score) + weight * logit(1 - worst) + bias)``, where ``worst`` is the
    least supported claim's probability of support.
    """
    z = _bounded_logit(score) + weight * _bounded_logit(1.0 - worst) + bias
    return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True)
class ClaimFit:
    """The fitted claim term and what it was fitted on.

    Attributes:
        weight: How much the worst claim moves the score (>= 0).
        bias: Added to the combined logit.
        answers: Answers the fit read.
        unsupported: Of those, answers labelled unsupported.
    """

    weight: float
    bias: float
    answers: int
    unsupported: int


def fit_claim_weight(
    scores: Sequence[float], worst: Sequence[float], labels: Sequence[bool], *, l2: float = 1e-2
) -> ClaimFit:
    """Fit the claim term's weight and bias on answers the checker read.

    Args:
        scores: Each answer's detector score (calibrated, as the route scores it).
        worst: Each answer's least supported claim's probability of support.
        labels: ``True`` for an answer with an unsupported claim.
        l2: Ridge penalty on the weight, so that a few labels give a finite one.

    Returns:
        The weight (0 when the checker adds nothing the detector does not say) and bias.

    Raises:
        InvalidInputError: With mismatched lengths, or fewer than 2 answers of a label.
    """
    import numpy as np

    if not len(scores) == len(worst) == len(labels):
        raise InvalidInputError(
            f"{len(scores)} scores, {len(worst)} claim readings and {len(labels)} labels"
        )
    positives = sum(bool(v) for v in labels)
    if positives < 2 or len(labels) - positives < 2:
        raise InvalidInputError(
            "fitting the claim checker's weight needs at least 2 answers of each label among "
            f"those it read; got {positives} unsupported and {len(labels) - positives} supported"
        )
    x = np.asarray([[_bounded_logit(1.0 - w)] for w in worst], dtype=float)
    offset = np.asarray([_bounded_logit(s) for s in scores], dtype=float)
    y = np.asarray([1.0 if v else 0.0 for v in labels])
    b = _bounded_logistic(x, y, np.ones(len(y)), l2, offset=offset)
    if not np.all(np.isfinite(b)):
        raise InvalidInputError("the claim checker's weight did not converge")
    return ClaimFit(
        weight=float(min(MAX_CLAIM_WEIGHT, b[0])),
        bias=float(max(-MAX_CLAIM_BIAS, min(MAX_CLAIM_BIAS, b[1]))),
        answers=len(labels),
        unsupported=positives,
    )
