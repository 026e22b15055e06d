"""A claim checker over an entailment model: the bundled NLI branch, or any NLI explainer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..._types import NLILabel
from ._contract import SUPPORT_THRESHOLD, Claim, ClaimJudgement, ClaimLabel, judged, not_checked

__all__ = ["NLIChecker"]

_LABELS: dict[NLILabel, ClaimLabel] = {
    "entailment": "supported",
    "neutral": "neutral",
    "contradiction": "contradiction",
}


_AGAINST: tuple[NLILabel, ...] = ("neutral", "contradiction")


@runtime_checkable
class _Predicts(Protocol):
    """An NLI model that gives the three probabilities (``BundledNLI.predict``)."""

    def predict(self, pairs: Sequence[tuple[str, str]]) -> Sequence[object]: ...


class NLIChecker:
    """Reads each claim against its evidence with an entailment model.

    P(supported) is the model's probability of entailment; a rejected claim takes the more
    probable of neutral and contradiction. The default is the bundled NLI branch, trained
    on premises of three sentences, so it reads three.

    Args:
        model: A :class:`~truthlens_integrations.core.models.nli.BundledNLI` (or any
            object with its ``predict``); ``None`` loads the bundled one on first use.
        name: What verdicts call this checker.
    """

    evidence_sentences = 3

    def __init__(self, model: object | None = None, *, name: str = "bundled") -> None:
        self.name = name
        self._model = model

    def _predictor(self) -> _Predicts:
        if self._model is None:
            from ..nli import BundledNLI

            self._model = BundledNLI()
        if not isinstance(self._model, _Predicts):
            from ..._errors import InvalidArgumentError

            raise InvalidArgumentError(
                f"NLIChecker: model must have predict(pairs) like BundledNLI, got "
                f"{type(self._model).__name__}"
            )
        return self._model

    def check(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
        """One judgement per claim; a claim with no evidence is not checked."""
        readable = [c for c in claims if c.evidence.strip()]
        predictions = self._predictor().predict([(c.evidence, c.text) for c in readable])
        found = dict(zip([id(c) for c in readable], predictions, strict=True))
        out = []
        for claim in claims:
            prediction = found.get(id(claim))
            if prediction is None:
                out.append(not_checked(claim, self.name, "no evidence in the context"))
                continue
            probabilities: dict[NLILabel, float] = getattr(prediction, "probabilities", {})
            supported = float(probabilities.get("entailment", 0.0))
            worse: NLILabel = max(_AGAINST, key=lambda k: probabilities.get(k, 0.0))
            label = "supported" if supported >= SUPPORT_THRESHOLD else _LABELS[worse]
            out.append(judged(claim, self.name, supported, label=label))
        return out
