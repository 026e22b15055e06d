"""Log hallucination spans of any chain without changing its output.

Three ways to see TruthLens's verdicts on a chain you do not want to change:

1. ``truthlens_callback()``: a context manager, like ``get_usage_metadata_callback()``,
   that attaches the handler to every run in the block;
2. ``TruthLensCallbackHandler`` passed in ``config["callbacks"]``, results by run id;
3. the ``truthlens_detection`` custom event of ``TruthLensRunnable`` in
   ``astream_events`` (what LangSmith-style tracers record).

Run:
    python cookbook/langchain_callbacks.py             # offline, local SmolLM2
    python cookbook/langchain_callbacks.py --fake-llm  # scripted model (CI)
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from typing import Any

import _langchain_setup as shared
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from truthlens_integrations.langchain_adapter import (
    TRUTHLENS_EVENT,
    TruthLensCallbackHandler,
    TruthLensRunnable,
    truthlens_callback,
)

PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Answer in one sentence from this context:\n{context}"), ("human", "{question}")]
)


def rag_chain(fake: bool, *answers: str) -> Any:
    retriever = shared.vector_store().as_retriever(search_kwargs={"k": 2})
    return (
        {
            "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | PROMPT
        | shared.chat_model(answers, fake=fake)
        | StrOutputParser()
    )


async def events_demo(fake: bool) -> None:
    chain = (
        rag_chain(fake, shared.HALLUCINATED)
        | (lambda answer: {"answer": answer})
        | TruthLensRunnable(engine=shared.engine())
    )
    async for event in chain.astream_events(shared.EIFFEL_QUESTION, version="v2"):
        if event["event"] == "on_custom_event" and event["name"] == TRUTHLENS_EVENT:
            data = event["data"]
            print(
                f"  event {TRUTHLENS_EVENT}: decision={data['decision']} "
                f"unverified={data['unverified']} headers={data['metadata']}"
            )


def main(argv: list[str] | None = None) -> int:
    shared.setup_logging()
    fake = shared.use_fake(argv)

    print("1. truthlens_callback() around ordinary chain calls")
    with truthlens_callback(shared.engine()) as cb:
        first = rag_chain(fake, shared.HALLUCINATED).invoke(shared.EIFFEL_QUESTION)
        second = rag_chain(fake, shared.CORRECT).invoke(shared.EIFFEL_QUESTION)
    for answer, verdict in zip([first, second], cb.all_verdicts, strict=False):
        print(f"  answer (unchanged): {answer}")
        shared.show_verdict(verdict)
    print(f"  stats: {cb.stats}")

    print("\n2. A handler in config, verdicts by run id")
    handler = TruthLensCallbackHandler(shared.engine())
    run_id = uuid.uuid4()
    rag_chain(fake, shared.HALLUCINATED).invoke(
        shared.EIFFEL_QUESTION, {"callbacks": [handler], "run_id": run_id}
    )
    for verdict in handler.verdicts(run_id):
        shared.show_verdict(verdict)

    print("\n3. The truthlens_detection custom event in astream_events")
    print("   (the answer travels without its context here, so it is 'unverified')")
    asyncio.run(events_demo(fake))
    return 0


if __name__ == "__main__":
    sys.exit(main())
