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
imports with ``langchain-core`` alone.

Example:
    >>> from truthlens_integrations.langchain_adapter import TruthLensRunnable
    >>> guarded = rag_chain | TruthLensRunnable.from_config("policy.yaml")  # doctest: +SKIP
    >>> guarded.invoke("When was the Eiffel Tower built?")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from truthlens_integrations.core import require

require("langchain_core", extra="langchain", feature="truthlens_integrations.langchain_adapter")

from ._callbacks import (  # noqa: E402
    AsyncTruthLensCallbackHandler,
    TruthLensCallbackHandler,
    truthlens_callback,
)
from ._capture import GroundingCapture  # noqa: E402
from ._compressor import RetrievalQualityFilter  # noqa: E402
from ._events import UNCHECKED_TAG, guarded_events  # noqa: E402
from ._inputs import ParsedInput, parse_input, tool_passages  # noqa: E402
from ._llm import ChatModelLLM, LLMChatModel, as_llm  # noqa: E402
from ._outputs import (  # noqa: E402
    DEFAULT_BLOCKED_MESSAGE,
    TRUTHLENS_EVENT,
    GuardedText,
    verdict_payload,
)
from ._runnable import (  # noqa: E402
    StreamMode,
    TruthLensRunnable,
    find_chat_model,
    guard_chain,
    passthrough_problems,
)

if TYPE_CHECKING:
    from ._graph import (
        GRAPH_ROUTES,
        GraphRoute,
        TruthLensGraphGuard,
        TruthLensGraphState,
        regeneration_feedback,
        rewrite_query,
        route_label,
    )
    from ._middleware import FEEDBACK_NAME, TruthLensMiddleware

# Agent names, loaded on first use: they need langchain (1.x) and langgraph.
_AGENT_NAMES: dict[str, str] = {
    "FEEDBACK_NAME": "._middleware",
    "TruthLensMiddleware": "._middleware",
    "GRAPH_ROUTES": "._graph",
    "GraphRoute": "._graph",
    "TruthLensGraphGuard": "._graph",
    "TruthLensGraphState": "._graph",
    "regeneration_feedback": "._graph",
    "rewrite_query": "._graph",
    "route_label": "._graph",
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
    "DEFAULT_BLOCKED_MESSAGE",
    "FEEDBACK_NAME",
    "GRAPH_ROUTES",
    "TRUTHLENS_EVENT",
    "UNCHECKED_TAG",
    "AsyncTruthLensCallbackHandler",
    "ChatModelLLM",
    "GraphRoute",
    "GroundingCapture",
    "GuardedText",
    "LLMChatModel",
    "ParsedInput",
    "RetrievalQualityFilter",
    "StreamMode",
    "TruthLensCallbackHandler",
    "TruthLensGraphGuard",
    "TruthLensGraphState",
    "TruthLensMiddleware",
    "TruthLensRunnable",
    "as_llm",
    "find_chat_model",
    "guard_chain",
    "guarded_events",
    "parse_input",
    "passthrough_problems",
    "regeneration_feedback",
    "rewrite_query",
    "route_label",
    "tool_passages",
    "truthlens_callback",
    "verdict_payload",
]
