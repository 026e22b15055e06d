"""The retrieval-quality filter as a LangChain ``BaseDocumentCompressor``."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import Field
from typing_extensions import override

from truthlens_integrations.core.retrieval import QualityFilter

__all__ = ["RetrievalQualityFilter"]


class RetrievalQualityFilter(BaseDocumentCompressor):
    """Drops weak, short and near-duplicate documents before they ground an answer.

    Use it alone (``filter.compress_documents(docs, query)``) or in a
    ``ContextualCompressionRetriever``. The rules are the engine's
    :class:`~truthlens_integrations.core.retrieval.QualityFilter`.

    Attributes:
        quality: The thresholds (minimum score, minimum length, duplicate similarity).
        score_keys: Metadata keys holding a document's retrieval score, tried in
            order; a document without one is judged by ``quality.keep_unscored``.
    """

    quality: QualityFilter = Field(default_factory=QualityFilter)
    score_keys: tuple[str, ...] = ("score", "relevance_score", "similarity")

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
        """The documents that pass the filter, in their original order.

        Args:
            documents: Retrieved documents, best first.
            query: The query (unused: the rules do not depend on it).
            callbacks: Unused.

        Returns:
            The kept documents.
        """
        docs = list(documents)
        keep = self.quality.select([d.page_content for d in docs], [self._score(d) for d in docs])
        return [docs[i] for i in keep]
