"""A LlamaIndex query engine that guards the answers of another one."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Generator, Sequence
from typing import Any, Literal

from llama_index.core import llms as li_llms
from llama_index.core.base.base_query_engine import BaseQueryEngine
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

from truthlens_integrations.core import BlockedResponseError, InvalidInputError
from truthlens_integrations.core import llm as core_llm
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.policy import PolicySource

from ._common import build_engine, node_texts, verdict_of, verdict_payload
from ._events import (
    TruthLensDetectionEndEvent,
    TruthLensDetectionStartEvent,
    dispatcher,
    event_payload,
)
from ._llm import as_core_llm
from ._prompts import DEFAULT_QUERY_REWRITE_PROMPT, DEFAULT_REFINE_PROMPT

__all__ = ["DEFAULT_BLOCKED_MESSAGE", "TruthLensQueryEngine", "get_verdict"]

logger = logging.getLogger(__name__)

DEFAULT_BLOCKED_MESSAGE = (
    "The answer was withheld because parts of it could not be verified against the sources."
)

#: The guard appears in legacy callback traces as a tool call with this name.
GUARD_TOOL = ToolMetadata(
    name="truthlens_guard",
    description="Checks the answer against its source nodes and mitigates hallucinations.",
)

OnBlock = Literal["raise", "response"]


def get_verdict(response: object) -> Verdict | None:
    """The verdict a :class:`TruthLensQueryEngine` attached to ``response``.

    Args:
        response: A response returned by the guarded engine.

    Returns:
        The verdict, or ``None`` when the response carries none.
    """
    metadata = getattr(response, "metadata", None)
    payload = metadata.get("truthlens") if isinstance(metadata, dict) else None
    if not isinstance(payload, dict) or "verdict" not in payload:
        return None
    return Verdict.model_validate(payload["verdict"])


def _find_llm(query_engine: BaseQueryEngine) -> li_llms.LLM | None:
    """The LLM the inner engine synthesizes with, where it can be found."""
    for owner in (getattr(query_engine, "_response_synthesizer", None), query_engine):
        llm = getattr(owner, "_llm", None) or getattr(owner, "llm", None)
        if isinstance(llm, li_llms.LLM):
            return llm
    return None


class TruthLensQueryEngine(BaseQueryEngine):
    """Wraps a query engine: its answers are checked against their own source nodes.

    Each query runs the inner engine, takes the question from the query bundle and
    the context from ``response.source_nodes``, and runs the guard pipeline. The
    returned ``Response`` carries the text to show (the answer, the answer with a
    warning, the mitigated answer, or the blocked message), the source nodes (plus
    any found by re-querying), and ``metadata["truthlens"]``: the ``x-truthlens-*`` /
    ``x-vsr-*`` header values and, under ``"verdict"``, the whole verdict (see
    :func:`get_verdict`). The inner response's own metadata is kept.

    ``metadata["truthlens"]["verdict"]`` holds the original answer even when it was
    withheld (for audit); forward only the header keys to end users.

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
        verification_llms: Premium-mode verification models.
        judge_llm: Premium-mode judge.
        retrieval_feedback: Rewrite the query and re-query the inner engine when the
            answer is flagged (source nodes accumulate).
        on_block: ``"response"`` returns ``blocked_message`` as the response text;
            ``"raise"`` raises :class:`BlockedResponseError` with the verdict.
        blocked_message: Text of a blocked response.
        refine_prompt: Overrides the refine prompt.
        query_rewrite_prompt: Overrides the query-rewrite prompt.
        context_metadata_mode: How node text is read for the check; ``NONE`` (the
            node's text only) by default.
        callback_manager: Legacy callback manager; the guard is traced as a
            ``function_call`` event of the tool ``truthlens_guard``.
    """

    def __init__(
        self,
        query_engine: BaseQueryEngine,
        *,
        engine: TruthLens | None = None,
        config: PolicySource = None,
        llm: li_llms.LLM | core_llm.LLM | None = None,
        verification_llms: Sequence[li_llms.LLM | core_llm.LLM] = (),
        judge_llm: li_llms.LLM | core_llm.LLM | None = None,
        retrieval_feedback: bool = False,
        on_block: OnBlock = "response",
        blocked_message: str = DEFAULT_BLOCKED_MESSAGE,
        refine_prompt: BasePromptTemplate | None = None,
        query_rewrite_prompt: BasePromptTemplate | None = None,
        context_metadata_mode: MetadataMode = MetadataMode.NONE,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        if on_block not in ("raise", "response"):
            raise ValueError(f"on_block must be 'raise' or 'response', got {on_block!r}")
        self._query_engine = query_engine
        self.engine = build_engine(engine, config)
        self._llm = as_core_llm(llm if llm is not None else _find_llm(query_engine))
        self._verification_llms = [as_core_llm(m) for m in verification_llms]
        self._judge_llm = as_core_llm(judge_llm)
        self.retrieval_feedback = retrieval_feedback
        self.on_block: OnBlock = on_block
        self.blocked_message = blocked_message
        self._refine_prompt = refine_prompt or DEFAULT_REFINE_PROMPT
        self._query_rewrite_prompt = query_rewrite_prompt or DEFAULT_QUERY_REWRITE_PROMPT
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
        """Replace the refine and/or query-rewrite prompt."""
        if "refine_prompt" in prompts_dict:
            self._refine_prompt = prompts_dict["refine_prompt"]
        if "query_rewrite_prompt" in prompts_dict:
            self._query_rewrite_prompt = prompts_dict["query_rewrite_prompt"]

    def _get_prompt_modules(self) -> PromptMixinType:
        """The inner engine, so its prompts show up (and update) under ``query_engine:``."""
        return {"query_engine": self._query_engine}

    # -- query --------------------------------------------------------------------------

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        """Run the inner engine, then guard its answer."""
        inner = self._query_engine.query(query_bundle)
        if isinstance(inner, AsyncStreamingResponse):
            raise InvalidInputError(
                "the inner engine returned an async stream from a sync query; use aquery()"
            )
        buffered = _buffer(inner)
        verdict, nodes = self._guard(query_bundle, buffered)
        return self._respond(inner, buffered, verdict, nodes)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        """Async :meth:`_query`: awaits the inner engine and the guard."""
        inner = await self._query_engine.aquery(query_bundle)
        if isinstance(inner, AsyncStreamingResponse):
            buffered = await inner.get_response()
        else:
            buffered = _buffer(inner)
        verdict, nodes = await self._aguard(query_bundle, buffered)
        return self._respond(inner, buffered, verdict, nodes)

    # -- guard --------------------------------------------------------------------------

    def _inputs(self, query_bundle: QueryBundle, response: Response) -> tuple[str, list[str], str]:
        answer = response.response
        if answer is None or not answer.strip():
            raise InvalidInputError("the inner query engine returned an empty answer")
        context = node_texts(response.source_nodes, self.context_metadata_mode)
        return query_bundle.query_str, context, answer

    def _start(self, question: str, context: list[str], answer: str) -> dict[str, Any]:
        start = TruthLensDetectionStartEvent(
            query=question, answer=answer, num_passages=len(context)
        )
        dispatcher.event(start)
        return {
            EventPayload.TOOL: GUARD_TOOL,
            EventPayload.FUNCTION_CALL: event_payload(start),
        }

    def _end(self, verdict: Verdict) -> dict[str, Any]:
        end = TruthLensDetectionEndEvent(
            decision=verdict.decision.value,
            score=verdict.score,
            spans=verdict.spans,
            action=verdict.action,
            blocked=verdict.blocked,
            mode=verdict.mode,
            iterations=verdict.iterations,
            metadata=verdict.metadata,
        )
        dispatcher.event(end)
        return {EventPayload.FUNCTION_OUTPUT: event_payload(end)}

    def _guard(
        self, query_bundle: QueryBundle, response: Response
    ) -> tuple[Verdict, list[NodeWithScore]]:
        question, context, answer = self._inputs(query_bundle, response)
        with self.callback_manager.event(
            CBEventType.FUNCTION_CALL, payload=self._start(question, context, answer)
        ) as event:
            try:
                verdict = self.engine.guard(context=context, question=question, answer=answer)
            except BlockedResponseError as exc:
                verdict = verdict_of(exc)
            event.on_end(payload=self._end(verdict))
        return verdict, list(response.source_nodes)

    async def _aguard(
        self, query_bundle: QueryBundle, response: Response
    ) -> tuple[Verdict, list[NodeWithScore]]:
        question, context, answer = self._inputs(query_bundle, response)
        with self.callback_manager.event(
            CBEventType.FUNCTION_CALL, payload=self._start(question, context, answer)
        ) as event:
            try:
                verdict = await self.engine.aguard(
                    context=context, question=question, answer=answer
                )
            except BlockedResponseError as exc:
                verdict = verdict_of(exc)
            event.on_end(payload=self._end(verdict))
        return verdict, list(response.source_nodes)

    # -- response -----------------------------------------------------------------------

    def _text(self, verdict: Verdict) -> str:
        if verdict.blocked:
            if self.on_block == "raise" or self.engine.raise_on_block:
                raise BlockedResponseError(
                    f"answer withheld by policy (route={verdict.route}, score={verdict.score})",
                    verdict=verdict,
                )
            return self.blocked_message
        assert verdict.output is not None  # only blocked verdicts have no output
        return verdict.output

    def _respond(
        self,
        inner: RESPONSE_TYPE,
        buffered: Response,
        verdict: Verdict,
        nodes: list[NodeWithScore],
    ) -> RESPONSE_TYPE:
        text = self._text(verdict)
        metadata = {**(buffered.metadata or {}), "truthlens": verdict_payload(verdict)}
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
