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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._alignment import align_quantities, extract_quantities
from ._blocked import (
    DEFAULT_BLOCKED_MESSAGE,
    EngineBlocking,
    blocked_error,
    shown_text,
    verdict_of,
    verdict_payload,
)
from ._build import engine_from
from ._engine import TruthLens
from ._injection import ContextFlag, find_instructions
from ._options import (
    ENGINE_OPTION_NAMES,
    POLICY_KNOB_NAMES,
    EngineKwargs,
    EngineOptions,
    GuardKwargs,
    OnBlock,
    PolicyKnobKwargs,
    PolicyKnobs,
    reject_unknown,
    renamed_options,
    split_options,
    warn_deprecated,
)
from ._premise import answer_sentence, select_premise, split_sentences
from ._tools import ADAPTER_TOOLS, GUARD_TOOLS, GuardTools
from ._verdict import (
    REDACTED,
    SEVERITY,
    VERDICT_FIELDS,
    CheckReport,
    Findings,
    MitigationReport,
    NotCheckedReason,
    Verdict,
)

__all__ = [
    "ADAPTER_TOOLS",
    "DEFAULT_BLOCKED_MESSAGE",
    "ENGINE_OPTION_NAMES",
    "GUARD_TOOLS",
    "POLICY_KNOB_NAMES",
    "REDACTED",
    "SEVERITY",
    "VERDICT_FIELDS",
    "CheckReport",
    "ContextFlag",
    "Coverage",
    "EngineBlocking",
    "EngineKwargs",
    "EngineOptions",
    "Findings",
    "GuardKwargs",
    "GuardTools",
    "MitigationReport",
    "NotCheckedReason",
    "OnBlock",
    "PolicyKnobKwargs",
    "PolicyKnobs",
    "TruthLens",
    "Verdict",
    "align_quantities",
    "answer_sentence",
    "blocked_error",
    "engine_from",
    "extract_quantities",
    "find_instructions",
    "reject_unknown",
    "renamed_options",
    "select_premise",
    "shown_text",
    "split_options",
    "split_sentences",
    "verdict_of",
    "verdict_payload",
    "warn_deprecated",
]

if TYPE_CHECKING:
    from ._verdict import CheckReport as Coverage

#: Old names kept for a release, each with its current one.
_RENAMED = {"Coverage": "CheckReport"}


def __getattr__(name: str) -> Any:
    new = _RENAMED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warn_deprecated(
        f"{__name__}.{name} is deprecated and will be removed in the next release; use {new} "
        f"(the verdict's check report; {name} is also the detector's type in "
        "truthlens_integrations.core)"
    )
    return globals()[new]
