"""What a wrapped chain lends the guard: its chat model, its retriever, a re-run."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import (
    Runnable,
    RunnableBinding,
    RunnableConfig,
    RunnableParallel,
    RunnableSequence,
)
from langchain_core.runnables.config import patch_config
from langchain_core.runnables.passthrough import RunnableAssign

from truthlens_integrations.core.mitigation import (
    GroundedAnswerer,
    Retriever,
    answerer_from_callables,
    retriever_from_callables,
)

from ._capture import GroundingCapture
from ._inputs import ParsedInput

__all__ = [
    "OutputReader",
    "as_retriever",
    "find_chat_model",
    "requery_answerer",
    "with_capture",
    "with_query",
]

OutputReader = Callable[[object, object, GroundingCapture], ParsedInput]
"""Takes a chain's input, its output and what the capture saw apart into a guard input."""


def as_retriever(retriever: BaseRetriever, config: RunnableConfig) -> Retriever:
    """A LangChain retriever behind the core protocol; its runs are children of ``config``."""

    def retrieve(query: str) -> list[str]:
        return [d.page_content for d in retriever.invoke(query, config)]

    async def aretrieve(query: str) -> list[str]:
        return [d.page_content for d in await retriever.ainvoke(query, config)]

    return retriever_from_callables(retrieve, aretrieve, name=retriever.get_name())


def with_capture(
    config: RunnableConfig, run_name: str | None = None
) -> tuple[RunnableConfig, GroundingCapture]:
    """``config`` plus a fresh :class:`GroundingCapture` inherited by every child run."""
    capture = GroundingCapture()
    callbacks = config.get("callbacks")
    handlers: Any
    if isinstance(callbacks, BaseCallbackManager):
        handlers = callbacks.copy()
        handlers.add_handler(capture, inherit=True)
    else:
        handlers = [*(callbacks or []), capture]
    return patch_config(config, callbacks=handlers, run_name=run_name), capture


def find_chat_model(runnable: object) -> BaseChatModel | None:
    """The chat model that produces a chain's answer: the last one in its steps.

    Args:
        runnable: A chain (sequence, parallel, binding, assign) or a chat model.

    Returns:
        The model, or ``None`` when the chain holds none.
    """
    if isinstance(runnable, BaseChatModel):
        return runnable
    children: list[object] = []
    if isinstance(runnable, RunnableBinding):
        children = [runnable.bound]
    elif isinstance(runnable, RunnableSequence):
        children = list(reversed(runnable.steps))
    elif isinstance(runnable, RunnableParallel):
        children = list(runnable.steps__.values())
    elif isinstance(runnable, RunnableAssign):
        children = [runnable.mapper]
    for child in children:
        found = find_chat_model(child)
        if found is not None:
            return found
    return None


def with_query(value: object, query: str, question_key: str) -> object:
    """The inner chain's input with the question replaced by a rewritten query."""
    if isinstance(value, str):
        return query
    if isinstance(value, Mapping):
        if "messages" in value and question_key not in value:
            return {**value, "messages": with_query(value["messages"], query, question_key)}
        key = next((k for k in (question_key, "question", "input", "query") if k in value), None)
        return {**value, (key or question_key): query}
    if isinstance(value, Sequence):
        messages = list(value)
        for i in range(len(messages) - 1, -1, -1):
            if isinstance(messages[i], HumanMessage):
                messages[i] = HumanMessage(content=query)
                return messages
        return [*messages, HumanMessage(content=query)]
    return query


def requery_answerer(
    chain: Runnable[Any, Any],
    chain_input: object,
    config: RunnableConfig,
    *,
    read_output: OutputReader,
    question_key: str,
) -> GroundedAnswerer:
    """Re-runs ``chain`` with a rewritten query (retrieval feedback).

    Args:
        chain: The wrapped chain.
        chain_input: Its first input; the rewritten query replaces its question.
        config: The guard's run config; each re-run is a child run of it.
        read_output: Reads a run's output and captured grounding into a guard input.
        question_key: Dict key of the question in ``chain_input``.

    Returns:
        The answerer the retrieval-feedback loop calls.
    """

    def setup(query: str) -> tuple[object, RunnableConfig, GroundingCapture]:
        cfg, capture = with_capture(config, run_name="truthlens_requery")
        return with_query(chain_input, query, question_key), cfg, capture

    def answer(query: str) -> tuple[str, list[str]]:
        value, cfg, capture = setup(query)
        parsed = read_output(value, chain.invoke(value, cfg), capture)
        return parsed.answer, parsed.context

    async def aanswer(query: str) -> tuple[str, list[str]]:
        value, cfg, capture = setup(query)
        parsed = read_output(value, await chain.ainvoke(value, cfg), capture)
        return parsed.answer, parsed.context

    return answerer_from_callables(answer, aanswer, name=f"chain:{chain.get_name()}")
