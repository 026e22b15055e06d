"""One rule for what the package takes as an LLM: its own, or another framework's model.

Everywhere an LLM is taken (``TruthLens.guard(llm=..., verification_llms=...,
judge_llm=...)``, the adapters' arguments), it may be a core :class:`LLM`, a LangChain
chat model or LLM, or a LlamaIndex LLM; a framework's model is wrapped by its adapter
(``core/_frameworks.py`` says which), so the core imports no framework.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from .._arguments import kind
from .._errors import InvalidArgumentError
from .._frameworks import llm_wrapper_for
from ._base import LLM, BaseLLM

__all__ = ["LLMLike", "is_llm", "to_llm"]

LLMLike: TypeAlias = LLM | Any
"""What an ``llm=`` argument takes: a core :class:`LLM`, a LangChain chat model or LLM
(also under ``with_retry()`` / ``with_fallbacks()``), or a LlamaIndex LLM. Typed ``Any``
past the core protocol: the core cannot name the frameworks' classes."""

_WHAT = "a truthlens LLM (complete/acomplete), a LangChain chat model or LLM, or a LlamaIndex LLM"


def is_llm(value: object) -> bool:
    """Whether ``value`` follows the core LLM protocol (``complete`` and ``acomplete``)."""
    return callable(getattr(value, "complete", None)) and callable(
        getattr(value, "acomplete", None)
    )


def to_llm(value: object, *, what: str = "llm") -> LLM:
    """``value`` as a core LLM: itself, or another framework's model wrapped by its adapter.

    A framework's model is wrapped even when it has methods of the core protocol's names
    (a LlamaIndex LLM has ``complete`` and ``acomplete``, which take other arguments).

    Args:
        value: A core LLM, a LangChain chat model or LLM, or a LlamaIndex LLM.
        what: Names the argument in the error (``"judge_llm"``).

    Returns:
        The core LLM.

    Raises:
        InvalidArgumentError: If ``value`` is none of these.
        MissingDependencyError: If the adapter of its framework cannot be imported.
    """
    if isinstance(value, BaseLLM):
        return value
    wrap = llm_wrapper_for(value)
    wrapped = wrap(value) if wrap is not None else None
    if wrapped is not None and is_llm(wrapped):
        return wrapped  # type: ignore[return-value]  # checked: it follows the protocol
    if wrap is None and is_llm(value):
        return value  # type: ignore[return-value]  # a user's own class of the protocol
    raise InvalidArgumentError(f"{what} must be {_WHAT}, got {kind(value)}")
