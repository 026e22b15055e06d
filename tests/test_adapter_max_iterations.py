"""``max_iterations`` is a policy knob every adapter takes, as docs/engine.md says.

It used to be ``TruthLensMiddleware``'s alone: ``TruthLensRunnable(mode="standard",
llm=..., max_iterations=1)`` raised ``UnknownArgumentError``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import CustomQueryEngine

from truthlens_integrations import TruthLens
from truthlens_integrations.core import InvalidArgumentError
from truthlens_integrations.langchain_adapter import (
    TruthLensCallbackHandler,
    TruthLensGraphGuard,
    TruthLensMiddleware,
    TruthLensRunnable,
    guard_chain,
)
from truthlens_integrations.llamaindex_adapter import (
    TruthLensEvaluator,
    TruthLensFunctionAgent,
    TruthLensQueryEngine,
)

ROUTED = Path(__file__).resolve().parents[1] / "cookbook" / "policies" / "truthlens_decisions.yaml"


class _Echo(CustomQueryEngine):
    def custom_query(self, query_str: str) -> str:
        return query_str


@pytest.fixture(scope="module")
def engine() -> TruthLens:
    return TruthLens.from_config(ROUTED)  # models load on first use: none is loaded here


def _chat() -> FakeListChatModel:
    return FakeListChatModel(responses=["ok"])


BUILDERS: dict[str, Callable[..., Any]] = {
    "TruthLens.from_config": lambda engine, **kw: TruthLens.from_config(ROUTED, **kw),
    "TruthLens.derive": lambda engine, **kw: engine.derive(**kw),
    "TruthLensRunnable": lambda engine, **kw: TruthLensRunnable(engine=engine, llm=_chat(), **kw),
    "TruthLensRunnable.from_config": lambda engine, **kw: TruthLensRunnable.from_config(
        ROUTED, llm=_chat(), **kw
    ),
    "guard_chain": lambda engine, **kw: guard_chain(_chat(), engine=engine, **kw),
    "TruthLensCallbackHandler": TruthLensCallbackHandler,
    "TruthLensMiddleware": TruthLensMiddleware,
    "TruthLensMiddleware.from_config": lambda engine, **kw: TruthLensMiddleware.from_config(
        ROUTED, **kw
    ),
    "TruthLensGraphGuard": TruthLensGraphGuard,
    "TruthLensQueryEngine": lambda engine, **kw: TruthLensQueryEngine(_Echo(), engine=engine, **kw),
    "TruthLensEvaluator": TruthLensEvaluator,
    "TruthLensFunctionAgent": lambda engine, **kw: TruthLensFunctionAgent(
        tools=[], llm=MockLLM(), engine=engine, **kw
    ),
}


def _engine(made: Any) -> TruthLens:
    return made if isinstance(made, TruthLens) else made.engine


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_adapter_takes_max_iterations_on_every_route(engine: TruthLens, name: str) -> None:
    built = _engine(BUILDERS[name](engine, mode="standard", max_iterations=1))
    policy = built.policy
    routes = [None, *(d.name for d in policy.decisions)]
    assert len(routes) > 2  # the routed policy: the knob must reach each decision
    for route in routes:
        for mode in ("standard", "premium"):
            assert policy.settings_for(route, mode=mode).max_iterations == 1, (route, mode)


@pytest.mark.parametrize("name", ["TruthLensRunnable", "TruthLensQueryEngine", "TruthLens.derive"])
def test_max_iterations_is_checked_like_every_knob(engine: TruthLens, name: str) -> None:
    for bad in (True, 1.5, "2", -1, 101):
        with pytest.raises(InvalidArgumentError, match="max_iterations"):
            BUILDERS[name](engine, max_iterations=bad)


def test_the_runnable_refines_at_most_max_iterations_rounds() -> None:
    llm = FakeListChatModel(responses=["The Eiffel Tower was built in 1950."])  # never fixes it
    guard = TruthLensRunnable(mode="standard", llm=llm, max_iterations=1)
    out = guard.invoke(
        {
            "question": "When was the Eiffel Tower built?",
            "context": ['{"name": "Eiffel Tower", "built": "1887-1889"}'],
            "answer": "The Eiffel Tower was built in 1950.",
        }
    )
    assert guard.max_iterations == 1
    assert (out["truthlens"]["status"], out["truthlens"]["iterations"]) == (
        "max_iterations_reached",
        1,
    )
