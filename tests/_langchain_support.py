"""Shared pieces of the LangChain adapter tests.

The detector is the real keyword model (flags exactly "1950", "500", "meters"). The
NLI explainer and the prompt classifier are RULE-BASED STAND-INS written so every
label is predictable by hand (same rules as tests/unit/core/engine/test_engine.py). LLM calls use
LangChain's own fake chat models.
"""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from pydantic import Field

from tests._fakes import QuestionWordClassifier, RuleNLI
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import Detector

EIFFEL_DICT = {"answer": EIFFEL_ANSWER, "context": [EIFFEL_CONTEXT], "question": EIFFEL_QUESTION}
"""The Eiffel example as a guard's dict input."""
CLEAN = "The Eiffel Tower was built from 1887 to 1889 in Paris."
"""A correct answer to the Eiffel question."""
PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Answer only from this context:\n{context}"), ("human", "{question}")]
)
"""A RAG prompt: answer the question from the context."""


class FixedRetriever(BaseRetriever):
    """A retriever that finds the same passages whatever the query."""

    passages: list[str]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [Document(p) for p in self.passages]


def make_engine(detector: Detector, policy: object = None, **kwargs: Any) -> TruthLens:
    kwargs.setdefault("nli", RuleNLI())
    kwargs.setdefault("fact_checker", QuestionWordClassifier())
    # The tests read the answer as given: header only, unless a test's policy says
    # otherwise (the default, body, is tested on its own in tests/unit/core/engine/test_blocked.py).
    if policy is None:
        policy = action_policy("header")
    return TruthLens.from_config(policy, detector=detector, **kwargs)  # type: ignore[arg-type]


def action_policy(action: str, **extra: object) -> dict[str, object]:
    return {"hallucination": {"hallucination_action": action, **extra}}


class RunRecorder(BaseCallbackHandler):
    """Records run starts (name, run id, parent id, tags) and custom events."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: list[dict[str, Any]] = []
        self.events: list[tuple[str, Any, UUID]] = []

    def _add(
        self, kind: str, name: str | None, run_id: UUID, parent: UUID | None, **kw: Any
    ) -> None:
        name = name or (kw.pop("serialized", None) or {}).get("name")
        kw.pop("serialized", None)
        with self.lock:
            self.runs.append({"kind": kind, "name": name, "run_id": run_id, "parent": parent, **kw})

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        self._add("chain", kwargs.get("name"), run_id, parent_run_id, tags=tags or [])

    def _start(self, kind: str, serialized: Any, run_id: UUID, kwargs: dict[str, Any]) -> None:
        parent, tags = kwargs.get("parent_run_id"), kwargs.get("tags")
        self._add(kind, kwargs.get("name"), run_id, parent, tags=tags or [], serialized=serialized)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._start("chat_model", serialized, run_id, kwargs)

    def on_retriever_start(
        self, serialized: Any, query: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._start("retriever", serialized, run_id, kwargs)

    def on_tool_start(
        self, serialized: Any, input_str: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._start("tool", serialized, run_id, kwargs)

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with self.lock:
            self.events.append((name, data, run_id))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.runs if r["kind"] == kind]

    def root_of(self, run_id: UUID) -> UUID:
        by_id = {r["run_id"]: r for r in self.runs}
        while by_id[run_id]["parent"] is not None:
            run_id = by_id[run_id]["parent"]
        return run_id


class RateLimitedError(Exception):
    """Looks like a provider's 429."""

    status_code = 429


class Flaky(GenericFakeChatModel):
    """FAKE chat model: fails ``failures`` times with ``error``, then answers."""

    failures: int = 2
    error: type[Exception] = RateLimitedError
    calls: int = 0

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error("try again")
        return super()._generate(*args, **kwargs)


class LoopRecordingModel(GenericFakeChatModel):
    """A fake chat model with a native async path that records where it ran."""

    threads: list[str] = Field(default_factory=list)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.threads.append(threading.current_thread().name)
        return self._generate(messages, stop=stop, **kwargs)


def rag_chain_over(retriever: BaseRetriever, model: Any) -> Any:
    """A RAG chain: the retrieved passages as the prompt's context, ``model``'s text out."""
    return (
        {
            "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | PROMPT
        | model
        | StrOutputParser()
    )
