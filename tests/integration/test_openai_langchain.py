"""LangChain's real OpenAI client against the local OpenAI-compatible server.

``langchain_openai.ChatOpenAI`` (streaming on and off) drives every LangChain adapter
the way the README and docs/langchain.md build them: the guarded chain in pipe and
wrapper form, the callback handler, the agent middleware in ``create_agent``, the
LangGraph guard, standard mode (the refinement goes to the endpoint) and premium mode
(verifiers and judge through the endpoint). The detector is the real bundled one.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

pytest.importorskip("langchain_openai", reason="the dev extra (langchain-openai) is not installed")

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from tests._openai_server import ChatRequest, OpenAIServer, Reply, ToolCall
from tests.integration.conftest import (
    EIFFEL_RECORD,
    QUESTION,
    RIGHT,
    WRONG,
    refine_requests,
    shows_wrong_year,
)
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.langchain_adapter import (
    TruthLensCallbackHandler,
    TruthLensMiddleware,
    TruthLensRunnable,
)

# One event loop for the module's async tests: langchain_openai keeps one httpx client per
# base URL for the process, whose pooled connections belong to the loop that opened them
# (an application has one loop; a loop per test would see them fail).
ONE_LOOP = pytest.mark.asyncio(loop_scope="session")

PROMPT = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])


def chat(server: OpenAIServer, *, streaming: bool, **kwargs: Any) -> ChatOpenAI:
    """The user's chat model, pointed at the test server (no retries unless asked)."""
    kwargs.setdefault("max_retries", 0)
    return ChatOpenAI(
        base_url=server.url, api_key="test", model=server.model, streaming=streaming, **kwargs
    )


def rag_chain(llm: ChatOpenAI) -> Any:
    return RunnablePassthrough.assign(answer=PROMPT | llm | StrOutputParser())


def corrected(request: ChatRequest) -> str:
    """A model that answers a correction request with the record's years."""
    assert "[[" in request.text, f"unexpected request: {request.text[:200]}"
    return RIGHT


@tool
def landmark_record(name: str) -> str:
    """Return the stored record of a landmark as JSON."""
    del name
    return EIFFEL_RECORD


# -- the server speaks the protocol the clients expect --------------------------------


def test_transient_errors_are_retried_by_the_client(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply(status=429), Reply(status=503), RIGHT)
    llm = chat(openai_server, streaming=False, max_retries=2)
    assert llm.invoke("Hi").content == RIGHT
    assert len(openai_server.requests) == 3


def test_a_bad_request_is_not_retried(openai_server: OpenAIServer) -> None:
    import openai

    llm = ChatOpenAI(base_url=openai_server.url, api_key="test", model="no-such-model")
    with pytest.raises(openai.NotFoundError, match="no-such-model"):
        llm.invoke("Hi")
    assert openai_server.requests == []  # refused before the script


@STREAMING
def test_tool_calls_and_usage_reach_the_client(
    openai_server: OpenAIServer, streaming: bool
) -> None:
    openai_server.script(Reply(tool_calls=[ToolCall("landmark_record", {"name": "Eiffel"})]))
    llm = chat(openai_server, streaming=streaming, stream_usage=True)
    message = llm.bind_tools([landmark_record]).invoke("Look it up")
    assert [c["name"] for c in message.tool_calls] == ["landmark_record"]
    assert message.tool_calls[0]["args"] == {"name": "Eiffel"}
    assert message.usage_metadata is not None and message.usage_metadata["output_tokens"] > 0
    sent = openai_server.requests[0]
    assert sent.stream is streaming and sent.tool_names == ["landmark_record"]


# -- the engine itself (issue 51: docs/engine.md lists chat models as guard-call tools) --


@STREAMING
def test_the_engine_refines_with_a_chat_openai(
    openai_server: OpenAIServer, engine: TruthLens, streaming: bool
) -> None:
    openai_server.respond(corrected)
    llm = chat(openai_server, streaming=streaming)
    verdict = engine.derive(mode="standard").guard(
        context=[EIFFEL_RECORD], question=QUESTION, answer=WRONG, llm=llm
    )
    assert verdict.status == "converged" and verdict.final_answer == RIGHT
    refines = refine_requests(openai_server)
    assert refines and "1950" in refines[0]
    assert all(request.stream is streaming for request in openai_server.requests)


# -- TruthLensRunnable ----------------------------------------------------------------


@STREAMING
def test_pipe_form_blocks_the_wrong_year(
    openai_server: OpenAIServer, engine: TruthLens, streaming: bool
) -> None:
    openai_server.script(WRONG)
    guarded = rag_chain(chat(openai_server, streaming=streaming)) | TruthLensRunnable(
        engine=engine, action="block"
    )
    out = guarded.invoke({"question": QUESTION, "context": [EIFFEL_RECORD]})
    assert out["truthlens"]["blocked"] is True
    assert out["answer"] == engine.blocked_message
    assert not shows_wrong_year(str(out))
    assert openai_server.requests[0].stream is streaming


@STREAMING
def test_pipe_form_passes_the_right_year(
    openai_server: OpenAIServer, engine: TruthLens, streaming: bool
) -> None:
    openai_server.script(RIGHT)
    guarded = rag_chain(chat(openai_server, streaming=streaming)) | TruthLensRunnable(
        engine=engine, action="block"
    )
    out = guarded.invoke({"question": QUESTION, "context": [EIFFEL_RECORD]})
    assert out["truthlens"]["blocked"] is False
    assert out["truthlens"]["decision"] == "PASS"
    assert out["answer"] == RIGHT


@STREAMING
@ONE_LOOP
async def test_wrapper_form_withholds_the_streamed_tokens(
    openai_server: OpenAIServer, engine: TruthLens, streaming: bool
) -> None:
    openai_server.script(WRONG)
    guard = TruthLensRunnable(
        engine=engine, chain=rag_chain(chat(openai_server, streaming=streaming)), action="block"
    )
    chunks = [c async for c in guard.astream({"question": QUESTION, "context": [EIFFEL_RECORD]})]
    assert not shows_wrong_year(str(chunks))
    answers = [c["answer"] for c in chunks if isinstance(c, dict) and "answer" in c]
    assert answers == [engine.blocked_message]


@STREAMING
def test_standard_mode_refines_through_the_endpoint(
    openai_server: OpenAIServer, engine: TruthLens, streaming: bool
) -> None:
    openai_server.script(WRONG)
    openai_server.respond(corrected)
    llm = chat(openai_server, streaming=streaming)
    guarded = rag_chain(llm) | TruthLensRunnable(engine=engine, mode="standard", llm=llm)
    out = guarded.invoke({"question": QUESTION, "context": [EIFFEL_RECORD]})
    refines = refine_requests(openai_server)
    assert refines and "[[" in refines[0] and "1950" in refines[0]
    assert "1887-1889" in refines[0]  # the evidence went with it
    assert out["answer"].startswith(RIGHT)
    assert out["truthlens"]["final_answer"] == RIGHT


def test_premium_mode_asks_verifiers_and_judge_through_the_endpoint(
    openai_server: OpenAIServer, engine: TruthLens
) -> None:
    roles: list[str] = []

    def answer(request: ChatRequest) -> str:
        system = request.messages[0].get("content", "") if request.messages else ""
        roles.append("judge" if "judge" in system else "other")
        return RIGHT

    openai_server.respond(answer)
    llm = chat(openai_server, streaming=True)
    guard = TruthLensRunnable(
        engine=engine,
        mode="premium",
        llm=llm,
        verification_llms=[
            chat(openai_server, streaming=False),
            chat(openai_server, streaming=True),
        ],
        judge_llm=chat(openai_server, streaming=False),
    )
    out = guard.invoke({"question": QUESTION, "context": [EIFFEL_RECORD], "answer": WRONG})
    verdict = out["truthlens"]
    assert verdict["final_answer"] == RIGHT
    assert not shows_wrong_year(out["answer"])
    assert len(openai_server.chat_requests()) >= 2  # the verifiers at least
    assert verdict["cost"]["llm_calls"] == len(openai_server.chat_requests())


# -- the callback handler -------------------------------------------------------------


class Records(BaseRetriever):
    """The user's retriever: its documents are the handler's grounding."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        del query, run_manager
        return [Document(EIFFEL_RECORD)]


@STREAMING
def test_callback_handler_flags_the_streamed_answer(
    openai_server: OpenAIServer, engine: TruthLens, streaming: bool
) -> None:
    openai_server.script(WRONG)
    retrieve = RunnablePassthrough.assign(context=lambda x: Records().invoke(x["question"]))
    chain = retrieve | PROMPT | chat(openai_server, streaming=streaming)
    handler = TruthLensCallbackHandler(engine=engine)
    run_id = uuid.uuid4()
    chain.invoke({"question": QUESTION}, config={"callbacks": [handler], "run_id": run_id})
    verdicts = handler.verdicts(run_id)
    assert [v.decision for v in verdicts] == ["MITIGATE"]
    assert [s.text for s in verdicts[0].spans] == ["1950"]
    assert handler.stats["flagged"] == 1


# -- the agent middleware -------------------------------------------------------------


def _agent_script(server: OpenAIServer, final: str) -> None:
    server.script(Reply(tool_calls=[ToolCall("landmark_record", {"name": "Eiffel Tower"})]), final)


def _agent(server: OpenAIServer, streaming: bool, **options: Any) -> Any:
    from langchain.agents import create_agent

    model = chat(server, streaming=streaming)
    return create_agent(model, [landmark_record], middleware=[TruthLensMiddleware(**options)])


@STREAMING
def test_agent_middleware_blocks_the_wrong_year(
    openai_server: OpenAIServer, engine: TruthLens, streaming: bool
) -> None:
    _agent_script(openai_server, WRONG)
    agent = _agent(openai_server, streaming, engine=engine, action="block")
    out = agent.invoke({"messages": [("user", QUESTION)]})
    final = out["messages"][-1]
    assert final.content == engine.blocked_message
    assert final.response_metadata["truthlens"]["blocked"] is True
    assert not shows_wrong_year(str(out["messages"]))
    # the tool's result went back to the endpoint as OpenAI's "tool" message
    second = openai_server.chat_requests()[1]
    assert [m["role"] for m in second.messages][-2:] == ["assistant", "tool"]
    assert EIFFEL_RECORD in second.text


@STREAMING
@ONE_LOOP
async def test_agent_middleware_async_passes_the_right_year(
    openai_server: OpenAIServer, engine: TruthLens, streaming: bool
) -> None:
    _agent_script(openai_server, RIGHT)
    agent = _agent(openai_server, streaming, engine=engine, action="block")
    out = await agent.ainvoke({"messages": [("user", QUESTION)]})
    final = out["messages"][-1]
    assert final.content == RIGHT
    assert final.response_metadata["truthlens"]["decision"] == "PASS"


@STREAMING
@ONE_LOOP
async def test_agent_middleware_refines_with_the_agents_model(
    openai_server: OpenAIServer, engine: TruthLens, streaming: bool
) -> None:
    _agent_script(openai_server, WRONG)
    openai_server.respond(corrected)
    agent = _agent(openai_server, streaming, engine=engine, mode="standard")
    out = await agent.ainvoke({"messages": [("user", QUESTION)]})
    assert out["messages"][-1].content.startswith(RIGHT)
    refines = refine_requests(openai_server)
    assert refines and "1950" in refines[0]
    # the refinement keeps the agent's tools
    assert openai_server.chat_requests()[-1].tool_names == ["landmark_record"]


def _streamed_text(agent: Any) -> list[str]:
    """The text of every model message the agent streams (``stream_mode="messages"``)."""
    pieces = agent.stream({"messages": [("user", QUESTION)]}, stream_mode="messages")
    return [str(m.content) for m, _meta in pieces if isinstance(m, AIMessage) and m.content]


def test_agent_streams_no_token_of_a_blocked_answer(
    openai_server: OpenAIServer, engine: TruthLens
) -> None:
    _agent_script(openai_server, WRONG)
    texts = _streamed_text(_agent(openai_server, streaming=True, engine=engine, action="block"))
    assert not shows_wrong_year(texts)
    assert texts[-1] == engine.blocked_message
    # Issue 51: the model streams as built (it sent "stream": false); the guard holds
    # the tokens back until the answer is checked
    assert [r.stream for r in openai_server.chat_requests()] == [True, True]


@ONE_LOOP
async def test_agent_holds_back_the_tokens_it_streams_from_astream_events(
    openai_server: OpenAIServer, engine: TruthLens
) -> None:
    _agent_script(openai_server, WRONG)
    agent = _agent(openai_server, streaming=True, engine=engine, action="block")
    events = [e async for e in agent.astream_events({"messages": [("user", QUESTION)]})]
    tokens = [
        str(e["data"]["chunk"].content) for e in events if e["event"] == "on_chat_model_stream"
    ]
    assert not shows_wrong_year(tokens) and not shows_wrong_year(str(events))
    assert [r.stream for r in openai_server.chat_requests()] == [True, True]


def test_agent_streams_tokens_when_the_policy_leaves_text_alone(
    openai_server: OpenAIServer, engine: TruthLens
) -> None:
    _agent_script(openai_server, RIGHT)
    texts = _streamed_text(_agent(openai_server, streaming=True, engine=engine, action="header"))
    # the server sends the answer two words a chunk; they arrive as they come
    assert len(texts) > 2 and "".join(texts).startswith(RIGHT)
    assert all(r.stream for r in openai_server.chat_requests())


# -- LangGraph ------------------------------------------------------------------------


@STREAMING
def test_graph_guard_sends_the_feedback_to_the_generator(
    openai_server: OpenAIServer, engine: TruthLens, streaming: bool
) -> None:
    from langgraph.graph import END, START, StateGraph

    from truthlens_integrations.langchain_adapter import TruthLensGraphGuard, TruthLensGraphState

    class State(TruthLensGraphState, total=False):
        question: str
        documents: list[str]
        answer: str

    llm = chat(openai_server, streaming=streaming)

    def generate(state: State) -> dict[str, Any]:
        feedback = state.get("truthlens_feedback")
        prompt = f"Context: {state['documents']}\nQuestion: {state['question']}"
        if feedback is not None:
            prompt += f"\nFix this: {feedback}"
        return {"answer": llm.invoke(prompt).content}

    openai_server.script(WRONG, RIGHT)
    guard = TruthLensGraphGuard(engine, max_attempts=3)
    graph = StateGraph(State)
    graph.add_node("generate", generate)
    graph.add_node("guard", guard.node)
    graph.add_edge(START, "generate")
    graph.add_edge("generate", "guard")
    routes = {"supported": END, "contradiction": "generate", "neutral": "generate"}
    graph.add_conditional_edges("guard", guard.route, {**routes, "exhausted": END})
    out = graph.compile().invoke({"question": QUESTION, "documents": [EIFFEL_RECORD]})
    assert out["answer"] == RIGHT
    assert out["truthlens"]["decision"] == "PASS"
    assert out["truthlens_attempts"] == 2
    assert "1950" in openai_server.chat_requests()[1].text  # the feedback named the span
