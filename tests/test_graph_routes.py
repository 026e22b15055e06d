"""A LangGraph graph maps every route of the guard, or fails while it is built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph

from truthlens_integrations.core import ConfigError
from truthlens_integrations.langchain_adapter import (
    GRAPH_ROUTES,
    TruthLensGraphGuard,
    TruthLensGraphState,
)

ROOT = Path(__file__).resolve().parent.parent


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
