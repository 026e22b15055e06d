"""Every option of the guard engine, defined once for the engine and every adapter.

Three groups, each a single definition the adapters reuse so that they cannot drift:

- :class:`EngineOptions`: how a :class:`~truthlens_integrations.core.engine.TruthLens`
  is built (models, metrics, ``on_block``, ``redact``, ...);
- :class:`PolicyKnobs`: the common policy settings every adapter takes as keyword
  arguments (``mode``, ``threshold``, ``action``, ``max_iterations``), applied over
  the policy file;
- what one guard call is given (``llm``, ``retriever``, ...) is defined in
  ``_tools`` (:class:`GuardTools`, :data:`GUARD_TOOLS`).

The same groups as typed keyword arguments, for signatures (``**options:
Unpack[GuardKwargs]``), so that editors complete them and type checkers check callers:
:class:`EngineKwargs` mirrors :class:`EngineOptions`, :class:`PolicyKnobKwargs` mirrors
:class:`PolicyKnobs`, and :class:`GuardKwargs` is both, what ``TruthLens.from_config``
and every adapter take.

:func:`split_options` sorts an adapter's keyword arguments into these groups and
rejects unknown ones with a did-you-mean message (:class:`UnknownArgumentError`);
wrong types raise :class:`InvalidArgumentError` at the call. The module imports
neither torch nor any framework.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from .._arguments import describe_error, kind, reject_unknown
from .._errors import ConfigError, InvalidArgumentError
from ..mitigation import MitigationOptions
from ..models import Detector, FactCheckClassifier, NLIExplainer
from ..models.claims import ClaimChecker
from ..observability import Metrics, Tracer
from ..policy import Action, DomainClassifier, Mode, Policy
from ._blocked import DEFAULT_BLOCKED_MESSAGE, OnBlock
from ._verdict import Verdict

__all__ = [
    "ENGINE_OPTION_NAMES",
    "POLICY_KNOB_NAMES",
    "EngineKwargs",
    "EngineOptions",
    "GuardKwargs",
    "OnBlock",
    "PolicyKnobKwargs",
    "PolicyKnobs",
    "SplitOptions",
    "kind",
    "parse_engine_options",
    "parse_knobs",
    "reject_unknown",
    "split_options",
]


def _needs(value: object, method: str, what: str) -> object:
    """``value`` when it is ``None`` or has a callable ``method``; a clear error otherwise."""
    if value is None or callable(getattr(value, method, None)):
        return value
    raise ValueError(f"expected {what} (an object with a .{method}() method)")


#: The method each model option must have, and how messages name the option's kind.
_NEEDS: dict[str, tuple[str, str]] = {
    "detector": ("detect_batch", "a detector"),
    "nli": ("explain", "an NLI explainer"),
    **dict.fromkeys(("fact_checker", "domain_classifier"), ("classify", "a classifier")),
    "claim_checker": ("check", "a claim checker"),
    "metrics": ("record_detection", "a Metrics object"),
    "tracer": ("stage", "a Tracer"),
}


class EngineOptions(BaseModel):
    """How a guard engine is built; every field is also an adapter keyword argument.

    Attributes:
        detector: Token-level detector (``.detect_batch``); ``None`` loads the
            policy's ``hallucination.model_id`` (the bundled one when unset).
        nli: NLI explainer (``.explain``); ``None`` tries the bundled one.
        fact_checker: Prompt classifier (``.classify``); ``None`` tries the bundled one.
        claim_checker: Claim checker (``.check``, see
            :class:`~truthlens_integrations.core.models.claims.ClaimChecker`) for the
            cascade; ``None`` loads the policy's ``hallucination.claim_check.checker``
            where the policy has that block. Given here without the block, it runs
            with the block's defaults (on uncertain answers).
        metrics: Prometheus metrics (``Metrics``); ``None`` records nothing.
        tracer: OpenTelemetry tracer (``Tracer``); ``None`` only times stages.
        domain_classifier: Domain classifier for ``domain`` conditions.
        on_block: What a blocked answer becomes: ``"message"`` (default) shows
            ``blocked_message`` in its place (adapters) and ``guard`` returns the
            blocked verdict; ``"raise"`` raises :class:`BlockedResponseError`, the
            verdict attached. Every adapter takes this one option.
        blocked_message: The text shown in place of a blocked answer.
        expose_blocked_text: Leave a blocked answer's text (original answer, span
            texts, rejected mitigation rounds) in the verdict the caller gets. Off by
            default: the verdict of a blocked answer withholds it from every
            serialisation, and the application reads it through
            :meth:`Verdict.full` or the ``audit_hook``.
        align_quantities: Numbers and units of a flagged span decide its NLI label.
        mitigation_options: Tuning of the mitigation loops.
        redact: Keep hallucinated text (the original answer when it is not shown,
            span texts, earlier mitigation rounds, the raw detector output) out of
            the verdict the caller gets, and so out of metadata, events and logs.
        audit_hook: Called with the full, unredacted verdict of every guarded answer
            (also without ``redact``), before the caller gets it. A coroutine function
            is awaited (``aguard`` awaits it on the caller's loop; ``guard`` runs it to
            completion). An exception it raises stops the call as
            :class:`AuditHookError`, the cause chained: an answer whose audit failed
            is not handed out.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    detector: Any = None
    nli: Any = None
    fact_checker: Any = None
    claim_checker: Any = None
    metrics: Any = None
    tracer: Any = None
    domain_classifier: Any = None
    on_block: OnBlock = "message"
    blocked_message: str = Field(default=DEFAULT_BLOCKED_MESSAGE, min_length=1, strict=True)
    expose_blocked_text: StrictBool = False
    align_quantities: StrictBool = True
    mitigation_options: MitigationOptions | None = None
    redact: StrictBool = False
    audit_hook: Callable[[Any], object] | None = None

    @field_validator(*_NEEDS)
    @classmethod
    def _has_method(cls, value: object, info: ValidationInfo) -> object:
        assert info.field_name is not None
        method, what = _NEEDS[info.field_name]
        return _needs(value, method, what)


class PolicyKnobs(BaseModel):
    """The common policy settings, as adapter keyword arguments over the policy file.

    A knob that is set replaces the value in the global ``hallucination`` block and in
    every decision of the policy, so it holds on every route.

    Attributes:
        mode: ``lightweight``, ``standard`` or ``premium``.
        threshold: Response score at or above which an answer is flagged.
        action: ``hallucination_action``: ``header``, ``body``, ``block`` or ``none``.
        max_iterations: Mitigation rounds at most (standard and premium; 0 to 100),
            the policy's ``standard.max_iterations``, ``premium.max_iterations`` and
            every decision's ``max_iterations``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Mode | None = None
    threshold: float | None = Field(default=None, ge=0.0, le=1.0, strict=True)
    action: Action | None = None
    max_iterations: int | None = Field(default=None, ge=0, le=100, strict=True)

    @field_validator("threshold", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        # strict=True still takes an int; bool is an int, and True is not a threshold.
        if isinstance(value, bool):
            raise ValueError("expected a number between 0 and 1, got a bool")
        return float(value) if isinstance(value, int) else value

    @field_validator("max_iterations", mode="before")
    @classmethod
    def _rounds(cls, value: object) -> object:
        if isinstance(value, bool):  # an int to pydantic, never a number of rounds
            raise ValueError("expected a whole number of rounds, got a bool")
        return value

    @property
    def given(self) -> bool:
        """Whether any knob is set."""
        return any(v is not None for v in self.model_dump().values())

    def apply(self, policy: Policy) -> Policy:
        """``policy`` with the knobs that are set written into every scope.

        Args:
            policy: The policy to start from.

        Returns:
            A new policy (``policy`` itself when no knob is set).
        """
        if not self.given:
            return policy
        data = policy.model_dump(by_alias=True, exclude_unset=True)
        g = data.setdefault("hallucination", {})
        plugin: dict[str, Any] = {}
        if self.mode is not None:
            g["default_mode"] = plugin["mode"] = self.mode
        if self.threshold is not None:
            g["response_threshold"] = plugin["response_threshold"] = self.threshold
        if self.action is not None:
            g["hallucination_action"] = plugin["hallucination_action"] = self.action
        if self.max_iterations is not None:
            for mode in ("standard", "premium"):
                g.setdefault(mode, {})["max_iterations"] = self.max_iterations
            plugin["max_iterations"] = self.max_iterations
        for decision in data.get("decisions", ()):
            for entry in decision.get("plugins", ()):
                entry.setdefault("configuration", {}).update(plugin)
        return policy.rebuilt(data)


class EngineKwargs(TypedDict, total=False):
    """:class:`EngineOptions` as typed keyword arguments (``TruthLens(policy, **options)``).

    One key per option, typed for editors and type checkers; each is described on
    :class:`EngineOptions`, which still checks the values at runtime. A key left out
    keeps its default (in an adapter given an ``engine``: that engine's value).
    """

    detector: Detector | None
    nli: NLIExplainer | None
    fact_checker: FactCheckClassifier | None
    claim_checker: ClaimChecker | None
    metrics: Metrics | None
    tracer: Tracer | None
    domain_classifier: DomainClassifier | None
    on_block: OnBlock
    blocked_message: str
    expose_blocked_text: bool
    align_quantities: bool
    mitigation_options: MitigationOptions | None
    redact: bool
    audit_hook: Callable[[Verdict], object] | None


class PolicyKnobKwargs(TypedDict, total=False):
    """:class:`PolicyKnobs` as typed keyword arguments.

    ``mode``, ``threshold``, ``action`` and ``max_iterations``; a knob left out, or
    ``None``, keeps the policy's value.
    """

    mode: Mode | None
    threshold: float | None
    action: Action | None
    max_iterations: int | None


class GuardKwargs(EngineKwargs, PolicyKnobKwargs, total=False):
    """Engine options and policy knobs: the keyword arguments of ``TruthLens.from_config``.

    Every adapter takes these same keywords (``**options: Unpack[GuardKwargs]``) next
    to its own, so each option has one name and one type everywhere. Unknown keywords
    still raise :class:`~truthlens_integrations.core.UnknownArgumentError` at runtime.
    """


#: Every engine option's name.
ENGINE_OPTION_NAMES: tuple[str, ...] = tuple(EngineOptions.model_fields)
POLICY_KNOB_NAMES: tuple[str, ...] = tuple(PolicyKnobs.model_fields)


def parse_engine_options(values: Mapping[str, Any], where: str = "TruthLens") -> EngineOptions:
    """Validate engine options.

    Args:
        values: Option name to value.
        where: The constructor, for messages.

    Returns:
        The options.

    Raises:
        UnknownArgumentError: For a name that is not an engine option.
        InvalidArgumentError: For a value of the wrong type.
        ConfigError: For options that contradict each other.
    """
    reject_unknown(values, ENGINE_OPTION_NAMES, where)
    if values.get("redact") is True and values.get("expose_blocked_text") is True:
        # One of the two would be silently ignored: redact withholds every hallucinated
        # text, blocked ones included, so "expose the blocked text" cannot hold.
        raise ConfigError(
            f"{where}: redact=True and expose_blocked_text=True contradict each other "
            "(redact withholds the blocked text too); pass one of them"
        )
    try:
        return EngineOptions(**values)
    except ValidationError as exc:
        raise InvalidArgumentError(describe_error(exc, where)) from None


def parse_knobs(values: Mapping[str, Any], where: str) -> PolicyKnobs:
    """Validate policy knobs (see :func:`parse_engine_options`)."""
    reject_unknown(values, POLICY_KNOB_NAMES, where)
    try:
        return PolicyKnobs(**values)
    except ValidationError as exc:
        raise InvalidArgumentError(describe_error(exc, where)) from None


class SplitOptions(BaseModel):
    """An adapter's keyword arguments, sorted by :func:`split_options`.

    Attributes:
        engine: Engine options that were given (only those).
        knobs: The policy knobs.
        rest: The adapter's own arguments.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    engine: dict[str, Any]
    knobs: PolicyKnobs
    rest: dict[str, Any]


def split_options(kwargs: Mapping[str, Any], *, own: Iterable[str], where: str) -> SplitOptions:
    """Sort an adapter's keyword arguments into engine options, knobs and its own.

    Args:
        kwargs: What the adapter's constructor received.
        own: The adapter's own argument names (they win over engine option names).
        where: The constructor, for messages.

    Returns:
        The three groups, engine options and knobs validated.

    Raises:
        UnknownArgumentError: For a name in none of the groups.
        InvalidArgumentError: For an engine option or knob of the wrong type.
    """
    mine = set(own)
    reject_unknown(kwargs, [*mine, *ENGINE_OPTION_NAMES, *POLICY_KNOB_NAMES], where)
    rest = {k: v for k, v in kwargs.items() if k in mine}
    engine = {k: v for k, v in kwargs.items() if k not in mine and k in ENGINE_OPTION_NAMES}
    knobs = {k: v for k, v in kwargs.items() if k not in mine and k in POLICY_KNOB_NAMES}
    parse_engine_options(engine, where)
    return SplitOptions(engine=engine, knobs=parse_knobs(knobs, where), rest=rest)
