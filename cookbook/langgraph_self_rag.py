"""A self-RAG graph in LangGraph that routes by the guard's verdict.

retrieve -> generate -> guard -> one of

- ``supported``: the answer holds up against the retrieved documents -> end;
- ``neutral``: the documents do not cover a claim (NLI neutral) -> rewrite the query
  with the unsupported claims and retrieve more (new documents only), then generate
  again;
- ``contradiction``: the documents say otherwise (NLI contradiction) -> generate
  again with the flagged spans and the evidence named (``truthlens_feedback``);
- ``unverified``: nothing was checked (no documents) -> rewrite the query and retrieve
  again (an unchecked answer never ends the graph as supported);
- ``exhausted``: out of attempts -> end, with the policy's action applied.

The first retrieval finds a history note without dates, the generator claims "built
in 1950, 500 meters tall" (neutral: the note says nothing about it), the rewritten
query finds the Eiffel record, the generator repeats itself (contradiction: the
record says 1887-1889 and 330 meters), and with the spans named it fixes the answer
(supported): all three routes in one run.

Run:
    python cookbook/langgraph_self_rag.py              # scripted generator, offline
    python cookbook/langgraph_self_rag.py --real-llm   # SmolLM2 / $OPENAI_BASE_URL writes
"""

from __future__ import annotations

import sys
from typing import Any

from _agents_setup import CORRECTED, engine_for, use_real
from _langchain_setup import EIFFEL_RECORD, HALLUCINATED, HashingEmbeddings, setup_logging
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import END, START, StateGraph

from truthlens_integrations.langchain_adapter import (
    TruthLensGraphGuard,
    TruthLensGraphState,
    rewrite_query,
)

QUESTION = "When was the Eiffel Tower built and how tall is it?"
HISTORY = (
    "The company of Gustave Eiffel designed and built the tower; the engineers Maurice "
    "Koechlin and Emile Nouguier drew its first plans."
)
CORPUS = [
    Document(HISTORY, metadata={"source": "history.txt"}),
    Document(EIFFEL_RECORD, metadata={"source": "landmarks.json"}),
    Document(
        "The Louvre museum in Paris opened to the public in 1793 and holds the Mona Lisa.",
        metadata={"source": "museums.txt"},
    ),
]


class RagState(TruthLensGraphState, total=False):
    question: str
    query: str
    documents: list[str]
    answer: str


def build(real: bool) -> Any:
    store = InMemoryVectorStore(HashingEmbeddings())
    store.add_documents(CORPUS)
    writer = None
    if real:
        from _langchain_setup import chat_model

        writer = chat_model([], fake=False, temperature=0.0)

    def retrieve(state: RagState) -> dict[str, Any]:
        have = state.get("documents", [])
        query = state.get("query") or state["question"]
        # one new document per retrieval: what the last ones lacked
        found = store.similarity_search(query, k=1, filter=lambda d: d.page_content not in have)
        print(f"  retrieve {query!r} -> {[d.metadata['source'] for d in found]}")
        return {"documents": [*have, *(d.page_content for d in found)]}

    def generate(state: RagState) -> dict[str, Any]:
        feedback = state.get("truthlens_feedback")
        if writer is None:  # scripted: wrong until the spans are named
            answer = CORRECTED if feedback else HALLUCINATED
        else:
            docs = "\n".join(f"- {d}" for d in state["documents"])
            prompt = f"Documents:\n{docs}\n\nQuestion: {state['question']}"
            if feedback:
                prompt += f"\n\n{feedback}"
            system = SystemMessage("Answer in one sentence from the documents.")
            answer = str(writer.invoke([system, HumanMessage(prompt)]).content)
        print(f"  generate -> {answer}")
        return {"answer": answer}

    def rewrite(state: RagState) -> dict[str, Any]:
        base = state.get("query") or state["question"]
        return {"query": rewrite_query(base, state["truthlens"])}

    guard = TruthLensGraphGuard(engine_for(hallucination_action="block"), max_attempts=4)

    def show(state: RagState) -> dict[str, Any]:
        verdict = state["truthlens"]  # the verdict's to_dict(), as everywhere
        spans = ", ".join(f"{s['text']!r} ({s['nli_label']})" for s in verdict["spans"])
        spans = spans or "none"
        print(f"  guard: spans {spans} -> route {state['truthlens_route']}")
        return {}

    nodes = {"retrieve": retrieve, "generate": generate, "show": show, "rewrite": rewrite}
    return self_rag_graph(RagState, guard, nodes)


def self_rag_graph(state: type, guard: TruthLensGraphGuard, nodes: dict[str, Any]) -> Any:
    """Wire the self-RAG loop: retrieve -> generate -> guard -> (a look) -> route.

    Args:
        state: The graph's state type (a :class:`TruthLensGraphState`).
        guard: Its ``node`` judges the answer and its ``route`` picks the next step.
        nodes: ``retrieve``, ``generate`` and ``rewrite``, and one more node run after
            the guard (here ``show``, which prints the verdict).
    """
    look = next(name for name in nodes if name not in ("retrieve", "generate", "rewrite"))
    graph = StateGraph(state)
    for name, node in nodes.items():
        graph.add_node(name, node)
    graph.add_node("guard", guard.node)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_edge("generate", "guard")
    graph.add_edge("guard", look)
    graph.add_conditional_edges(
        look,
        guard.route,
        {
            "supported": END,
            "neutral": "rewrite",
            "contradiction": "generate",
            "unverified": "rewrite",  # nothing was checked (no documents): look again
            "exhausted": END,
        },
    )
    graph.add_edge("rewrite", "retrieve")
    return graph.compile()


def main(argv: list[str] | None = None) -> int:
    real = use_real(argv)
    setup_logging()
    print(f"Q: {QUESTION}")
    out = build(real).invoke({"question": QUESTION})
    verdict = out["truthlens"]
    print(f"action: {verdict['action'] or 'none'}  attempts: {out['truthlens_attempts']}")
    print(f"final answer: {out['answer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
