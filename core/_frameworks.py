"""Models of other frameworks, read by the package's adapters: a registry the core asks.

The core names no framework. Where it takes an LLM it also takes another framework's
model (a LangChain chat model, a LlamaIndex LLM): the package root registers, for each
framework one of its adapters reads, the adapter function that wraps such a model, by its
dotted name. The adapter, and so its framework, is imported only when such a model is
given. A model's framework is the top-level module of a class it derives from
(``ChatOpenAI`` derives from ``langchain_core``'s ``BaseChatModel``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

__all__ = ["llm_wrapper_for", "register_llm_wrapper"]

#: Framework (top-level module) -> ``"module:function"`` that wraps its models as LLMs.
_LLM_WRAPPERS: dict[str, str] = {}


def register_llm_wrapper(framework: str, target: str) -> None:
    """Say which function wraps ``framework``'s models as core LLMs.

    Args:
        framework: The top-level module the framework's model classes come from
            (``"langchain_core"``).
        target: ``"package.module:function"``; the function takes the model and returns
            a core LLM, or ``None`` for an object of the framework that is not a model.
    """
    _LLM_WRAPPERS[framework] = target


def llm_wrapper_for(value: object) -> Callable[[object], object | None] | None:
    """The registered wrapper for ``value``'s framework, imported; ``None`` if none is."""
    for cls in type(value).__mro__:
        target = _LLM_WRAPPERS.get(cls.__module__.partition(".")[0])
        if target is not None:
            module, _, function = target.partition(":")
            wrapper: Callable[[object], object | None] = getattr(
                importlib.import_module(module), function
            )
            return wrapper
    return None
