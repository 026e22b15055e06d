"""The guard pipeline: prompt gating, detection, NLI explanation, decisions and actions.

Example:
    >>> from truthlens_integrations import TruthLens
    >>> guard = TruthLens.from_config("cookbook/policies/halugate_full.yaml")  # doctest: +SKIP
    >>> verdict = guard.guard(context=docs, question=q, answer=a)  # doctest: +SKIP
    >>> verdict.output, verdict.metadata["x-vsr-hallucination-spans"]  # doctest: +SKIP

Paths: a prompt the classifier finds non-factual passes after the classifier alone;
a factual prompt without grounding is marked unverified and gets the route's
``unverified_factual_action``; a grounded factual prompt is detected, its spans
explained by NLI (confident entailments dropped), scored against the route's
threshold and, when flagged, handled by ``hallucination_action``.

Public: the engine, its verdict and its typed options. What the adapters need besides
(building an engine from their options, the blocked-answer helpers, ...) is in
:mod:`truthlens_integrations.core._adapter_api`.
"""

from __future__ import annotations

from ._blocked import DEFAULT_BLOCKED_MESSAGE
from ._engine import TruthLens
from ._options import EngineKwargs, EngineOptions, GuardKwargs, PolicyKnobKwargs, PolicyKnobs
from ._verdict import CheckReport, Verdict

__all__ = [
    "DEFAULT_BLOCKED_MESSAGE",
    "CheckReport",
    "EngineKwargs",
    "EngineOptions",
    "GuardKwargs",
    "PolicyKnobKwargs",
    "PolicyKnobs",
    "TruthLens",
    "Verdict",
]
