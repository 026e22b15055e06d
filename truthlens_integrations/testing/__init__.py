"""Scripted chat models for examples, documentation snippets and tests (no network).

- :class:`ScriptedChatModel`: a LangChain chat model that gives scripted replies in
  order, tool calls included (``bind_tools`` returns the model itself), so
  ``langchain.agents.create_agent`` and LCEL chains run offline. Needs the
  ``langchain`` extra.
- :func:`scripted_function_llm`: a LlamaIndex function-calling ``MockLLM`` that gives
  scripted replies in order, tool calls included, for ``FunctionAgent`` and
  ``TruthLensFunctionAgent``. Needs the ``llamaindex`` extra.
- :func:`tool_call`: one tool call, written the same way for both.

Example:
    >>> from truthlens_integrations.testing import ScriptedChatModel, tool_call
    >>> model = ScriptedChatModel(  # doctest: +SKIP
    ...     replies=[tool_call("landmark_record", name="Eiffel Tower"), "Built in 1950."]
    ... )
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthlens_integrations.core._adapter_api import lazy_attributes as _lazy_attributes
from truthlens_integrations.core._adapter_api import require as _require

from ._calls import ToolCall, tool_call

if TYPE_CHECKING:
    from ._langchain import ScriptedChatModel
    from ._llamaindex import scripted_function_llm

_LAZY = {
    "ScriptedChatModel": "._langchain",
    "scripted_function_llm": "._llamaindex",
}
_EXTRAS = {
    "._langchain": ("langchain_core", "langchain"),
    "._llamaindex": ("llama_index.core", "llamaindex"),
}


def _check_extra(name: str, module: str) -> None:
    package, extra = _EXTRAS[module]
    _require(package, extra=extra, feature=f"truthlens_integrations.testing.{name}")


__getattr__, __dir__ = _lazy_attributes(__name__, _LAZY, before=_check_extra)

__all__ = ["ScriptedChatModel", "ToolCall", "scripted_function_llm", "tool_call"]
