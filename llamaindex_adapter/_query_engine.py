"""A LlamaIndex query engine that guards the answers of another one."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Unpack

from llama_index.core import llms as li_llms
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import (
    RESPONSE_TYPE,
    AsyncStreamingResponse,
    PydanticResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
from llama_index.core.tools.types import ToolMetadata

from truthlens_integrations.core import (
    ConfigError,
    InvalidArgumentError,
    InvalidInputError,
)
from truthlens_integrations.core import llm as core_llm
from truthlens_integrations.core._adapter_api import EngineBlocking
from truthlens_integrations.core.engine import GuardKwargs, TruthLens, Verdict
from truthlens_integrations.core.mitigation import Retriever, retriever_from_callables
from truthlens_integrations.core.policy import PolicySource

from ._common import build_engine, node_texts, verdict_payload
from ._evaluator import GuardRun, original_question
from ._events import dispatch_start, dispatch_verdict, event_payload
from ._llm import as_core_llm
from ._postprocessor import TruthLensNodePostprocessor
from ._prompts import (
    DEFAULT_QUERY_REWRITE_PROMPT,
    DEFAULT_REFINE_PROMPT,
    QUERY_REWRITE_VARIABLES,
    REFINE_VARIABLES,
    check_template,
    refine_builder,
    rewrite_builder,
)

__all__ = ["InnerEngineAnswerer", "TruthLensQueryEngine", "get_verdict"]

#: The guard appears in legacy callback traces as a tool call with this name.
GUARD_TOOL = ToolMetadata(
    name="truthlens_guard",
    description="Checks the answer against its source nodes and mitigates hallucinations.",
)


def get_verdict(response: object) -> Verdict | None:
    """The verdict a :class:`TruthLensQueryEngine` attached to ``response``.

    Args:
        response: A response returned by the guarded engine.

    Returns:
        The verdict, or ``None`` when the response carries none.
    """
    metadata = getattr(response, "metadata", None)
    payload = metadata.get("truthlens") if isinstance(metadata, dict) else None
    if not isinstance(payload, dict):
        return None
    if "verdict" in payload and "decision" not in payload:  # the shape of earlier releases
        payload = payload["verdict"]
    return Verdict.model_validate(payload)


def _find_llm(query_engine: BaseQueryEngine) -> li_llms.LLM | None:
    """The LLM the inner engine synthesizes with, where it can be found.

    llama-index-core (0.14) has no public way to this LLM: ``RetrieverQueryEngine``
    keeps its synthesizer only as ``_response_synthesizer`` and ``BaseSynthesizer``
    its LLM only as ``_llm`` (``get_prompts`` walks the same private modules, and
    ``Settings.llm`` is not the LLM an engine was built with). So this is a lookup
    that may find nothing, never a requirement: pass ``llm=`` to be explicit.
    """
    for owner in (getattr(query_engine, "_response_synthesizer", None), query_engine):
        llm = getattr(owner, "_llm", None) or getattr(owner, "llm", None)
        if isinstance(llm, li_llms.LLM):
            return llm
    return None


_OWN_ARGUMENTS = (
    "query_engine",
    "engine",
    "config",
    "llm",
    "retriever",
    "verification_llms",
    "judge_llm",
    "retrieval_feedback",
    "node_postprocessor",
    "evidence_filter",
    "refine_prompt",
    "query_rewrite_prompt",
    "context_metadata_mode",
    "callback_manager",
)


def _given(**values: Any) -> dict[str, Any]:
    """The keyword arguments the caller set (``None`` means "not given")."""
    return {name: value for name, value in values.items() if value is not None}


def _check_arguments(query_engine: object, **typed: tuple[object, type | tuple[type, ...]]) -> None:
    """Raise at the call for something that is not a query engine or of a wrong type."""
    if not callable(getattr(query_engine, "query", None)):
        raise InvalidArgumentError(
            f"TruthLensQueryEngine wraps a query engine, got {type(query_engine).__name__}"
        )
    _check_types(**typed)


def _check_types(**values: tuple[object, type | tuple[type, ...]]) -> None:
    """Raise at the call for an argument of the wrong type (``retrieval_feedback="no"``)."""
    problems = [
        f"{name} must be {_names(kinds)}, got {type(value).__name__} {value!r:.40}"
        for name, (value, kinds) in values.items()
        if not isinstance(value, kinds)
    ]
    if problems:
        raise InvalidArgumentError("TruthLensQueryEngine: " + "; ".join(problems))


def _names(kinds: type | tuple[type, ...]) -> str:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    return " or ".join("None" if k is type(None) else k.__name__ for k in kinds)


def _as_retriever(retriever: object, mode: MetadataMode) -> Retriever | None:
    """A LlamaIndex retriever behind the core protocol; core retrievers pass through."""
    if retriever is None:
        return None
    if isinstance(retriever, BaseRetriever):
        li = retriever

        def retrieve(query: str) -> list[str]:
            return node_texts(li.retrieve(query), mode)

        async def aretrieve(query: str) -> list[str]:
            return node_texts(await li.aretrieve(query), mode)

        return retriever_from_callables(retrieve, aretrieve, name=type(li).__name__)
    if callable(getattr(retriever, "retrieve", None)) and callable(
        getattr(retriever, "aretrieve", None)
    ):
        return retriever  # type: ignore[return-value]
    raise InvalidArgumentError(
        "TruthLensQueryEngine: retriever must be a LlamaIndex retriever or a core Retriever, "
        f"got {type(retriever).__name__}"
    )


@dataclass
class _Call:
    """One guarded query: the inner response and what the guard is asked."""

    inner: RESPONSE_TYPE
    buffered: Response
    nodes: list[NodeWithScore]
    answerer: InnerEngineAnswerer | None
    arguments: dict[str, Any]


def _ran(verdict: Verdict | None) -> Verdict:
    """The verdict of a guard run that finished (it always has one then)."""
    assert verdict is not None  # set by the guard call or by GuardRun from the error
    return verdict


class TruthLensQueryEngine(EngineBlocking, BaseQueryEngine):
    """Wraps a query engine: its answers are checked against their own source nodes.

    Each query runs the inner engine, takes the question from the query bundle and
    the context from ``response.source_nodes``, and runs the guard pipeline. The
    returned ``Response`` carries the text to show (the answer, the answer with a
    warning, the mitigated answer, or the blocked message), the source nodes (plus
    any found by re-querying), and ``metadata["truthlens"]``: the verdict as
    :meth:`Verdict.to_dict` (the ``x-truthlens-*`` / ``x-vsr-*`` header values are
    its ``"metadata"`` entry; :func:`get_verdict` reads it back). The inner
    response's own metadata is kept while its answer is what is shown; for a blocked
    or refined answer only the sources' per-node metadata stays (the rest, a raw
    completion or log-probabilities, may carry the answer that is no longer shown).

    A blocked answer's text is withheld from the response and its metadata; the
    application reads it through the engine's ``audit_hook`` (or builds the engine
    with ``expose_blocked_text=True``).

    Streaming: a streaming inner response is buffered completely, checked, and
    returned as a streaming response of the same kind whose generator yields the
    checked text. Nothing reaches the caller before the check. Structured
    (``PydanticResponse``) answers are refused with :class:`InvalidInputError`.

    Args:
        query_engine: The engine to guard.
        engine: The guard engine; built from ``config`` when omitted.
        config: A policy (path, YAML text, dict) for a new guard engine.
        llm: LLM for standard-mode refinement and query rewriting (LlamaIndex or
            core); defaults to the inner engine's LLM where it can be found.
        retriever: A LlamaIndex retriever (or a core ``Retriever``) for the
            retrieval-feedback loop with ``llm``, besides re-querying the inner
            engine (``retrieval_feedback``).
        verification_llms: Premium-mode verification models.
        judge_llm: Premium-mode judge.
        retrieval_feedback: Rewrite the query and re-query the inner engine when the
            answer is flagged with spans the context does not cover (NLI neutral or
            unlabelled); the nodes each re-query finds are added to the sources.
        node_postprocessor: Quality filter for the inner engine's nodes (and each
            re-query's) before the check; with ``evidence_filter`` it also drops or
            demotes, after the check, the nodes that supported nothing in the answer.
        evidence_filter: Apply the postprocessor's evidence step to the sources.
        refine_prompt: Overrides the refine prompt (see ``_prompts``: variables
            ``context_str``, ``query_str``, ``answer``, ``spans``); also settable
            with ``update_prompts({"refine_prompt": ...})``.
        query_rewrite_prompt: Overrides the query-rewrite prompt of the
            retrieval-feedback loop (variables ``query_str``, ``last_query``,
            ``spans``; the reply must stay the engine's JSON).
        context_metadata_mode: How node text is read for the check; ``NONE`` (the
            node's text only) by default.
        callback_manager: Legacy callback manager; the guard is traced as a
            ``function_call`` event of the tool ``truthlens_guard``.
        **options: The policy knobs, on every route (``mode``: ``lightweight``,
            ``standard`` or ``premium``; ``threshold``; ``action``: the policy's
            ``hallucination_action``), and engine options (every field of
            :class:`~truthlens_integrations.core.engine.EngineOptions`: ``on_block``,
            where ``"message"``, the default, returns ``blocked_message`` as the
            response text and ``"raise"`` raises :class:`BlockedResponseError` with
            the verdict (``"response"`` is a deprecated spelling of ``"message"``,
            runtime only); ``blocked_message``, ``expose_blocked_text``,
            ``align_quantities``, ``mitigation_options``, ``redact``,
            ``audit_hook``, models, ...). Typed by
            :class:`~truthlens_integrations.core.engine.GuardKwargs`; with ``engine``
            given they apply to a copy of it.

    Raises:
        UnknownArgumentError: For an unknown keyword argument (with a suggestion).
        InvalidArgumentError: For an argument of the wrong type
            (``retrieval_feedback="no"``).
    """

    def __init__(
        self,
        query_engine: BaseQueryEngine,
        *,
        engine: TruthLens | None = None,
        config: PolicySource = None,
        llm: li_llms.LLM | core_llm.LLM | None = None,
        retriever: BaseRetriever | Retriever | None = None,
        verification_llms: Sequence[li_llms.LLM | core_llm.LLM] = (),
        judge_llm: li_llms.LLM | core_llm.LLM | None = None,
        retrieval_feedback: bool = False,
        node_postprocessor: TruthLensNodePostprocessor | None = None,
        evidence_filter: bool = True,
        refine_prompt: BasePromptTemplate | None = None,
        query_rewrite_prompt: BasePromptTemplate | None = None,
        context_metadata_mode: MetadataMode = MetadataMode.NONE,
        callback_manager: CallbackManager | None = None,
        **options: Unpack[GuardKwargs],
    ) -> None:
        _check_arguments(
            query_engine,
            retrieval_feedback=(retrieval_feedback, bool),
            evidence_filter=(evidence_filter, bool),
            node_postprocessor=(node_postprocessor, (TruthLensNodePostprocessor, type(None))),
            refine_prompt=(refine_prompt, (BasePromptTemplate, type(None))),
            query_rewrite_prompt=(query_rewrite_prompt, (BasePromptTemplate, type(None))),
            context_metadata_mode=(context_metadata_mode, MetadataMode),
        )
        self._query_engine = query_engine
        self.engine = build_engine(
            engine,
            config,
            options,
            where="TruthLensQueryEngine",
            own=_OWN_ARGUMENTS,
        )
        self._llm = as_core_llm(llm if llm is not None else _find_llm(query_engine))
        self._retriever = _as_retriever(retriever, context_metadata_mode)
        self._verification_llms = [
            m for m in (as_core_llm(v) for v in verification_llms) if m is not None
        ]
        self._judge_llm = as_core_llm(judge_llm)
        self.retrieval_feedback = retrieval_feedback
        self.node_postprocessor = node_postprocessor
        self.evidence_filter = evidence_filter
        self._refine_prompt: BasePromptTemplate = DEFAULT_REFINE_PROMPT
        self._query_rewrite_prompt: BasePromptTemplate = DEFAULT_QUERY_REWRITE_PROMPT
        self._update_prompts(
            _given(refine_prompt=refine_prompt, query_rewrite_prompt=query_rewrite_prompt)
        )
        self.context_metadata_mode = context_metadata_mode
        super().__init__(callback_manager or getattr(query_engine, "callback_manager", None))

    # -- prompts ----------------------------------------------------------------------

    def _get_prompts(self) -> PromptDictType:
        """The refine and query-rewrite prompts."""
        return {
            "refine_prompt": self._refine_prompt,
            "query_rewrite_prompt": self._query_rewrite_prompt,
        }

    def _update_prompts(self, prompts_dict: PromptDictType) -> None:
        """Replace the refine and/or query-rewrite prompt.

        Raises:
            ConfigError: If a template uses a variable the engine does not fill.
        """
        if "refine_prompt" in prompts_dict:
            refine = prompts_dict["refine_prompt"]
            check_template("refine_prompt", refine, REFINE_VARIABLES)
            self._refine_prompt = refine
        if "query_rewrite_prompt" in prompts_dict:
            rewrite = prompts_dict["query_rewrite_prompt"]
            check_template("query_rewrite_prompt", rewrite, QUERY_REWRITE_VARIABLES)
            self._query_rewrite_prompt = rewrite

    def _get_prompt_modules(self) -> PromptMixinType:
        """The inner engine, so its prompts show up (and update) under ``query_engine:``."""
        return {"query_engine": self._query_engine}

    def update_prompts(self, prompts_dict: dict[str, BasePromptTemplate]) -> None:
        """Update prompts, including the inner engine's nested ones.

        LlamaIndex's own ``update_prompts`` splits keys at every ``:``, so the
        three-part keys that ``get_prompts`` lists for a wrapped engine
        (``query_engine:response_synthesizer:text_qa_template``) could not be set.
        Here a key is split at its first ``:`` and the rest handed to the module.

        Raises:
            ConfigError: If a module is unknown or a template uses a variable the
                engine does not fill.
        """
        self._update_prompts({k: v for k, v in prompts_dict.items() if ":" not in k})
        nested: dict[str, dict[str, BasePromptTemplate]] = {}
        for key, prompt in prompts_dict.items():
            if ":" in key:
                module, rest = key.split(":", 1)
                nested.setdefault(module, {})[rest] = prompt
        modules = self._get_prompt_modules()
        for module, prompts in nested.items():
            if module not in modules:
                raise ConfigError(f"Module {module} not found.")
            modules[module].update_prompts(prompts)

    # -- query --------------------------------------------------------------------------

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        """Run the inner engine, then guard (and mitigate) its answer."""
        inner = self._query_engine.query(query_bundle)
        if isinstance(inner, AsyncStreamingResponse):
            raise InvalidInputError(
                "the inner engine returned an async stream from a sync query; use aquery()"
            )
        call = self._prepare(query_bundle, inner, _buffer(inner))
        with self._traced(call) as run:
            run.verdict = self.engine.guard(**call.arguments)
        return self._finish(call, run.verdict)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        """Async :meth:`_query`: awaits the inner engine, the guard and the LLM calls."""
        inner = await self._query_engine.aquery(query_bundle)
        if isinstance(inner, AsyncStreamingResponse):
            buffered = await inner.get_response()
        else:
            buffered = _buffer(inner)
        call = self._prepare(query_bundle, inner, buffered)
        with self._traced(call) as run:
            run.verdict = await self.engine.aguard(**call.arguments)
        return self._finish(call, run.verdict)

    def _prepare(
        self, query_bundle: QueryBundle, inner: RESPONSE_TYPE, buffered: Response
    ) -> _Call:
        """Everything before the guard runs: its inputs, tools and the request's answerer."""
        question, context, answer, nodes = self._inputs(query_bundle, buffered)
        answerer = self._answerer()
        arguments = {
            "context": context,
            "question": question,
            "answer": answer,
            **self._tools(answerer),
        }
        return _Call(
            inner=inner, buffered=buffered, nodes=nodes, answerer=answerer, arguments=arguments
        )

    @contextmanager
    def _traced(self, call: _Call) -> Iterator[GuardRun]:
        """The guard's run as a legacy ``function_call`` event (a blocked answer included)."""
        arguments = call.arguments
        start = self._start(arguments["question"], arguments["context"], arguments["answer"])
        with self.callback_manager.event(CBEventType.FUNCTION_CALL, payload=start) as event:
            with GuardRun() as run:
                yield run
            event.on_end(payload=self._end(_ran(run.verdict)))

    def _finish(self, call: _Call, verdict: Verdict | None) -> RESPONSE_TYPE:
        """Everything after the guard ran: the response to return, with its sources."""
        verdict = _ran(verdict)
        nodes = self._final_nodes(call.nodes, call.answerer, verdict)
        return self._respond(call.inner, call.buffered, verdict, nodes)

    # -- guard --------------------------------------------------------------------------

    def _inputs(
        self, query_bundle: QueryBundle, response: Response
    ) -> tuple[str, list[str], str, list[NodeWithScore]]:
        answer = response.response
        if answer is None or not answer.strip():
            raise InvalidInputError("the inner query engine returned an empty answer")
        nodes = list(response.source_nodes)
        if self.node_postprocessor is not None:
            nodes = self.node_postprocessor.postprocess_nodes(nodes, query_bundle)
        context = node_texts(nodes, self.context_metadata_mode)
        # Wrapped in RetryQueryEngine, the query also carries the last answer and the
        # evaluator's feedback: route and check against the question itself.
        question = original_question(query_bundle.query_str) or query_bundle.query_str
        return question, context, answer, nodes

    def _answerer(self) -> InnerEngineAnswerer | None:
        """A fresh answerer per request (it collects that request's nodes)."""
        if not self.retrieval_feedback:
            return None
        return InnerEngineAnswerer(
            self._query_engine,
            postprocessor=self.node_postprocessor,
            metadata_mode=self.context_metadata_mode,
        )

    def _tools(self, answerer: InnerEngineAnswerer | None) -> dict[str, Any]:
        options = self.engine.mitigation_options.model_copy(
            update={
                "refine_messages": refine_builder(self._refine_prompt),
                "refiner_messages": rewrite_builder(self._query_rewrite_prompt),
            }
        )
        return {
            "llm": self._llm,
            "retriever": self._retriever,
            "verification_llms": self._verification_llms or None,
            "judge_llm": self._judge_llm,
            "answerer": answerer,
            "mitigation_options": options,
        }

    def _final_nodes(
        self,
        nodes: list[NodeWithScore],
        answerer: InnerEngineAnswerer | None,
        verdict: Verdict,
    ) -> list[NodeWithScore]:
        """The original source nodes plus those re-querying found, then the evidence filter."""
        merged = list(nodes)
        if answerer is not None:
            seen = {n.node.node_id for n in merged}
            for node in answerer.nodes:
                if node.node.node_id not in seen:
                    seen.add(node.node.node_id)
                    merged.append(node)
        shown = verdict.final_answer
        if self.node_postprocessor is None or not self.evidence_filter or shown is None:
            return merged
        return self.node_postprocessor.filter_evidence(merged, answer=shown, spans=verdict.spans)

    def _start(self, question: str, context: list[str], answer: str) -> dict[str, Any]:
        start = dispatch_start(
            self.engine, query=question, answer=answer, num_passages=len(context)
        )
        return {
            EventPayload.TOOL: GUARD_TOOL,
            EventPayload.FUNCTION_CALL: event_payload(start),
        }

    def _end(self, verdict: Verdict) -> dict[str, Any]:
        return {EventPayload.FUNCTION_OUTPUT: event_payload(dispatch_verdict(verdict))}

    # -- response -----------------------------------------------------------------------

    def _respond(
        self,
        inner: RESPONSE_TYPE,
        buffered: Response,
        verdict: Verdict,
        nodes: list[NodeWithScore],
    ) -> RESPONSE_TYPE:
        text = self.engine.shown(verdict)
        metadata = {**_kept_metadata(buffered, verdict), "truthlens": verdict_payload(verdict)}
        if isinstance(inner, StreamingResponse):
            return StreamingResponse(
                response_gen=_once(text),
                source_nodes=nodes,
                metadata=metadata,
                response_txt=text,
            )
        if isinstance(inner, AsyncStreamingResponse):
            return AsyncStreamingResponse(
                response_gen=_aonce(text), source_nodes=nodes, metadata=metadata
            )
        return Response(response=text, source_nodes=nodes, metadata=metadata)


class InnerEngineAnswerer:
    """The inner query engine as the engine's ``GroundedAnswerer``.

    The retrieval-feedback loop sends it the rewritten query; it re-queries the inner
    engine and returns the new answer with the text of the nodes it was grounded on.
    The nodes themselves are kept (in :attr:`nodes`) so that the final response can
    list them as sources.

    Args:
        query_engine: The inner engine.
        postprocessor: Quality filter applied to each re-query's nodes.
        metadata_mode: How node text is read.
    """

    name = "llamaindex-query-engine"

    def __init__(
        self,
        query_engine: BaseQueryEngine,
        *,
        postprocessor: TruthLensNodePostprocessor | None = None,
        metadata_mode: MetadataMode = MetadataMode.NONE,
    ) -> None:
        self._query_engine = query_engine
        self._postprocessor = postprocessor
        self._metadata_mode = metadata_mode
        self.nodes: list[NodeWithScore] = []
        self.queries: list[str] = []

    def _collect(self, query: str, response: Response) -> tuple[str, list[str]]:
        nodes = list(response.source_nodes)
        if self._postprocessor is not None:
            nodes = self._postprocessor.postprocess_nodes(nodes, query_str=query)
        self.queries.append(query)
        self.nodes.extend(nodes)
        return response.response or "", node_texts(nodes, self._metadata_mode)

    def answer(self, query: str) -> tuple[str, list[str]]:
        """Re-query the inner engine; ``(answer, passages)``."""
        response = self._query_engine.query(query)
        if isinstance(response, AsyncStreamingResponse):
            raise InvalidInputError("the inner engine returned an async stream from query()")
        return self._collect(query, _buffer(response))

    async def aanswer(self, query: str) -> tuple[str, list[str]]:
        """Async :meth:`answer` (awaits ``aquery``)."""
        response = await self._query_engine.aquery(query)
        if isinstance(response, AsyncStreamingResponse):
            return self._collect(query, await response.get_response())
        return self._collect(query, _buffer(response))


def _kept_metadata(inner: Response, verdict: Verdict) -> dict[str, Any]:
    """The inner response's metadata that stays on the guarded response.

    All of it while the inner answer is what is shown (with a header or a warning).
    When the answer is withheld (blocked) or replaced (a refined answer), what the
    inner engine or its LLM attached may carry the answer (a raw completion, token
    log-probabilities, reasoning text), so only the per-node metadata LlamaIndex's
    synthesizers write stays: a source node's id mapped to that node's own metadata,
    which the source nodes carry anyway. The verdict is the one channel to the original.
    """
    metadata = dict(inner.metadata or {})
    final = verdict.final_answer
    if not verdict.blocked and (final is None or final == inner.response):
        return metadata
    sources = {n.node.node_id: n.node.metadata for n in inner.source_nodes}
    return {k: v for k, v in metadata.items() if k in sources and v == sources[k]}


def _buffer(response: RESPONSE_TYPE) -> Response:
    """A plain response with the full text (a sync stream is consumed here)."""
    if isinstance(response, Response):
        return response
    if isinstance(response, StreamingResponse):
        return response.get_response()
    if isinstance(response, PydanticResponse):
        raise InvalidInputError(
            "structured (Pydantic) responses cannot be guarded: the check and the "
            "mitigation work on answer text"
        )
    raise InvalidInputError(f"unsupported response type {type(response).__name__}")


def _once(text: str) -> Generator[str, None, None]:
    yield text


async def _aonce(text: str) -> AsyncGenerator[str, None]:
    yield text
