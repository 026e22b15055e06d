"""``TruthLensRunnable``: the guard as an LCEL runnable, in pipe form or wrapping a chain."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Literal, Unpack, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    BaseCallbackManager,
    CallbackManagerForChainRun,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import (
    Runnable,
    RunnableBinding,
    RunnableConfig,
    RunnableParallel,
    RunnableSequence,
    RunnableSerializable,
)
from langchain_core.runnables.config import ensure_config, patch_config
from langchain_core.runnables.passthrough import RunnableAssign
from langchain_core.runnables.utils import AddableDict
from pydantic import ConfigDict, Field, ValidationError

from truthlens_integrations.core import (
    BlockedResponseError,
    ConfigError,
    DetectionInput,
    InvalidArgumentError,
)
from truthlens_integrations.core._adapter_api import (
    POLICY_KNOB_NAMES,
    EngineBlocking,
    GuardCall,
    GuardTools,
    arun_guard,
    engine_from,
    run_guard,
    split_options,
    verdict_of,
)
from truthlens_integrations.core.engine import GuardKwargs, TruthLens, Verdict
from truthlens_integrations.core.llm import BaseLLM
from truthlens_integrations.core.mitigation import (
    GroundedAnswerer,
    Retriever,
    answerer_from_callables,
    retriever_from_callables,
)
from truthlens_integrations.core.policy import Action, Mode, PolicySource

from ._arguments import invalid_arguments
from ._capture import GroundingCapture
from ._inputs import ParsedInput, dedupe, parse_input, question_of
from ._llm import as_llm
from ._outputs import GUARD_TAG, TRUTHLENS_EVENT, render, verdict_chunk

__all__ = ["RunnableKwargs", "StreamMode", "TruthLensRunnable", "guard_chain"]

StreamMode = Literal["verified", "passthrough"]


class RunnableKwargs(GuardKwargs, total=False):
    """The keyword arguments of :class:`TruthLensRunnable` besides ``engine`` and ``chain``.

    The runnable's own fields (described there; ``name`` is LangChain's run name),
    typed, and every engine option and policy knob
    (:class:`~truthlens_integrations.core.engine.GuardKwargs`): one definition for the
    constructor, :meth:`TruthLensRunnable.from_config` and :func:`guard_chain`.
    """

    llm: Runnable[Any, Any] | BaseLLM | None
    retriever: BaseRetriever | None
    verification_llms: Sequence[Runnable[Any, Any] | BaseLLM]
    judge_llm: Runnable[Any, Any] | BaseLLM | None
    answer_key: str
    context_key: str
    question_key: str
    verdict_key: str
    stream_mode: StreamMode
    requery_chain: bool
    name: str | None


_TEXT_CHANGING: frozenset[str] = frozenset({"body", "block"})


def passthrough_problems(engine: TruthLens) -> list[str]:
    """Why the policy cannot stream tokens before detection (empty when it can).

    Pass-through streaming shows the answer before the verdict exists, so nothing may
    change its text afterwards: only ``header`` / ``none`` actions, no disclaimer and
    no refinement mode.
    """
    policy = engine.policy
    scopes: list[tuple[str, str | None]] = [("global settings", None)]
    scopes += [(f"decision {d.name!r}", d.name) for d in policy.decisions]
    problems: list[str] = []
    for label, name in scopes:
        s = policy.settings_for(name)
        if not s.enabled:
            continue
        if s.hallucination_action in _TEXT_CHANGING:
            problems.append(f"{label}: hallucination_action={s.hallucination_action}")
        if s.unverified_factual_action in _TEXT_CHANGING:
            problems.append(f"{label}: unverified_factual_action={s.unverified_factual_action}")
        if s.require_disclaimer:
            problems.append(f"{label}: require_disclaimer")
        if s.mode != "lightweight":
            problems.append(f"{label}: mode={s.mode}")
    return problems


def check_passthrough(problems: list[str]) -> None:
    """Raise :class:`ConfigError` for pass-through streaming under ``problems``.

    Args:
        problems: What :func:`passthrough_problems` found.
    """
    if problems:
        raise ConfigError(
            "stream_mode='passthrough' streams the answer before it is checked, so the "
            "policy must not change or withhold text; found: " + "; ".join(problems)
        )


_NO_INPUT: Any = object()


@dataclasses.dataclass(frozen=True)
class _Pending:
    """One guard call, ready to run: the parsed input and the engine's typed call."""

    parsed: ParsedInput
    call: GuardCall


def _as_retriever(retriever: BaseRetriever, config: RunnableConfig) -> Retriever:
    """A LangChain retriever behind the core protocol; its runs are children of ``config``."""

    def retrieve(query: str) -> list[str]:
        return [d.page_content for d in retriever.invoke(query, config)]

    async def aretrieve(query: str) -> list[str]:
        return [d.page_content for d in await retriever.ainvoke(query, config)]

    return retriever_from_callables(retrieve, aretrieve, name=retriever.get_name())


def _streams_events(handler: object) -> bool:
    """Whether ``handler`` feeds ``astream_events`` / ``astream_log``.

    Those handlers tap the output of every run (``tap_output_iter`` and
    ``tap_output_aiter``); langchain-core names their common base only in a private
    module, so they are recognised by these two public methods instead.
    """
    return callable(getattr(handler, "tap_output_iter", None)) and callable(
        getattr(handler, "tap_output_aiter", None)
    )


def hide_streaming(config: RunnableConfig) -> RunnableConfig:
    """``config`` without the handlers that stream events to the caller.

    ``astream_events`` / ``astream_log`` attach a streaming handler that every child
    run inherits; a chat model that sees one streams its tokens as
    ``on_chat_model_stream`` events. Runs under the returned config stay invisible
    to those streams (tracers and other callbacks still see them).
    """
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        for handler in [*manager.handlers, *manager.inheritable_handlers]:
            if _streams_events(handler):
                manager.remove_handler(handler)
        return patch_config(config, callbacks=manager)
    if isinstance(callbacks, list):
        kept = [h for h in callbacks if not _streams_events(h)]
        return cast("RunnableConfig", {**config, "callbacks": kept})
    return config


def _with_capture(
    config: RunnableConfig, run_name: str | None = None
) -> tuple[RunnableConfig, GroundingCapture]:
    """``config`` plus a fresh :class:`GroundingCapture` inherited by every child run."""
    capture = GroundingCapture()
    callbacks = config.get("callbacks")
    handlers: Any
    if isinstance(callbacks, BaseCallbackManager):
        handlers = callbacks.copy()
        handlers.add_handler(capture, inherit=True)
    else:
        handlers = [*(callbacks or []), capture]
    return patch_config(config, callbacks=handlers, run_name=run_name), capture


def _merge(acc: Any, chunk: Any) -> Any:
    """Add a stream chunk to what came before, the way LCEL aggregates streams.

    Strings and message chunks concatenate and dicts merge key by key; message lists
    (agent states) replace each other, as each one is complete.
    """
    if acc is None:
        if isinstance(chunk, Mapping) and not isinstance(chunk, AddableDict):
            return AddableDict(chunk)
        return chunk
    if isinstance(chunk, list):
        return chunk
    try:
        return acc + chunk
    except TypeError:
        return chunk


async def _amerged(chunks: AsyncIterator[Any]) -> Any:
    """The chunks of an async stream added up (see :func:`_merge`)."""
    value = None
    async for chunk in chunks:
        value = _merge(value, chunk)
    return value


def find_chat_model(runnable: object) -> BaseChatModel | None:
    """The chat model that produces a chain's answer: the last one in its steps.

    Args:
        runnable: A chain (sequence, parallel, binding, assign) or a chat model.

    Returns:
        The model, or ``None`` when the chain holds none.
    """
    if isinstance(runnable, BaseChatModel):
        return runnable
    children: list[object] = []
    if isinstance(runnable, RunnableBinding):
        children = [runnable.bound]
    elif isinstance(runnable, RunnableSequence):
        children = list(reversed(runnable.steps))
    elif isinstance(runnable, RunnableParallel):
        children = list(runnable.steps__.values())
    elif isinstance(runnable, RunnableAssign):
        children = [runnable.mapper]
    for child in children:
        found = find_chat_model(child)
        if found is not None:
            return found
    return None


def _with_query(value: object, query: str, question_key: str) -> object:
    """The inner chain's input with the question replaced by a rewritten query."""
    if isinstance(value, str):
        return query
    if isinstance(value, Mapping):
        if "messages" in value and question_key not in value:
            return {**value, "messages": _with_query(value["messages"], query, question_key)}
        key = next((k for k in (question_key, "question", "input", "query") if k in value), None)
        return {**value, (key or question_key): query}
    if isinstance(value, Sequence):
        messages = list(value)
        for i in range(len(messages) - 1, -1, -1):
            if isinstance(messages[i], HumanMessage):
                messages[i] = HumanMessage(content=query)
                return messages
        return [*messages, HumanMessage(content=query)]
    return query


class TruthLensRunnable(EngineBlocking, RunnableSerializable[Any, Any]):
    """Guards LLM answers inside LCEL: detect hallucinations, then act by policy.

    **Pipe form**: ``rag_chain | TruthLensRunnable(engine=...)``. The input is a dict
    with the answer, the context and the question (keys configurable; context as
    ``Document``s, strings or one string), a list of messages, an agent state
    ``{"messages": [...]}`` (``ToolMessage`` contents are the grounding, the last
    human message the question, the last AI message the answer), or a bare string /
    ``AIMessage``, which has no grounding and takes the "unverified factual" path.

    **Wrapper form**: ``TruthLensRunnable(chain=agent_or_chain, ...)`` (or
    :func:`guard_chain`) runs the chain, collects what its retrievers returned and
    its tools produced through callbacks, and guards the chain's output.

    **Output** has the input's type: a string comes back as a string (a
    :class:`GuardedText` carrying ``.verdict``), an ``AIMessage`` with the verdict in
    ``response_metadata["truthlens"]``, a dict with a ``"truthlens"`` entry, a
    message list or state with its last AI message replaced. Wherever it is, the
    verdict reads the same: :meth:`Verdict.to_dict` under ``"truthlens"``. The
    ``body`` action changes the text; a blocked answer is replaced by
    ``blocked_message`` (``on_block="message"``, the default) or raises
    :class:`BlockedResponseError` (``on_block="raise"``). The blocked text is in none
    of the output (withheld from the verdict); the application reads it through the
    engine's ``audit_hook`` or ``GuardedText.verdict.full()``.

    **Streaming**: by default (``stream_mode="verified"``) the verified answer comes
    as one chunk after detection. ``stream_mode="passthrough"`` streams the chunks
    as they come and adds a last chunk carrying only the verdict (an empty
    ``GuardedText``, an ``AIMessageChunk`` with ``response_metadata["truthlens"]``, or
    ``{"truthlens": verdict.to_dict()}``); it needs a policy whose actions leave the text alone
    (``header`` / ``none``, no disclaimer, lightweight mode).

    While the policy can change or withhold the text (any ``body`` / ``block``
    action, a disclaimer or a refinement mode), the wrapped chain and the mitigation
    models run hidden from ``astream_events`` / ``astream_log``: their tokens and
    outputs, which may be the answer about to be withheld, never reach the event
    stream; the caller sees this runnable's own (checked) output and the
    ``truthlens_detection`` event.

    Every detection dispatches a ``truthlens_detection`` custom event with the
    verdict (spans, scores, ``x-*`` metadata), so tracers and callbacks see it.

    **Keyword arguments** (typed by :class:`RunnableKwargs`): besides the fields
    below, every engine option of
    :class:`~truthlens_integrations.core.engine.EngineOptions` (``detector``,
    ``on_block``, ``blocked_message``, ``expose_blocked_text``, ``align_quantities``,
    ``mitigation_options``, ``redact``, ``audit_hook``, ...) is accepted and builds
    the engine (or derives one from ``engine``); an unknown keyword raises
    :class:`UnknownArgumentError` with a suggestion, a wrong type
    :class:`InvalidArgumentError`.

    Attributes:
        engine: The guard engine (policy, models).
        mode: Overrides the policy's mode on every route (``lightweight``,
            ``standard``, ``premium``).
        threshold: Overrides the policy's flagging threshold on every route.
        action: Overrides the policy's ``hallucination_action`` on every route.
        max_iterations: Overrides the policy's mitigation rounds (standard and
            premium) on every route.
        chain: A chain or agent to run and guard (wrapper form).
        llm: Chat model for standard / premium mitigation (``with_retry()`` /
            ``with_fallbacks()`` wrappers accepted); in the wrapper form the
            chain's last chat model is used when unset.
        retriever: Retriever for the retrieval-feedback loop (pipe form).
        verification_llms: Premium-mode verifiers (chat models or core LLMs).
        judge_llm: Premium-mode judge.
        answer_key: Dict key of the answer.
        context_key: Dict key of the context.
        question_key: Dict key of the question.
        verdict_key: Key the verdict is added under in dict outputs.
        stream_mode: ``"verified"`` or ``"passthrough"``.
        requery_chain: In the wrapper form, let the retrieval-feedback loop re-run
            the chain with the rewritten query.

    Raises:
        ConfigError: If ``stream_mode="passthrough"`` is asked for with a policy that
            changes or withholds text.
        UnknownArgumentError: For an unknown keyword argument.
        InvalidArgumentError: For an argument of the wrong type (``llm="gpt"``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    engine: TruthLens = Field(default_factory=TruthLens.from_config)
    mode: Mode | None = None
    threshold: float | None = None
    action: Action | None = None
    max_iterations: int | None = None
    chain: Runnable[Any, Any] | None = None
    llm: Runnable[Any, Any] | BaseLLM | None = None
    retriever: BaseRetriever | None = None
    verification_llms: list[Runnable[Any, Any] | BaseLLM] = Field(default_factory=list)
    judge_llm: Runnable[Any, Any] | BaseLLM | None = None
    answer_key: str = "answer"
    context_key: str = "context"
    question_key: str = "question"
    verdict_key: str = "truthlens"
    stream_mode: StreamMode = "verified"
    requery_chain: bool = True

    def __init__(
        self,
        *,
        engine: TruthLens | None = None,
        chain: Runnable[Any, Any] | None = None,
        **kwargs: Unpack[RunnableKwargs],
    ) -> None:
        given = _engine_kwargs(_with_given(kwargs, engine, chain), None, "TruthLensRunnable")
        try:
            super().__init__(**given)
        except ValidationError as exc:
            raise invalid_arguments(exc, "TruthLensRunnable") from None
        if self.stream_mode == "passthrough":
            check_passthrough(passthrough_problems(self.engine))

    @classmethod
    def from_config(
        cls,
        config: PolicySource | Sequence[PolicySource] = None,
        *,
        chain: Runnable[Any, Any] | None = None,
        **kwargs: Unpack[RunnableKwargs],
    ) -> TruthLensRunnable:
        """Build the engine from a policy and wrap it.

        Args:
            config: A policy file, YAML text, dict, list of these, or ``None`` for the
                defaults.
            chain: A chain or agent to run and guard (wrapper form).
            **kwargs: Typed by :class:`RunnableKwargs`: engine options (every field
                of :class:`~truthlens_integrations.core.engine.EngineOptions`) and
                the policy knobs (``mode``, ``threshold``, ``action``) go to the
                engine, the rest to the runnable.

        Returns:
            The runnable.

        Raises:
            UnknownArgumentError: For an unknown keyword argument.
            InvalidArgumentError: For an argument of the wrong type.
        """
        given = _with_given(kwargs, None, chain)
        if "engine" in given:
            raise InvalidArgumentError(
                "TruthLensRunnable.from_config builds the engine from config; pass "
                "engine= to TruthLensRunnable(...) instead"
            )
        return cls(**_engine_kwargs(given, config, "TruthLensRunnable.from_config"))

    @classmethod
    def is_lc_serializable(cls) -> bool:
        """No: the engine holds loaded models."""
        return False

    # -- parsing and guarding ---------------------------------------------------------

    def _parse(self, value: object) -> ParsedInput:
        return parse_input(
            value,
            answer_key=self.answer_key,
            context_key=self.context_key,
            question_key=self.question_key,
        )

    def _render(self, parsed: ParsedInput, verdict: Verdict) -> Any:
        return render(
            parsed,
            verdict,
            self.engine.shown(verdict),
            answer_key=self.answer_key,
            verdict_key=self.verdict_key,
        )

    def _parse_output(
        self, chain_input: object, output: object, capture: GroundingCapture
    ) -> ParsedInput:
        """The wrapped chain's output taken apart, grounded by what ``capture`` collected."""
        parsed = self._parse(output)
        question = (
            parsed.question or question_of(chain_input, self.question_key) or capture.question
        )
        return dataclasses.replace(
            parsed, context=dedupe([*parsed.context, *capture.context]), question=question
        )

    def _hidden(self, config: RunnableConfig) -> RunnableConfig:
        """The config for inner runs: hidden from event streams while text can change."""
        if self.stream_mode == "passthrough" or not passthrough_problems(self.engine):
            return config
        return hide_streaming(config)

    @property
    def holds(self) -> bool:
        """Whether this guard may change or withhold the text it is given (pipe form).

        Then what fed it is unchecked text: its run carries :data:`GUARD_TAG`, and
        ``guarded_events`` drops the events of the runs before it. The wrapper form
        (``chain=``) checks its own chain's output, hidden from event streams.
        """
        return (
            self.chain is None
            and self.stream_mode != "passthrough"
            and bool(passthrough_problems(self.engine))
        )

    def _tagged(self, config: RunnableConfig | None) -> RunnableConfig:
        """``config`` with :data:`GUARD_TAG` on this guard's run when it :attr:`holds`."""
        config = ensure_config(config)
        if not self.holds:
            return config
        return cast("RunnableConfig", {**config, "tags": [*config.get("tags", []), GUARD_TAG]})

    def _tagged_all(
        self, config: RunnableConfig | list[RunnableConfig] | None
    ) -> RunnableConfig | list[RunnableConfig]:
        if isinstance(config, list):
            return [self._tagged(c) for c in config]
        return self._tagged(config)

    def _mitigation(self, config: RunnableConfig, chain_input: object = _NO_INPUT) -> GuardTools:
        """The guard call's tools for standard / premium modes (none set: none passed).

        Every model is bound to ``config``, so its calls are child runs of this one.
        """
        config = self._hidden(config)
        llm = self.llm if self.llm is not None else find_chat_model(self.chain)
        found = GuardTools()
        if llm is not None:
            found["llm"] = as_llm(llm, config)
        if self.verification_llms:
            found["verification_llms"] = [as_llm(m, config) for m in self.verification_llms]
        if self.judge_llm is not None:
            found["judge_llm"] = as_llm(self.judge_llm, config)
        if self.retriever is not None:
            found["retriever"] = _as_retriever(self.retriever, config)
        if self.chain is not None and self.requery_chain and chain_input is not _NO_INPUT:
            found["answerer"] = self._answerer(chain_input, config)
        return found

    def _answerer(self, chain_input: object, config: RunnableConfig) -> GroundedAnswerer:
        """Re-runs the wrapped chain with a rewritten query (retrieval feedback)."""
        chain = self.chain
        assert chain is not None

        def setup(query: str) -> tuple[object, RunnableConfig, GroundingCapture]:
            cfg, capture = _with_capture(config, run_name="truthlens_requery")
            return _with_query(chain_input, query, self.question_key), cfg, capture

        def answer(query: str) -> tuple[str, list[str]]:
            value, cfg, capture = setup(query)
            parsed = self._parse_output(value, chain.invoke(value, cfg), capture)
            return parsed.answer, parsed.context

        async def aanswer(query: str) -> tuple[str, list[str]]:
            value, cfg, capture = setup(query)
            parsed = self._parse_output(value, await chain.ainvoke(value, cfg), capture)
            return parsed.answer, parsed.context

        return answerer_from_callables(answer, aanswer, name=f"chain:{chain.get_name()}")

    def _prepare(
        self, config: RunnableConfig, value: object, output: object, capture: GroundingCapture
    ) -> _Pending:
        """What one guard call checks, and the engine's arguments for it.

        ``output`` is the wrapped chain's output, grounded by what ``capture`` saw it
        retrieve and call (wrapper form), or the input itself (pipe form). The
        mitigation models are bound to ``config``, so their calls are child runs.
        """
        if self.chain is None:
            parsed, chain_input = self._parse(output), _NO_INPUT
        else:
            parsed, chain_input = self._parse_output(value, output, capture), value
        return _Pending(parsed, parsed.call(self._mitigation(config, chain_input)))

    def _check(self, pending: _Pending, config: RunnableConfig) -> Verdict:
        try:
            verdict = run_guard(self.engine, pending.call)
        except BlockedResponseError as exc:  # on_block="raise": the event still goes out
            dispatch_custom_event(TRUTHLENS_EVENT, verdict_of(exc).to_dict(), config=config)
            raise
        dispatch_custom_event(TRUTHLENS_EVENT, verdict.to_dict(), config=config)
        return verdict

    async def _acheck(self, pending: _Pending, config: RunnableConfig) -> Verdict:
        try:
            verdict = await arun_guard(self.engine, pending.call)
        except BlockedResponseError as exc:  # on_block="raise": the event still goes out
            payload = verdict_of(exc).to_dict()
            await adispatch_custom_event(TRUTHLENS_EVENT, payload, config=config)
            raise
        await adispatch_custom_event(TRUTHLENS_EVENT, verdict.to_dict(), config=config)
        return verdict

    def _inner_config(self, config: RunnableConfig) -> tuple[RunnableConfig, GroundingCapture]:
        """The wrapped chain's config, and the capture that collects its grounding.

        The pipe form runs nothing under it and gets ``config`` as it is (and an empty
        capture), so both forms take one path.
        """
        if self.chain is None:
            return config, GroundingCapture()
        return _with_capture(self._hidden(config))

    # -- invoke -------------------------------------------------------------------------

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:  # noqa: A002
        """Guard one input (or run the wrapped chain and guard its output)."""
        return self._call_with_config(self._invoke, input, self._tagged(config), **kwargs)

    def _invoke(
        self, value: Any, run_manager: CallbackManagerForChainRun, config: RunnableConfig
    ) -> Any:
        del run_manager  # the child config carries the callbacks
        inner, capture = self._inner_config(config)
        output = value if self.chain is None else self.chain.invoke(value, inner)
        pending = self._prepare(config, value, output, capture)
        return self._render(pending.parsed, self._check(pending, config))

    async def ainvoke(
        self,
        input: Any,  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async :meth:`invoke`: awaits the chain and the engine."""
        return await self._acall_with_config(self._ainvoke, input, self._tagged(config), **kwargs)

    async def _ainvoke(
        self, value: Any, run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig
    ) -> Any:
        del run_manager  # the child config carries the callbacks
        inner, capture = self._inner_config(config)
        output = value if self.chain is None else await self.chain.ainvoke(value, inner)
        pending = self._prepare(config, value, output, capture)
        return self._render(pending.parsed, await self._acheck(pending, config))

    # -- batch ------------------------------------------------------------------------

    def batch(
        self,
        inputs: list[Any],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any | None,
    ) -> list[Any]:
        """Guard many inputs with one detector pass (pipe form without mitigation).

        Each input is its own run; a failing input fails alone with
        ``return_exceptions=True``.
        """
        if not inputs:
            return []
        if not self._batches_alone():
            return super().batch(inputs, config, return_exceptions=return_exceptions, **kwargs)
        return self._batch_with_config(
            self._batch,
            inputs,
            self._tagged_all(config),
            return_exceptions=return_exceptions,
            **kwargs,
        )

    def _batch(
        self, values: list[Any], run_manager: object, config: list[RunnableConfig]
    ) -> list[Any]:
        del run_manager  # LangChain passes the runs' managers; events go through config
        parsed, items = self._prepare_batch(values)
        verdicts = self.engine.guard_batch(items) if items else []
        outputs, events = self._finish_batch(parsed, verdicts, config)
        for cfg, verdict in events:
            dispatch_custom_event(TRUTHLENS_EVENT, verdict.to_dict(), config=cfg)
        return outputs

    async def abatch(
        self,
        inputs: list[Any],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any | None,
    ) -> list[Any]:
        """Async :meth:`batch`: one awaited engine call for the whole batch."""
        if not inputs:
            return []
        if not self._batches_alone():
            return await super().abatch(
                inputs, config, return_exceptions=return_exceptions, **kwargs
            )
        return await self._abatch_with_config(
            self._abatch,
            inputs,
            self._tagged_all(config),
            return_exceptions=return_exceptions,
            **kwargs,
        )

    async def _abatch(
        self, values: list[Any], run_manager: object, config: list[RunnableConfig]
    ) -> list[Any]:
        del run_manager  # LangChain passes the runs' managers; events go through config
        parsed, items = self._prepare_batch(values)
        verdicts = await self.engine.aguard_batch(items) if items else []
        outputs, events = self._finish_batch(parsed, verdicts, config)
        for cfg, verdict in events:
            await adispatch_custom_event(TRUTHLENS_EVENT, verdict.to_dict(), config=cfg)
        return outputs

    def _batches_alone(self) -> bool:
        """Whether one detector pass can serve a batch (pipe form without mitigation)."""
        return self.chain is None and not self._mitigation({})

    def _prepare_batch(
        self, values: list[Any]
    ) -> tuple[list[ParsedInput | Exception], list[DetectionInput]]:
        parsed: list[ParsedInput | Exception] = []
        items: list[DetectionInput] = []
        for value in values:
            try:
                p = self._parse(value)
                items.append(
                    DetectionInput.create(context=p.context, question=p.question, answer=p.answer)
                )
            except Exception as exc:  # noqa: BLE001 - one bad input fails alone
                parsed.append(exc)
            else:
                parsed.append(p)
        return parsed, items

    def _finish_batch(
        self,
        parsed: list[ParsedInput | Exception],
        verdicts: list[Verdict],
        config: list[RunnableConfig],
    ) -> tuple[list[Any], list[tuple[RunnableConfig, Verdict]]]:
        """The batch's outputs (errors in place), and the events to dispatch after it."""
        results = iter(verdicts)
        outputs: list[Any] = []
        events: list[tuple[RunnableConfig, Verdict]] = []
        for p, cfg in zip(parsed, config, strict=True):
            if isinstance(p, Exception):
                outputs.append(p)
                continue
            verdict = next(results)
            events.append((cfg, verdict))
            try:
                outputs.append(self._render(p, verdict))
            except Exception as exc:  # noqa: BLE001 - a blocked answer fails alone
                outputs.append(exc)
        return outputs, events

    # -- streaming ----------------------------------------------------------------------

    def stream(
        self,
        input: Any,  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any | None,
    ) -> Iterator[Any]:
        """Stream the guarded output; see the class docstring for the two modes."""
        yield from self.transform(iter([input]), config, **kwargs)

    async def astream(
        self,
        input: Any,  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any | None,
    ) -> AsyncIterator[Any]:
        """Async :meth:`stream`."""

        async def one() -> AsyncIterator[Any]:
            yield input

        async for chunk in self.atransform(one(), config, **kwargs):
            yield chunk

    def transform(
        self,
        input: Iterator[Any],  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any | None,
    ) -> Iterator[Any]:
        """Guard a stream of chunks from the previous step."""
        yield from self._transform_stream_with_config(
            input, self._transform, self._tagged(config), **kwargs
        )

    async def atransform(
        self,
        input: AsyncIterator[Any],  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any | None,
    ) -> AsyncIterator[Any]:
        """Async :meth:`transform`."""
        async for chunk in self._atransform_stream_with_config(
            input, self._atransform, self._tagged(config), **kwargs
        ):
            yield chunk

    def _transform(
        self,
        chunks: Iterator[Any],
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> Iterator[Any]:
        """Guard a stream: the whole of it (verified), or chunk by chunk (pass-through).

        Verified mode guards the merged input as :meth:`invoke` does; pass-through
        yields the chunks (of the input, or of the wrapped chain) as they come, then
        one chunk carrying the verdict.
        """
        if self.stream_mode == "verified":
            yield self._invoke(functools.reduce(_merge, chunks, None), run_manager, config)
            return
        inner, capture = self._inner_config(config)
        source, value = chunks, None
        if self.chain is not None:
            value = functools.reduce(_merge, chunks, None)
            source = self.chain.stream(value, inner)
        output = None
        for chunk in source:
            yield chunk
            output = _merge(output, chunk)
        pending = self._prepare(config, value, output, capture)
        yield verdict_chunk(output, self._check(pending, config), self.verdict_key)

    async def _atransform(
        self,
        chunks: AsyncIterator[Any],
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> AsyncIterator[Any]:
        """Async :meth:`_transform`."""
        if self.stream_mode == "verified":
            yield await self._ainvoke(await _amerged(chunks), run_manager, config)
            return
        inner, capture = self._inner_config(config)
        source, value = chunks, None
        if self.chain is not None:
            value = await _amerged(chunks)
            source = self.chain.astream(value, inner)
        output = None
        async for chunk in source:
            yield chunk
            output = _merge(output, chunk)
        pending = self._prepare(config, value, output, capture)
        yield verdict_chunk(output, await self._acheck(pending, config), self.verdict_key)


def _with_given(
    kwargs: Mapping[str, Any], engine: TruthLens | None, chain: Runnable[Any, Any] | None
) -> dict[str, Any]:
    """``kwargs`` plus ``engine`` and ``chain`` where given (``None``: not given)."""
    given = dict(kwargs)
    if engine is not None:
        given["engine"] = engine
    if chain is not None:
        given["chain"] = chain
    return given


def _engine_kwargs(kwargs: Mapping[str, Any], config: object, where: str) -> dict[str, Any]:
    """The runnable's own keyword arguments, with the engine built from the rest.

    Engine options and policy knobs build an engine from ``config`` or, with
    ``engine=`` given, a copy of that engine with them applied; nothing is ignored.
    """
    own = [k for k in TruthLensRunnable.model_fields if k not in POLICY_KNOB_NAMES]
    split = split_options(kwargs, own=own, where=where)
    rest = dict(split.rest)
    rest.update(split.knobs.model_dump(exclude_none=True))
    if split.engine or split.knobs.given or config is not None or "engine" in rest:
        rest["engine"] = engine_from(rest.get("engine"), config, split, where)
    return rest


def guard_chain(
    chain: Runnable[Any, Any],
    *,
    engine: TruthLens | None = None,
    **kwargs: Unpack[RunnableKwargs],
) -> TruthLensRunnable:
    """Wrap a chain or agent so that its output is guarded.

    Args:
        chain: The chain or agent to run.
        engine: The guard engine; ``None`` builds one from the default policy.
        **kwargs: Other :class:`TruthLensRunnable` arguments, typed by
            :class:`RunnableKwargs` (``llm``, ``mode``, ``threshold``, ``action``,
            engine options, ...); unknown ones raise :class:`UnknownArgumentError`.

    Returns:
        ``TruthLensRunnable(chain=chain, engine=engine, **kwargs)``.
    """
    return TruthLensRunnable(chain=chain, engine=engine, **kwargs)
