"""LLM backends behind one small protocol: chat messages in, text out.

- :class:`OpenAICompatibleLLM`: OpenAI, vLLM, Ollama or any OpenAI-compatible server.
- :class:`LocalLLM`: an offline model in this process (SmolLM2-135M-Instruct by default).
- :func:`default_llm`: the first when ``$OPENAI_API_KEY``/``$OPENAI_BASE_URL`` is set,
  else the second.

Nothing here imports torch, transformers or openai until a backend is used.
"""

from __future__ import annotations

from ._base import (
    LLM,
    BaseLLM,
    ChatMessage,
    CompletionRequest,
    LLMResponse,
    MessagesInput,
    Role,
    TokenUsage,
    ensure_text,
    map_llm_errors,
    timed_response,
    to_messages,
)
from ._default import default_llm
from ._local import (
    ENV_CACHE_DIR,
    SMOLLM2_GGUF_FILE,
    SMOLLM2_MODEL_NAME,
    LocalLLM,
    clear_local_llm_cache,
    default_cache_dir,
    local_llm,
    smollm2_gguf_path,
)
from ._openai import (
    DEFAULT_OPENAI_MODEL,
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_MODEL,
    OpenAICompatibleLLM,
    is_transient_error,
)
from ._retry import RetryPolicy, is_transient, with_retries, with_retries_async
from ._wrapped import WrappedLLM

__all__ = [
    "DEFAULT_OPENAI_MODEL",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_CACHE_DIR",
    "ENV_MODEL",
    "LLM",
    "SMOLLM2_GGUF_FILE",
    "SMOLLM2_MODEL_NAME",
    "BaseLLM",
    "ChatMessage",
    "CompletionRequest",
    "LLMResponse",
    "LocalLLM",
    "MessagesInput",
    "OpenAICompatibleLLM",
    "RetryPolicy",
    "Role",
    "TokenUsage",
    "WrappedLLM",
    "clear_local_llm_cache",
    "default_cache_dir",
    "default_llm",
    "ensure_text",
    "is_transient",
    "is_transient_error",
    "local_llm",
    "map_llm_errors",
    "smollm2_gguf_path",
    "timed_response",
    "to_messages",
    "with_retries",
    "with_retries_async",
]
