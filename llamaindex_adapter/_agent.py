"""``TruthLensFunctionAgent``: a LlamaIndex ``FunctionAgent`` whose final answers are checked.

The agent's final ``AgentOutput`` (a reply without tool calls) is checked against the
outputs of the tool calls of the run (``ToolCallResult``s, in an ``AgentWorkflow``
those of every agent of the run) with the user's message as the question, before the
workflow finalizes it. The policy's action applies to the text; standard mode
refines through the agent's own LLM (same tools, same conversation, the flagged
spans and the evidence named); premium mode cross-checks with other LLMs. Every
check streams a :class:`TruthLensAgentEvent` with the workflow's events and
dispatches the adapter's instrumentation events.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypedDict, Unpack

from llama_index.core import llms as li_llms
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.agent.workflow.prompts import DEFAULT_EARLY_STOPPING_PROMPT
from llama_index.core.agent.workflow.workflow_events import (
    AgentOutput,
    AgentStream,
    ToolCallResult,
)
from llama_index.core.base.llms.types import ChatMessage as LIChatMessage
from llama_index.core.base.llms.types import ChatResponse, MessageRole
from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr
from llama_index.core.memory import BaseMemory
from llama_index.core.objects import ObjectRetriever
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.tools import AsyncBaseTool, BaseTool
from llama_index.core.workflow import Context, Event, StopEvent
from workflows.resource import ResourceManager

from truthlens_integrations.core import (
    ConfigError,
    LLMError,
)
from truthlens_integrations.core._adapter_api import EngineBlocking, ensure_text
from truthlens_integrations.core.engine import GuardKwargs, TruthLens
from truthlens_integrations.core.llm import BaseLLM, ChatMessage, CompletionRequest, LLMResponse

from ._common import build_engine, verdict_payload
from ._events import dispatch_start, dispatch_verdict
from ._llm import LlamaIndexLLM

__all__ = [
    "FEEDBACK_KEY",
    "FunctionAgentKwargs",
    "TruthLensAgentEvent",
    "TruthLensAgentKwargs",
    "TruthLensFunctionAgent",
    "tool_outputs",
]

#: ``additional_kwargs`` key marking the feedback messages the guard sends to the LLM.
FEEDBACK_KEY = "truthlens_feedback"

_TEXT_CHANGING = frozenset({"body", "block"})


class TruthLensAgentEvent(Event):
    """Written to the workflow's event stream after each checked answer.

    Attributes:
        agent_name: The agent whose answer was checked.
        verdict: The verdict, as :meth:`Verdict.to_dict` (a blocked answer's text
            withheld).
        response: The text the agent answers with after the policy's action.
    """

    agent_name: str
    verdict: dict[str, Any]
    response: str


def tool_outputs(results: Sequence[ToolCallResult]) -> list[str]:
    """Grounding passages from a run's tool calls (failed calls are not evidence).

    Args:
        results: The ``ToolCallResult`` events of the run.

    Returns:
        The non-blank tool outputs, in call order, exact repeats dropped.
    """
    seen: set[str] = set()
    passages: list[str] = []
    for result in results:
        output = result.tool_output
        if output.is_error:
            continue
        text = str(output.content or "")
        if text.strip() and text not in seen:
            seen.add(text)
            passages.append(text)
    return passages


def _text_changing(engine: TruthLens) -> bool:
    """Whether the policy may change or withhold an answer's text (any route)."""
    policy = engine.policy
    for name in [None, *(d.name for d in policy.decisions)]:
        s = policy.settings_for(name)
        if not s.enabled:
            continue
        if (
            s.hallucination_action in _TEXT_CHANGING
            or s.unverified_factual_action in _TEXT_CHANGING
            or s.require_disclaimer
            or s.mode != "lightweight"
        ):
            return True
    return False


class _AgentLLM(BaseLLM):
    """The agent's LLM, in the agent's conversation, for the refinement loops.

    The refinement prompt (spans, evidence, instructions) is sent as a user message
    after the run's tool calls and results, with the agent's tools available; a
    reply that calls a tool instead of answering counts as a failed round.
    """

    name = "llamaindex-agent"

    def __init__(
        self, agent: TruthLensFunctionAgent, history: list[LIChatMessage], tools: Sequence[Any]
    ) -> None:
        self._agent = agent
        self._history = history
        self._tools = tools
        self.model = LlamaIndexLLM(agent.llm).model

    def _messages(self, messages: list[ChatMessage]) -> list[LIChatMessage]:
        text = "\n\n".join(m.content for m in messages if m.role != "assistant")
        feedback = LIChatMessage(
            role=MessageRole.USER, content=text, additional_kwargs={FEEDBACK_KEY: True}
        )
        return [*self._history, feedback]

    def _reply(self, response: ChatResponse, started: float) -> LLMResponse:
        llm = self._agent.llm
        calls = llm.get_tool_calls_from_response(  # type: ignore[attr-defined]
            response, error_on_no_tool_call=False
        )
        if calls:
            raise LLMError(f"model {self.model!r} called a tool instead of answering")
        return LLMResponse(
            text=ensure_text(response.message.content, model=self.model),
            model=self.model,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )

    def _complete(self, request: CompletionRequest) -> LLMResponse:
        # The agent's LLM settings apply, not the request's.
        started = time.perf_counter()
        response = self._agent.llm.chat_with_tools(  # type: ignore[attr-defined]
            tools=list(self._tools), chat_history=self._messages(request.messages)
        )
        return self._reply(response, started)

    async def _acomplete(self, request: CompletionRequest) -> LLMResponse:
        # The agent's LLM settings apply, not the request's.
        started = time.perf_counter()
        response = await self._agent.llm.achat_with_tools(  # type: ignore[attr-defined]
            tools=list(self._tools), chat_history=self._messages(request.messages)
        )
        return self._reply(response, started)


def _replaced(output: AgentOutput, message: LIChatMessage, answer: str) -> AgentOutput:
    """``output`` answering with the checked ``message`` instead of ``answer``."""
    update: dict[str, Any] = {"response": message}
    if message.content != answer:
        # The provider's payload holds the answer the policy changed or withheld (and
        # the streamed AgentOutput is this object): it no longer describes what is
        # shown. The original stays in the verdict for the application.
        update["raw"] = None
    return output.model_copy(update=update)


AgentStreamMode = Literal["verified", "passthrough"]


class FunctionAgentKwargs(TypedDict, total=False):
    """LlamaIndex's ``FunctionAgent`` arguments, typed: the agent's fields and the workflow's.

    ``BaseWorkflowAgent.__init__`` takes the rest as ``**kwargs: Any``; this names
    every one (llama-index-core 0.14) so that type checkers see
    :class:`TruthLensFunctionAgent`'s whole signature. A test pins the keys to
    ``FunctionAgent.model_fields`` and the workflow arguments.
    """

    name: str
    description: str
    system_prompt: str | None
    tools: Sequence[BaseTool | Callable[..., Any]] | None
    tool_retriever: ObjectRetriever[Any] | None
    can_handoff_to: Sequence[str] | None
    llm: li_llms.LLM | None
    initial_state: dict[str, Any] | None
    state_prompt: str | BasePromptTemplate | None
    output_cls: type[BaseModel] | None
    structured_output_fn: Callable[[list[LIChatMessage]], Any] | None
    streaming: bool
    early_stopping_method: Literal["force", "generate"]
    scratchpad_key: str
    initial_tool_choice: str | None
    allow_parallel_tool_calls: bool
    timeout: float | None
    verbose: bool
    resource_manager: ResourceManager | None
    num_concurrent_runs: int | None


class TruthLensAgentKwargs(FunctionAgentKwargs, GuardKwargs, total=False):
    """The keyword arguments of :class:`TruthLensFunctionAgent` besides ``engine``, typed.

    The ``FunctionAgent`` arguments, every engine option and policy knob
    (:class:`~truthlens_integrations.core.engine.GuardKwargs`), and the agent's own
    fields (described on :class:`TruthLensFunctionAgent`).
    """

    verification_llms: Sequence[li_llms.LLM]
    judge_llm: li_llms.LLM | None
    stream_mode: AgentStreamMode


_OWN_OPTIONS = (
    "engine",
    "verification_llms",
    "judge_llm",
    "stream_mode",
)


class TruthLensFunctionAgent(EngineBlocking, FunctionAgent):
    """A ``FunctionAgent`` that checks its final answers against its tool outputs.

    Use it wherever a ``FunctionAgent`` goes, alone or inside an ``AgentWorkflow``::

        agent = TruthLensFunctionAgent(tools=[lookup], llm=llm, engine=TruthLens.from_config())
        output = await agent.run(user_msg="When was the Eiffel Tower built?")
        output.response.additional_kwargs["truthlens"]   # the verdict

    The final answer's text follows the policy's action (the warning for ``body``,
    ``blocked_message`` or :class:`BlockedResponseError` for ``block``); the verdict,
    as :meth:`Verdict.to_dict`, is in ``response.additional_kwargs["truthlens"]`` and
    in :class:`TruthLensAgentEvent`. A blocked answer's text is withheld from both;
    the application reads it through the engine's ``audit_hook``. The agent's memory
    receives the checked text, not the unchecked one. When the policy changes or
    withholds the text, ``output.raw`` (the provider's payload, also in the streamed
    ``AgentOutput`` event) is ``None``: it held the original answer. An answer given
    without calling a tool has no grounding and takes the policy's "unverified
    factual" path. The answer the agent generates when it reaches ``max_iterations``
    with ``early_stopping_method="generate"`` is checked the same way. An
    ``AgentWorkflow`` built with ``early_stopping_method="generate"`` generates that
    answer itself, outside every agent, so it is not checked: keep the workflow's
    default (``"force"``) around a guarded agent.

    **Streaming**: when the policy can change or withhold text,
    ``stream_mode="verified"`` (the default) asks the LLM without streaming, so no
    ``AgentStream`` delta of an unchecked answer is written; the checked answer then
    comes as one ``AgentStream`` event. ``stream_mode="passthrough"`` keeps the
    LLM's deltas and needs a policy that leaves text alone.

    Besides the ``FunctionAgent`` arguments it takes policy knobs (``mode``,
    ``threshold``, ``action``) and engine options (``on_block``, ``blocked_message``,
    ``detector``, ``redact``, ...;
    one definition in ``core/engine/_options.py``): with ``engine=`` they apply to a
    copy of it (loaded models shared). All are typed by :class:`TruthLensAgentKwargs`.
    An unknown argument raises ``UnknownArgumentError`` with a suggestion.

    Attributes:
        engine: The guard engine (default policy when not given).
        verification_llms: Premium-mode verifiers (LlamaIndex LLMs).
        judge_llm: Premium-mode judge; the agent's LLM when ``None``.
        stream_mode: ``"verified"`` or ``"passthrough"``.
    """

    engine: TruthLens = Field(default_factory=TruthLens.from_config, exclude=True)
    verification_llms: list[li_llms.LLM] = Field(default_factory=list, exclude=True)
    judge_llm: li_llms.LLM | None = Field(default=None, exclude=True)
    stream_mode: AgentStreamMode = "verified"

    _holds_tokens: bool | None = PrivateAttr(default=None)
    _holds_for: TruthLens | None = PrivateAttr(default=None)

    def __init__(
        self, *, engine: TruthLens | None = None, **kwargs: Unpack[TruthLensAgentKwargs]
    ) -> None:
        from llama_index.core.agent.workflow.base_agent import WORKFLOW_KWARGS

        where = "TruthLensFunctionAgent"
        agent_args = set(FunctionAgent.model_fields) | set(_OWN_OPTIONS) | set(WORKFLOW_KWARGS)
        agent_args |= {"timeout", "verbose"}
        given: dict[str, Any] = dict(kwargs)
        # Everything else is an engine option or a policy knob (or unknown: rejected).
        options = {k: given.pop(k) for k in list(given) if k not in agent_args}
        given["engine"] = build_engine(engine, None, options, where=where, own=sorted(agent_args))
        super().__init__(**given)
        if self.stream_mode == "passthrough" and _text_changing(self.engine):
            raise ConfigError(
                "stream_mode='passthrough' streams the answer before it is checked, so the "
                "policy must not change or withhold text (actions header/none, lightweight "
                "mode, no disclaimer)"
            )

    @property
    def holds_tokens(self) -> bool:
        """Whether the LLM's deltas are held back until the answer is checked."""
        # Worked out once: the policy walk costs more than the rest of a step.
        if self._holds_tokens is None or self._holds_for is not self.engine:
            self._holds_for = self.engine
            self._holds_tokens = self.stream_mode == "verified" and _text_changing(self.engine)
        return self._holds_tokens

    async def _get_streaming_response(
        self, ctx: Any, current_llm_input: list[LIChatMessage], tools: Sequence[AsyncBaseTool]
    ) -> ChatResponse:
        if self.holds_tokens:
            # No deltas: the answer may still be changed or withheld.
            return await self._get_response(current_llm_input, tools)
        return await super()._get_streaming_response(ctx, current_llm_input, tools)

    async def take_step(
        self,
        ctx: Any,
        llm_input: list[LIChatMessage],
        tools: Sequence[AsyncBaseTool],
        memory: BaseMemory,
    ) -> AgentOutput:
        """Take a step; a final answer is checked (and maybe refined) before it returns."""
        output = await super().take_step(ctx, llm_input, tools, memory)
        if output.tool_calls or not (output.response.content or "").strip():
            return output
        answer = output.response.content or ""
        scratchpad: list[LIChatMessage] = await ctx.store.get(self.scratchpad_key, default=[])
        history = [*llm_input, *scratchpad[:-1]]  # the conversation before the answer
        message = await self._checked(ctx, answer, history, tools)
        # The memory gets the checked text, never the unchecked one.
        await ctx.store.set(self.scratchpad_key, [*scratchpad[:-1], message])
        return _replaced(output, message, answer)

    async def _generate_early_stopping_response(
        self, ctx: Context, max_iterations: int
    ) -> StopEvent:
        """The answer asked for at ``max_iterations`` (``early_stopping_method="generate"``).

        LlamaIndex generates it outside :meth:`take_step`, so it is checked here like
        any final answer: not streamed while the policy may change or withhold it, and
        the memory, the streamed ``AgentOutput`` and the result get the checked text.
        """
        memory: BaseMemory = await ctx.store.get("memory")
        llm_input = [*await memory.aget()]
        if self.system_prompt:
            llm_input = [
                LIChatMessage(role=MessageRole.SYSTEM, content=self.system_prompt),
                *llm_input,
            ]
        stop = DEFAULT_EARLY_STOPPING_PROMPT.format(max_iterations=max_iterations)
        llm_input.append(LIChatMessage(role=MessageRole.SYSTEM, content=stop))
        if self.holds_tokens:
            response = await self.llm.achat(llm_input)
        else:
            response = await self._get_llm_response(ctx, llm_input)
        answer = response.message.content or ""
        message = response.message
        if answer.strip():
            message = await self._checked(ctx, answer, llm_input, [])
        await memory.aput(message)
        output = AgentOutput(
            response=response.message, raw=response.raw, current_agent_name=self.name
        )
        output = _replaced(output, message, answer)
        results: list[ToolCallResult] = await ctx.store.get("current_tool_calls", default=[])
        output.tool_calls.extend(results)  # type: ignore[arg-type]
        await ctx.store.set("current_tool_calls", [])
        ctx.write_event_to_stream(output)
        return StopEvent(result=output)

    async def _checked(
        self,
        ctx: Context,
        answer: str,
        history: list[LIChatMessage],
        tools: Sequence[AsyncBaseTool],
    ) -> LIChatMessage:
        """Check a final answer against the run's tool outputs; the message to keep."""
        results: list[ToolCallResult] = await ctx.store.get("current_tool_calls", default=[])
        context = tool_outputs(results)
        question = await ctx.store.get("user_msg_str", default=None)
        dispatch_start(self.engine, query=question, answer=answer, num_passages=len(context))
        verdict = await self.engine.aguard(
            context=context,
            question=question or None,
            answer=answer,
            **self._mitigation(history, tools),
        )
        dispatch_verdict(verdict)
        text = self.engine.shown(verdict)
        payload = verdict_payload(verdict)
        self._stream(ctx, payload, text)
        return LIChatMessage(
            role=MessageRole.ASSISTANT,
            content=text,
            additional_kwargs={"truthlens": payload},
        )

    def _mitigation(self, history: list[LIChatMessage], tools: Sequence[Any]) -> dict[str, Any]:
        """The guard's tools: the agent's LLM refines; premium verifiers and judge check."""
        judge = self.judge_llm
        return {
            "llm": _AgentLLM(self, history, tools),
            "verification_llms": [LlamaIndexLLM(m) for m in self.verification_llms] or None,
            "judge_llm": None if judge is None else LlamaIndexLLM(judge),
        }

    def _stream(self, ctx: Context, payload: dict[str, Any], text: str) -> None:
        if self.holds_tokens and self.streaming:
            # The deltas were held back: the checked answer comes as one delta.
            ctx.write_event_to_stream(
                AgentStream(delta=text, response=text, current_agent_name=self.name, raw=None)
            )
        ctx.write_event_to_stream(
            TruthLensAgentEvent(agent_name=self.name, verdict=payload, response=text)
        )
