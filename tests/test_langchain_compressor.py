"""RetrievalQualityFilter (a BaseDocumentCompressor) and the core QualityFilter behind it."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from truthlens_integrations.core import InvalidInputError
from truthlens_integrations.core.retrieval import QualityFilter, word_jaccard
from truthlens_integrations.langchain_adapter import RetrievalQualityFilter

EIFFEL = "The Eiffel Tower was built from 1887 to 1889 in Paris, France, for the 1889 World's Fair."
LOUVRE = "The Louvre museum in Paris opened to the public in 1793 and holds the Mona Lisa painting."


def test_drops_low_scores_short_texts_and_near_duplicates() -> None:
    docs = [
        Document(EIFFEL, metadata={"score": 0.91}),
        Document(EIFFEL.replace("France,", "France ,"), metadata={"score": 0.90}),  # near duplicate
        Document("Paris.", metadata={"score": 0.95}),  # too short
        Document(LOUVRE, metadata={"relevance_score": 0.3}),  # weak
        Document(LOUVRE.upper()),  # unscored: kept by default
    ]
    kept = RetrievalQualityFilter().compress_documents(docs, "When was the Eiffel Tower built?")
    assert [d.page_content for d in kept] == [EIFFEL, LOUVRE.upper()]
    strict = RetrievalQualityFilter(quality=QualityFilter(keep_unscored=False))
    assert [d.page_content for d in strict.compress_documents(docs, "q")] == [EIFFEL]
    loose = RetrievalQualityFilter(
        quality=QualityFilter(min_score=None, min_length=0, dedupe_similarity=None)
    )
    assert len(loose.compress_documents(docs, "q")) == 5


async def test_async_and_with_a_real_vector_store() -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_texts([EIFFEL, EIFFEL, LOUVRE, "short"])
    docs = await store.asimilarity_search("Eiffel", k=4)
    kept = await RetrievalQualityFilter().acompress_documents(docs, "Eiffel")
    assert sorted(d.page_content for d in kept) == sorted([EIFFEL, LOUVRE])


def test_word_jaccard_and_bad_scores() -> None:
    assert word_jaccard("a b c", "A B C") == 1.0 and word_jaccard("a b", "c d") == 0.0
    with pytest.raises(InvalidInputError):
        QualityFilter().select(["x"], [0.5, 0.6])
