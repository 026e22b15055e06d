"""Tests of ``core/engine/_blocked.py``: one vocabulary across the adapters: the same block
decision, option names and verdict.

Every adapter (LCEL runnable, agent middleware, LangGraph guard, LlamaIndex query
engine, LlamaIndex agent) is run on the same wrong answer and must:

- by default show it with the lightweight-mode warning naming the flagged parts;
- under ``block`` show ``blocked_message`` (``on_block="message"`` is the default)
  and raise :class:`BlockedResponseError` with ``on_block="raise"``;
- attach the verdict as ``verdict.to_dict()`` under ``"truthlens"``;
- keep the blocked text out of everything it returns (the whole output serialised
  to JSON is searched for the wrong answer's words);
- take the premium verifiers as ``verification_llms``.

Detector: the keyword model (flags "1950", "500", "meters"); prompt classifier: every
prompt factual; the chat models and the LlamaIndex LLM are scripted fakes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

from tests import _agents_support as agents
from tests._fakes import AlwaysFactual
from tests.unit.llamaindex_adapter.test_agent import make_agent
from tests.unit.llamaindex_adapter.test_agent import run as run_agent
from truthlens_integrations.core import BlockedResponseError, UnknownArgumentError
from truthlens_integrations.core.engine import DEFAULT_BLOCKED_MESSAGE, TruthLens, Verdict
from truthlens_integrations.core.engine._verdict import REDACTED, VERDICT_FIELDS
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.langchain_adapter import (
    TruthLensGraphGuard,
    TruthLensGraphState,
    TruthLensMiddleware,
    TruthLensRunnable,
)
from truthlens_integrations.llamaindex_adapter import TruthLensFunctionAgent, TruthLensQueryEngine

#: Words of the wrong answer that must not reach a user once it is blocked.
SECRET = "built in 1950"


@dataclass
class Shown:
    """What one adapter returned: the text shown, the verdict dict and all of it as JSON."""

    text: str
    verdict: dict[str, Any]
    dumped: str


def _dump(value: Any) -> str:
    def default(obj: Any) -> Any:
        if hasattr(obj, "model_dump"):
            return obj.model_dump(mode="json")
        return repr(obj)

    return json.dumps(value, default=default)


def _tool_turn() -> list[BaseMessage]:
    call = {"name": "landmark_record", "args": {"name": "Eiffel Tower"}, "id": "c1"}
    return [
        HumanMessage(agents.QUESTION),
        AIMessage("", tool_calls=[call]),
        ToolMessage(agents.EIFFEL_RECORD, tool_call_id="c1"),
        AIMessage(agents.WRONG, id="final"),
    ]


def run_runnable(engine: TruthLens, **kwargs: Any) -> Shown:
    out = TruthLensRunnable(engine=engine, **kwargs).invoke(_tool_turn())
    final = out[-1]
    return Shown(str(final.content), final.response_metadata["truthlens"], _dump(out))


def run_middleware(engine: TruthLens, **kwargs: Any) -> Shown:
    middleware = TruthLensMiddleware(engine, **kwargs)
    agent = create_agent(
        agents.scripted(agents.eiffel_script()), [agents.landmark_record], middleware=[middleware]
    )
    state = agent.invoke({"messages": [HumanMessage(agents.QUESTION)]})
    final = state["messages"][-1]
    return Shown(str(final.content), final.response_metadata["truthlens"], _dump(state))


def run_graph(engine: TruthLens, **kwargs: Any) -> Shown:
    class State(MessagesState, TruthLensGraphState, total=False):
        pass

    guard = TruthLensGraphGuard(engine, max_attempts=1, **kwargs)
    graph = StateGraph(State)
    graph.add_node("guard", guard.node)
    graph.add_edge(START, "guard")
    graph.add_edge("guard", END)
    state = graph.compile().invoke({"messages": _tool_turn()})
    final = state["messages"][-1]
    verdict = final.response_metadata["truthlens"]
    assert state["truthlens"] == verdict  # the state holds the same dict
    return Shown(str(final.content), verdict, _dump(state))


class _Answers(CustomQueryEngine):
    """A query engine that answers WRONG from the Eiffel record."""

    def custom_query(self, query_str: str) -> Response:
        node = NodeWithScore(node=TextNode(text=agents.EIFFEL_RECORD), score=1.0)
        return Response(response=agents.WRONG, source_nodes=[node])


def run_query_engine(engine: TruthLens, **kwargs: Any) -> Shown:
    response = TruthLensQueryEngine(_Answers(), engine=engine, **kwargs).query(agents.QUESTION)
    dumped = _dump({"response": response.response, "metadata": response.metadata})
    return Shown(str(response.response), response.metadata["truthlens"], dumped)


def run_function_agent(engine: TruthLens, **kwargs: Any) -> Shown:
    output, events, _ = asyncio.run(run_agent(make_agent(engine, **kwargs)))
    message = output.response
    # The agent's own output and messages (its raw provider payload and streamed
    # AgentOutput events are another change's; the guard's own event is checked here).
    ours = [e for e in events if type(e).__name__ == "TruthLensAgentEvent"]
    dumped = _dump({"message": message, "events": ours})
    return Shown(str(message.content), message.additional_kwargs["truthlens"], dumped)


ADAPTERS: dict[str, Callable[..., Shown]] = {
    "runnable": run_runnable,
    "middleware": run_middleware,
    "langgraph": run_graph,
    "query_engine": run_query_engine,
    "function_agent": run_function_agent,
}


def engine_with(detector: Detector, **hallucination: Any) -> TruthLens:
    policy = {"hallucination": {"use_nli": False, **hallucination}}
    return TruthLens.from_config(policy, detector=detector, fact_checker=AlwaysFactual())


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_the_default_shows_a_warning_naming_the_flagged_parts(
    detector: Detector, adapter: str
) -> None:
    shown = ADAPTERS[adapter](engine_with(detector))
    assert shown.text.startswith(agents.WRONG) and shown.text != agents.WRONG
    assert 'Not supported by the context: "1950", "500 meters".' in shown.text  # no NLI ran
    # one verdict shape everywhere: the flat to_dict() under "truthlens"
    assert set(shown.verdict) == set(VERDICT_FIELDS) - {"detection"}
    assert shown.verdict["action"] == "body" and shown.verdict["output"] == shown.text
    assert Verdict.model_validate(shown.verdict).detected


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_block_shows_the_message_and_withholds_the_text_everywhere(
    detector: Detector, adapter: str
) -> None:
    shown = ADAPTERS[adapter](engine_with(detector, hallucination_action="block"))
    assert shown.text == DEFAULT_BLOCKED_MESSAGE  # on_block="message" by default
    assert shown.verdict["blocked"] and shown.verdict["original_answer"] == REDACTED
    assert SECRET not in shown.dumped and "500 meters tall" not in shown.dumped


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_the_same_block_options_in_every_adapter(detector: Detector, adapter: str) -> None:
    engine = engine_with(detector, hallucination_action="block")
    shown = ADAPTERS[adapter](engine, blocked_message="Withheld.")
    assert shown.text == "Withheld."
    with pytest.raises(BlockedResponseError) as info:
        ADAPTERS[adapter](engine, on_block="raise")
    verdict = info.value.verdict
    assert isinstance(verdict, Verdict) and SECRET not in _dump(verdict.to_dict())
    assert verdict.full().original_answer == agents.WRONG  # the application's explicit channel


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_exposing_blocked_text_is_an_explicit_opt_in(detector: Detector, adapter: str) -> None:
    engine = engine_with(detector, hallucination_action="block")
    shown = ADAPTERS[adapter](engine, expose_blocked_text=True)
    assert shown.text == DEFAULT_BLOCKED_MESSAGE
    assert shown.verdict["original_answer"] == agents.WRONG


def _builders(engine: TruthLens) -> dict[str, Callable[..., Any]]:
    return {
        "runnable": lambda **kw: TruthLensRunnable(engine=engine, **kw),
        "middleware": lambda **kw: TruthLensMiddleware(engine, **kw),
        "query_engine": lambda **kw: TruthLensQueryEngine(_Answers(), engine=engine, **kw),
        "function_agent": lambda **kw: TruthLensFunctionAgent(
            tools=[], llm=MockLLM(), engine=engine, **kw
        ),
    }


def _verifiers(made: Any) -> list[Any]:
    return list(getattr(made, "verification_llms", None) or made._verification_llms)


@pytest.mark.parametrize("adapter", ["runnable", "middleware", "query_engine", "function_agent"])
def test_verification_llms_is_the_one_name(detector: Detector, adapter: str) -> None:
    engine = engine_with(detector)
    build = _builders(engine)[adapter]
    verifier: Any = MockLLM() if adapter in ("query_engine", "function_agent") else None
    verifier = verifier or FakeListChatModel(responses=["ok"])
    assert len(_verifiers(build(verification_llms=[verifier]))) == 1
    with pytest.raises(UnknownArgumentError):
        build(verification_models=[verifier])


@pytest.mark.parametrize("adapter", ["runnable", "middleware", "query_engine", "function_agent"])
def test_an_engines_on_block_is_never_overridden(detector: Detector, adapter: str) -> None:
    engine = TruthLens.from_config(
        {"hallucination": {"use_nli": False, "hallucination_action": "block"}},
        detector=detector,
        fact_checker=AlwaysFactual(),
        on_block="message",
    )
    assert _builders(engine)[adapter]().on_block == "message"
