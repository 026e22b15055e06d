"""The demo's chain shows its model the passages as text, and the guard the documents.

The demo (cookbook/langchain_rag.py) used to format the retrieved ``Document`` objects
into the prompt as their Python repr; the local SmolLM2 model then garbled its own
answer ("built in 1889 by Gustave Eiffelaub ..."), which the guard passed at 0.43.
"""

from __future__ import annotations

import runpy
import sys
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from tests._scripts import COOKBOOK
from truthlens_integrations.testing import ScriptedChatModel


def test_the_demo_prompt_holds_passages_as_text_and_the_guard_gets_documents(
    monkeypatch: Any,
) -> None:
    monkeypatch.syspath_prepend(str(COOKBOOK))
    demo = runpy.run_path(str(COOKBOOK / "langchain_rag.py"))
    shared = sys.modules["_langchain_setup"]
    seen: list[list[BaseMessage]] = []

    def respond(messages: list[BaseMessage]) -> str:
        seen.append(messages)
        return shared.CORRECT

    out = demo["rag_chain"](ScriptedChatModel(respond=respond)).invoke(
        {"question": shared.EIFFEL_QUESTION}
    )
    system = str(seen[0][0].content)
    assert '"built": "1887-1889"' in system  # the record, as its text
    assert "page_content" not in system and "Document(" not in system
    assert out["answer"] == shared.CORRECT
    assert out["context"] and all(isinstance(d, Document) for d in out["context"])
