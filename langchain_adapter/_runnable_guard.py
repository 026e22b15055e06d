"""The machinery under ``TruthLensRunnable``: its fields, reading inputs, guarding, rendering.

:class:`TruthLensRunnable` adds LangChain's entry points (invoke, batch, stream) on top;
this base holds what one guarded run does, whichever entry point started it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import ensure_config
from pydantic import ConfigDict, Field

from truthlens_integrations.core import BlockedResponseError
from truthlens_integrations.core._adapter_api import (
    EngineBlocking,
    GuardCall,
    GuardTools,
    arun_guard,
    run_guard,
    verdict_of,
)
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.llm import BaseLLM
from truthlens_integrations.core.policy import Action, Mode

from ._capture import GroundingCapture
from ._chain_tools import as_retriever, find_chat_model, requery_answerer, with_capture
from ._inputs import ParsedInput, dedupe, parse_input, question_of
from ._llm import as_llm
from ._outputs import GUARD_TAG, TRUTHLENS_EVENT, render, verdict_chunk
from ._streaming import StreamMode, amerged, hide_streaming, merge, passthrough_problems

__all__ = ["RunnableGuard"]

_NO_INPUT: Any = object()


@dataclasses.dataclass(frozen=True)
class _Pending:
    """One guard call, ready to run: the parsed input and the engine's typed call."""

    parsed: ParsedInput
    call: GuardCall


class RunnableGuard(EngineBlocking, RunnableSerializable[Any, Any]):
    """The fields and the guarded run of :class:`TruthLensRunnable` (documented there)."""

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
            found["retriever"] = as_retriever(self.retriever, config)
        if self.chain is not None and self.requery_chain and chain_input is not _NO_INPUT:
            found["answerer"] = requery_answerer(
                self.chain,
                chain_input,
                config,
                read_output=self._parse_output,
                question_key=self.question_key,
            )
        return found

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
        return with_capture(self._hidden(config))

    def _invoke(
        self, value: Any, run_manager: CallbackManagerForChainRun, config: RunnableConfig
    ) -> Any:
        del run_manager  # the child config carries the callbacks
        inner, capture = self._inner_config(config)
        output = value if self.chain is None else self.chain.invoke(value, inner)
        pending = self._prepare(config, value, output, capture)
        return self._render(pending.parsed, self._check(pending, config))

    async def _ainvoke(
        self, value: Any, run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig
    ) -> Any:
        del run_manager  # the child config carries the callbacks
        inner, capture = self._inner_config(config)
        output = value if self.chain is None else await self.chain.ainvoke(value, inner)
        pending = self._prepare(config, value, output, capture)
        return self._render(pending.parsed, await self._acheck(pending, config))

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
            yield self._invoke(functools.reduce(merge, chunks, None), run_manager, config)
            return
        inner, capture = self._inner_config(config)
        source, value = chunks, None
        if self.chain is not None:
            value = functools.reduce(merge, chunks, None)
            source = self.chain.stream(value, inner)
        output = None
        for chunk in source:
            yield chunk
            output = merge(output, chunk)
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
            yield await self._ainvoke(await amerged(chunks), run_manager, config)
            return
        inner, capture = self._inner_config(config)
        source, value = chunks, None
        if self.chain is not None:
            value = await amerged(chunks)
            source = self.chain.astream(value, inner)
        output = None
        async for chunk in source:
            yield chunk
            output = merge(output, chunk)
        pending = self._prepare(config, value, output, capture)
        yield verdict_chunk(output, await self._acheck(pending, config), self.verdict_key)
