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

Example:
    >>> from truthlens_integrations.langchain_adapter import TruthLensRunnable
    >>> guarded = rag_chain | TruthLensRunnable.from_config("policy.yaml")  # doctest: +SKIP
    >>> guarded.invoke("When was the Eiffel Tower built?")  # doctest: +SKIP
"""

from __future__ import annotations

from truthlens_integrations.core._optional import require

require("langchain_core", extra="langchain", feature="truthlens_integrations.langchain_adapter")

from ._callbacks import (  # noqa: E402
    AsyncTruthLensCallbackHandler,
    TruthLensCallbackHandler,
    truthlens_callback,
)
from ._capture import GroundingCapture  # noqa: E402
from ._compressor import RetrievalQualityFilter  # noqa: E402
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

__all__ = [
    "DEFAULT_BLOCKED_MESSAGE",
    "TRUTHLENS_EVENT",
    "AsyncTruthLensCallbackHandler",
    "ChatModelLLM",
    "GroundingCapture",
    "GuardedText",
    "LLMChatModel",
    "ParsedInput",
    "RetrievalQualityFilter",
    "StreamMode",
    "TruthLensCallbackHandler",
    "TruthLensRunnable",
    "as_llm",
    "find_chat_model",
    "guard_chain",
    "parse_input",
    "passthrough_problems",
    "tool_passages",
    "truthlens_callback",
    "verdict_payload",
]
