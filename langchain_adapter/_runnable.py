"""``TruthLensRunnable``: the guard as an LCEL runnable, in pipe form or wrapping a chain."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Unpack

from langchain_core.callbacks import adispatch_custom_event, dispatch_custom_event
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import ValidationError

from truthlens_integrations.core import InvalidArgumentError
from truthlens_integrations.core._adapter_api import POLICY_KNOB_NAMES, engine_from, split_options
from truthlens_integrations.core.engine import GuardKwargs, TruthLens
from truthlens_integrations.core.llm import BaseLLM
from truthlens_integrations.core.policy import PolicySource

from ._arguments import invalid_arguments
from ._batching import finish_batch, prepare_batch
from ._outputs import TRUTHLENS_EVENT
from ._runnable_guard import RunnableGuard
from ._streaming import StreamMode, check_passthrough, passthrough_problems

__all__ = ["RunnableKwargs", "TruthLensRunnable", "guard_chain"]


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


class TruthLensRunnable(RunnableGuard):
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

    # -- invoke -------------------------------------------------------------------------

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:  # noqa: A002
        """Guard one input (or run the wrapped chain and guard its output)."""
        return self._call_with_config(self._invoke, input, self._tagged(config), **kwargs)

    async def ainvoke(
        self,
        input: Any,  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async :meth:`invoke`: awaits the chain and the engine."""
        return await self._acall_with_config(self._ainvoke, input, self._tagged(config), **kwargs)

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
        parsed, items = prepare_batch(values, self._parse)
        verdicts = self.engine.guard_batch(items) if items else []
        outputs, events = finish_batch(parsed, verdicts, config, self._render)
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
        parsed, items = prepare_batch(values, self._parse)
        verdicts = await self.engine.aguard_batch(items) if items else []
        outputs, events = finish_batch(parsed, verdicts, config, self._render)
        for cfg, verdict in events:
            await adispatch_custom_event(TRUTHLENS_EVENT, verdict.to_dict(), config=cfg)
        return outputs

    def _batches_alone(self) -> bool:
        """Whether one detector pass can serve a batch (pipe form without mitigation)."""
        return self.chain is None and not self._mitigation({})

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
