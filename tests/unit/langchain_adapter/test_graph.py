"""Tests of ``langchain_adapter/_graph.py``: TruthLensGraphGuard in a real LangGraph
StateGraph, and its routes.

The graph: retrieve -> generate -> guard -> (supported: end | neutral: rewrite the
query, retrieve again | contradiction: regenerate with the spans named | exhausted:
end). Retrieval and generation are plain scripted functions (stand-ins for a vector
store and an LLM); the guard runs the real bundled models.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from tests._agents_support import EIFFEL_RECORD, QUESTION, RIGHT, WRONG, engine_for
from tests._fakes import AlwaysFactual
from tests._paths import REPO
from tests._scripts import load_example, run_here
from truthlens_integrations.core import ConfigError, UnknownArgumentError
from truthlens_integrations.core.engine import DEFAULT_BLOCKED_MESSAGE, TruthLens
from truthlens_integrations.core.engine._verdict import REDACTED
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.langchain_adapter import (
    GRAPH_ROUTES,
    TruthLensGraphGuard,
    TruthLensGraphState,
    rewrite_query,
)
from truthlens_integrations.langchain_adapter._graph import regeneration_feedback, route_label

# -- TruthLensGraphGuard in a real LangGraph ``StateGraph`` (self-RAG shape). --------------


DESCRIPTION = "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris."
FROM_MEMORY = "The Eiffel Tower was built from 1887 to 1889."
# The graph is wired as in the cookbook example, with a node that records each route.
SELF_RAG = load_example("langgraph_self_rag.py")


class RagState(TruthLensGraphState, total=False):
    question: str
    query: str
    documents: list[str]
    answer: str
    routes: list[str]
    generations: int


def retrieve(state: RagState) -> dict[str, Any]:
    query = state.get("query") or state["question"]
    # the record is only found once the query names the years (a rewritten query)
    found = EIFFEL_RECORD if any(y in query for y in ("1887", "1889")) else DESCRIPTION
    return {"documents": [found]}


def build(guard: TruthLensGraphGuard, *, first: str, stubborn: bool = False) -> Any:
    def generate(state: RagState) -> dict[str, Any]:
        n = state.get("generations", 0) + 1
        if state.get("truthlens_feedback") and not stubborn:
            answer = RIGHT
        elif EIFFEL_RECORD in state["documents"]:
            answer = first
        else:
            answer = FROM_MEMORY
        return {"answer": answer, "generations": n}

    def rewrite(state: RagState) -> dict[str, Any]:
        verdict = state["truthlens"]
        return {"query": rewrite_query(state.get("query") or state["question"], verdict)}

    def record(state: RagState) -> dict[str, Any]:
        return {"routes": [*state.get("routes", []), state["truthlens_route"]]}

    nodes = {"retrieve": retrieve, "generate": generate, "record": record, "rewrite": rewrite}
    return SELF_RAG.self_rag_graph(RagState, guard, nodes)


def test_contradiction_regenerates_with_the_spans_named(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(base)
    app = build(guard, first=WRONG)
    out = app.invoke({"question": QUESTION, "query": "Eiffel Tower 1887"})
    assert out["routes"] == ["contradiction", "supported"]
    assert out["answer"] == RIGHT
    assert out["truthlens"]["decision"] == "PASS"


def test_feedback_names_spans_and_evidence(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(base)
    update = guard.node.invoke(
        {"question": QUESTION, "documents": [EIFFEL_RECORD], "answer": WRONG}
    )
    assert update["truthlens_route"] == "contradiction"
    feedback = update["truthlens_feedback"]
    assert "1950" in feedback and "1887-1889" in feedback
    assert "answer" not in update  # not the end of the road: the text is left alone


def test_neutral_rewrites_the_query_and_retrieves_again(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(base)
    app = build(guard, first=RIGHT)
    out = app.invoke({"question": QUESTION})
    assert out["routes"][0] == "neutral"  # the description does not mention the years
    assert out["routes"][-1] == "supported"
    assert EIFFEL_RECORD in out["documents"]
    assert "1887" in out["query"]


def test_exhausted_applies_the_block_action(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(engine_for(base, hallucination_action="block"), max_attempts=2)
    app = build(guard, first=WRONG, stubborn=True)
    out = app.invoke({"question": QUESTION, "query": "Eiffel Tower 1887"})
    assert out["routes"] == ["contradiction", "exhausted"]
    assert out["answer"] == DEFAULT_BLOCKED_MESSAGE
    assert out["truthlens"]["blocked"] and out["truthlens"]["original_answer"] == REDACTED
    assert "built in 1950" not in json.dumps(out, default=str)  # withheld from the state
    assert out["truthlens_attempts"] == 2


async def test_async_graph(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(base)
    app = build(guard, first=WRONG)
    out = await app.ainvoke({"question": QUESTION, "query": "Eiffel Tower 1887"})
    assert out["routes"] == ["contradiction", "supported"]


def test_messages_state_uses_tool_results_as_context(base: TruthLens) -> None:
    class State(MessagesState, TruthLensGraphState, total=False):
        pass

    guard = TruthLensGraphGuard(engine_for(base, hallucination_action="body"), max_attempts=1)
    graph = StateGraph(State)
    graph.add_node("guard", guard.node)
    graph.add_edge(START, "guard")
    graph.add_edge("guard", END)
    call = {"name": "landmark_record", "args": {"name": "Eiffel Tower"}, "id": "c1"}
    out = graph.compile().invoke(
        {
            "messages": [
                HumanMessage(QUESTION),
                AIMessage("", tool_calls=[call]),
                ToolMessage(EIFFEL_RECORD, tool_call_id="c1"),
                AIMessage(WRONG, id="final"),
            ]
        }
    )
    assert out["truthlens_route"] == "exhausted"
    assert route_label(out["truthlens"]) == "contradiction"
    final = out["messages"][-1]
    assert final.id == "final" and str(final.content).startswith(WRONG)
    assert str(final.content) != WRONG  # the warning was added in place
    assert final.response_metadata["truthlens"] == out["truthlens"]


def test_router_needs_the_guard_node_and_options_are_checked(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(base)
    with pytest.raises(ConfigError):
        guard.route({"question": QUESTION})
    with pytest.raises(UnknownArgumentError, match="max_attempts"):
        TruthLensGraphGuard(base, max_attempt=2)
    with pytest.raises(ConfigError):
        TruthLensGraphGuard(base, max_attempts=0)


def test_cookbook_self_rag_graph_runs_offline(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = run_here("langgraph_self_rag.py", monkeypatch, capsys)
    assert "-> route " in out
    final = next(line for line in out.splitlines() if line.startswith("final answer:"))
    assert "1950" not in final  # fixed or withheld, never the unchecked answer


def test_policy_knobs_apply_to_a_copy_of_the_engine(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(base, action="block")
    assert guard.engine is not base and guard.engine.detector is base.detector
    assert guard.engine.policy.settings_for(None).hallucination_action == "block"


def test_an_answer_flagged_as_a_whole_is_named_so_and_sent_for_evidence(spanless: Detector) -> None:
    engine = TruthLens.from_config(None, detector=spanless, fact_checker=AlwaysFactual())
    verdict = engine.guard(context=[EIFFEL_RECORD], question=QUESTION, answer=WRONG)
    assert verdict.detected and verdict.spans == []
    feedback = regeneration_feedback(verdict, [EIFFEL_RECORD])
    assert "as a whole" in feedback and "flagged these parts" not in feedback
    assert EIFFEL_RECORD in feedback
    assert route_label(verdict) == "neutral"  # the evidence for it may be missing


# -- Issue 29, agents and LangGraph: attacks on the agent middleware, the graph guard, -----


# -- LangGraph: an unchecked answer never routes "supported" ---------------------------------


def _node(guard: TruthLensGraphGuard, **state: Any) -> dict[str, Any]:
    update = guard.node.invoke({"question": QUESTION, "answer": WRONG, **state})
    assert isinstance(update, dict)
    return update


def test_graph_answer_without_documents_routes_unverified(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(base)
    for question in (QUESTION, "Say hello to the team."):  # factual, and one the policy skips
        update = _node(guard, question=question, documents=[])
        assert not update["truthlens"]["checked"]
        assert update["truthlens_route"] == "unverified"
        assert route_label(update["truthlens"]) == "unverified"


def test_graph_route_with_detection_disabled_is_unverified_not_supported(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(engine_for(base, enabled=False))
    update = _node(guard, documents=[EIFFEL_RECORD])
    assert update["truthlens"]["not_checked_reason"] == "disabled"
    assert update["truthlens_route"] == "unverified"


def test_graph_unverified_route_applies_the_unverified_action(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(engine_for(base, unverified_factual_action="block"))
    update = _node(guard, documents=[])
    assert update["truthlens_route"] == "unverified"
    assert update["answer"] == DEFAULT_BLOCKED_MESSAGE  # the graph may end here: withheld


def test_graph_routes_are_all_named_and_the_router_accepts_them(base: TruthLens) -> None:
    assert GRAPH_ROUTES == ("supported", "neutral", "contradiction", "unverified", "exhausted")
    guard = TruthLensGraphGuard(base)
    assert guard.route({"truthlens_route": "unverified"}) == "unverified"


# -- A LangGraph graph maps every route of the guard, or fails while it is built. ----------


ROOT = REPO


class State(TruthLensGraphState, total=False):
    question: str
    documents: list[str]
    answer: str


def _graph(guard: TruthLensGraphGuard) -> StateGraph[Any]:
    graph: StateGraph[Any] = StateGraph(State)
    graph.add_node("generate", lambda state: {"answer": "It was built in 1950."})
    graph.add_node("guard", guard.node)
    graph.add_edge(START, "generate")
    graph.add_edge("generate", "guard")
    return graph


def _guide_block(page: str, needle: str) -> str:
    """The python block of ``page`` that contains ``needle``."""
    parts = (ROOT / page).read_text(encoding="utf-8").split("```python\n")[1:]
    blocks = [part.split("\n```", 1)[0] for part in parts]
    return next(block for block in blocks if needle in block)


def test_a_map_that_leaves_a_route_out_fails_when_the_graph_is_built() -> None:
    guard = TruthLensGraphGuard(max_attempts=2)
    four = {"supported": END, "neutral": "generate", "contradiction": "generate",
            "exhausted": END}  # fmt: skip
    with pytest.raises(ConfigError, match="no edge for unverified"):
        guard.add_routes(_graph(guard), four)
    with pytest.raises(ConfigError, match=r"unknown route.*supportd"):
        guard.add_routes(_graph(guard), {**four, "unverified": END, "supportd": END})
    with pytest.raises(ConfigError, match="dict from route to node"):
        guard.add_routes(_graph(guard), [("supported", END)])  # type: ignore[arg-type]


def test_an_empty_retrieval_ends_unverified_with_every_route_mapped() -> None:
    guard = TruthLensGraphGuard(max_attempts=2)
    graph = _graph(guard)
    guard.add_routes(graph, dict.fromkeys(GRAPH_ROUTES, END))
    out = graph.compile().invoke({"question": "When was it built?", "documents": []})
    assert out["truthlens_route"] == "unverified"
    assert out["truthlens"]["checked"] is False
    assert out["truthlens_attempts"] == 1


def test_the_readme_graph_survives_an_empty_retrieval(capsys: pytest.CaptureFixture[str]) -> None:
    # The README's graph used to map four routes: an empty retrieval died with
    # KeyError: 'unverified'.
    namespace: dict[str, Any] = {"__name__": "__snippet__"}
    exec(_guide_block("README.md", "TruthLensGraphGuard"), namespace)
    capsys.readouterr()
    out = namespace["graph"].compile().invoke({"question": "When was it built?", "documents": []})
    assert out["truthlens_route"] == "unverified"
    assert out["truthlens"]["checked"] is False


def test_the_guide_graphs_map_every_route() -> None:
    for page in ("README.md", "docs/langgraph.md"):
        block = _guide_block(page, "TruthLensGraphGuard")
        assert "guard.add_routes(graph" in block, page
        for route in GRAPH_ROUTES:
            assert f'"{route}":' in block, (page, route)
