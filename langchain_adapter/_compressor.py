"""The retrieval-quality filter as a LangChain ``BaseDocumentCompressor``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict, Unpack

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import Field, ValidationError
from typing_extensions import override

from truthlens_integrations.core._adapter_api import reject_unknown
from truthlens_integrations.core.mitigation import Passage, filter_passages

from ._arguments import invalid_arguments

__all__ = ["QualityFilterKwargs", "RetrievalQualityFilter"]


class QualityFilterKwargs(TypedDict, total=False):
    """The settings of :class:`RetrievalQualityFilter` as typed keyword arguments.

    One key per field, described there; the fields still check the values at runtime.
    """

    min_score: float | None
    min_chars: int
    dedupe_similarity: float
    min_authority: float | None
    score_keys: tuple[str, ...]


class RetrievalQualityFilter(BaseDocumentCompressor):
    """Drops weak, short and near-duplicate documents before they ground an answer.

    Use it alone (``quality_filter.compress_documents(docs, query)``) or in a
    ``ContextualCompressionRetriever``. The rules are the engine's layer-1 defence,
    :func:`~truthlens_integrations.core.mitigation.filter_passages`; this class only
    reads scores and metadata off LangChain documents.

    Attributes:
        min_score: Documents whose retrieval score is below this are dropped;
            documents without a score stay (``None`` disables the check).
        min_chars: Documents shorter than this many characters (stripped) are dropped.
        dedupe_similarity: A document this similar (content-word Jaccard) to one
            already kept is dropped; exact duplicates always go.
        min_authority: Documents whose ``metadata["authority"]`` is below this are
            dropped and authoritative ones come first; ``None`` disables it.
        score_keys: Metadata keys holding a document's retrieval score, tried in order.

    Raises:
        UnknownArgumentError: For an unknown setting (with a suggestion).
        InvalidArgumentError: For a setting of the wrong type or out of range.
    """

    min_score: float | None = Field(default=0.7, ge=0.0)
    min_chars: int = Field(default=50, ge=0)
    dedupe_similarity: float = Field(default=0.9, gt=0.0, le=1.0)
    min_authority: float | None = None
    score_keys: tuple[str, ...] = ("score", "relevance_score", "similarity")

    def __init__(self, **data: Unpack[QualityFilterKwargs]) -> None:
        # A misspelt setting would otherwise be dropped and the default used silently.
        reject_unknown(data, type(self).model_fields, "RetrievalQualityFilter")
        fields: dict[str, Any] = dict(data)  # the base's __init__ is pydantic's
        try:
            super().__init__(**fields)
        except ValidationError as exc:
            raise invalid_arguments(exc, "RetrievalQualityFilter") from None

    def _score(self, document: Document) -> float | None:
        for key in self.score_keys:
            value = document.metadata.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
        return None

    @override
    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """The documents that pass the filter.

        Args:
            documents: Retrieved documents, best first (earlier ones win among
                duplicates).
            query: The query (unused: the rules do not depend on it).
            callbacks: Unused.

        Returns:
            The kept documents, in their original order (authoritative ones first
            when ``min_authority`` is set).
        """
        passages = [
            Passage(text=d.page_content, score=self._score(d), metadata=dict(d.metadata))
            for d in documents
        ]
        index = {id(p): i for i, p in enumerate(passages)}
        # Every field but score_keys is a setting of the core filter, under its name.
        kept = filter_passages(passages, **self.model_dump(exclude={"score_keys"}))
        return [documents[index[id(p)]] for p in kept]
