"""Calls a type checker must reject: ``scripts/typecheck.sh`` runs mypy on this file.

Every wrong call below carries ``# type: ignore[code]`` and mypy runs with
``warn_unused_ignores``: if a signature stops catching the mistake (goes back to
``**options: Any``, loses a ``Literal``), the ignore is unused and the type check
fails. The calls without an ignore must type-check as they are. Nothing here runs:
pytest does not collect this file (the wrong calls would raise at runtime, each with
``UnknownArgumentError`` or ``InvalidArgumentError``).

Names the package never had (``raise_on_block``, ``verification_models``, ``judge_model``,
``on_block="response"``) are refused by the checker and at runtime alike.
"""

from __future__ import annotations

from typing import Any, Unpack

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.llms import LLM as LIBaseLLM  # noqa: N811

from truthlens_integrations import langchain_adapter as lc
from truthlens_integrations import llamaindex_adapter as li
from truthlens_integrations.core.engine import GuardKwargs, TruthLens
from truthlens_integrations.core.llm import LLM
from truthlens_integrations.core.models.detection import load_detector
from truthlens_integrations.core.policy import Policy


def engine(policy: Policy, built: TruthLens) -> None:
    """The engine: TruthLens(...), from_config, derive, load_detector."""
    TruthLens.from_config("policy.yaml", threshold=0.6, on_block="raise", redact=True)
    TruthLens.from_config(threshold="high")  # type: ignore[arg-type]
    TruthLens.from_config(treshold=0.6)  # type: ignore[call-arg]
    TruthLens.from_config(raise_on_block=True)  # type: ignore[call-arg]
    TruthLens(policy, blocked_message="Withheld.", align_quantities=False)
    TruthLens(policy, on_block="response")  # type: ignore[arg-type]
    TruthLens(policy, threshold=0.6)  # type: ignore[call-arg]
    built.derive(mode="premium", expose_blocked_text=True)
    built.derive(mode="turbo")  # type: ignore[arg-type]
    built.derive(redact="yes")  # type: ignore[arg-type]
    load_detector("bundled", threshold=0.6, device="cpu", strategy="evidence")
    load_detector(threshold="0.6")  # type: ignore[arg-type]
    load_detector(aggregation="mean")  # type: ignore[arg-type]
    load_detector(treshold=0.6)  # type: ignore[call-arg]


def make_engine(**options: Unpack[GuardKwargs]) -> TruthLens:
    """A user's wrapper that forwards the options keeps them typed."""
    return TruthLens.from_config("policy.yaml", **options)


def wrapper() -> None:
    """Callers of the wrapper are checked like callers of the engine."""
    make_engine(threshold=0.6, detector=None)
    make_engine(threshold=True)  # bool is an int for type checkers: only runtime refuses it
    make_engine(treshold=0.6)  # type: ignore[call-arg]


def langchain(built: TruthLens, chain: Runnable[Any, Any], chat: BaseChatModel, llm: LLM) -> None:
    """The LangChain adapter: runnable, callbacks, middleware, LangGraph guard, helpers."""
    lc.TruthLensRunnable(engine=built, llm=chat, threshold=0.6, on_block="raise")
    lc.TruthLensRunnable(threshold="high")  # type: ignore[arg-type]
    lc.TruthLensRunnable(answer_kee="text")  # type: ignore[call-arg]
    lc.TruthLensRunnable(verification_models=[chat])  # type: ignore[call-arg]
    lc.TruthLensRunnable.from_config("policy.yaml", chain=chain, stream_mode="passthrough")
    lc.TruthLensRunnable.from_config(stream_mode="fast")  # type: ignore[arg-type]
    lc.guard_chain(chain, engine=built, judge_llm=chat, redact=True)
    lc.guard_chain(chain, requery=False)  # type: ignore[call-arg]
    lc.TruthLensCallbackHandler(built, max_results=10, mode="lightweight")
    lc.TruthLensCallbackHandler(built, treshold=0.6)  # type: ignore[call-arg]
    with lc.truthlens_callback(built, config=None, action="header"):
        pass
    with lc.truthlens_callback(built, action="shout"):  # type: ignore[arg-type]
        pass
    lc.TruthLensMiddleware(built, max_iterations=2, on_block="raise", threshold=0.6)
    lc.TruthLensMiddleware(built, on_block="explode")  # type: ignore[arg-type]
    lc.TruthLensMiddleware(built, document_key="docs")  # type: ignore[call-arg]
    lc.TruthLensMiddleware.from_config("policy.yaml", stream_mode="verified", redact=True)
    lc.TruthLensMiddleware.from_config(judge_model=chat)  # type: ignore[call-arg]
    lc.TruthLensGraphGuard(built, max_attempts=2, blocked_message="Withheld.")
    lc.TruthLensGraphGuard(built, max_attemps=2)  # type: ignore[call-arg]
    lc.TruthLensGraphGuard(built, blocked_message=None)  # type: ignore[arg-type]
    lc.RetrievalQualityFilter(min_chars=20, min_score=None)
    lc.RetrievalQualityFilter(min_chars="20")  # type: ignore[arg-type]
    lc.LLMChatModel(llm=llm, max_tokens=64)
    lc.LLMChatModel(max_tokens=64)  # type: ignore[call-arg]
    # the engine takes a chat model wherever it takes an LLM (issue 51)
    built.guard(context=None, question=None, answer="a", llm=chat, judge_llm=chat)
    built.guard(context=None, question=None, answer="a", verification_llms=[chat, llm])


def llamaindex(built: TruthLens, inner: BaseQueryEngine, li_llm: LIBaseLLM, llm: LLM) -> None:
    """The LlamaIndex adapter: query engine, postprocessor, evaluator, agent, LLM."""
    li.TruthLensQueryEngine(inner, engine=built, retrieval_feedback=True, threshold=0.6)
    li.TruthLensQueryEngine(inner, threshold="high")  # type: ignore[arg-type]
    li.TruthLensQueryEngine(inner, on_block="response")  # type: ignore[arg-type]
    li.TruthLensQueryEngine(inner, retrival_feedback=True)  # type: ignore[call-arg]
    li.TruthLensEvaluator(built, mode="lightweight", redact=True)
    li.TruthLensEvaluator(mode="turbo")  # type: ignore[arg-type]
    li.TruthLensNodePostprocessor(engine=built, evidence_method="nli", min_length=20)
    li.TruthLensNodePostprocessor(evidence_method="bert")  # type: ignore[arg-type]
    li.TruthLensNodePostprocessor(min_lenght=20)  # type: ignore[call-arg]
    li.TruthLensFunctionAgent(tools=[], llm=li_llm, engine=built, action="body", timeout=30.0)
    li.TruthLensFunctionAgent(tools=[], llm=li_llm, stream_mode="fast")  # type: ignore[arg-type]
    li.TruthLensFunctionAgent(tols=[], llm=li_llm)  # type: ignore[call-arg]
    li.CoreLLMAsLlamaIndex(llm, context_window=4096)
    li.CoreLLMAsLlamaIndex(llm, context_windw=4096)  # type: ignore[call-arg]
    built.guard(context=None, question=None, answer="a", llm=li_llm)  # a LlamaIndex LLM too


def service() -> None:
    """The service: its functions take the ``service`` block's fields as typed keywords."""
    from truthlens_integrations.serve import deploy, service_app, start_local

    service_app(None, replicas=2, max_batch_size=8, num_cpus=0.5)
    service_app(None, replicas="2")  # type: ignore[arg-type]
    service_app(None, replica=2)  # type: ignore[call-arg]
    deploy(None, address="auto", port=8001, redact=True)
    deploy(None, address="auto", on_error="ignore")  # type: ignore[arg-type]
    start_local(None, num_cpus=2, max_inputs=64)
    start_local(None, max_batch=8)  # type: ignore[call-arg]
