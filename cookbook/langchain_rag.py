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

from _langchain_setup import (
    CORRECT,
    EIFFEL_QUESTION,
    EIFFEL_RECORD,
    HALLUCINATED,
    chat_model,
    engine,
    setup_logging,
    show_verdict,
    use_fake,
    vector_store,
)
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from truthlens_integrations.langchain_adapter import RetrievalQualityFilter, TruthLensRunnable

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer in one sentence, using only this context:\n{context}"),
        ("human", "{question}"),
    ]
)


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    fake = use_fake(argv)
    # scripted: the chain's answer, then the refinement the guard asks for
    model = chat_model([HALLUCINATED, CORRECT, CORRECT], fake=fake)
    retriever = vector_store().as_retriever(search_kwargs={"k": 2})
    quality = RetrievalQualityFilter(min_chars=40)

    drop_weak = RunnableLambda(lambda docs: quality.compress_documents(docs, EIFFEL_QUESTION))
    rag_chain = RunnablePassthrough.assign(
        context=itemgetter("question") | retriever | drop_weak
    ).assign(answer=PROMPT | model | StrOutputParser())
    guarded = rag_chain | TruthLensRunnable(engine=engine("standard"), llm=model)

    print("[1] The RAG chain, guarded")
    print(f"question:          {EIFFEL_QUESTION}")
    out = guarded.invoke({"question": EIFFEL_QUESTION})
    show_verdict(out["truthlens"])
    print(f"shown to the user: {out['answer']}")

    # The same guard on a known-wrong answer, so the demo always shows spans and a fix.
    print("\n[2] A deliberately wrong answer, guarded against the Eiffel record")
    print(f"question:          {EIFFEL_QUESTION}")
    print(f"wrong answer in:   {HALLUCINATED}")
    guard = TruthLensRunnable(engine=engine("standard"), llm=model)
    out = guard.invoke(
        {"question": EIFFEL_QUESTION, "context": [EIFFEL_RECORD], "answer": HALLUCINATED}
    )
    show_verdict(out["truthlens"])
    print(f"shown to the user: {out['answer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
