"""Tests of ``core/mitigation/_protocols.py``: retrievers and answerers built from callables."""

from __future__ import annotations

import asyncio

import pytest

from truthlens_integrations.core import InvalidInputError, RetrievalError
from truthlens_integrations.core.mitigation import retriever_from_callables


def test_retriever_from_callables_checks_types() -> None:
    with pytest.raises(InvalidInputError):
        retriever_from_callables()
    retriever = retriever_from_callables(lambda q: [q, 3])  # type: ignore[list-item]
    with pytest.raises(RetrievalError):
        retriever.retrieve("x")
    async_only = retriever_from_callables(async_=lambda q: asyncio.sleep(0, result=[q]))
    assert async_only.retrieve("hi") == ["hi"]
    assert asyncio.run(async_only.aretrieve("yo")) == ["yo"]
