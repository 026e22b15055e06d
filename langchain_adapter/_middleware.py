"""``TruthLensMiddleware``: the guard as LangChain 1.x agent middleware (``create_agent``).

The agent's model node runs through :meth:`TruthLensMiddleware.wrap_model_call`. A
reply that only calls tools passes untouched; every reply with text (a final answer,
text beside tool calls, a ``ToolStrategy`` structured answer) is checked against the
tool results of the current turn that answer this run's tool calls (and retrieved
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
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, Unpack

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.callbacks import adispatch_custom_event, dispatch_custom_event
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables.config import ensure_config, var_child_runnable_config
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime
from langgraph.types import Command

from truthlens_integrations.core import ConfigError, LLMError
from truthlens_integrations.core._adapter_api import (
    EngineBlocking,
    GuardCall,
    GuardTools,
    arun_guard,
    engine_from,
    run_guard,
    split_options,
)
from truthlens_integrations.core._adapter_api import ensure_text as _ensure_text
from truthlens_integrations.core.engine import GuardKwargs, TruthLens, Verdict
from truthlens_integrations.core.llm import BaseLLM, ChatMessage, CompletionRequest, LLMResponse
from truthlens_integrations.core.policy import PolicySource

from ._arguments import check_choice
from ._events import UNCHECKED_TAG
from ._inputs import (
    answered_tool_messages,
    dedupe,
    message_text,
    passages,
    structured_text,
    tool_passages,
)
from ._llm import as_llm
from ._outputs import SAFE_PROVIDER_METADATA, TRUTHLENS_EVENT, with_verdict
from ._streaming import StreamMode, check_passthrough, hide_streaming, passthrough_problems

__all__ = ["FEEDBACK_NAME", "UNCHECKED_TAG", "TruthLensMiddleware"]

#: ``name`` of the human messages the middleware sends back to the model when it
#: refines an answer; they do not start a new turn.
FEEDBACK_NAME = "truthlens"


_Handler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
_AsyncHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
_Result = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]

#: Private agent-state key: the ids of the tool calls this run's model made. Only a
#: ``ToolMessage`` answering one of them is a tool result; anything else in the state
#: (a ``ToolMessage`` the caller put in the input, with or without a forged
#: ``AIMessage`` calling it) is not evidence. Private: the input cannot set it.
TOOL_CALLS_KEY = "truthlens_tool_calls"

#: What a checked reply is: the final answer, text written beside tool calls, or a
#: structured answer (``response_format=ToolStrategy(...)``).
_Kind = Literal["final", "preamble", "structured"]


class _State(AgentState[Any]):
    """The agent state with the middleware's private key (see :data:`TOOL_CALLS_KEY`)."""

    truthlens_tool_calls: NotRequired[Annotated[list[str], PrivateStateAttr]]


@dataclass(frozen=True)
class _Turn:
    """A reply of one model call to check, and what it is checked against."""

    answer: AIMessage
    index: int  # position of the answer in the response's messages
    context: list[str]
    question: str | None
    kind: _Kind = "final"
    text: str = ""  # what is checked: the message's text, plus the structured answer


@dataclass
class _Structured:
    """Structured answers the agent's model gave in refinement rounds, by their text."""

    responses: dict[str, ModelResponse[Any]] = field(default_factory=dict)


def _response(result: _Result) -> ModelResponse[Any]:
    if isinstance(result, AIMessage):
        return ModelResponse(result=[result])
    if isinstance(result, ExtendedModelResponse):
        return result.model_response
    return result


def _turn_answer(response: ModelResponse[Any]) -> tuple[int, AIMessage] | None:
    """The last ``AIMessage`` of a response, with its position."""
    for i in range(len(response.result) - 1, -1, -1):
        message = response.result[i]
        if isinstance(message, AIMessage):
            return i, message
    return None


def _is_feedback(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and message.name == FEEDBACK_NAME


def _turn_start(messages: Sequence[BaseMessage]) -> int:
    """Index of the human message that opened the current turn (-1 when none)."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage) and not _is_feedback(messages[i]):
            return i
    return -1


def _answered_in(messages: Sequence[BaseMessage]) -> set[str]:
    """Ids of the tool calls a model response answers itself (structured output)."""
    return {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}


def _new_tool_calls(response: ModelResponse[Any]) -> list[str]:
    """Ids of the tool calls a reply makes for the agent's tools to answer.

    Calls the response answers itself (``ToolStrategy``'s structured-output call and
    its ``ToolMessage``) are left out: they are the answer, not a tool's result.
    """
    answered = _answered_in(response.result)
    return [
        i
        for m in response.result
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if (i := c.get("id")) is not None and i not in answered
    ]


def _recorded_calls(request: ModelRequest[Any]) -> list[str]:
    """The tool calls this run's model made so far (the private state key)."""
    found = request.state.get(TOOL_CALLS_KEY)
    return [i for i in found if isinstance(i, str)] if isinstance(found, list) else []


def _state_documents(state: Mapping[str, Any], keys: Sequence[str]) -> list[str]:
    found: list[str] = []
    for key in keys:
        if state.get(key) is not None:
            found.extend(passages(state[key]))
    return found


#: The middleware's own argument names (for did-you-mean suggestions).
_OWN = (
    "engine",
    "verification_llms",
    "judge_llm",
    "stream_mode",
    "document_keys",
)


def _checked_text(answer: AIMessage, messages: Sequence[BaseMessage]) -> str:
    """The text checked for a structured answer: the message's text, then its fields.

    The structured-output call is the one the response answers itself; its arguments
    (the schema's fields) become ``key: value`` lines, which the detector reads as
    claims like any sentence.
    """
    answered = _answered_in(messages)
    parts = [message_text(answer)]
    parts += [structured_text(c["args"]) for c in answer.tool_calls if c.get("id") in answered]
    return "\n".join(p for p in parts if p.strip())


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
        self.structured = _Structured()
        model = request.model
        self.model = str(getattr(model, "model_name", None) or model.get_name())

    def _ask(self, messages: list[ChatMessage]) -> ModelRequest[Any]:
        text = "\n\n".join(m.content for m in messages if m.role != "assistant")
        feedback = HumanMessage(content=text, name=FEEDBACK_NAME)
        history: list[AnyMessage] = [*self._request.messages, feedback]
        return self._request.override(messages=history)

    def _reply(self, result: _Result, started: float) -> LLMResponse:
        response = _response(result)
        messages = response.result
        answer = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if answer is not None and response.structured_response is not None:
            # A structured answer (ToolStrategy): its text is checked; kept by text so
            # the one the loop keeps replaces the original structured response.
            text = _checked_text(answer, messages)
            self.structured.responses[text] = response
        elif answer is None or answer.tool_calls:
            raise LLMError(f"model {self.model!r} called a tool instead of answering")
        else:
            text = message_text(answer)
        return LLMResponse(
            text=_ensure_text(text, model=self.model),
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


class TruthLensMiddleware(EngineBlocking, AgentMiddleware[_State, Any, Any]):
    """Checks an agent's final answers against its tool results, and acts by policy.

    Add it to any LangChain 1.x agent::

        agent = create_agent(model, tools, middleware=[TruthLensMiddleware()])

    **What is checked**: every model reply with text, before it enters the agent
    state: the final answer (no tool calls), the text a model writes beside tool
    calls, and a structured answer (``response_format=ToolStrategy(Schema)``: the
    schema's fields as ``key: value`` lines, with any text of the reply). The
    grounding is the content of the ``ToolMessage``s of the current turn (since the
    last human message) that answer a tool call made by this run's model (recorded in
    a private state key the input cannot set; failed tool calls are not evidence),
    plus documents under ``document_keys`` of the agent state; the question is the
    turn's human message. A ``ToolMessage`` the caller put in the input state is not
    evidence, whichever ``AIMessage`` it claims to answer. A reply checked without any
    grounding (no tool was called yet) takes the policy's "unverified factual" path:
    it is never reported as clean. Text beside tool calls is checked without
    refinement (the route's action applies; the tool calls go on).

    **Actions** (the route's ``hallucination_action``): ``header`` puts the verdict
    (:meth:`Verdict.to_dict`) in the final message's ``response_metadata["truthlens"]``
    (it is there for every action); ``body`` appends the policy's warning to the text;
    ``block`` replaces the answer with ``blocked_message`` (``on_block="message"``, the
    default) or raises :class:`~truthlens_integrations.core.BlockedResponseError`
    (``on_block="raise"``), so the wrong text never becomes the agent's answer. A
    blocked structured answer is withheld whole: ``structured_response`` is ``None``
    and the structured-output call and its ``ToolMessage`` are replaced by the blocked
    message. The blocked text is withheld from the verdict too; the application reads
    it through the engine's ``audit_hook``.

    **Modes**: ``standard`` sends the answer back to the agent's own model (same
    conversation, tools and system prompt) with a message naming the flagged spans
    and the evidence, up to ``max_iterations`` rounds; the best answer is kept and
    every round is in the verdict's ``history``. ``premium`` cross-checks with
    ``verification_llms`` (other chat models) and ``judge_llm``.

    **Streaming**: when the policy can change or withhold text (``body`` / ``block``,
    a disclaimer, or a refinement mode), the model's tokens are held back
    (``stream_mode="verified"``): ``stream_mode="messages"`` delivers the checked
    answer as one message, and the raw model runs are hidden from
    ``astream_events`` / ``astream_log`` (no ``on_chat_model_start`` /
    ``_stream`` / ``_end`` for them, with or without ``exclude_tags``; tracers still
    see them, tagged :data:`UNCHECKED_TAG`). The ``model`` node's events carry the
    checked reply. With a
    policy that leaves text alone, tokens stream as they come and the verdict
    follows in the final message's metadata. ``stream_mode="passthrough"`` insists
    on the latter and rejects a policy that changes text. Every check also
    dispatches a ``truthlens_detection`` custom event and writes
    ``{"truthlens": payload}`` to ``stream_mode="custom"``.

    Args:
        engine: The guard engine; ``None`` builds one with the default policy. With
            policy knobs or engine options it is copied with them applied (loaded
            models shared).
        verification_llms: Premium-mode verifiers (chat models or core LLMs).
        judge_llm: Premium-mode judge (the agent's model when ``None``).
        stream_mode: ``"verified"`` or ``"passthrough"``.
        document_keys: Agent-state keys holding retrieved documents to add to the
            grounding.
        **options: The policy knobs, on every route: ``mode`` (``lightweight``,
            ``standard`` or ``premium``), ``threshold`` (response score at or above
            which an answer is flagged), ``action`` (``header``, ``body``, ``block``
            or ``none`` for flagged answers), ``max_iterations`` (refinement rounds
            at most, standard and premium); and engine options (``on_block``:
            ``"message"``, the default, or ``"raise"``; ``blocked_message``,
            ``detector``, ``nli``, ``fact_checker``, ``metrics``, ``tracer``,
            ``domain_classifier``, ``expose_blocked_text``, ``align_quantities``,
            ``mitigation_options``, ``redact``, ``audit_hook``). Both are defined
            once, in ``core/engine/_options.py``, and typed by
            :class:`~truthlens_integrations.core.engine.GuardKwargs`; left out, they
            keep the engine's.

    Raises:
        UnknownArgumentError: For an unknown keyword argument (with a suggestion).
        InvalidArgumentError: For an option of the wrong type.
        ConfigError: For a bad ``on_block`` / ``stream_mode``, or
            ``stream_mode="passthrough"`` with a policy that changes text.
    """

    state_schema = _State

    def __init__(
        self,
        engine: TruthLens | None = None,
        *,
        verification_llms: Sequence[BaseChatModel | BaseLLM] = (),
        judge_llm: BaseChatModel | BaseLLM | None = None,
        stream_mode: StreamMode = "verified",
        document_keys: Sequence[str] = ("documents", "context"),
        **options: Unpack[GuardKwargs],
    ) -> None:
        where = "TruthLensMiddleware"
        split = split_options(options, own=_OWN, where=where)
        check_choice("stream_mode", stream_mode, ("verified", "passthrough"))
        self.engine = engine_from(engine, None, split, where)
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

    @classmethod
    def from_config(
        cls,
        policy: PolicySource | Sequence[PolicySource] = None,
        *,
        verification_llms: Sequence[BaseChatModel | BaseLLM] = (),
        judge_llm: BaseChatModel | BaseLLM | None = None,
        stream_mode: StreamMode = "verified",
        document_keys: Sequence[str] = ("documents", "context"),
        **options: Unpack[GuardKwargs],
    ) -> TruthLensMiddleware:
        """Build the engine from a policy (file, YAML text, dict, list) and wrap it.

        Args:
            policy: Anything :func:`~truthlens_integrations.core.policy.load_policy`
                takes; ``None`` for the defaults.
            verification_llms: As for the constructor.
            judge_llm: As for the constructor.
            stream_mode: As for the constructor.
            document_keys: As for the constructor.
            **options: Policy knobs (``mode``, ``threshold``, ``action``,
                ``max_iterations``) override
                the file on every route; engine options (``detector``, ``redact``,
                ...) build the engine; unknown names raise ``UnknownArgumentError``.

        Returns:
            The middleware.

        Raises:
            ConfigError: If the policy is malformed, or ``engine`` is passed too.
        """
        if "engine" in options:
            raise ConfigError("from_config builds the engine; pass engine= to the constructor")
        return cls(
            TruthLens.from_config(policy),
            verification_llms=verification_llms,
            judge_llm=judge_llm,
            stream_mode=stream_mode,
            document_keys=document_keys,
            **options,
        )

    # -- hooks ----------------------------------------------------------------------

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any]:
        """Start the run with no tool calls recorded (a thread's earlier runs do not count)."""
        del state, runtime
        return {TOOL_CALLS_KEY: []}

    async def abefore_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any]:
        """Async :meth:`before_agent`."""
        return self.before_agent(state, runtime)

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: _Handler
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Run the model; check its reply's text before it enters the agent state."""
        request = self._quiet(request)
        with self._unchecked_runs():
            response = handler(request)
            turn = self._turn(request, response)
            if turn is None:
                return self._recorded(request, response)
            llm = _AgentModel(request, handler if turn.kind != "preamble" else None, None)
            verdict = run_guard(self.engine, self._guard_call(turn, llm))
        dispatch_custom_event(TRUTHLENS_EVENT, verdict.to_dict())
        return self._recorded(request, self._finish(request, response, turn, verdict, llm))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: _AsyncHandler
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Async :meth:`wrap_model_call`: awaits the model and the engine."""
        request = self._quiet(request)
        with self._unchecked_runs():
            response = await handler(request)
            turn = self._turn(request, response)
            if turn is None:
                return self._recorded(request, response)
            llm = _AgentModel(request, None, handler if turn.kind != "preamble" else None)
            verdict = await arun_guard(self.engine, self._guard_call(turn, llm))
        await adispatch_custom_event(TRUTHLENS_EVENT, verdict.to_dict())
        return self._recorded(request, self._finish(request, response, turn, verdict, llm))

    # -- one implementation for both ------------------------------------------------

    def _quiet(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The request with the model's tokens held back when the checked text may differ.

        The model streams as it was built to (``ChatOpenAI(streaming=True)`` asks its
        server for a stream); its run is tagged ``nostream``, which keeps LangGraph's
        ``messages`` stream from emitting it (the node's checked output is emitted
        instead), and :meth:`_unchecked_runs` keeps its tokens out of
        ``astream_events`` / ``astream_log``.
        """
        if not self.holds_tokens:
            return request
        return request.override(model=self._quiet_model(request.model))

    @contextmanager
    def _unchecked_runs(self) -> Iterator[None]:
        """Hide every run inside (the model, models it calls, refinement rounds).

        The runs are tagged unchecked, and the handlers that feed
        ``astream_events`` / ``astream_log`` and LangGraph's ``messages`` stream are
        taken off their callbacks: their ``on_chat_model_start`` /
        ``on_chat_model_end`` events (which carry the unchecked answer) never reach
        those streams, with or without ``exclude_tags``. Tracers and other callbacks
        still see them. Child runs inherit both, so a model that calls another model
        (a router, a wrapper) does not leak either. The verdict's event is
        dispatched outside, visible.
        """
        if not self.holds_tokens:
            yield
            return
        config = hide_streaming(ensure_config())
        tags = [*config.get("tags", []), TAG_NOSTREAM, UNCHECKED_TAG]
        token = var_child_runnable_config.set({**config, "tags": tags})
        try:
            yield
        finally:
            var_child_runnable_config.reset(token)

    def _quiet_model(self, model: BaseChatModel) -> BaseChatModel:
        """A copy of ``model`` whose runs are tagged unchecked, made once per model.

        It still streams as the user built it (the tokens are held back by the tags and
        :meth:`_unchecked_runs`, not by turning the model's streaming off: that sent
        ``stream: false`` for a ``ChatOpenAI(streaming=True)``). Kept because a fresh
        copy would serialize itself again for tracing on every call (LangChain caches
        that per model object); checked by identity so a replaced model gets its own.
        """
        cached = self._quiet_models.get(id(model))
        if cached is not None and cached[0] is model:
            return cached[1]
        tags = [*(model.tags or []), TAG_NOSTREAM, UNCHECKED_TAG]
        quiet = model.model_copy(update={"tags": tags})
        if len(self._quiet_models) >= 16:  # a bound, for agents that build models per call
            self._quiet_models.clear()
        self._quiet_models[id(model)] = (model, quiet)
        return quiet

    def _turn(self, request: ModelRequest[Any], response: ModelResponse[Any]) -> _Turn | None:
        """The reply to check with its grounding; ``None`` when it has no text to check.

        A final answer, a structured answer (``ToolStrategy``), and text a model writes
        beside tool calls are all checked: each enters the agent state, where the
        caller reads it. A reply that only calls tools has nothing to check.
        """
        found = _turn_answer(response)
        if found is None:
            return None
        index, answer = found
        kind: _Kind = "final"
        if response.structured_response is not None:
            kind = "structured"
            text = _checked_text(answer, response.result)
        else:
            text = message_text(answer)
            if answer.tool_calls:
                kind = "preamble"
        if not text.strip():
            return None
        messages = request.messages
        start = _turn_start(messages)
        question = message_text(messages[start]) if start >= 0 else None
        context = self._grounding(request, messages[start + 1 :])
        return _Turn(answer, index, context, question or None, kind, text)

    def _grounding(self, request: ModelRequest[Any], turn: Sequence[BaseMessage]) -> list[str]:
        """The turn's tool results answering this run's model, and the state's documents.

        Only a ``ToolMessage`` answering a tool call that this run's model made
        (recorded in the private state key :data:`TOOL_CALLS_KEY`) is a tool result:
        one the caller put in the input state is not evidence, whichever
        ``AIMessage`` it claims to answer.
        """
        context: list[str] = []
        for message in answered_tool_messages(turn, made=set(_recorded_calls(request))):
            context.extend(tool_passages(message))
        context.extend(_state_documents(request.state, self.document_keys))
        return dedupe(context)

    def _recorded(
        self, request: ModelRequest[Any], response: ModelResponse[Any]
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """``response``, recording the tool calls it makes in the private state key."""
        new = _new_tool_calls(response)
        if not new:
            return response
        called = [*_recorded_calls(request), *new]
        return ExtendedModelResponse(
            model_response=response, command=Command(update={TOOL_CALLS_KEY: called})
        )

    def _guard_call(self, turn: _Turn, llm: _AgentModel) -> GuardCall:
        """The engine's call for one reply.

        The reply's text is checked; the agent's own model refines a final or
        structured answer (standard and premium modes) and the premium verifiers
        cross-check it. Text beside tool calls is checked without refinement (the
        model is about to see the tool results anyway): the route's action applies.
        """
        tools = GuardTools()
        if turn.kind != "preamble":
            tools["llm"] = llm
            if self.verification_llms:
                tools["verification_llms"] = [as_llm(m) for m in self.verification_llms]
            if self.judge_llm is not None:
                tools["judge_llm"] = as_llm(self.judge_llm)
        return GuardCall(
            context=turn.context, question=turn.question, answer=turn.text, tools=tools
        )

    def _finish(
        self,
        request: ModelRequest[Any],
        response: ModelResponse[Any],
        turn: _Turn,
        verdict: Verdict,
        llm: _AgentModel,
    ) -> ModelResponse[Any]:
        payload = verdict.to_dict()
        writer = getattr(request.runtime, "stream_writer", None)
        if callable(writer):
            writer({"truthlens": payload})
        text = self.engine.shown(verdict)
        if turn.kind == "structured":
            return self._finish_structured(response, turn, verdict, text, payload, llm)
        result = list(response.result)
        # with_verdict keeps the tool calls beside the text.
        result[turn.index] = with_verdict(turn.answer, text, verdict)
        return ModelResponse(result=result, structured_response=response.structured_response)

    def _finish_structured(
        self,
        response: ModelResponse[Any],
        turn: _Turn,
        verdict: Verdict,
        text: str,
        payload: dict[str, Any],
        llm: _AgentModel,
    ) -> ModelResponse[Any]:
        """A structured answer after the verdict.

        Blocked: the structured-output call, its ``ToolMessage`` and
        ``structured_response`` are all withheld; the reply becomes ``text`` (the
        blocked message) with no tool call, which ends the run. Refined: the
        structured answer the loop kept replaces the original. Otherwise the verdict
        rides in the reply's metadata, and an added warning in its text.
        """
        answer = turn.answer
        metadata = {**answer.response_metadata, "truthlens": payload}
        if verdict.blocked:
            # with_verdict drops the provider payloads that could carry the text.
            shown = with_verdict(AIMessage(content="", id=answer.id), text, verdict)
            shown.response_metadata.update(
                {k: v for k, v in answer.response_metadata.items() if k in SAFE_PROVIDER_METADATA}
            )
            kept = [m for m in response.result[: turn.index] if not isinstance(m, ToolMessage)]
            return ModelResponse(result=[*kept, shown], structured_response=None)
        final = verdict.final_answer
        if final is not None and final != turn.text and final in llm.structured.responses:
            response = llm.structured.responses[final]
            refined = _turn_answer(response)
            if refined is not None:
                turn = _Turn(refined[1], refined[0], turn.context, turn.question, turn.kind, final)
                answer = turn.answer
                metadata = {**answer.response_metadata, "truthlens": payload}
        update: dict[str, Any] = {"response_metadata": metadata}
        if text != turn.text:  # a warning added (body, disclaimer)
            update["content"] = text
        result = list(response.result)
        result[turn.index] = answer.model_copy(update=update)
        return ModelResponse(result=result, structured_response=response.structured_response)
