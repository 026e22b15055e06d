"""Collect the grounding of one run of a wrapped chain or agent through callbacks."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from typing_extensions import override

from ._inputs import dedupe, last_human_text, tool_passages

__all__ = ["GroundingCapture"]


class GroundingCapture(BaseCallbackHandler):
    """Records what the retrievers returned and the tools produced within one run.

    Attached to the inner chain's config for one call only, so everything it sees
    belongs to that call. Runs inline (cheap bookkeeping) and never raises.
    """

    run_inline = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._context: list[str] = []
        self._question: str | None = None

    @property
    def context(self) -> list[str]:
        """Passages seen so far, first-seen order, repeats dropped."""
        with self._lock:
            return dedupe(self._context)

    @property
    def question(self) -> str | None:
        """The last human message a chat model was given, if any."""
        with self._lock:
            return self._question

    @override
    def on_retriever_end(
        self, documents: Sequence[Document], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Keep the retrieved documents' text."""
        with self._lock:
            self._context.extend(d.page_content for d in documents)

    @override
    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Keep the tool's output (a ``ToolMessage`` or a raw value)."""
        found = tool_passages(output)
        with self._lock:
            self._context.extend(found)

    @override
    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        """Remember the user's question the model was asked."""
        for batch in messages:
            text = last_human_text(batch)
            with self._lock:
                self._question = text or self._question
