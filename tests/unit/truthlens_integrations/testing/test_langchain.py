"""The scripted models the guide's snippets use (truthlens_integrations.testing)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from truthlens_integrations.core import InvalidArgumentError
from truthlens_integrations.testing import (
    ScriptedChatModel,
    ToolCall,
    scripted_function_llm,
    tool_call,
)


def test_scripted_chat_model_replies_in_order_then_repeats_the_last() -> None:
    model = ScriptedChatModel(replies=[tool_call("lookup", name="Eiffel"), "built in 1950"])
    first = model.invoke("q")
    assert first.content == ""
    assert [(c["name"], c["args"]) for c in first.tool_calls] == [("lookup", {"name": "Eiffel"})]
    assert model.invoke("q").content == "built in 1950"
    assert model.invoke("q").content == "built in 1950"
    assert model.bind_tools([]) is model


def test_scripted_chat_model_streams_words_and_cycles() -> None:
    model = ScriptedChatModel(replies=["one two", "three"], cycle=True)
    assert [c.content for c in model.stream("q") if c.content] == ["one ", "two"]
    assert model.invoke("q").content == "three"
    assert model.invoke("q").content == "one two"


def test_scripted_chat_model_rejects_a_bad_script() -> None:
    with pytest.raises(InvalidArgumentError):
        ScriptedChatModel(replies=[])
    with pytest.raises(InvalidArgumentError):
        ScriptedChatModel(replies=[42])
    with pytest.raises(InvalidArgumentError, match="one of them"):
        ScriptedChatModel(replies=["a"], respond=lambda messages: "b")
    with pytest.raises(InvalidArgumentError, match="got int"):
        ScriptedChatModel(respond=lambda messages: 42).invoke("q")


def test_scripted_chat_model_responds_to_what_it_is_shown() -> None:
    def respond(messages: list[BaseMessage]) -> str | ToolCall:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return tool_call("lookup", name="Eiffel")
        return f"from the record: {messages[-1].content}"

    model = ScriptedChatModel(respond=respond)
    call = model.invoke([HumanMessage("q")]).tool_calls[0]
    assert (call["name"], call["args"]) == ("lookup", {"name": "Eiffel"})
    conversation = [HumanMessage("q"), ToolMessage("built 1889", tool_call_id=call["id"])]
    assert model.invoke(conversation).content == "from the record: built 1889"
    streamed = [c.content for c in model.stream(conversation) if c.content]
    assert streamed == ["from ", "the ", "record: ", "built ", "1889"]  # word by word


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


def test_scripted_chat_model_answers_on_the_async_paths_too() -> None:
    model = ScriptedChatModel(replies=["one two", "three"], cycle=True)

    async def run() -> tuple[str, list[str]]:
        first = await model.ainvoke("q")
        streamed = [str(c.content) async for c in model.astream("q") if c.content]
        return str(first.content), streamed

    assert asyncio.run(run()) == ("one two", ["three"])
