"""Helpers shared by the LlamaIndex adapter's components."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import MetadataMode, NodeWithScore

from truthlens_integrations.core import BlockedResponseError, HallucinationSpan
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.policy import PolicySource

__all__ = [
    "build_engine",
    "describe_spans",
    "node_texts",
    "verdict_of",
    "verdict_payload",
]


def build_engine(engine: TruthLens | None, config: PolicySource) -> TruthLens:
    """The given engine, or one built from ``config`` (models load on first use)."""
    if engine is not None:
        if config is not None:
            raise ValueError("pass either engine or config, not both")
        return engine
    return TruthLens.from_config(config)


def node_texts(
    nodes: Sequence[NodeWithScore], metadata_mode: MetadataMode = MetadataMode.NONE
) -> list[str]:
    """The text of each node, as the detector reads it (blank nodes dropped)."""
    texts = (n.node.get_content(metadata_mode=metadata_mode) for n in nodes)
    return [t for t in texts if t.strip()]


def describe_spans(spans: Sequence[HallucinationSpan]) -> str:
    """One line per span: quoted text, offsets, confidence and NLI label."""
    lines = []
    for s in spans:
        label = f", {s.nli_label}" if s.nli_label else ""
        lines.append(f'- "{s.text}" (chars {s.start}-{s.end}, p={s.confidence:.2f}{label})')
    return "\n".join(lines)


def verdict_payload(verdict: Verdict) -> dict[str, Any]:
    """What goes into ``response.metadata["truthlens"]``.

    The ``x-truthlens-*`` / ``x-vsr-*`` header values at the top level (so an HTTP
    layer can copy them unchanged) and the whole verdict, JSON-ready, under
    ``"verdict"`` (without the raw per-token detector output, which can be large).
    """
    return {
        **verdict.metadata,
        "verdict": verdict.model_dump(mode="json", exclude={"detection"}),
    }


def verdict_of(exc: BlockedResponseError) -> Verdict:
    """The verdict a :class:`BlockedResponseError` carries (re-raised when it has none)."""
    if not isinstance(exc.verdict, Verdict):
        raise exc
    return exc.verdict
