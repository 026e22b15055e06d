"""Tests of ``truthlens_integrations/testing/_llamaindex.py``: scripted_function_llm, the
scripted LlamaIndex LLM of the guide's snippets.
"""

from __future__ import annotations

import asyncio

import pytest

from truthlens_integrations.core import InvalidArgumentError
from truthlens_integrations.testing import scripted_function_llm, tool_call


def test_scripted_function_llm_calls_tools_then_answers() -> None:
    from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock

    llm = scripted_function_llm([tool_call("lookup", name="Eiffel"), "built in 1950"])
    first = asyncio.run(llm.achat([ChatMessage(role="user", content="q")]))
    blocks = [b for b in first.message.blocks if isinstance(b, ToolCallBlock)]
    assert [(b.tool_name, b.tool_kwargs) for b in blocks] == [("lookup", {"name": "Eiffel"})]
    second = llm.chat([ChatMessage(role="user", content="q")])
    assert second.message.content == "built in 1950"
    with pytest.raises(InvalidArgumentError):
        scripted_function_llm([])


def test_scripted_function_llm_answers_on_every_path_like_a_hosted_model() -> None:
    # The completion paths used to echo the prompt: a query engine then "answered"
    # with its own prompt template and the guard checked that.
    from llama_index.core.base.llms.types import ChatMessage

    llm = scripted_function_llm(["one two", "three"], cycle=True)
    assert llm.metadata.is_chat_model and llm.metadata.is_function_calling_model
    assert llm.complete("Context: ... Question: ...").text == "one two"
    assert asyncio.run(llm.acomplete("a prompt")).text == "three"
    assert [c.delta for c in llm.stream_complete("a prompt")] == ["one ", "two"]

    async def streamed_completion() -> list[str]:
        return [c.text async for c in await llm.astream_complete("a prompt")]

    assert asyncio.run(streamed_completion()) == ["three"]
    question = [ChatMessage(role="user", content="q")]
    chunks = list(llm.stream_chat(question))
    assert [c.delta for c in chunks] == ["one ", "two"]
    assert chunks[-1].message.content == "one two"

    async def streamed_chat() -> list[str]:
        return [c.delta async for c in await llm.astream_chat(question)]

    assert asyncio.run(streamed_chat()) == ["three"]


def test_scripted_function_llm_refuses_a_tool_call_on_a_completion_path() -> None:
    llm = scripted_function_llm([tool_call("lookup", name="Eiffel")])
    with pytest.raises(InvalidArgumentError, match="completion"):
        llm.complete("a prompt")


def test_a_query_engine_answers_with_the_scripted_reply_not_its_prompt() -> None:
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    llm = scripted_function_llm(["The Eiffel Tower was built in 1950."])
    index = VectorStoreIndex.from_documents(
        [Document(text="built 1887-1889")], embed_model=MockEmbedding(embed_dim=8)
    )
    for streaming in (False, True):
        engine = index.as_query_engine(llm=llm, streaming=streaming)
        response = engine.query("When was it built?")
        text = response.get_response().response if streaming else response.response
        assert text == "The Eiffel Tower was built in 1950."
