"""A guarded RAG chain: retrieve, answer, detect hallucinated spans, refine.

Run:
    python cookbook/langchain_rag.py             # bundled detector + local SmolLM2 (offline)
    python cookbook/langchain_rag.py --fake-llm  # scripted chat model, seconds (CI)

The chain is plain LCEL; ``| TruthLensRunnable(...)`` is the only TruthLens line. The
policy is standard mode with the ``body`` action: a flagged answer is refined by the
chat model against the retrieved context, and a warning is added if it stays flagged.
"""

from __future__ import annotations

import sys
from operator import itemgetter
from typing import Any

import _langchain_setup as shared
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough

from truthlens_integrations.langchain_adapter import RetrievalQualityFilter, TruthLensRunnable

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer in one sentence, using only this context:\n{context}"),
        ("human", "{question}"),
    ]
)


def rag_chain(model: Any) -> Runnable[dict[str, Any], dict[str, Any]]:
    """Retrieve the question's documents and answer from them (plain LCEL, unguarded)."""
    retriever = shared.vector_store().as_retriever(search_kwargs={"k": 2})
    quality = RetrievalQualityFilter(min_chars=40)

    drop_weak = RunnableLambda(
        lambda docs: quality.compress_documents(docs, shared.EIFFEL_QUESTION)
    )
    # The prompt gets the passages as plain text; the guard gets the documents. Shown
    # the documents' Python repr (Document(metadata=..., page_content=...)), the small
    # local model garbled its answer ("Gustave Eiffelaub").
    as_text = RunnableLambda(lambda docs: "\n\n".join(d.page_content for d in docs))
    prompt_input = {"context": itemgetter("context") | as_text, "question": itemgetter("question")}
    return RunnablePassthrough.assign(
        context=itemgetter("question") | retriever | drop_weak
    ).assign(answer=prompt_input | PROMPT | model | StrOutputParser())


def main(argv: list[str] | None = None) -> int:
    shared.setup_logging()
    fake = shared.use_fake(argv)
    # scripted: the chain's answer, then the refinement the guard asks for
    model = shared.chat_model([shared.HALLUCINATED, shared.CORRECT, shared.CORRECT], fake=fake)
    guarded = rag_chain(model) | TruthLensRunnable(engine=shared.engine("standard"), llm=model)

    print("[1] The RAG chain, guarded")
    print(f"question:          {shared.EIFFEL_QUESTION}")
    out = guarded.invoke({"question": shared.EIFFEL_QUESTION})
    shared.show_verdict(out["truthlens"])
    print(f"shown to the user: {out['answer']}")

    # The same guard on a known-wrong answer, so the demo always shows spans and a fix.
    print("\n[2] A deliberately wrong answer, guarded against the Eiffel record")
    print(f"question:          {shared.EIFFEL_QUESTION}")
    print(f"wrong answer in:   {shared.HALLUCINATED}")
    guard = TruthLensRunnable(engine=shared.engine("standard"), llm=model)
    out = guard.invoke(
        {
            "question": shared.EIFFEL_QUESTION,
            "context": [shared.EIFFEL_RECORD],
            "answer": shared.HALLUCINATED,
        }
    )
    shared.show_verdict(out["truthlens"])
    print(f"shown to the user: {out['answer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
