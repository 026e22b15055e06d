"""What one guard call is given besides the answer, defined once for ``guard`` and ``aguard``.

:class:`GuardTools` types the keyword arguments; :data:`GUARD_TOOLS` lists their
names; :func:`check_guard_tools` checks them at the call; :class:`ToolSet` is the
checked set the engine passes to the mitigation loops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack

from .._errors import InvalidArgumentError
from ..llm import LLM
from ..llm._coerce import LLMLike, to_llm
from ..mitigation import GroundedAnswerer, MitigationOptions, Retriever
from ._options import kind, reject_unknown

if TYPE_CHECKING:
    from ._verdict import Verdict

__all__ = [
    "ADAPTER_TOOLS",
    "GUARD_TOOLS",
    "GuardCall",
    "GuardTools",
    "ToolSet",
    "arun_guard",
    "check_guard_tools",
    "run_guard",
]


class GuardTools(TypedDict, total=False):
    """Keyword arguments of ``TruthLens.guard`` / ``aguard`` besides the input itself.

    Without ``llm`` (or ``answerer``) only the route's action applies (lightweight
    behaviour).

    An LLM here is a core :class:`~truthlens_integrations.core.llm.LLM`, a LangChain chat
    model or LLM, or a LlamaIndex LLM (wrapped by its adapter at the call).

    Attributes:
        llm: The model that refines, regenerates and (by default) judges.
        retriever: Enables the retrieval-feedback loop.
        answerer: Re-runs the caller's whole pipeline with a rewritten query
            (retrieval-feedback loop); an alternative to ``retriever`` + ``llm``.
        verification_llms: Premium verifiers; without them premium mode falls back
            to self-refine.
        judge_llm: Premium judge; ``llm`` when ``None``.
        mitigation_options: Loop tuning and prompt overrides for this call; ``None``
            uses the engine's ``mitigation_options``.
    """

    llm: LLMLike | None
    retriever: Retriever | None
    answerer: GroundedAnswerer | None
    verification_llms: Sequence[LLMLike] | None
    judge_llm: LLMLike | None
    mitigation_options: MitigationOptions | None


#: Keyword arguments of ``TruthLens.guard`` / ``aguard`` besides the input itself.
GUARD_TOOLS: tuple[str, ...] = tuple(GuardTools.__annotations__)

#: The guard-call tools every adapter accepts as a constructor argument. ``answerer``
#: is not among them: adapters build it from what they wrap (the chain, the inner
#: query engine); ``mitigation_options`` is an engine option.
ADAPTER_TOOLS: tuple[str, ...] = ("llm", "retriever", "verification_llms", "judge_llm")


@dataclass(frozen=True)
class ToolSet:
    """The caller's models for mitigation; none given means lightweight behaviour."""

    llm: LLM | None = None
    retriever: Retriever | None = None
    answerer: GroundedAnswerer | None = None
    verification_llms: Sequence[LLM] | None = None
    judge_llm: LLM | None = None
    mitigation_options: MitigationOptions | None = None

    @classmethod
    def of(cls, tools: GuardTools, where: str) -> ToolSet:
        """The checked tools of one call (see :func:`check_guard_tools`)."""
        reject_unknown(tools, GUARD_TOOLS, where)
        return cls(**check_guard_tools(tools, where=where))

    @property
    def given(self) -> bool:
        """Whether a model that can mitigate was given."""
        return self.llm is not None or self.answerer is not None


def _llm(value: object, what: str, problems: list[str]) -> LLM | None:
    """``value`` as a core LLM; a problem noted (and ``None``) when it is not one."""
    try:
        return to_llm(value, what=what)
    except InvalidArgumentError as exc:
        problems.append(str(exc))
        return None


def _llms(tools: Mapping[str, object], problems: list[str]) -> dict[str, Any]:
    """The call's LLMs as core LLMs (another framework's model wrapped by its adapter)."""
    found: dict[str, Any] = {}
    for name in ("llm", "judge_llm"):
        value = tools.get(name)
        if value is not None:
            found[name] = _llm(value, name, problems)
    verifiers = tools.get("verification_llms")
    if verifiers is None:
        return found
    if isinstance(verifiers, str) or not isinstance(verifiers, Sequence):
        problems.append(f"verification_llms must be a list of LLMs, got {kind(verifiers)}")
        return found
    found["verification_llms"] = [
        _llm(v, f"verification_llms[{i}]", problems) for i, v in enumerate(verifiers)
    ]
    return found


def check_guard_tools(
    tools: Mapping[str, object], *, where: str = "TruthLens.guard"
) -> dict[str, Any]:
    """Check the tools of one guard call, so that a wrong one fails at the call.

    Args:
        tools: The call's tools by name (see :class:`GuardTools`): an LLM is a core LLM
            (``complete`` and ``acomplete``), a LangChain chat model or LLM, or a
            LlamaIndex LLM; a retriever has ``retrieve``, an answerer ``answer``;
            ``mitigation_options`` is :class:`MitigationOptions`.
        where: The call, for messages.

    Returns:
        The tools, every LLM as a core LLM.

    Raises:
        InvalidArgumentError: For a value of the wrong type.
    """
    problems: list[str] = []
    checked = {**tools, **_llms(tools, problems)}
    for name, method in (("retriever", "retrieve"), ("answerer", "answer")):
        value = tools.get(name)
        if value is not None and not callable(getattr(value, method, None)):
            problems.append(f"{name} must have a .{method}() method, got {kind(value)}")
    options = tools.get("mitigation_options")
    if options is not None and not isinstance(options, MitigationOptions):
        problems.append(f"mitigation_options must be MitigationOptions, got {kind(options)}")
    if problems:
        raise InvalidArgumentError(f"{where}: " + "; ".join(problems))
    return checked


@dataclass(frozen=True)
class GuardCall:
    """One guard call, as an adapter hands it to the engine: the input and the tools, typed.

    Attributes:
        context: Grounding passages; ``None`` or empty when the answer was not grounded.
        question: The user's prompt.
        answer: The answer to check.
        tools: The models mitigation may use (:class:`GuardTools`).
    """

    context: str | Sequence[str] | None
    question: str | None
    answer: str
    tools: GuardTools = field(default_factory=GuardTools)


class Guarding(Protocol):
    """What :func:`run_guard` calls: the engine's ``guard`` and ``aguard``."""

    def guard(
        self,
        *,
        context: str | Sequence[str] | None,
        question: str | None,
        answer: str,
        **tools: Unpack[GuardTools],
    ) -> Verdict:
        """Guard one answer (``TruthLens.guard``)."""
        ...

    async def aguard(
        self,
        *,
        context: str | Sequence[str] | None,
        question: str | None,
        answer: str,
        **tools: Unpack[GuardTools],
    ) -> Verdict:
        """Guard one answer, async (``TruthLens.aguard``)."""
        ...


def run_guard(engine: Guarding, call: GuardCall) -> Verdict:
    """``engine.guard`` of a typed :class:`GuardCall` (what the adapters hand over)."""
    return engine.guard(
        context=call.context, question=call.question, answer=call.answer, **call.tools
    )


async def arun_guard(engine: Guarding, call: GuardCall) -> Verdict:
    """``engine.aguard`` of a typed :class:`GuardCall`."""
    return await engine.aguard(
        context=call.context, question=call.question, answer=call.answer, **call.tools
    )
