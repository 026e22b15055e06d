"""Helpers shared by the LlamaIndex adapter's components."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.schema import MetadataMode, NodeWithScore

from truthlens_integrations.core import HallucinationSpan
from truthlens_integrations.core._adapter_api import (
    engine_from,
    reject_unknown,
    split_options,
    verdict_of,
)
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.policy import PolicySource

__all__ = [
    "build_engine",
    "describe_spans",
    "node_texts",
    "verdict_of",
    "verdict_payload",
]


def build_engine(
    engine: TruthLens | None,
    config: PolicySource,
    options: Mapping[str, Any] | None = None,
    *,
    where: str = "TruthLens",
    own: Sequence[str] = (),
) -> TruthLens:
    """The engine a component uses (models load on first use).

    Args:
        engine: The given engine, or ``None`` to build one from ``config``.
        config: A policy source (only without ``engine``).
        options: Engine options and policy knobs the caller passed; with ``engine``
            they apply to a copy of it.
        where: The constructor, for messages.
        own: The constructor's own argument names (for did-you-mean suggestions).

    Returns:
        The engine.

    Raises:
        ConfigError: If both ``engine`` and ``config`` are given.
        UnknownArgumentError: For an unknown option.
        InvalidArgumentError: For an option of the wrong type.
    """
    split = split_options(dict(options or {}), own=own, where=where)
    leftover = {k: v for k, v in split.rest.items() if k not in ("engine", "config")}
    if leftover:  # an own name passed through **options (never by a correct caller)
        reject_unknown(leftover, (), where)
    return engine_from(engine, config, split, where)


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
    """What goes into ``response.metadata["truthlens"]``: :meth:`Verdict.to_dict`.

    The same shape as everywhere else (LangChain message metadata, agent messages'
    ``additional_kwargs``); the ``x-*`` header values are its ``"metadata"`` entry.
    """
    return verdict.to_dict()
