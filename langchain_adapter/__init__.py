"""LangChain integration (needs the ``langchain`` extra).

- :class:`TruthLensRunnable`: the guard as an LCEL runnable, piped after a chain
  (``rag_chain | TruthLensRunnable(engine=...)``) or wrapping one
  (:func:`guard_chain`).
- :class:`TruthLensCallbackHandler` / :class:`AsyncTruthLensCallbackHandler` and
  :func:`truthlens_callback`: check every answer of any chain or agent without
  changing it.
- :class:`ChatModelLLM`: any LangChain chat model behind the core LLM protocol;
  :class:`LLMChatModel` the other way round (the offline SmolLM2 backend in LCEL).
- :class:`RetrievalQualityFilter`: a document compressor dropping weak, short and
  near-duplicate documents.
- :func:`guarded_events`: ``astream_events`` without unchecked text, for agents, pipes
  (``upstream | guard``) and wrapped chains alike.
- :class:`TruthLensMiddleware`: agent middleware for ``langchain.agents.create_agent``
  (checks final answers against the turn's tool results).
- :class:`TruthLensGraphGuard`: a LangGraph guard node and a router by NLI label
  (supported / neutral / contradiction / unverified / exhausted).

The agent names load ``langchain`` and ``langgraph`` on first use, so this package
imports with ``langchain-core`` alone. The adapter's building blocks (input parsing,
output payloads, routes) are private modules here.

Example:
    >>> from truthlens_integrations.langchain_adapter import TruthLensRunnable
    >>> guarded = rag_chain | TruthLensRunnable.from_config("policy.yaml")  # doctest: +SKIP
    >>> guarded.invoke("When was the Eiffel Tower built?")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from truthlens_integrations.core._adapter_api import require

require("langchain_core", extra="langchain", feature="truthlens_integrations.langchain_adapter")

from ._callbacks import (  # noqa: E402
    AsyncTruthLensCallbackHandler,
    TruthLensCallbackHandler,
    truthlens_callback,
)
from ._compressor import RetrievalQualityFilter  # noqa: E402
from ._events import guarded_events  # noqa: E402
from ._llm import ChatModelLLM, LLMChatModel  # noqa: E402
from ._outputs import TRUTHLENS_EVENT  # noqa: E402
from ._runnable import TruthLensRunnable, guard_chain  # noqa: E402

if TYPE_CHECKING:
    from ._graph import GRAPH_ROUTES, TruthLensGraphGuard, TruthLensGraphState, rewrite_query
    from ._middleware import TruthLensMiddleware

# Agent names, loaded on first use: they need langchain (1.x) and langgraph.
_AGENT_NAMES: dict[str, str] = {
    "TruthLensMiddleware": "._middleware",
    "GRAPH_ROUTES": "._graph",
    "TruthLensGraphGuard": "._graph",
    "TruthLensGraphState": "._graph",
    "rewrite_query": "._graph",
}


def __getattr__(name: str) -> Any:
    module = _AGENT_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    feature = f"truthlens_integrations.langchain_adapter.{name}"
    require("langgraph", extra="langchain", feature=feature)
    if module == "._middleware":
        require("langchain.agents", extra="langchain", feature=feature)
    return getattr(importlib.import_module(module, __name__), name)


__all__ = [
    "GRAPH_ROUTES",
    "TRUTHLENS_EVENT",
    "AsyncTruthLensCallbackHandler",
    "ChatModelLLM",
    "LLMChatModel",
    "RetrievalQualityFilter",
    "TruthLensCallbackHandler",
    "TruthLensGraphGuard",
    "TruthLensGraphState",
    "TruthLensMiddleware",
    "TruthLensRunnable",
    "guard_chain",
    "guarded_events",
    "rewrite_query",
    "truthlens_callback",
]
