"""A node postprocessor with the retrieval-quality layer and an evidence mode."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypedDict, Unpack

from llama_index.core.bridge.pydantic import Field, PrivateAttr, ValidationError
from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from truthlens_integrations.core import ConfigError, HallucinationSpan, InvalidArgumentError
from truthlens_integrations.core._adapter_api import (
    content_words,
    numbers,
    reject_unknown,
    split_sentences,
)
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.mitigation import Passage, filter_passages

from ._events import TruthLensNodeFilterEvent, dispatcher, event_payload

__all__ = ["NodePostprocessorKwargs", "TruthLensNodePostprocessor"]

EvidenceAction = Literal["demote", "drop"]
EvidenceMethod = Literal["overlap", "nli"]


class NodePostprocessorKwargs(TypedDict, total=False):
    """The settings of :class:`TruthLensNodePostprocessor` as typed keyword arguments.

    One key per field, described there (``callback_manager`` is LlamaIndex's); the
    fields still check the values at runtime.
    """

    min_score: float | None
    min_length: int
    dedupe_similarity: float
    authority_key: str
    source_key: str | None
    source_authority: dict[str, float]
    min_authority: float | None
    evidence_action: EvidenceAction
    demote_factor: float
    evidence_method: EvidenceMethod
    min_support: float
    metadata_mode: MetadataMode
    callback_manager: CallbackManager


class TruthLensNodePostprocessor(BaseNodePostprocessor):
    """Retrieval-quality filter (design layer 1) and evidence filter for LlamaIndex nodes.

    As a node postprocessor (``index.as_query_engine(node_postprocessors=[...])``) it
    drops nodes below ``min_score``, shorter than ``min_length`` characters, near
    duplicates of a better node, and nodes whose source authority is below
    ``min_authority``; with ``min_authority`` set, nodes with an authority come first.
    The rules are the engine's
    :func:`~truthlens_integrations.core.mitigation.filter_passages`.

    Evidence mode (:meth:`filter_evidence`, used by :class:`TruthLensQueryEngine`
    after a detection round): nodes that support no sentence of the answer are
    dropped or demoted. A node supports a sentence when the engine's NLI model finds
    the sentence entailed by the node (``evidence_method="nli"``), or when at least
    ``min_support`` of the sentence's content words and every number in it occur in
    the node (``"overlap"``, no model; numbers are what answers most often get wrong).
    Sentences holding a flagged span are not counted.

    Attributes:
        min_score: Minimum retrieval score; unscored nodes stay. ``None`` disables.
        min_length: Minimum node length in characters (stripped).
        dedupe_similarity: Word-set Jaccard similarity that makes a near duplicate.
        authority_key: Node metadata key holding a numeric authority in [0, 1].
        source_key: Node metadata key naming the source (``"url"``, ``"file_name"``),
            looked up in ``source_authority`` when the node has no ``authority_key``.
        source_authority: Authority per source name.
        min_authority: Nodes below this authority are dropped; nodes without one stay.
        evidence_action: ``"demote"`` (score times ``demote_factor``, moved after the
            supporting nodes) or ``"drop"``.
        demote_factor: Score multiplier of a demoted node.
        evidence_method: ``"overlap"`` or ``"nli"``.
        min_support: Content-word share for ``"overlap"`` support.
        metadata_mode: How node text is read.
    """

    min_score: float | None = Field(default=None)
    min_length: int = Field(default=50, ge=0)
    dedupe_similarity: float = Field(default=0.9, gt=0.0, le=1.0)
    authority_key: str = Field(default="authority")
    source_key: str | None = Field(default=None)
    source_authority: dict[str, float] = Field(default_factory=dict)
    min_authority: float | None = Field(default=None, ge=0.0, le=1.0)
    evidence_action: EvidenceAction = Field(default="demote")
    demote_factor: float = Field(default=0.5, ge=0.0, le=1.0)
    evidence_method: EvidenceMethod = Field(default="overlap")
    min_support: float = Field(default=0.6, gt=0.0, le=1.0)
    metadata_mode: MetadataMode = Field(default=MetadataMode.NONE)

    _engine: TruthLens | None = PrivateAttr(default=None)

    def __init__(
        self, *, engine: TruthLens | None = None, **data: Unpack[NodePostprocessorKwargs]
    ) -> None:
        reject_unknown(data, [*type(self).model_fields, "engine"], "TruthLensNodePostprocessor")
        if engine is not None and not isinstance(engine, TruthLens):
            kind = type(engine).__name__
            raise InvalidArgumentError(
                f"TruthLensNodePostprocessor: engine must be a TruthLens, got {kind}"
            )
        fields: dict[str, Any] = dict(data)  # the base's __init__ is pydantic's
        try:
            super().__init__(**fields)
        except ValidationError as exc:
            raise ConfigError(f"TruthLensNodePostprocessor: {exc}") from None
        self._engine = engine

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "TruthLensNodePostprocessor"

    # -- quality ------------------------------------------------------------------------

    def _authority(self, node: NodeWithScore) -> float | None:
        metadata = node.node.metadata
        value = metadata.get(self.authority_key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if self.source_key is not None:
            source = metadata.get(self.source_key)
            if isinstance(source, str) and source in self.source_authority:
                return self.source_authority[source]
        return None

    def _quality(self, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        passages: list[Passage] = []
        owner: dict[int, NodeWithScore] = {}
        for node in nodes:
            authority = self._authority(node)
            passage = Passage(
                text=node.node.get_content(metadata_mode=self.metadata_mode),
                score=node.score,
                metadata={} if authority is None else {"authority": authority},
            )
            passages.append(passage)
            owner[id(passage)] = node
        kept = filter_passages(
            passages,
            min_score=self.min_score,
            min_chars=self.min_length,
            dedupe_similarity=self.dedupe_similarity,
            authority_key="authority",
            min_authority=self.min_authority,
        )
        result = [owner[id(p)] for p in kept]
        self._report("quality", nodes, result, [], None)
        return result

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        """Apply the quality filter."""
        del query_bundle  # the rules do not depend on the query
        return self._quality(nodes)

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        """Apply the quality filter (pure Python, fast: no thread needed)."""
        del query_bundle
        return self._quality(nodes)

    # -- evidence -----------------------------------------------------------------------

    def _claims(self, answer: str, spans: Sequence[HallucinationSpan]) -> list[str]:
        """Answer sentences without a flagged span: what a node can support."""
        claims = []
        for start, end in split_sentences(answer):
            if any(s.start < end and s.end > start for s in spans):
                continue
            claims.append(answer[start:end].strip())
        return [c for c in claims if content_words(c)]

    def _supports_overlap(self, texts: list[str], claims: list[str]) -> list[bool]:
        wanted = [(content_words(c), numbers(c)) for c in claims]
        out = []
        for text in texts:
            words, found = content_words(text), numbers(text)
            out.append(
                any(
                    len(claim & words) / len(claim) >= self.min_support and nums <= found
                    for claim, nums in wanted
                )
            )
        return out

    def _supports_nli(self, texts: list[str], claims: list[str]) -> list[bool]:
        explainer = self._engine.nli if self._engine is not None else None
        if explainer is None:
            raise ConfigError(
                "evidence_method='nli' needs an engine with an NLI explainer "
                "(TruthLensNodePostprocessor(engine=...))"
            )
        assert self._engine is not None
        pairs = [(text, claim) for text in texts for claim in claims]
        labels = explainer.explain(pairs) if pairs else []
        threshold = self._engine.nli_threshold
        out = []
        for i in range(len(texts)):
            row = labels[i * len(claims) : (i + 1) * len(claims)]
            out.append(any(lab == "entailment" and conf >= threshold for lab, conf in row))
        return out

    def filter_evidence(
        self,
        nodes: Sequence[NodeWithScore],
        *,
        answer: str,
        spans: Sequence[HallucinationSpan] = (),
    ) -> list[NodeWithScore]:
        """Drop or demote the nodes that support no sentence of ``answer``.

        Args:
            nodes: The nodes the answer was grounded on.
            answer: The checked answer.
            spans: Its flagged spans; their sentences are not counted as supported.

        Returns:
            Supporting nodes first (in their order), then demoted ones (score times
            ``demote_factor``) unless ``evidence_action`` is ``"drop"``. Nodes are
            copied, never modified in place. When the answer has no claim left to
            support, the nodes come back unchanged.
        """
        nodes = list(nodes)
        claims = self._claims(answer, spans)
        if not nodes or not claims:
            return nodes
        texts = [n.node.get_content(metadata_mode=self.metadata_mode) for n in nodes]
        if self.evidence_method == "nli":
            support = self._supports_nli(texts, claims)
        else:
            support = self._supports_overlap(texts, claims)
        kept = [n for n, ok in zip(nodes, support, strict=True) if ok]
        rest = [n for n, ok in zip(nodes, support, strict=True) if not ok]
        demoted: list[NodeWithScore] = []
        if self.evidence_action == "demote":
            demoted = [
                NodeWithScore(
                    node=n.node, score=None if n.score is None else n.score * self.demote_factor
                )
                for n in rest
            ]
        self._report("evidence", nodes, kept + demoted, demoted, answer)
        return kept + demoted

    # -- instrumentation ------------------------------------------------------------------

    def _report(
        self,
        stage: str,
        before: list[NodeWithScore],
        after: list[NodeWithScore],
        demoted: list[NodeWithScore],
        answer: str | None,
    ) -> None:
        after_ids = {n.node.node_id for n in after}
        event = TruthLensNodeFilterEvent(
            stage=stage,
            kept=[n.node.node_id for n in after],
            removed={
                n.node.node_id: "unsupported" if stage == "evidence" else "quality"
                for n in before
                if n.node.node_id not in after_ids
            },
            demoted=[n.node.node_id for n in demoted],
        )
        dispatcher.event(event)
        payload: dict[str, Any] = {
            EventPayload.NODES: before,
            EventPayload.MODEL_NAME: f"truthlens-{stage}",
            EventPayload.ADDITIONAL_KWARGS: event_payload(event),
        }
        if answer is not None:
            payload[EventPayload.RESPONSE] = answer
        with self.callback_manager.event(CBEventType.RERANKING, payload=payload) as cb:
            cb.on_end(payload={EventPayload.NODES: after})
