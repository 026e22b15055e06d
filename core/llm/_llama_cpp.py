"""A GGUF model in this process through llama.cpp (``llama-cpp-python``, the ``llama-cpp`` extra).

The offline accurate profile of the claim checker: the registry's Qwen2.5 1.5B, or any GGUF
the user names, read with the Document / Claim prompt; the first token's
log-probabilities give P(Yes). llama.cpp keeps the evaluated prompt: a request that
starts like the previous one (the same document, another claim) evaluates only what
differs.
"""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path
from typing import Any

from .._errors import MissingDependencyError, ModelNotAvailableError
from ._base import (
    BaseLLM,
    CompletionRequest,
    LLMResponse,
    TokenUsage,
    ensure_text,
    map_llm_errors,
)

__all__ = ["LlamaCppLLM"]

_FEATURE = "A GGUF model through llama.cpp"


class LlamaCppLLM(BaseLLM):
    """Chat completions from a GGUF file in this process (llama.cpp).

    Args:
        model_path: The GGUF file.
        n_ctx: Context window in tokens.
        threads: CPU threads; ``None``: the cores this process may use.
        name: The model's name in verdicts and metrics (default: the file's stem).

    Raises:
        ModelNotAvailableError: If the file does not exist.
        MissingDependencyError: If ``llama-cpp-python`` is not installed.
    """

    name = "llama-cpp"
    gives_logprobs = True

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        n_ctx: int = 4096,
        threads: int | None = None,
        name: str | None = None,
    ) -> None:
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise ModelNotAvailableError(f"no GGUF file at {path}")
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise MissingDependencyError("llama-cpp-python", "llama-cpp", _FEATURE) from exc
        self.model = name or path.stem
        # logits_all: the first token's log-probabilities; one lock: a context is not
        # safe to share between threads.
        self._llama: Any = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads or len(os.sched_getaffinity(0)),
            logits_all=True,
            verbose=False,
        )
        self._lock = threading.Lock()

    def _complete(self, request: CompletionRequest) -> LLMResponse:
        options: dict[str, Any] = request.options()
        if request.stop:
            options["stop"] = request.stop
        if request.top_logprobs is not None:
            options.update(logprobs=True, top_logprobs=request.top_logprobs)
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        started = time.perf_counter()
        with self._lock, map_llm_errors(f"model {self.model!r}"):
            reply = self._llama.create_chat_completion(messages=messages, **options)
        choice = reply["choices"][0]
        text = ensure_text(choice["message"].get("content"), model=self.model)
        usage = reply.get("usage") or {}
        return LLMResponse(
            text=text,
            model=self.model,
            usage=TokenUsage(
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
                total_tokens=int(usage.get("total_tokens", 0)),
            ),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            finish_reason=choice.get("finish_reason"),
            first_token_logprobs=_first_token(choice.get("logprobs")),
        )


def _first_token(logprobs: Any) -> dict[str, float] | None:
    """``{token: logprob}`` of the first generated token's alternatives, where given."""
    content = (logprobs or {}).get("content") or []
    if not content:
        return None
    first = content[0]
    out: dict[str, float] = {}
    for alternative in first.get("top_logprobs") or [first]:
        token = alternative.get("token")
        try:  # llama.cpp gives numpy floats
            value = float(alternative.get("logprob"))
        except (TypeError, ValueError):
            continue
        if isinstance(token, str) and math.isfinite(value):
            out.setdefault(token, value)
    return out or None
