"""Tests of ``truthlens_integrations/testing/_langchain.py``: ScriptedChatModel, the scripted
LangChain chat model of the guide's snippets.
"""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from truthlens_integrations.core import InvalidArgumentError
from truthlens_integrations.testing import ScriptedChatModel, ToolCall, tool_call


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


def test_scripted_chat_model_answers_on_the_async_paths_too() -> None:
    model = ScriptedChatModel(replies=["one two", "three"], cycle=True)

    async def run() -> tuple[str, list[str]]:
        first = await model.ainvoke("q")
        streamed = [str(c.content) async for c in model.astream("q") if c.content]
        return str(first.content), streamed

    assert asyncio.run(run()) == ("one two", ["three"])
