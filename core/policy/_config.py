"""pydantic models of a TruthLens / HaluGate policy file.

A policy has four optional top-level sections from the design (``hallucination``,
``hallucination_mitigation``, ``fact_check_rules``, ``decisions``) and two extensions
(``keyword_rules``, ``domains``) that name the keyword lists and domains the
decisions refer to. Every model forbids unknown keys so that typos fail loudly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, TypedDict

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    Strict,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .._arguments import warn_deprecated
from .._calibration import CalibrationFile, check_calibration_detector, read_calibration_file
from .._decision import Action, route_threshold, unverified_action
from .._errors import ConfigError
from .._limits import (
    MAX_ANSWER_CHARS,
    MAX_CONTEXT_CHARS,
    MAX_REQUEST_ANSWER_CHARS,
    MAX_REQUEST_CONTEXT_CHARS,
    MAX_REQUEST_TOKENS,
    InputLimits,
)
from ._defaults import (
    DEFAULT_DOMAIN_DESCRIPTIONS,
    DEFAULT_DOMAIN_KEYWORDS,
    DEFAULT_KEYWORD_LISTS,
    FACT_CHECK_SIGNALS,
)

__all__ = [
    "DEFAULT_WARNING_TEMPLATE",
    "Action",
    "AutoscalingSettings",
    "Condition",
    "ConditionType",
    "DecisionPolicy",
    "DomainSpec",
    "FactCheckRule",
    "HallucinationPlugin",
    "HallucinationSettings",
    "KeywordRule",
    "MitigationModels",
    "Mode",
    "ModelRef",
    "ModelSettings",
    "Operator",
    "PluginConfiguration",
    "Policy",
    "PremiumSettings",
    "ReplicaKwargs",
    "ResolvedSettings",
    "Rules",
    "ServiceKwargs",
    "ServiceSettings",
    "StandardSettings",
]

Mode = Literal["lightweight", "standard", "premium"]
Operator = Literal["AND", "OR"]
Precision = Literal["auto", "float32", "bfloat16", "float16", "int8"]
Backend = Literal["auto", "torch", "onnx"]
ConditionType = Literal["domain", "keyword", "fact_check"]

DEFAULT_WARNING_TEMPLATE = (
    "⚠️ Note: this response may contain information the provided context does not "
    "support. Please verify key facts before acting on it."
)


def _unit_interval(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError("must be between 0 and 1")
    return value


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


# Numbers and switches are strict: YAML `response_threshold: true` or `"0.3"` is an
# error, not 1.0 or 0.3. A lax `true` read as threshold 1.0 silently turns detection off.
# Integers are still accepted where a float is expected (`response_threshold: 1`).
Unit = Annotated[float, Strict(), AfterValidator(_unit_interval)]
Name = Annotated[str, AfterValidator(_non_blank)]
Iterations = Annotated[int, Strict(), Field(ge=0, le=100)]
Budget = Annotated[float, Strict(), Field(gt=0.0, le=3600.0)]
Flag = Annotated[bool, Strict()]


class _Strict(BaseModel):
    # NaN and infinities are refused everywhere: `time_budget_s: .nan` is not a budget.
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False
    )


def renamed_key(data: Any, new: str, where: str, old: str = "threshold") -> Any:
    """``data`` (a policy block as read) with its deprecated key ``old`` under its name ``new``.

    Every ``threshold`` of a policy is named for what it thresholds
    (:data:`THRESHOLD_NAMES`); the old ``threshold`` keeps working for a release, with a
    :class:`DeprecationWarning`.

    Raises:
        ValueError: If both are given.
    """
    if not isinstance(data, Mapping) or old not in data:
        return data
    if new in data:
        raise ValueError(f"{where}: give {new} only ({old} is its deprecated name)")
    warn_deprecated(
        f"policy key {where}.{old} is deprecated and will be removed in the next release; "
        f"use {where}.{new}"
    )
    out = dict(data)
    out[new] = out.pop(old)
    return out


#: Where a policy had a key called ``threshold``, and its name now: what it thresholds.
THRESHOLD_NAMES: dict[str, str] = {
    "hallucination": "response_threshold",
    "decisions[].plugins[].configuration": "response_threshold",
    "hallucination_mitigation.fact_check_model": "confidence_threshold",
    "hallucination_mitigation.hallucination_model": "token_threshold",
    "hallucination_mitigation.nli_model": "confidence_threshold",
}


def current_names(data: Mapping[str, Any]) -> dict[str, Any]:
    """One policy source (as read, before sources are merged) with current key names.

    A file written with the design's ``threshold`` keys and another with the current
    names merge as one: each source is renamed before the merge, and a later source's
    value still wins.

    Raises:
        ValueError: If a block gives both names.
    """
    out = dict(data)
    if "hallucination" in out:
        new = THRESHOLD_NAMES["hallucination"]
        out["hallucination"] = renamed_key(out["hallucination"], new, "hallucination")
    models = out.get("hallucination_mitigation")
    if isinstance(models, Mapping):
        models = dict(models)
        for name in ("fact_check_model", "hallucination_model", "nli_model"):
            where = f"hallucination_mitigation.{name}"
            if name in models:
                models[name] = renamed_key(models[name], THRESHOLD_NAMES[where], where)
        out["hallucination_mitigation"] = models
    decisions = out.get("decisions")
    if isinstance(decisions, list):
        out["decisions"] = [_current_decision(d, i) for i, d in enumerate(decisions)]
    return out


def _current_decision(decision: Any, index: int) -> Any:
    plugins = decision.get("plugins") if isinstance(decision, Mapping) else None
    if not isinstance(plugins, list):
        return decision
    renamed = []
    for j, plugin in enumerate(plugins):
        where = f"decisions[{index}].plugins[{j}].configuration"
        if isinstance(plugin, Mapping) and "configuration" in plugin:
            new = THRESHOLD_NAMES["decisions[].plugins[].configuration"]
            config = renamed_key(plugin["configuration"], new, where)
            renamed.append({**plugin, "configuration": config})
        else:
            renamed.append(plugin)
    return {**decision, "plugins": renamed}


class StandardSettings(_Strict):
    """Standard mode: self-refinement with the same model.

    Attributes:
        max_iterations: Refinement rounds at most.
        convergence_threshold: Stop refining once the score falls below this.
    """

    max_iterations: Iterations = 3
    convergence_threshold: Unit = 0.4


class PremiumSettings(_Strict):
    """Premium mode: cross-checking with several models and a judge.

    Attributes:
        verification_models: Models asked to verify the answer.
        judge_model: Model that settles disagreements, if any.
        max_iterations: Collaboration rounds at most.
        require_consensus: Whether all verifiers must agree before passing.
    """

    verification_models: tuple[Name, ...] = ()
    judge_model: str | None = None
    max_iterations: Iterations = 5
    require_consensus: Flag = True


class HallucinationSettings(_Strict):
    """The global ``hallucination:`` block; decisions fall back to it.

    The design's keys are ``enabled`` .. ``premium``. The per-decision plugin keys
    (``use_nli``, ``hallucination_action``, ...) may also be set here as global
    defaults, an extension of the design.

    Attributes:
        enabled: Whether detection runs when no decision says otherwise.
        model_id: Detector model; ``None`` uses the bundled detector.
        use_cpu: Force the CPU; ``False`` lets the device helper choose.
        precision: Weights' precision for the detector, NLI and prompt classifier.
            ``auto``: bf16/fp16 on GPUs; on a CPU the ONNX int8 graph where the CPU has
            VNNI (same quality as fp32, 1.6x faster), else fp32. ``float32`` and
            ``int8`` pick one; ``bfloat16`` on a CPU with native bf16 (AVX512-BF16,
            AMX) runs torch in bf16 (see the results page's Speed section).
        backend: What runs the encoder models. ``auto``: ONNX Runtime on a CPU where
            the ``fast`` extra is installed, torch on GPUs and elsewhere; ``torch`` or
            ``onnx`` force one; ``precision: int8`` runs ONNX.
        default_mode: Mode for decisions that do not set one.
        response_threshold: Response score at or above which an answer is flagged
            (``threshold`` is its deprecated name).
        warning_template: Text the ``body`` action and disclaimers add.
        standard: Standard mode settings.
        premium: Premium mode settings.
        use_nli: Whether flagged spans are explained by the NLI model.
        hallucination_action: What to do with a flagged answer. ``body`` by default
            (the design's lightweight mode: the answer is shown with a warning line
            naming the flagged parts); ``header`` only annotates the metadata,
            ``none`` passes it through, ``block`` withholds it.
        unverified_factual_action: What to do with a factual answer that could not be
            checked (no grounding, or the detector could not read it). Unset: ``block``
            where the hallucination action is ``block`` (an answer that could not be
            checked is never shown where a wrong one would be withheld), ``header``
            elsewhere. Set it to choose otherwise.
        include_hallucination_details: Whether span texts go into metadata and traces.
        require_disclaimer: Whether the warning is added even to clean answers.
        skip_non_factual_grounded: Skip detection of a grounded answer when the prompt
            classifier finds the prompt non-factual. Off by default: with grounding
            given, the answer is checked whatever the classifier says ("Summarize the
            document." reads as non-factual and still needs checking).
        time_budget_s: Seconds one request may spend in mitigation LLM calls (from the
            start of the guard call); a call still running at the deadline is
            abandoned and the loop ends with status ``llm_timeout``. ``None``: no limit.
    """

    enabled: Flag = True
    model_id: str | None = None
    use_cpu: Flag = False
    precision: Precision = "auto"
    backend: Backend = "auto"
    default_mode: Mode = "lightweight"
    response_threshold: Unit = 0.5
    warning_template: Name = DEFAULT_WARNING_TEMPLATE
    standard: StandardSettings = Field(default_factory=StandardSettings)
    premium: PremiumSettings = Field(default_factory=PremiumSettings)
    use_nli: Flag = True
    hallucination_action: Action = "body"
    unverified_factual_action: Action | None = None
    include_hallucination_details: Flag = False
    require_disclaimer: Flag = False
    skip_non_factual_grounded: Flag = False
    time_budget_s: Budget | None = None

    @model_validator(mode="before")
    @classmethod
    def _old_threshold(cls, data: Any) -> Any:
        return renamed_key(data, "response_threshold", "hallucination")

    @property
    def threshold(self) -> float:
        """Deprecated: :attr:`response_threshold`."""
        warn_deprecated("HallucinationSettings.threshold is deprecated; read .response_threshold")
        return self.response_threshold


class ModelSettings(_Strict):
    """One model of the HaluGate pipeline (the three below add their threshold).

    Attributes:
        model_id: Local path or hub id; ``None`` uses the bundled model.
        use_cpu: Force the CPU; ``False`` lets the device helper choose.
    """

    # The model's threshold, named for what it thresholds, and the block it is read in.
    _threshold_key: ClassVar[str] = ""
    _where: ClassVar[str] = "hallucination_mitigation"

    model_id: str | None = None
    use_cpu: Flag = False

    @model_validator(mode="before")
    @classmethod
    def _old_threshold(cls, data: Any) -> Any:
        if not cls._threshold_key:
            return data
        return renamed_key(data, cls._threshold_key, cls._where)

    @property
    def threshold(self) -> float:
        """Deprecated: the model's threshold under its own name (``confidence_threshold``, ...)."""
        key = type(self)._threshold_key
        warn_deprecated(f"{type(self).__name__}.threshold is deprecated; read .{key}")
        value: float = getattr(self, key)
        return value


class FactCheckModelSettings(ModelSettings):
    """The prompt classifier (``fact_check_model``).

    Attributes:
        confidence_threshold: The confidence a ``needs_fact_check`` prediction needs.
    """

    _threshold_key: ClassVar[str] = "confidence_threshold"
    _where: ClassVar[str] = "hallucination_mitigation.fact_check_model"

    confidence_threshold: Unit = 0.6


class DetectorModelSettings(ModelSettings):
    """The token detector (``hallucination_model``).

    Attributes:
        token_threshold: The token probability above which a token is flagged (spans
            are runs of flagged words).
    """

    _threshold_key: ClassVar[str] = "token_threshold"
    _where: ClassVar[str] = "hallucination_mitigation.hallucination_model"

    token_threshold: Unit = 0.5


class NLIModelSettings(ModelSettings):
    """The NLI explainer (``nli_model``).

    Attributes:
        confidence_threshold: The confidence an NLI label needs to count: an entailment
            this sure drops the span as a false positive, a contradiction (or
            entailment) below it reads neutral.
    """

    _threshold_key: ClassVar[str] = "confidence_threshold"
    _where: ClassVar[str] = "hallucination_mitigation.nli_model"

    confidence_threshold: Unit = 0.9


class MitigationModels(_Strict):
    """The ``hallucination_mitigation:`` block: the three HaluGate models.

    Attributes:
        fact_check_model: Prompt classifier; ``confidence_threshold`` is the confidence a
            ``needs_fact_check`` prediction needs.
        hallucination_model: Token detector; ``token_threshold`` flags a token.
        nli_model: NLI explainer; ``confidence_threshold`` is the confidence a label
            needs (an entailment this sure drops a span as a false positive).
    """

    fact_check_model: FactCheckModelSettings = Field(default_factory=FactCheckModelSettings)
    hallucination_model: DetectorModelSettings = Field(default_factory=DetectorModelSettings)
    nli_model: NLIModelSettings = Field(default_factory=NLIModelSettings)


class FactCheckRule(_Strict):
    """A named fact-check signal (``needs_fact_check`` or ``no_fact_check_needed``)."""

    name: Name
    description: str | None = None

    @field_validator("name")
    @classmethod
    def _known_signal(cls, value: str) -> str:
        if value not in FACT_CHECK_SIGNALS:
            allowed = ", ".join(repr(n) for n in FACT_CHECK_SIGNALS)
            raise ValueError(
                f"unknown fact-check signal {value!r}; the prompt classifier is binary, "
                f"so only {allowed} exist"
            )
        return value


class KeywordRule(_Strict):
    """A named keyword list for ``keyword`` conditions (``keyword_rules:`` section).

    Attributes:
        name: The name conditions refer to.
        description: Free text.
        operator: ``OR``: any keyword matches; ``AND``: all must appear.
        keywords: Words or phrases; matched on word boundaries.
        case_sensitive: Whether matching respects case.
    """

    name: Name
    description: str | None = None
    operator: Operator = "OR"
    keywords: tuple[Name, ...] = Field(min_length=1)
    case_sensitive: Flag = False

    @field_validator("operator", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


class DomainSpec(_Strict):
    """A domain for ``domain`` conditions (``domains:`` section).

    Attributes:
        name: The name conditions refer to.
        description: Text the embedding classifier compares prompts with.
        keywords: Lexicon of the keyword domain classifier.
    """

    name: Name
    description: str | None = None
    keywords: tuple[Name, ...] | None = None


class Condition(_Strict):
    """One signal test of a decision's rules.

    Attributes:
        type: ``domain``, ``keyword`` or ``fact_check``.
        name: Domain name, keyword-list name, or fact-check signal name.
        keywords: Inline keywords (``keyword`` conditions only); when given, the
            condition does not need a named keyword list.
    """

    type: ConditionType
    name: Name
    keywords: tuple[Name, ...] | None = None

    @model_validator(mode="after")
    def _check(self) -> Condition:
        if self.keywords is not None and self.type != "keyword":
            raise ValueError(f"'keywords' is only allowed on keyword conditions, not {self.type}")
        if self.type == "fact_check" and self.name not in FACT_CHECK_SIGNALS:
            allowed = ", ".join(repr(n) for n in FACT_CHECK_SIGNALS)
            raise ValueError(f"unknown fact-check signal {self.name!r}; use {allowed}")
        return self


class Rules(_Strict):
    """How a decision's conditions combine."""

    operator: Operator = "OR"
    conditions: tuple[Condition, ...] = Field(min_length=1)

    @field_validator("operator", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


class ModelRef(_Strict):
    """A model a decision routes to (informational for this package)."""

    model: Name
    use_reasoning: Flag | None = None
    lora_name: str | None = None


class PluginConfiguration(_Strict):
    """Per-decision ``hallucination`` plugin settings; ``None`` falls back to the global block.

    Attributes:
        enabled: Whether detection runs for this decision.
        mode: lightweight, standard or premium.
        response_threshold: Response score at or above which the answer is flagged
            (``threshold`` is its deprecated name).
        max_iterations: Refinement / collaboration rounds at most.
        require_disclaimer: Add the warning even to answers that pass.
        use_nli: Explain flagged spans with the NLI model.
        hallucination_action: header, body, block or none.
        unverified_factual_action: Action for a factual answer that could not be
            checked (unset: the global value, else ``block`` when this decision's
            hallucination action is ``block``, else ``header``).
        include_hallucination_details: Put span texts in metadata and traces.
        warning_template: Overrides the global warning text (extension).
        skip_non_factual_grounded: Overrides the global setting (extension).
        time_budget_s: Overrides the global mitigation time budget (extension).
        calibration: A bundled calibration's name or a calibration file written by
            ``truthlens calibrate`` (extension): this route's answers are scored by its
            response map and flagged at its threshold unless ``response_threshold`` is set
            here.
            ``rag`` is the bundled map fitted on RAG answers (opt-in, not the default);
            any other value is a path, read from the working directory when relative.
            Read and checked when the policy loads.
    """

    enabled: Flag | None = None
    mode: Mode | None = None
    response_threshold: Unit | None = None
    max_iterations: Iterations | None = None
    require_disclaimer: Flag | None = None
    use_nli: Flag | None = None
    hallucination_action: Action | None = None
    unverified_factual_action: Action | None = None
    include_hallucination_details: Flag | None = None
    warning_template: Name | None = None
    skip_non_factual_grounded: Flag | None = None
    time_budget_s: Budget | None = None
    calibration: Name | None = None
    # The file behind ``calibration``, read once when the policy loads: requests use
    # this copy, so a route never re-reads (or re-checks) the file per answer.
    _calibration_file: CalibrationFile | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _old_threshold(cls, data: Any) -> Any:
        return renamed_key(data, "response_threshold", "a decision's configuration")

    @property
    def threshold(self) -> float | None:
        """Deprecated: :attr:`response_threshold`."""
        warn_deprecated("PluginConfiguration.threshold is deprecated; read .response_threshold")
        return self.response_threshold

    @model_validator(mode="after")
    def _read_calibration_once(self, info: ValidationInfo) -> PluginConfiguration:
        if self.calibration is None:
            return self
        # A policy rebuilt from another (knobs, ``derive``) reuses the files that policy
        # parsed: one policy, one reading, even if the file changed since.
        parsed = (info.context or {}).get(PARSED_CALIBRATIONS, {})
        if self.calibration in parsed:
            self._calibration_file = parsed[self.calibration]
            return self
        try:
            self._calibration_file = read_calibration_file(self.calibration)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return self

    @property
    def calibration_file(self) -> CalibrationFile | None:
        """The parsed ``calibration`` file (``None`` when the route has none)."""
        return self._calibration_file


class HallucinationPlugin(_Strict):
    """A decision's plugin entry; only ``type: hallucination`` exists in this package."""

    type: Literal["hallucination"]
    configuration: PluginConfiguration = Field(default_factory=PluginConfiguration)


class DecisionPolicy(_Strict):
    """One routing decision: when it applies, and how answers under it are guarded."""

    name: Name
    description: str | None = None
    priority: Annotated[int, Strict()] = 0
    rules: Rules
    model_refs: tuple[ModelRef, ...] = Field(default=(), alias="modelRefs")
    plugins: tuple[HallucinationPlugin, ...] = ()

    @field_validator("plugins")
    @classmethod
    def _one_plugin(cls, value: tuple[HallucinationPlugin, ...]) -> tuple[HallucinationPlugin, ...]:
        if len(value) > 1:
            raise ValueError("at most one hallucination plugin per decision")
        return value

    @property
    def plugin(self) -> PluginConfiguration:
        """The hallucination plugin's configuration (all ``None`` when absent)."""
        return self.plugins[0].configuration if self.plugins else PluginConfiguration()


class ResolvedSettings(_Strict):
    """Effective guard settings for one request: a decision's plugin merged with globals.

    Attributes:
        enabled: Whether detection runs.
        mode: lightweight, standard or premium.
        threshold: Response score at or above which the answer is flagged.
        max_iterations: Rounds for the mode (0 in lightweight unless set explicitly).
        convergence_threshold: Standard mode stops refining below this score.
        require_disclaimer: Add the warning even to answers that pass.
        use_nli: Explain flagged spans with the NLI model.
        hallucination_action: header, body, block or none.
        unverified_factual_action: Action for a factual answer that could not be checked.
        include_hallucination_details: Put span texts in metadata and traces.
        warning_template: Warning text for ``body`` and disclaimers.
        verification_models: Premium verifiers.
        judge_model: Premium judge.
        require_consensus: Premium consensus rule.
        skip_non_factual_grounded: Skip detection of grounded non-factual prompts.
        time_budget_s: Seconds for mitigation LLM calls per request (``None``: no limit).
        calibration: The route's parsed calibration file (``None``: the detector's own
            map).
    """

    enabled: Flag
    mode: Mode
    threshold: Unit
    max_iterations: Iterations
    convergence_threshold: Unit
    require_disclaimer: Flag
    use_nli: Flag
    hallucination_action: Action
    unverified_factual_action: Action
    include_hallucination_details: Flag
    warning_template: str
    verification_models: tuple[str, ...]
    judge_model: str | None
    require_consensus: Flag
    skip_non_factual_grounded: Flag = False
    time_budget_s: float | None = None
    calibration: CalibrationFile | None = None


def _duplicates(names: list[str], section: str) -> list[str]:
    seen: dict[str, int] = {}
    problems: list[str] = []
    for i, name in enumerate(names):
        if name in seen:
            problems.append(
                f"{section}[{i}].name: duplicate name {name!r} (first at {section}[{seen[name]}])"
            )
        else:
            seen[name] = i
    return problems


def _service_url(value: str | None) -> str | None:
    if value is not None and not value.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL, e.g. http://127.0.0.1:8000")
    return value


Seconds = Annotated[float, Strict(), Field(ge=0.0)]
Factor = Annotated[float, Strict(), Field(gt=0.0)]
Count = Annotated[int, Strict(), Field(ge=0)]


class AutoscalingSettings(_Strict):
    """The ``service.autoscaling`` block: Ray Serve's ``autoscaling_config`` keys.

    Only the keys Ray Serve reads, each with its type: a misspelt key would be ignored
    by nobody and a wrong type would fail only when the service starts.
    """

    min_replicas: Count | None = None
    initial_replicas: Count | None = None
    max_replicas: Annotated[int, Strict(), Field(ge=1)] | None = None
    target_ongoing_requests: Factor | None = None
    metrics_interval_s: Factor | None = None
    look_back_period_s: Factor | None = None
    smoothing_factor: Factor | None = None
    upscale_smoothing_factor: Factor | None = None
    downscale_smoothing_factor: Factor | None = None
    upscaling_factor: Factor | None = None
    downscaling_factor: Factor | None = None
    downscale_delay_s: Seconds | None = None
    downscale_to_zero_delay_s: Seconds | None = None
    upscale_delay_s: Seconds | None = None
    aggregation_function: Literal["mean", "max", "min"] | None = None

    @model_validator(mode="after")
    def _bounds(self) -> AutoscalingSettings:
        low, high = self.min_replicas, self.max_replicas
        if low is not None and high is not None and low > high:
            raise ValueError(f"min_replicas ({low}) is above max_replicas ({high})")
        return self

    def as_ray_config(self) -> dict[str, float | int | str]:
        """The keys that were set, as Ray Serve's ``autoscaling_config``."""
        return self.model_dump(exclude_none=True)


class ServiceSettings(_Strict):
    """The ``service:`` block (extension): the guard's models as a Ray Serve service.

    Clients read ``url`` .. ``on_error``: with ``url`` set, the engine and both
    adapters send detection, NLI and prompt classification to the service
    (``truthlens serve``) instead of loading models. ``truthlens serve`` reads the
    rest, so one policy file configures both sides.

    Attributes:
        url: Base URL of a running service; ``None`` runs the models in-process.
        timeout_s: Seconds per HTTP call.
        retries: Extra attempts after a transient failure (connection refused or
            dropped, 502 / 503 / 504).
        on_error: ``raise``: a failed call raises ``ServiceError``; ``unverifiable``:
            the answer is marked unverified (the ``unverified_factual_action``
            applies). Never passed as supported.
        host: Address the service listens on.
        port: Port the service listens on.
        replicas: Replicas of the model deployment (ignored when ``autoscaling`` is set).
        autoscaling: Ray Serve ``autoscaling_config`` (``min_replicas``,
            ``max_replicas``, ``target_ongoing_requests``, ...; see
            :class:`AutoscalingSettings` for the keys).
        num_cpus: CPUs Ray reserves for each replica.
        num_gpus: GPUs Ray reserves for each replica.
        max_ongoing_requests: Requests one replica takes at once before Ray queues.
        max_batch_size: Most answers in one dynamic batch; 1 turns batching off.
        batch_wait_timeout_s: How long a batch waits to fill.
        max_request_bytes: Larger request bodies are refused with 413.
        max_inputs: Most answers in one request.
        max_answer_chars: Longest answer, in characters (413 above it; a cheap proxy
            of the model's work, counted before any model runs).
        max_context_chars: Longest context of one input (passages and question
            together), in characters.
        max_request_answer_chars: All answers of one request together, in characters.
        max_request_context_chars: All contexts of one request together, in characters.
        max_request_tokens: All text of one request (any endpoint) together, in model
            tokens after normalisation (413 above it).
        redact: ``/v1/guard`` leaves hallucinated text (the original answer, span
            texts, earlier rounds) out of every verdict it sends; a blocked verdict
            never carries it, whatever this says. A request can ask for it too.
    """

    url: Annotated[str | None, AfterValidator(_service_url)] = None
    # Strict like every number of the policy: `retries: true` is not 1 retry,
    # `replicas: 2.0` is not 2 replicas and `max_inputs: '10'` is not a number.
    timeout_s: Annotated[float, Strict(), Field(gt=0.0, le=3600.0)] = 30.0
    retries: Annotated[int, Strict(), Field(ge=0, le=10)] = 2
    on_error: Literal["raise", "unverifiable"] = "raise"
    host: Name = "127.0.0.1"
    port: Annotated[int, Strict(), Field(ge=1, le=65535)] = 8000
    replicas: Annotated[int, Strict(), Field(ge=1)] = 1
    autoscaling: AutoscalingSettings | None = None
    num_cpus: Annotated[float, Strict(), Field(gt=0)] = 1.0
    num_gpus: Annotated[float, Strict(), Field(ge=0)] = 0.0
    max_ongoing_requests: Annotated[int, Strict(), Field(ge=1)] = 64
    max_batch_size: Annotated[int, Strict(), Field(ge=1, le=1024)] = 16
    batch_wait_timeout_s: Annotated[float, Strict(), Field(ge=0.0, le=10.0)] = 0.01
    max_request_bytes: Annotated[int, Strict(), Field(ge=1024)] = 4_000_000
    max_inputs: Annotated[int, Strict(), Field(ge=1)] = 256
    max_answer_chars: Annotated[int, Strict(), Field(ge=1)] = MAX_ANSWER_CHARS
    max_context_chars: Annotated[int, Strict(), Field(ge=1)] = MAX_CONTEXT_CHARS
    max_request_answer_chars: Annotated[int, Strict(), Field(ge=1)] = MAX_REQUEST_ANSWER_CHARS
    max_request_context_chars: Annotated[int, Strict(), Field(ge=1)] = MAX_REQUEST_CONTEXT_CHARS
    max_request_tokens: Annotated[int, Strict(), Field(ge=1)] = MAX_REQUEST_TOKENS
    redact: Annotated[bool, Strict()] = False

    def input_limits(self) -> InputLimits:
        """The size limits of one request, shared with the command line's."""
        return InputLimits(
            max_answer_chars=self.max_answer_chars,
            max_context_chars=self.max_context_chars,
            max_request_answer_chars=self.max_request_answer_chars,
            max_request_context_chars=self.max_request_context_chars,
            max_request_tokens=self.max_request_tokens,
        )


class ReplicaKwargs(TypedDict, total=False):
    """The ``service`` fields a caller may override as keywords, beside the start-up ones.

    Mirrors :class:`ServiceSettings` (a test pins the keys) minus ``host``, ``port`` and
    ``num_cpus``, which the service functions take as their own keywords; values are
    checked by ``ServiceSettings`` itself. ``start_local`` takes these.
    """

    url: str | None
    timeout_s: float
    retries: int
    on_error: Literal["raise", "unverifiable"]
    replicas: int
    autoscaling: AutoscalingSettings | Mapping[str, Any] | None
    num_gpus: float
    max_ongoing_requests: int
    max_batch_size: int
    batch_wait_timeout_s: float
    max_request_bytes: int
    max_inputs: int
    max_answer_chars: int
    max_context_chars: int
    max_request_answer_chars: int
    max_request_context_chars: int
    max_request_tokens: int
    redact: bool


class ServiceKwargs(ReplicaKwargs, total=False):
    """:class:`ReplicaKwargs` plus ``num_cpus`` (CPUs per replica): ``deploy``, ``service_app``."""

    num_cpus: float


class Policy(_Strict):
    """A whole policy: global settings, models, signals and decisions.

    Build one with :func:`~truthlens_integrations.core.policy.load_policy`, which turns
    validation problems into :class:`ConfigError` messages naming the file and key.
    """

    hallucination: HallucinationSettings = Field(default_factory=HallucinationSettings)
    hallucination_mitigation: MitigationModels = Field(default_factory=MitigationModels)
    fact_check_rules: tuple[FactCheckRule, ...] = ()
    keyword_rules: tuple[KeywordRule, ...] = ()
    domains: tuple[DomainSpec, ...] = ()
    decisions: tuple[DecisionPolicy, ...] = ()
    service: ServiceSettings = Field(default_factory=ServiceSettings)

    @model_validator(mode="after")
    def _cross_checks(self) -> Policy:
        problems = _duplicates([d.name for d in self.decisions], "decisions")
        problems += _duplicates([r.name for r in self.keyword_rules], "keyword_rules")
        problems += _duplicates([d.name for d in self.domains], "domains")
        problems += _duplicates([r.name for r in self.fact_check_rules], "fact_check_rules")
        lists = self.keyword_lists()
        for i, decision in enumerate(self.decisions):
            for j, cond in enumerate(decision.rules.conditions):
                if cond.type == "keyword" and cond.keywords is None and cond.name not in lists:
                    known = ", ".join(sorted(lists))
                    problems.append(
                        f"decisions[{i}].rules.conditions[{j}].name: unknown keyword list "
                        f"{cond.name!r}; define it under keyword_rules or give inline "
                        f"'keywords' (known: {known})"
                    )
        problems += self._calibration_problems()
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def _calibration_problems(self) -> list[str]:
        # A response map only means something for the detector it was fitted on: a map
        # fitted for another detector than the one this policy names would score
        # silently wrong. Without a model_id the engine checks the detector it uses
        # (the bundled one, or one it was given).
        model_id = self.hallucination.model_id
        if model_id is None:
            return []
        problems = []
        for i, d in enumerate(self.decisions):
            if d.plugin.calibration_file is None:
                continue
            try:
                check_calibration_detector(d.plugin.calibration_file, model_id)
            except ConfigError as exc:
                problems.append(
                    f"decisions[{i}].plugins[0].configuration.calibration: "
                    f"{d.plugin.calibration!r} {exc}"
                )
        return problems

    def rebuilt(self, data: Mapping[str, Any]) -> Policy:
        """``data`` (a changed dump of this policy) validated, keeping its calibration files.

        Raises:
            pydantic.ValidationError: If ``data`` is not a valid policy.
        """
        return rebuild_policy(data, source=self)

    def check_calibrations(self, model_id: str | None) -> None:
        """Refuse a route whose calibration file was fitted for another detector.

        Args:
            model_id: The ``model_id`` of the detector the engine uses (``None``: the
                bundled one).

        Raises:
            ConfigError: Naming the route and both detectors.
        """
        for d in self.decisions:
            if d.plugin.calibration_file is None:
                continue
            try:
                check_calibration_detector(d.plugin.calibration_file, model_id)
            except ConfigError as exc:
                raise ConfigError(
                    f"decision {d.name!r}: calibration {d.plugin.calibration!r} {exc}"
                ) from None

    def keyword_lists(self) -> dict[str, KeywordRule]:
        """Named keyword lists: built-ins overridden by ``keyword_rules``."""
        lists = {
            name: KeywordRule(name=name, keywords=words)
            for name, words in DEFAULT_KEYWORD_LISTS.items()
        }
        lists.update({rule.name: rule for rule in self.keyword_rules})
        return lists

    def domain_keywords(self) -> dict[str, tuple[str, ...]]:
        """Domain lexicons: built-ins, with ``domains:`` entries replacing or adding."""
        lexicon = dict(DEFAULT_DOMAIN_KEYWORDS)
        for spec in self.domains:
            if spec.keywords is not None:
                lexicon[spec.name] = spec.keywords
            else:
                lexicon.setdefault(spec.name, ())
        return lexicon

    def domain_descriptions(self) -> dict[str, str]:
        """Domain descriptions: built-ins, with ``domains:`` entries replacing or adding."""
        descriptions = dict(DEFAULT_DOMAIN_DESCRIPTIONS)
        for spec in self.domains:
            if spec.description is not None:
                descriptions[spec.name] = spec.description
        return descriptions

    def decision(self, name: str) -> DecisionPolicy:
        """The decision called ``name``.

        Raises:
            KeyError: If there is none.
        """
        for decision in self.decisions:
            if decision.name == name:
                return decision
        raise KeyError(name)

    def settings_for(self, decision: str | None, *, mode: Mode | None = None) -> ResolvedSettings:
        """Effective settings of a decision, or the global ones for ``None``.

        Args:
            decision: A decision name, or ``None`` when no decision matched.
            mode: Use this mode instead of the configured one (adaptive selection).

        Returns:
            The decision's plugin values where set, the global block's otherwise; the
            threshold and the unverified action by the decision rules of
            ``core/_decision.py`` (:func:`route_threshold`, :func:`unverified_action`).

        Raises:
            KeyError: If the decision does not exist.
        """
        g = self.hallucination
        p = self.decision(decision).plugin if decision is not None else PluginConfiguration()
        chosen: Mode = mode or p.mode or g.default_mode
        if p.max_iterations is not None:
            iterations = p.max_iterations
        elif chosen == "standard":
            iterations = g.standard.max_iterations
        elif chosen == "premium":
            iterations = g.premium.max_iterations
        else:
            iterations = 0
        action = p.hallucination_action or g.hallucination_action
        calibration = p.calibration_file
        threshold = route_threshold(
            p.response_threshold,
            calibration.threshold if calibration is not None else None,
            g.response_threshold,
        )
        return ResolvedSettings(
            enabled=g.enabled if p.enabled is None else p.enabled,
            mode=chosen,
            threshold=threshold,
            calibration=calibration,
            max_iterations=iterations,
            convergence_threshold=g.standard.convergence_threshold,
            require_disclaimer=_pick(p.require_disclaimer, g.require_disclaimer),
            use_nli=_pick(p.use_nli, g.use_nli),
            hallucination_action=action,
            unverified_factual_action=unverified_action(
                p.unverified_factual_action, g.unverified_factual_action, action
            ),
            include_hallucination_details=_pick(
                p.include_hallucination_details, g.include_hallucination_details
            ),
            warning_template=p.warning_template or g.warning_template,
            verification_models=g.premium.verification_models,
            judge_model=g.premium.judge_model,
            require_consensus=g.premium.require_consensus,
            skip_non_factual_grounded=_pick(
                p.skip_non_factual_grounded, g.skip_non_factual_grounded
            ),
            time_budget_s=g.time_budget_s if p.time_budget_s is None else p.time_budget_s,
        )


def _pick(value: bool | None, fallback: bool) -> bool:
    return fallback if value is None else value


# The validation context key under which a rebuilt policy finds the calibration files
# its source policy parsed (:func:`rebuild_policy`).
PARSED_CALIBRATIONS = "parsed_calibrations"


def rebuild_policy(data: Mapping[str, Any], *, source: Policy) -> Policy:
    """Validate ``data`` (a changed dump of ``source``), reusing ``source``'s calibration files.

    A route's calibration file is read once, when its policy loads; a policy derived from
    it (policy knobs, ``TruthLens.derive``) keeps that reading instead of reading the file
    again, which may have changed since.

    Raises:
        pydantic.ValidationError: If ``data`` is not a valid policy.
    """
    parsed = {
        d.plugin.calibration: d.plugin.calibration_file
        for d in source.decisions
        if d.plugin.calibration_file is not None
    }
    return Policy.model_validate(data, context={PARSED_CALIBRATIONS: parsed})
