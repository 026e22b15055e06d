"""``TruthLensMiddleware``: the guard as LangChain 1.x agent middleware (``create_agent``).

The agent's model node runs through :meth:`TruthLensMiddleware.wrap_model_call`. A
reply that calls tools passes untouched; a final answer (an ``AIMessage`` without tool
calls) is checked against the tool results of the current turn (and retrieved
documents the state holds), with the turn's human message as the question, before it
enters the agent state. So the verdict decides what the agent answers: the text is
annotated, refined or withheld before anyone downstream sees it.

Everything a run needs lives in the call's locals and the agent state; the middleware
object holds configuration only, so one agent serves concurrent runs.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.callbacks import adispatch_custom_event, dispatch_custom_event
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables.config import ensure_config, var_child_runnable_config
from langgraph.constants import TAG_NOSTREAM
from pydantic import ValidationError

from truthlens_integrations.core import ConfigError, LLMError
from truthlens_integrations.core.engine import (
    OnBlock,
    TruthLens,
    Verdict,
    engine_from,
    renamed_options,
    split_options,
)
from truthlens_integrations.core.llm import BaseLLM, ChatMessage, CompletionRequest, LLMResponse
from truthlens_integrations.core.llm import ensure_text as _ensure_text
from truthlens_integrations.core.policy import Policy, PolicySource

from ._arguments import check_choice, check_int
from ._inputs import dedupe, message_text, passages, tool_passages
from ._llm import as_llm
from ._outputs import TRUTHLENS_EVENT, with_verdict
from ._runnable import StreamMode, check_passthrough, passthrough_problems

__all__ = ["FEEDBACK_NAME", "UNCHECKED_TAG", "TruthLensMiddleware"]

#: ``name`` of the human messages the middleware sends back to the model when it
#: refines an answer; they do not start a new turn.
FEEDBACK_NAME = "truthlens"

#: Tag of model runs whose tokens are held back until the answer is checked, so
#: ``astream_events(..., exclude_tags=[UNCHECKED_TAG])`` hides their raw output too.
UNCHECKED_TAG = "truthlens:unchecked"

_Handler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
_AsyncHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
_Result = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]


@dataclass(frozen=True)
class _Turn:
    """The final answer of one model call and what it is checked against."""

    answer: AIMessage
    index: int  # position of the answer in the response's messages
    context: list[str]
    question: str | None


def _response(result: _Result) -> ModelResponse[Any]:
    if isinstance(result, AIMessage):
        return ModelResponse(result=[result])
    if isinstance(result, ExtendedModelResponse):
        return result.model_response
    return result


def _is_feedback(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and message.name == FEEDBACK_NAME


def _turn_start(messages: Sequence[BaseMessage]) -> int:
    """Index of the human message that opened the current turn (-1 when none)."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage) and not _is_feedback(messages[i]):
            return i
    return -1


def _state_documents(state: Mapping[str, Any], keys: Sequence[str]) -> list[str]:
    found: list[str] = []
    for key in keys:
        if state.get(key) is not None:
            found.extend(passages(state[key]))
    return found


#: The middleware's own argument names (for did-you-mean suggestions).
_OWN = (
    "engine",
    "max_iterations",
    "verification_llms",
    "judge_llm",
    "stream_mode",
    "document_keys",
)


def _with_max_iterations(policy: Policy, rounds: int) -> Policy:
    """``policy`` with ``rounds`` refinement rounds on every route (standard and premium)."""
    data = policy.model_dump(by_alias=True, exclude_unset=True)
    block = data.setdefault("hallucination", {})
    for mode in ("standard", "premium"):
        block.setdefault(mode, {})["max_iterations"] = rounds
    for decision in data.get("decisions", ()):
        for entry in decision.get("plugins", ()):
            entry.setdefault("configuration", {})["max_iterations"] = rounds
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"TruthLensMiddleware: max_iterations={rounds}: {exc}") from None


class _AgentModel(BaseLLM):
    """The agent's own model behind the core LLM protocol, for the refinement loops.

    A refinement prompt (flagged spans, evidence, instructions) goes back to the model
    as a human message at the end of the agent's conversation, through the same
    ``handler`` as the agent's call, so the model keeps its system prompt, tools and
    the turn's tool results. A reply that calls a tool instead of answering counts
    as a failed round (the loop keeps the best answer so far).
    """

    name = "langchain-agent"

    def __init__(
        self,
        request: ModelRequest[Any],
        handler: _Handler | None,
        ahandler: _AsyncHandler | None,
    ) -> None:
        self._request = request
        self._handler = handler
        self._ahandler = ahandler
        model = request.model
        self.model = str(getattr(model, "model_name", None) or model.get_name())

    def _ask(self, messages: list[ChatMessage]) -> ModelRequest[Any]:
        text = "\n\n".join(m.content for m in messages if m.role != "assistant")
        feedback = HumanMessage(content=text, name=FEEDBACK_NAME)
        history: list[AnyMessage] = [*self._request.messages, feedback]
        return self._request.override(messages=history)

    def _reply(self, result: _Result, started: float) -> LLMResponse:
        messages = _response(result).result
        answer = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if answer is None or answer.tool_calls:
            raise LLMError(f"model {self.model!r} called a tool instead of answering")
        return LLMResponse(
            text=_ensure_text(message_text(answer), model=self.model),
            model=self.model,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )

    def _complete(self, request: CompletionRequest) -> LLMResponse:
        # The agent's model settings apply, not the request's.
        if self._handler is None:
            raise LLMError("the agent runs asynchronously; use acomplete")
        started = time.perf_counter()
        return self._reply(self._handler(self._ask(request.messages)), started)

    async def _acomplete(self, request: CompletionRequest) -> LLMResponse:
        # The agent's model settings apply, not the request's.
        if self._ahandler is None:
            raise LLMError("the agent runs synchronously; use complete")
        started = time.perf_counter()
        return self._reply(await self._ahandler(self._ask(request.messages)), started)


class TruthLensMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Checks an agent's final answers against its tool results, and acts by policy.

    Add it to any LangChain 1.x agent::

        agent = create_agent(model, tools, middleware=[TruthLensMiddleware()])

    **What is checked**: each model reply without tool calls (the agent's final
    answer). The grounding is the content of the ``ToolMessage``s of the current turn
    (since the last human message; failed tool calls are not evidence) plus
    documents under ``document_keys`` of the agent state; the question is the turn's
    human message. An answer given without any grounding (no tool was called) takes
    the policy's "unverified factual" path: it is never reported as clean.

    **Actions** (the route's ``hallucination_action``): ``header`` puts the verdict
    (:meth:`Verdict.to_dict`) in the final message's ``response_metadata["truthlens"]``
    (it is there for every action); ``body`` appends the policy's warning to the text;
    ``block`` replaces the answer with ``blocked_message`` (``on_block="message"``, the
    default) or raises :class:`~truthlens_integrations.core.BlockedResponseError`
    (``on_block="raise"``), so the wrong text never becomes the agent's answer. The
    blocked text is withheld from the verdict too; the application reads it through
    the engine's ``audit_hook``.

    **Modes**: ``standard`` sends the answer back to the agent's own model (same
    conversation, tools and system prompt) with a message naming the flagged spans
    and the evidence, up to ``max_iterations`` rounds; the best answer is kept and
    every round is in the verdict's ``history``. ``premium`` cross-checks with
    ``verification_llms`` (other chat models) and ``judge_llm``.

    **Streaming**: when the policy can change or withhold text (``body`` / ``block``,
    a disclaimer, or a refinement mode), the model's tokens are held back
    (``stream_mode="verified"``): ``stream_mode="messages"`` delivers the checked
    answer as one message, and ``astream_events`` has no ``on_chat_model_stream``
    events for it (the raw model runs carry the tag :data:`UNCHECKED_TAG`). With a
    policy that leaves text alone, tokens stream as they come and the verdict
    follows in the final message's metadata. ``stream_mode="passthrough"`` insists
    on the latter and rejects a policy that changes text. Every check also
    dispatches a ``truthlens_detection`` custom event and writes
    ``{"truthlens": payload}`` to ``stream_mode="custom"``.

    Args:
        engine: The guard engine; ``None`` builds one with the default policy. With
            policy knobs or engine options it is copied with them applied (loaded
            models shared).
        max_iterations: Refinement rounds at most (standard and premium), every route.
        on_block: ``"message"`` (the engine's default) or ``"raise"``; an engine
            option, so ``None`` keeps the engine's.
        blocked_message: Text that replaces a blocked answer (engine option).
        verification_llms: Premium-mode verifiers (chat models or core LLMs);
            ``verification_models`` is its deprecated name.
        judge_llm: Premium-mode judge (the agent's model when ``None``);
            ``judge_model`` is its deprecated name.
        stream_mode: ``"verified"`` or ``"passthrough"``.
        document_keys: Agent-state keys holding retrieved documents to add to the
            grounding.
        **options: The policy knobs, on every route: ``mode`` (``lightweight``,
            ``standard`` or ``premium``), ``threshold`` (response score at or above
            which an answer is flagged), ``action`` (``header``, ``body``, ``block``
            or ``none`` for flagged answers); and engine options (``detector``,
            ``nli``, ``fact_checker``, ``metrics``, ``tracer``, ``domain_classifier``,
            ``expose_blocked_text``, ``align_quantities``, ``mitigation_options``,
            ``redact``, ``audit_hook``). Both are defined once, in
            ``core/engine/_options.py``.

    Raises:
        UnknownArgumentError: For an unknown keyword argument (with a suggestion).
        InvalidArgumentError: For an option of the wrong type.
        ConfigError: For a bad ``on_block`` / ``stream_mode``, or
            ``stream_mode="passthrough"`` with a policy that changes text.
    """

    def __init__(
        self,
        engine: TruthLens | None = None,
        *,
        max_iterations: int | None = None,
        on_block: OnBlock | None = None,
        blocked_message: str | None = None,
        verification_llms: Sequence[BaseChatModel | BaseLLM] = (),
        judge_llm: BaseChatModel | BaseLLM | None = None,
        stream_mode: StreamMode = "verified",
        document_keys: Sequence[str] = ("documents", "context"),
        **options: Any,
    ) -> None:
        where = "TruthLensMiddleware"
        options = renamed_options(options, where)
        verification_llms = options.pop("verification_llms", verification_llms)
        judge_llm = options.pop("judge_llm", judge_llm)
        # on_block and blocked_message are engine options: passed on only when given.
        block = {"on_block": on_block, "blocked_message": blocked_message}
        options.update({k: v for k, v in block.items() if v is not None})
        split = split_options(options, own=_OWN, where=where)
        check_choice("stream_mode", stream_mode, ("verified", "passthrough"))
        if max_iterations is not None:
            check_int("max_iterations", max_iterations, where)
        built = engine_from(engine, None, split, where)
        if max_iterations is not None:
            built = built.derive(policy=_with_max_iterations(built.policy, max_iterations))
        self.engine = built
        self.verification_llms = list(verification_llms)
        self.judge_llm = judge_llm
        self.stream_mode: StreamMode = stream_mode
        self.document_keys = tuple(document_keys)
        problems = passthrough_problems(self.engine)
        if stream_mode == "passthrough":
            check_passthrough(problems)
        # Hold the tokens back only where the checked text may differ from them.
        self.holds_tokens = bool(problems)
        self._quiet_models: dict[int, tuple[BaseChatModel, BaseChatModel]] = {}

    @property
    def on_block(self) -> OnBlock:
        """What a blocked answer becomes (the engine's ``on_block``)."""
        return self.engine.on_block

    @property
    def blocked_message(self) -> str:
        """The text shown in place of a blocked answer (the engine's)."""
        return self.engine.blocked_message

    @property
    def verification_models(self) -> list[BaseChatModel | BaseLLM]:
        """Deprecated name of :attr:`verification_llms`."""
        return self.verification_llms

    @classmethod
    def from_config(
        cls, policy: PolicySource | Sequence[PolicySource] = None, **kwargs: Any
    ) -> TruthLensMiddleware:
        """Build the engine from a policy (file, YAML text, dict, list) and wrap it.

        Args:
            policy: Anything :func:`~truthlens_integrations.core.policy.load_policy`
                takes; ``None`` for the defaults.
            **kwargs: The other constructor arguments: policy knobs (``mode``,
                ``threshold``, ``action``, ``max_iterations``) override the file on
                every route; engine options (``detector``, ``redact``, ...) build the
                engine; unknown names raise ``UnknownArgumentError``.

        Returns:
            The middleware.

        Raises:
            ConfigError: If the policy is malformed, or ``engine`` is passed too.
        """
        if "engine" in kwargs:
            raise ConfigError("from_config builds the engine; pass engine= to the constructor")
        return cls(TruthLens.from_config(policy), **kwargs)

    # -- hooks ----------------------------------------------------------------------

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: _Handler
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Run the model; check a final answer before it enters the agent state."""
        request = self._quiet(request)
        with self._unchecked_runs():
            response = handler(request)
            turn = self._final_turn(request, response)
            if turn is None:
                return response
            verdict = self.engine.guard(**self._guard_kwargs(request, turn, handler, None))
        dispatch_custom_event(TRUTHLENS_EVENT, verdict.to_dict())
        return self._finish(request, response, turn, verdict)

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: _AsyncHandler
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Async :meth:`wrap_model_call`: awaits the model and the engine."""
        request = self._quiet(request)
        with self._unchecked_runs():
            response = await handler(request)
            turn = self._final_turn(request, response)
            if turn is None:
                return response
            verdict = await self.engine.aguard(**self._guard_kwargs(request, turn, None, handler))
        await adispatch_custom_event(TRUTHLENS_EVENT, verdict.to_dict())
        return self._finish(request, response, turn, verdict)

    # -- one implementation for both ------------------------------------------------

    def _quiet(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The request with token streaming off when the checked text may differ.

        ``nostream`` keeps LangGraph's ``messages`` stream from emitting the model's
        run (the node's checked output is emitted instead); ``disable_streaming``
        keeps the model from producing ``on_chat_model_stream`` events at all.
        """
        if not self.holds_tokens:
            return request
        return request.override(model=self._quiet_model(request.model))

    @contextmanager
    def _unchecked_runs(self) -> Iterator[None]:
        """Tag every run inside (the model, models it calls, refinement rounds) unchecked.

        The tags are inherited by child runs, so a model that calls another model
        (a router, a wrapper) does not leak its tokens to ``stream_mode="messages"``
        either. The verdict's event is dispatched outside, untagged.
        """
        if not self.holds_tokens:
            yield
            return
        config = ensure_config()
        tags = [*config.get("tags", []), TAG_NOSTREAM, UNCHECKED_TAG]
        token = var_child_runnable_config.set({**config, "tags": tags})
        try:
            yield
        finally:
            var_child_runnable_config.reset(token)

    def _quiet_model(self, model: BaseChatModel) -> BaseChatModel:
        """A copy of ``model`` that does not stream, made once per model.

        Kept because a fresh copy would serialize itself again for tracing on every
        call (LangChain caches that per model object); checked by identity so a
        replaced model gets its own copy.
        """
        cached = self._quiet_models.get(id(model))
        if cached is not None and cached[0] is model:
            return cached[1]
        tags = [*(model.tags or []), TAG_NOSTREAM, UNCHECKED_TAG]
        quiet = model.model_copy(update={"tags": tags, "disable_streaming": True})
        if len(self._quiet_models) >= 16:  # a bound, for agents that build models per call
            self._quiet_models.clear()
        self._quiet_models[id(model)] = (model, quiet)
        return quiet

    def _final_turn(self, request: ModelRequest[Any], response: ModelResponse[Any]) -> _Turn | None:
        """The reply's final answer with its grounding; ``None`` when it calls tools."""
        index = next(
            (i for i in range(len(response.result) - 1, -1, -1)
             if isinstance(response.result[i], AIMessage)),
            -1,
        )  # fmt: skip
        if index < 0:
            return None
        answer = response.result[index]
        assert isinstance(answer, AIMessage)
        if answer.tool_calls or not message_text(answer).strip():
            return None
        messages = request.messages
        start = _turn_start(messages)
        context: list[str] = []
        for message in messages[start + 1 :]:
            if isinstance(message, ToolMessage):
                context.extend(tool_passages(message))
        context.extend(_state_documents(request.state, self.document_keys))
        question = message_text(messages[start]) if start >= 0 else None
        return _Turn(answer, index, dedupe(context), question or None)

    def _guard_kwargs(
        self,
        request: ModelRequest[Any],
        turn: _Turn,
        handler: _Handler | None,
        ahandler: _AsyncHandler | None,
    ) -> dict[str, Any]:
        """The engine's arguments for one turn.

        The turn's answer is checked; the agent's own model refines it (standard and
        premium modes) and the premium verifiers cross-check it.
        """
        found: dict[str, Any] = {
            "context": turn.context,
            "question": turn.question,
            "answer": message_text(turn.answer),
            "llm": _AgentModel(request, handler, ahandler),
        }
        if self.verification_llms:
            found["verification_llms"] = [as_llm(m) for m in self.verification_llms]
        if self.judge_llm is not None:
            found["judge_llm"] = as_llm(self.judge_llm)
        return found

    def _finish(
        self,
        request: ModelRequest[Any],
        response: ModelResponse[Any],
        turn: _Turn,
        verdict: Verdict,
    ) -> ModelResponse[Any]:
        writer = getattr(request.runtime, "stream_writer", None)
        if callable(writer):
            writer({"truthlens": verdict.to_dict()})
        text = self.engine.shown(verdict)
        result = list(response.result)
        result[turn.index] = with_verdict(turn.answer, text, verdict)
        return ModelResponse(result=result, structured_response=response.structured_response)
