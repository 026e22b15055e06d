"""Issue 29, agents and LangGraph: attacks on the agent middleware, the graph guard,
the event streams and the LlamaIndex agent, each pinned by a regression test.

The real bundled detector, NLI and prompt classifier judge every answer; only the chat
models are scripted (tests/_agents_support.py), as LLM calls are the one faked part.
"""

from __future__ import annotations

from typing import Any

from tests._agents_support import EIFFEL_RECORD, QUESTION, WRONG, engine_for
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.langchain_adapter import (
    DEFAULT_BLOCKED_MESSAGE,
    GRAPH_ROUTES,
    TruthLensGraphGuard,
    route_label,
)

# -- LangGraph: an unchecked answer never routes "supported" ---------------------------------


def _node(guard: TruthLensGraphGuard, **state: Any) -> dict[str, Any]:
    update = guard.node.invoke({"question": QUESTION, "answer": WRONG, **state})
    assert isinstance(update, dict)
    return update


def test_graph_answer_without_documents_routes_unverified(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(base)
    for question in (QUESTION, "Say hello to the team."):  # factual, and one the policy skips
        update = _node(guard, question=question, documents=[])
        assert not update["truthlens"].checked
        assert update["truthlens_route"] == "unverified"
        assert route_label(update["truthlens"]) == "unverified"


def test_graph_route_with_detection_disabled_is_unverified_not_supported(base: TruthLens) -> None:
    guard = TruthLensGraphGuard(engine_for(base, enabled=False))
    update = _node(guard, documents=[EIFFEL_RECORD])
    assert update["truthlens"].not_checked_reason == "disabled"
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
