"""One scripted tool call, framework-free."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolCall", "tool_call"]

_IDS = itertools.count(1)


@dataclass(frozen=True)
class ToolCall:
    """A tool call a scripted model makes instead of answering.

    Attributes:
        name: The tool's name.
        args: The tool's keyword arguments.
        id: The call id (``call-1``, ``call-2``, ... when not given).
    """

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", f"call-{next(_IDS)}")


def tool_call(name: str, /, **args: Any) -> ToolCall:
    """A scripted reply that calls tool ``name`` with ``args``.

    Args:
        name: The tool's name.
        **args: The tool's keyword arguments.

    Returns:
        The call, to put in a scripted model's ``replies``.
    """
    return ToolCall(name=name, args=dict(args))
