"""Tests of ``langchain_adapter/_compressor.py``: RetrievalQualityFilter as a LangChain
document compressor.
"""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from truthlens_integrations.langchain_adapter import RetrievalQualityFilter

EIFFEL = "The Eiffel Tower was built from 1887 to 1889 in Paris, France, for the 1889 World's Fair."
LOUVRE = "The Louvre museum in Paris opened to the public in 1793 and holds the Mona Lisa painting."
ORSAY = "The Musée d'Orsay occupies a former railway station on the left bank of the Seine."


def test_drops_low_scores_short_texts_and_near_duplicates() -> None:
    docs = [
        Document(EIFFEL, metadata={"score": 0.91}),
        Document(EIFFEL.replace("France,", "France ,"), metadata={"score": 0.90}),  # duplicate
        Document("Paris.", metadata={"score": 0.95}),  # too short
        Document(LOUVRE, metadata={"relevance_score": 0.3}),  # weak
        Document(ORSAY),  # unscored: kept
    ]
    kept = RetrievalQualityFilter().compress_documents(docs, "When was the Eiffel Tower built?")
    assert kept == [docs[0], docs[4]]  # the same Document objects, metadata intact
    loose = RetrievalQualityFilter(min_score=None, min_chars=0, dedupe_similarity=1.0)
    assert len(loose.compress_documents(docs, "q")) == 4  # exact-after-normalising duplicate goes


def test_authority_filters_and_orders() -> None:
    docs = [
        Document(EIFFEL, metadata={"authority": 0.6}),
        Document(LOUVRE, metadata={"authority": 0.2}),
        Document(ORSAY, metadata={"authority": 0.9}),
    ]
    kept = RetrievalQualityFilter(min_authority=0.5).compress_documents(docs, "q")
    assert [d.page_content for d in kept] == [ORSAY, EIFFEL]


async def test_async_with_a_real_vector_store() -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_texts([EIFFEL, EIFFEL, LOUVRE, "short"])
    docs = await store.asimilarity_search("Eiffel", k=4)
    kept = await RetrievalQualityFilter().acompress_documents(docs, "Eiffel")
    assert sorted(d.page_content for d in kept) == sorted([EIFFEL, LOUVRE])
