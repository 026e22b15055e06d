"""What the mitigation loops call out to: retrievers and grounded answerers.

Adapters wrap their framework's objects into these small protocols (a LangChain
retriever, a LlamaIndex query engine, a plain function) with
:func:`retriever_from_callables` / :func:`answerer_from_callables`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, Protocol, TypeVar, runtime_checkable

from .._errors import InvalidInputError, RetrievalError

__all__ = [
    "CallableAnswerer",
    "CallableRetriever",
    "GroundedAnswer",
    "GroundedAnswerer",
    "RetrievalError",
    "Retriever",
    "answerer_from_callables",
    "retriever_from_callables",
]

_T = TypeVar("_T")

GroundedAnswer = tuple[str, list[str]]
"""An answer and the passages it was generated from."""


@runtime_checkable
class Retriever(Protocol):
    """Finds passages for a query."""

    def retrieve(self, query: str) -> list[str]:
        """Passages for ``query``, best first (may be empty)."""
        ...

    async def aretrieve(self, query: str) -> list[str]:
        """Async :meth:`retrieve`."""
        ...


@runtime_checkable
class GroundedAnswerer(Protocol):
    """Re-runs a whole retrieval-augmented pipeline (a chain, a query engine) for a query.

    The retrieval-feedback loop uses it instead of ``retriever`` + ``llm`` when the
    caller's pipeline should produce the answer itself: it sends the rewritten
    query and receives the new answer with the passages it was grounded on.
    """

    def answer(self, query: str) -> GroundedAnswer:
        """``(answer, passages)`` for ``query``."""
        ...

    async def aanswer(self, query: str) -> GroundedAnswer:
        """Async :meth:`answer`."""
        ...


def _check_passages(value: object, source: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise RetrievalError(f"{source} must return a list of strings, got {type(value).__name__}")
    passages = list(value)
    for i, item in enumerate(passages):
        if not isinstance(item, str):
            raise RetrievalError(
                f"{source} returned a {type(item).__name__} at position {i}; convert "
                "documents to text first"
            )
    return passages


def _check_answer(value: object, source: str) -> GroundedAnswer:
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)):
        raise RetrievalError(f"{source} must return (answer: str, passages: list[str])")
    return value[0], _check_passages(value[1], source)


class _Callables(Generic[_T]):
    """A sync and/or an async ``query -> result`` function, checked on the way out."""

    _check: Callable[[object, str], _T]

    def __init__(
        self,
        sync: Callable[[str], object] | None,
        async_: Callable[[str], Awaitable[object]] | None,
        name: str,
        what: str,
    ) -> None:
        if sync is None and async_ is None:
            raise InvalidInputError(f"{what} needs a sync or an async function")
        self._sync = sync
        self._async = async_
        self.name = name

    def _call(self, query: str) -> _T:
        if self._sync is not None:
            return self._check(self._sync(query), self.name)
        assert self._async is not None
        return self._check(_run_coroutine(self._async(query)), self.name)

    async def _acall(self, query: str) -> _T:
        if self._async is not None:
            return self._check(await self._async(query), self.name)
        return await asyncio.to_thread(self._call, query)


class CallableRetriever(_Callables[list[str]]):
    """A :class:`Retriever` built from plain functions.

    Args:
        sync: ``query -> passages``; ``None`` when only the async one exists.
        async_: ``async query -> passages``; ``None`` runs ``sync`` in a worker thread.
        name: Name for logs.

    Raises:
        InvalidInputError: If neither function is given.
    """

    _check = staticmethod(_check_passages)

    def __init__(
        self,
        sync: Callable[[str], Sequence[str]] | None = None,
        async_: Callable[[str], Awaitable[Sequence[str]]] | None = None,
        *,
        name: str = "retriever",
    ) -> None:
        super().__init__(sync, async_, name, "a retriever")

    def retrieve(self, query: str) -> list[str]:
        """Call the sync function (or run the async one to completion)."""
        return self._call(query)

    async def aretrieve(self, query: str) -> list[str]:
        """Call the async function, or the sync one in a worker thread."""
        return await self._acall(query)


class CallableAnswerer(_Callables[GroundedAnswer]):
    """A :class:`GroundedAnswerer` built from plain functions.

    Args:
        sync: ``query -> (answer, passages)``; ``None`` when only the async one exists.
        async_: ``async query -> (answer, passages)``; ``None`` runs ``sync`` in a
            worker thread.
        name: Name for logs and cost accounting.

    Raises:
        InvalidInputError: If neither function is given.
    """

    _check = staticmethod(_check_answer)

    def __init__(
        self,
        sync: Callable[[str], tuple[str, Sequence[str]]] | None = None,
        async_: Callable[[str], Awaitable[tuple[str, Sequence[str]]]] | None = None,
        *,
        name: str = "answerer",
    ) -> None:
        super().__init__(sync, async_, name, "an answerer")

    def answer(self, query: str) -> GroundedAnswer:
        """Call the sync function (or run the async one to completion)."""
        return self._call(query)

    async def aanswer(self, query: str) -> GroundedAnswer:
        """Call the async function, or the sync one in a worker thread."""
        return await self._acall(query)


def _run_coroutine(awaitable: Awaitable[_T]) -> _T:
    async def wrap() -> _T:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrap())
    # Inside a running loop (sync call from async code): run it on a fresh loop in a
    # worker thread rather than deadlocking this one.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wrap()).result()


def retriever_from_callables(
    sync: Callable[[str], Sequence[str]] | None = None,
    async_: Callable[[str], Awaitable[Sequence[str]]] | None = None,
    *,
    name: str = "retriever",
) -> Retriever:
    """Build a :class:`Retriever` from a sync and/or an async ``query -> passages`` function.

    Args:
        sync: The sync function.
        async_: The async function.
        name: Name for logs.

    Returns:
        The retriever.

    Raises:
        InvalidInputError: If neither function is given.
    """
    return CallableRetriever(sync, async_, name=name)


def answerer_from_callables(
    sync: Callable[[str], tuple[str, Sequence[str]]] | None = None,
    async_: Callable[[str], Awaitable[tuple[str, Sequence[str]]]] | None = None,
    *,
    name: str = "answerer",
) -> GroundedAnswerer:
    """Build a :class:`GroundedAnswerer` from ``query -> (answer, passages)`` functions.

    Args:
        sync: The sync function.
        async_: The async function.
        name: Name for logs and cost accounting.

    Returns:
        The answerer.

    Raises:
        InvalidInputError: If neither function is given.
    """
    return CallableAnswerer(sync, async_, name=name)
