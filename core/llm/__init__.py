"""LLM backends behind one small protocol: chat messages in, text out.

- :class:`OpenAICompatibleLLM`: OpenAI, vLLM, Ollama or any OpenAI-compatible server.
- :class:`LocalLLM`: an offline model in this process (SmolLM2-135M-Instruct by default).
- :class:`LlamaCppLLM`: a GGUF file in this process through llama.cpp (the ``llama-cpp``
  extra).
- :func:`default_llm`: the first when ``$OPENAI_API_KEY``/``$OPENAI_BASE_URL`` is set,
  else the second.

Nothing here imports torch, transformers or openai until a backend is used.
"""

from __future__ import annotations

from ._base import LLM, BaseLLM, ChatMessage, CompletionRequest, LLMResponse, Role, TokenUsage
from ._default import default_llm
from ._llama_cpp import LlamaCppLLM
from ._local import LocalLLM, local_llm
from ._openai import OpenAICompatibleLLM
from ._retry import RetryPolicy

__all__ = [
    "LLM",
    "BaseLLM",
    "ChatMessage",
    "CompletionRequest",
    "LLMResponse",
    "LlamaCppLLM",
    "LocalLLM",
    "OpenAICompatibleLLM",
    "RetryPolicy",
    "Role",
    "TokenUsage",
    "default_llm",
    "local_llm",
]
