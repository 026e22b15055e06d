"""Callback handlers that check every LLM answer of a chain or agent, without changing it.

The handler follows each root run (a top-level ``invoke``): it collects retriever
documents (``on_retriever_end``) and tool outputs (``on_tool_end``), takes the question
from the chat model's prompt (or the root input), and when a model finishes
(``on_llm_end``) runs the guard on its answer. Verdicts are logged, counted and kept,
retrievable by the root run id or the LLM run id. State lives in dicts keyed by run
id under one lock, so one handler serves concurrent runs.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Unpack
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tracers.context import register_configure_hook
from typing_extensions import override

from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core._adapter_api import engine_from, log_event, split_options
from truthlens_integrations.core.engine import GuardKwargs, TruthLens, Verdict
from truthlens_integrations.core.policy import PolicySource

from ._inputs import (
    answered_tool_messages,
    dedupe,
    last_human_text,
    message_text,
    question_of,
    tool_passages,
)

__all__ = [
    "AsyncTruthLensCallbackHandler",
    "TruthLensCallbackHandler",
    "truthlens_callback",
]

logger = logging.getLogger("truthlens_integrations.langchain_adapter")

#: What a chat model's start hook receives: one message list per prompt.
_Prompts = list[list[BaseMessage]]


@dataclass
class _RootState:
    context: list[str] = field(default_factory=list)
    question: str | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    runs: set[UUID] = field(default_factory=set)


@dataclass
class _LLMState:
    question: str | None = None
    context: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Check:
    root: UUID
    run_id: UUID
    item: DetectionInput


class _HandlerCore:
    """Run bookkeeping shared by the sync and async handlers (no LangChain base).

    The hooks of both handlers take LangChain's keyword arguments (``run_id``,
    ``parent_run_id``, ...) as ``**kwargs`` and hand them on to the methods here.
    """

    raise_error: bool

    def __init__(
        self,
        engine: TruthLens | None = None,
        *,
        raise_error: bool = False,
        max_results: int = 1000,
        config: PolicySource = None,
        **options: Unpack[GuardKwargs],
    ) -> None:
        super().__init__()
        where = type(self).__name__
        own = ("engine", "raise_error", "max_results", "config")
        split = split_options(options, own=own, where=where)
        self.engine = engine_from(engine, config, split, where)
        self.raise_error = raise_error
        self.max_results = max_results
        self._lock = threading.Lock()
        self._parents: dict[UUID, UUID] = {}
        self._roots: dict[UUID, _RootState] = {}
        self._llms: dict[UUID, _LLMState] = {}
        self._results: OrderedDict[UUID, list[Verdict]] = OrderedDict()
        self._stats = {"checked": 0, "not_checked": 0, "flagged": 0, "skipped": 0, "errors": 0}

    # -- public read side ------------------------------------------------------------

    def verdicts(self, run_id: UUID) -> list[Verdict]:
        """Verdicts of a root run (all its LLM calls) or of one LLM run.

        Args:
            run_id: The root run id (set ``config["run_id"]`` to know it) or the
                run id of an LLM call.

        Returns:
            The verdicts, oldest first; empty when none were recorded.
        """
        with self._lock:
            found = self._results.get(run_id)
            if found is None and run_id in self._roots:
                found = self._roots[run_id].verdicts
            return list(found or [])

    @property
    def all_verdicts(self) -> list[Verdict]:
        """Every verdict still kept, root runs in order of completion."""
        with self._lock:
            seen: list[Verdict] = []
            ids: set[int] = set()
            for group in self._results.values():
                for verdict in group:
                    if id(verdict) not in ids:
                        ids.add(id(verdict))
                        seen.append(verdict)
            return seen

    @property
    def stats(self) -> dict[str, int]:
        """The handler's counters.

        ``checked`` (answers checked against grounding), ``not_checked`` (guarded but
        not checked: no grounding, detection disabled, unreadable), ``flagged``
        (MITIGATE, of both), ``skipped`` (tool-call steps, empty output), ``errors``.
        """
        with self._lock:
            return dict(self._stats)

    # -- bookkeeping ---------------------------------------------------------------

    def _root_of(self, run_id: UUID) -> UUID:
        seen = 0
        while run_id in self._parents and seen < 10_000:
            run_id = self._parents[run_id]
            seen += 1
        return run_id

    def _register(self, run_id: UUID, parent_run_id: UUID | None) -> _RootState:
        """Link a run to its parent and return its root's state (caller holds the lock)."""
        if parent_run_id is not None and (
            parent_run_id in self._parents or parent_run_id in self._roots
        ):
            self._parents[run_id] = parent_run_id
        root = self._root_of(run_id)
        state = self._roots.get(root)
        if state is None:
            state = self._roots[root] = _RootState()
        state.runs.add(run_id)
        return state

    def _finish(self, run_id: UUID) -> None:
        """Forget a finished root run, keeping its verdicts (caller holds the lock)."""
        if run_id in self._parents:
            return
        state = self._roots.pop(run_id, None)
        if state is None:
            return
        for child in state.runs:
            self._parents.pop(child, None)
            self._llms.pop(child, None)
        if state.verdicts:
            self._results[run_id] = state.verdicts
            self._results.move_to_end(run_id)
        while len(self._results) > self.max_results:
            self._results.popitem(last=False)

    @contextmanager
    def _reported(self, what: str) -> Iterator[None]:
        """Count and log an error raised in the block; re-raise only with ``raise_error``.

        The handler only observes: by default its failures never fail the run.
        """
        try:
            yield
        except Exception:
            with self._lock:
                self._stats["errors"] += 1
            if self.raise_error:
                raise
            logger.exception("truthlens callback failed in %s", what)

    def _guarded(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        with self._reported(what):
            return func(*args, **kwargs)
        return None

    def _chain_start(
        self, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any
    ) -> None:
        with self._lock:
            state = self._register(run_id, parent_run_id)
            if state.question is None and run_id not in self._parents:
                state.question = question_of(inputs, "question")

    def _end(self, *, run_id: UUID, **_: Any) -> None:
        with self._lock:
            self._finish(run_id)

    def _add_context(
        self, found: list[str], *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any
    ) -> None:
        with self._lock:
            self._register(run_id, parent_run_id).context.extend(found)
            # A retriever or tool run started on its own is a root with no answer to
            # check: nothing will end it later, so its state goes now.
            self._finish(run_id)

    def _chat_start(
        self, messages: _Prompts, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any
    ) -> None:
        batch = messages[0] if messages else []
        tools: list[str] = []
        for message in answered_tool_messages(batch):
            tools.extend(tool_passages(message))
        with self._lock:
            self._register(run_id, parent_run_id)
            self._llms[run_id] = _LLMState(question=last_human_text(batch), context=tools)

    def _llm_start(self, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any) -> None:
        with self._lock:
            self._register(run_id, parent_run_id)
            self._llms.setdefault(run_id, _LLMState())

    def _prepare(
        self, response: LLMResult, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any
    ) -> _Check | None:
        """What to check for a finished LLM call, or ``None`` when there is nothing."""
        answer = _answer_text(response)
        with self._lock:
            state = self._register(run_id, parent_run_id)
            llm = self._llms.get(run_id, _LLMState())
            root = self._root_of(run_id)
            if answer is None:
                self._stats["skipped"] += 1
                if root == run_id:
                    self._finish(run_id)
                return None
            # The root input's question first: in a RAG chain the chat prompt's human
            # message wraps the question in instructions and the retrieved context.
            question = state.question or llm.question
            context = dedupe([*state.context, *llm.context])
        item = DetectionInput.create(context=context, question=question, answer=answer)
        return _Check(root=root, run_id=run_id, item=item)

    def _record(self, check: _Check, verdict: Verdict) -> None:
        with self._lock:
            self._stats["checked" if verdict.checked else "not_checked"] += 1
            if not verdict.passed:
                self._stats["flagged"] += 1
            state = self._roots.get(check.root)
            if state is not None:
                state.verdicts.append(verdict)
            if check.run_id != check.root:
                self._results[check.run_id] = [verdict]
            if check.root == check.run_id:
                self._finish(check.run_id)
        log_event(
            logger,
            "langchain.verdict",
            level=logging.DEBUG if verdict.passed else logging.WARNING,
            run_id=str(check.root),
            llm_run_id=str(check.run_id),
            decision=verdict.decision.value,
            score=verdict.score,
            unverified=verdict.unverified,
            # Offsets only, unless the policy allows span texts (the header says which).
            spans=verdict.metadata.get("x-vsr-hallucination-spans", ""),
            action=verdict.action,
        )


def _answer_text(response: LLMResult) -> str | None:
    """The final answer of an LLM call; ``None`` for tool-call steps or empty output."""
    if not response.generations or not response.generations[0]:
        return None
    generation = response.generations[0][0]
    if isinstance(generation, ChatGeneration):
        message = generation.message
        if isinstance(message, AIMessage) and message.tool_calls:
            return None
        text = message_text(message)
    else:
        text = generation.text
    return text if text.strip() else None


def _documents_text(documents: Sequence[Document]) -> list[str]:
    return [d.page_content for d in documents]


class TruthLensCallbackHandler(_HandlerCore, BaseCallbackHandler):
    """Logs hallucination spans of any chain or agent without changing its output.

    Args:
        engine: The guard engine; ``None`` builds one from ``config``.
        raise_error: Re-raise errors from detection instead of logging them.
        max_results: Root runs whose verdicts are kept (oldest dropped first).
        config: A policy for a new engine (``None``: the defaults).
        **options: Engine options and policy knobs (``mode``, ``threshold``,
            ``action``, ``redact``, ...; typed by
            :class:`~truthlens_integrations.core.engine.GuardKwargs`); with
            ``engine`` given they apply to a copy of it.

    Raises:
        UnknownArgumentError: For an unknown keyword argument.
        InvalidArgumentError: For an argument of the wrong type.

    Example:
        >>> handler = TruthLensCallbackHandler(engine)  # doctest: +SKIP
        >>> chain.invoke(q, config={"callbacks": [handler], "run_id": run_id})  # doctest: +SKIP
        >>> handler.verdicts(run_id)[0].spans  # doctest: +SKIP
    """

    @override
    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        """Track the run; a root run's input may hold the question."""
        self._guarded("on_chain_start", self._chain_start, inputs, **kwargs)

    @override
    def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
        """Forget a finished root run, keeping its verdicts."""
        self._guarded("on_chain_end", self._end, **kwargs)

    @override
    def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
        """Forget a failed root run."""
        self._guarded("on_chain_error", self._end, **kwargs)

    @override
    def on_retriever_end(self, documents: Sequence[Document], **kwargs: Any) -> None:
        """Keep retrieved documents as grounding of the root run."""
        found = _documents_text(documents)
        self._guarded("on_retriever_end", self._add_context, found, **kwargs)

    @override
    def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        """Keep a tool's output as grounding of the root run."""
        self._guarded("on_tool_end", self._add_context, tool_passages(output), **kwargs)

    @override
    def on_chat_model_start(self, serialized: Any, messages: _Prompts, **kwargs: Any) -> None:
        """Remember the question and any tool results in the prompt."""
        self._guarded("on_chat_model_start", self._chat_start, messages, **kwargs)

    @override
    def on_llm_start(self, serialized: Any, prompts: list[str], **kwargs: Any) -> None:
        """Track a completion model's run."""
        self._guarded("on_llm_start", self._llm_start, **kwargs)

    @override
    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Check the answer."""
        with self._reported("on_llm_end"):
            check = self._prepare(response, **kwargs)
            if check is not None:
                # guard_batch returns blocked verdicts instead of raising: the handler
                # only observes, it never withholds an answer.
                self._record(check, self.engine.guard_batch([check.item])[0])
        self._guarded("on_llm_end", self._end, **kwargs)  # a root LLM run ends here

    @override
    def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
        """Forget a failed model call that was its own root."""
        self._guarded("on_llm_error", self._end, **kwargs)


class AsyncTruthLensCallbackHandler(_HandlerCore, AsyncCallbackHandler):
    """The async variant of :class:`TruthLensCallbackHandler`: awaits the engine.

    Args:
        engine: The guard engine; ``None`` builds one from ``config``.
        raise_error: Re-raise errors from detection instead of logging them.
        max_results: Root runs whose verdicts are kept (oldest dropped first).
        config: A policy for a new engine.
        **options: Engine options and policy knobs (see
            :class:`TruthLensCallbackHandler`).
    """

    @override
    async def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        """Track the run; a root run's input may hold the question."""
        self._guarded("on_chain_start", self._chain_start, inputs, **kwargs)

    @override
    async def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
        """Forget a finished root run, keeping its verdicts."""
        self._guarded("on_chain_end", self._end, **kwargs)

    @override
    async def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
        """Forget a failed root run."""
        self._guarded("on_chain_error", self._end, **kwargs)

    @override
    async def on_retriever_end(self, documents: Sequence[Document], **kwargs: Any) -> None:
        """Keep retrieved documents as grounding of the root run."""
        found = _documents_text(documents)
        self._guarded("on_retriever_end", self._add_context, found, **kwargs)

    @override
    async def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        """Keep a tool's output as grounding of the root run."""
        self._guarded("on_tool_end", self._add_context, tool_passages(output), **kwargs)

    @override
    async def on_chat_model_start(self, serialized: Any, messages: _Prompts, **kwargs: Any) -> None:
        """Remember the question and any tool results in the prompt."""
        self._guarded("on_chat_model_start", self._chat_start, messages, **kwargs)

    @override
    async def on_llm_start(self, serialized: Any, prompts: list[str], **kwargs: Any) -> None:
        """Track a completion model's run."""
        self._guarded("on_llm_start", self._llm_start, **kwargs)

    @override
    async def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Check the answer (the models run in the engine's worker thread)."""
        try:
            with self._reported("on_llm_end"):
                check = self._prepare(response, **kwargs)
                if check is not None:
                    verdicts = await self.engine.aguard_batch([check.item])
                    self._record(check, verdicts[0])
        finally:
            self._guarded("on_llm_end", self._end, **kwargs)  # a root LLM run ends here

    @override
    async def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
        """Forget a failed model call that was its own root."""
        self._guarded("on_llm_error", self._end, **kwargs)


_handler_var: ContextVar[TruthLensCallbackHandler | None] = ContextVar(
    "truthlens_callback", default=None
)
register_configure_hook(_handler_var, inheritable=True)


@contextmanager
def truthlens_callback(
    engine: TruthLens | None = None,
    *,
    raise_error: bool = False,
    max_results: int = 1000,
    config: PolicySource = None,
    **options: Unpack[GuardKwargs],
) -> Iterator[TruthLensCallbackHandler]:
    """Attach a :class:`TruthLensCallbackHandler` to every run inside the block.

    Like ``get_usage_metadata_callback()``: no ``callbacks=`` to pass around.

    Args:
        engine: The guard engine; ``None`` builds one from ``config``.
        raise_error: Re-raise errors from detection instead of logging them.
        max_results: Root runs whose verdicts are kept (oldest dropped first).
        config: A policy for a new engine (``None``: the defaults).
        **options: Engine options and policy knobs, as for
            :class:`TruthLensCallbackHandler`.

    Yields:
        The handler, to read verdicts and stats from.

    Example:
        >>> with truthlens_callback(engine) as cb:  # doctest: +SKIP
        ...     chain.invoke("When was the Eiffel Tower built?")
        >>> cb.all_verdicts[-1].spans  # doctest: +SKIP
    """
    handler = TruthLensCallbackHandler(
        engine, raise_error=raise_error, max_results=max_results, config=config, **options
    )
    token = _handler_var.set(handler)
    try:
        yield handler
    finally:
        _handler_var.reset(token)
