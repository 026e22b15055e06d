"""LlamaIndex's real OpenAI LLM against the local OpenAI-compatible server.

``llama_index.llms.openai.OpenAI`` (it refuses model names it does not know, so the
server serves ``gpt-4o-mini``, as a proxy would) drives the query engine and the
FunctionAgent the way docs/llamaindex.md builds them, with the real bundled detector.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("llama_index.llms.openai", reason="the dev extra is not installed")

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.agent.workflow import AgentStream
from llama_index.core.embeddings import MockEmbedding
from llama_index.llms.openai import OpenAI

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
from truthlens_integrations.llamaindex_adapter import TruthLensFunctionAgent, TruthLensQueryEngine

# One event loop for the async tests: the OpenAI clients keep pooled connections that
# belong to the loop that opened them.
ONE_LOOP = pytest.mark.asyncio(loop_scope="session")


def llm(server: OpenAIServer) -> OpenAI:
    """The user's LlamaIndex LLM, pointed at the test server (no retries)."""
    return OpenAI(model="gpt-4o-mini", api_base=server.url, api_key="test", max_retries=0)


def query_engine(server: OpenAIServer, **kwargs: Any) -> Any:
    index = VectorStoreIndex.from_documents(
        [Document(text=EIFFEL_RECORD)], embed_model=MockEmbedding(embed_dim=8)
    )
    return index.as_query_engine(llm=llm(server), **kwargs)


def corrected(request: ChatRequest) -> str:
    assert "[[" in request.text, f"unexpected request: {request.text[:200]}"
    return RIGHT


def test_the_engine_refines_with_a_llamaindex_openai(
    openai_server: OpenAIServer, engine: TruthLens
) -> None:
    # Issue 51: its complete/acomplete take a prompt string; it is wrapped, not called as is.
    openai_server.respond(corrected)
    verdict = engine.derive(mode="standard").guard(
        context=[EIFFEL_RECORD], question=QUESTION, answer=WRONG, llm=llm(openai_server)
    )
    assert verdict.status == "converged" and verdict.final_answer == RIGHT
    assert refine_requests(openai_server)


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
def test_query_engine_blocks_the_wrong_year(
    openai_server: OpenAIServer, engine: TruthLens, streaming: bool
) -> None:
    openai_server.script(WRONG)
    guarded = TruthLensQueryEngine(
        query_engine(openai_server, streaming=streaming), engine=engine, action="block"
    )
    response = guarded.query(QUESTION)
    assert response.metadata["truthlens"]["blocked"] is True
    assert str(response) == engine.blocked_message
    assert not shows_wrong_year(str(response.metadata))
    # the record reached the endpoint in the prompt, as the retrieved context
    assert EIFFEL_RECORD in openai_server.chat_requests()[0].text
    assert openai_server.chat_requests()[0].stream is streaming


def test_query_engine_passes_the_right_year(openai_server: OpenAIServer, engine: TruthLens) -> None:
    openai_server.script(RIGHT)
    guarded = TruthLensQueryEngine(query_engine(openai_server), engine=engine, action="block")
    response = guarded.query(QUESTION)
    assert response.metadata["truthlens"]["decision"] == "PASS"
    assert str(response) == RIGHT


@ONE_LOOP
async def test_query_engine_standard_mode_refines_through_the_endpoint(
    openai_server: OpenAIServer, engine: TruthLens
) -> None:
    openai_server.script(WRONG)
    openai_server.respond(corrected)
    guarded = TruthLensQueryEngine(query_engine(openai_server), engine=engine, mode="standard")
    response = await guarded.aquery(QUESTION)
    verdict = response.metadata["truthlens"]
    assert str(response).startswith(RIGHT)
    assert verdict["final_answer"] == RIGHT
    refines = refine_requests(openai_server)
    assert refines and "1950" in refines[0]


def test_query_engine_premium_mode_asks_verifiers_and_judge(
    openai_server: OpenAIServer, engine: TruthLens
) -> None:
    openai_server.script(WRONG)
    openai_server.respond(lambda request: RIGHT)
    guarded = TruthLensQueryEngine(
        query_engine(openai_server),
        engine=engine,
        mode="premium",
        verification_llms=[llm(openai_server), llm(openai_server)],
        judge_llm=llm(openai_server),
    )
    response = guarded.query(QUESTION)
    verdict = response.metadata["truthlens"]
    assert verdict["final_answer"] == RIGHT
    assert not shows_wrong_year(str(response))
    # the inner engine's call, then every mitigation call went to the endpoint
    assert verdict["cost"]["llm_calls"] == len(openai_server.chat_requests()) - 1


def landmark_record(name: str) -> str:
    """Return the stored record of a landmark as JSON."""
    del name
    return EIFFEL_RECORD


def _agent_script(server: OpenAIServer, final: str) -> None:
    server.script(Reply(tool_calls=[ToolCall("landmark_record", {"name": "Eiffel Tower"})]), final)


@ONE_LOOP
async def test_function_agent_blocks_the_wrong_year(
    openai_server: OpenAIServer, engine: TruthLens
) -> None:
    _agent_script(openai_server, WRONG)
    agent = TruthLensFunctionAgent(
        tools=[landmark_record], llm=llm(openai_server), engine=engine, action="block"
    )
    handler = agent.run(user_msg=QUESTION)
    deltas = [e.delta async for e in handler.stream_events() if isinstance(e, AgentStream)]
    output = await handler
    assert output.response.content == engine.blocked_message
    assert output.response.additional_kwargs["truthlens"]["blocked"] is True
    assert not shows_wrong_year("".join(deltas))
    sent = openai_server.chat_requests()
    assert len(sent) == 2 and sent[0].tool_names == ["landmark_record"]
    assert [m["role"] for m in sent[1].messages][-2:] == ["assistant", "tool"]


@ONE_LOOP
async def test_function_agent_passes_the_right_year(
    openai_server: OpenAIServer, engine: TruthLens
) -> None:
    _agent_script(openai_server, RIGHT)
    agent = TruthLensFunctionAgent(
        tools=[landmark_record], llm=llm(openai_server), engine=engine, action="block"
    )
    output = await agent.run(user_msg=QUESTION)
    assert output.response.content == RIGHT
    assert output.response.additional_kwargs["truthlens"]["decision"] == "PASS"


@ONE_LOOP
async def test_function_agent_standard_mode_refines_with_its_llm(
    openai_server: OpenAIServer, engine: TruthLens
) -> None:
    _agent_script(openai_server, WRONG)
    openai_server.respond(corrected)
    agent = TruthLensFunctionAgent(
        tools=[landmark_record], llm=llm(openai_server), engine=engine, mode="standard"
    )
    output = await agent.run(user_msg=QUESTION)
    assert output.response.content.startswith(RIGHT)
    refines = refine_requests(openai_server)
    assert refines and "1950" in refines[0]


@ONE_LOOP
async def test_function_agent_streams_deltas_when_the_policy_leaves_text_alone(
    openai_server: OpenAIServer, engine: TruthLens
) -> None:
    _agent_script(openai_server, RIGHT)
    agent = TruthLensFunctionAgent(
        tools=[landmark_record], llm=llm(openai_server), engine=engine, action="header"
    )
    handler = agent.run(user_msg=QUESTION)
    deltas = [e.delta async for e in handler.stream_events() if isinstance(e, AgentStream)]
    output = await handler
    assert output.response.additional_kwargs["truthlens"]["decision"] == "PASS"
    assert len([d for d in deltas if d]) > 2 and "".join(deltas).startswith(RIGHT)
    assert all(r.stream for r in openai_server.chat_requests())
