"""The engine's detector and NLI model as the mitigation loops see them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .._errors import InvalidInputError
from .._types import NLILabel
from ..mitigation._results import Assessment
from ..models import NLIExplainer
from ..observability import Metrics
from ._stages import Item, model_name

__all__ = ["Engine", "Runtime"]


class Engine(Protocol):
    """What :class:`Runtime` reads of the engine (``TruthLens``)."""

    metrics: Metrics

    @property
    def nli(self) -> NLIExplainer | None: ...

    def _assess(self, it: Item, context: Sequence[str], answer: str) -> Assessment: ...


class Runtime:
    """The engine's detector and NLI model, as the mitigation loops see them."""

    def __init__(self, engine: Engine, item: Item) -> None:
        self._engine = engine
        self._item = item

    def assess(self, context: Sequence[str], answer: str) -> Assessment:
        try:
            return self._engine._assess(self._item, context, answer)
        except InvalidInputError:  # an unreadable reply: unusable, never a fixed answer
            return Assessment(answer=answer, score=None, flagged=True)

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[NLILabel, float]] | None:
        explainer = self._engine.nli
        if explainer is None:
            return None
        if not pairs:
            return []
        labels = explainer.explain(list(pairs))
        self._engine.metrics.record_model_use(
            model=model_name(explainer, "nli"), role="nli", count=len(pairs)
        )
        return [(label, float(conf)) for label, conf in labels]
