"""pydantic models of a TruthLens / HaluGate policy file.

A policy has four optional top-level sections from the design (``hallucination``,
``hallucination_mitigation``, ``fact_check_rules``, ``decisions``) and two extensions
(``keyword_rules``, ``domains``) that name the keyword lists and domains the
decisions refer to. Every model forbids unknown keys so that typos fail loudly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    Strict,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .._calibration._file import (
    CalibrationFile,
    check_calibration_detector,
)
from .._calibration._planted import load_calibration_file
from .._decision import Action, route_threshold, unverified_action
from .._errors import ConfigError
from ._defaults import (
    DEFAULT_DOMAIN_DESCRIPTIONS,
    DEFAULT_DOMAIN_KEYWORDS,
    DEFAULT_KEYWORD_LISTS,
    FACT_CHECK_SIGNALS,
)
from ._fields import (
    Budget,
    ConditionType,
    Flag,
    Iterations,
    Mode,
    Name,
    Operator,
    StrictModel,
    Unit,
)
from ._service import ServiceSettings
from ._settings import (
    ClaimCheckSettings,
    HallucinationSettings,
    MitigationModels,
    named_thresholds,
)

__all__ = [
    "PARSED_CALIBRATIONS",
    "Condition",
    "DecisionPolicy",
    "DomainSpec",
    "FactCheckRule",
    "HallucinationPlugin",
    "KeywordRule",
    "ModelRef",
    "PluginConfiguration",
    "Policy",
    "ResolvedSettings",
    "Rules",
    "rebuild_policy",
]


class FactCheckRule(StrictModel):
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


class KeywordRule(StrictModel):
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


class DomainSpec(StrictModel):
    """A domain for ``domain`` conditions (``domains:`` section).

    Attributes:
        name: The name conditions refer to.
        description: Text the embedding classifier compares prompts with.
        keywords: Lexicon of the keyword domain classifier.
    """

    name: Name
    description: str | None = None
    keywords: tuple[Name, ...] | None = None


class Condition(StrictModel):
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


class Rules(StrictModel):
    """How a decision's conditions combine."""

    operator: Operator = "OR"
    conditions: tuple[Condition, ...] = Field(min_length=1)

    @field_validator("operator", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


class ModelRef(StrictModel):
    """A model a decision routes to (informational for this package)."""

    model: Name
    use_reasoning: Flag | None = None
    lora_name: str | None = None


class PluginConfiguration(StrictModel):
    """Per-decision ``hallucination`` plugin settings; ``None`` falls back to the global block.

    Attributes:
        enabled: Whether detection runs for this decision.
        mode: lightweight, standard or premium.
        response_threshold: Response score at or above which the answer is flagged; a
            ``cost`` block (:class:`CostThreshold`) may declare it.
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
        calibration: A calibration file written by ``truthlens calibrate``
            (extension): this route's answers are scored by its response map and flagged
            at its threshold unless ``response_threshold`` is set here. A path, read from
            the working directory when relative, and checked when the policy loads.
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
    # The file's fitted ``claim_check`` block, parsed with the policy's own vocabulary.
    _fitted_claim_check: ClaimCheckSettings | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _bare_threshold(cls, data: Any) -> Any:
        return named_thresholds(data, "response_threshold")

    @model_validator(mode="after")
    def _read_calibration_once(self, info: ValidationInfo) -> PluginConfiguration:
        if self.calibration is None:
            return self
        # A policy rebuilt from another (knobs, ``derive``) reuses the files that policy
        # parsed: one policy, one reading, even if the file changed since.
        parsed = (info.context or {}).get(PARSED_CALIBRATIONS, {})
        if self.calibration in parsed:
            self._calibration_file = parsed[self.calibration]
        else:
            try:
                self._calibration_file = load_calibration_file(self.calibration)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        try:
            self._fitted_claim_check = read_fitted_claim_check(
                self._calibration_file, self.calibration
            )
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return self

    @property
    def calibration_file(self) -> CalibrationFile | None:
        """The parsed ``calibration`` file (``None`` when the route has none)."""
        return self._calibration_file

    @property
    def fitted_claim_check(self) -> ClaimCheckSettings | None:
        """The ``claim_check`` block the route's calibration file was fitted with, if any."""
        return self._fitted_claim_check


def read_fitted_claim_check(file: CalibrationFile, path: str) -> ClaimCheckSettings | None:
    """A calibration file's ``claim_check`` block, read as the policy's own block.

    Raises:
        ConfigError: Naming the file, if the block is not a valid ``claim_check`` block.
    """
    if file.claim_check is None:
        return None
    try:
        return ClaimCheckSettings.model_validate(file.claim_check)
    except ValidationError as exc:
        problem = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise ConfigError(
            f"calibration file {path}: claim_check{'.' + where if where else ''}: "
            f"{problem['msg'].removeprefix('Value error, ')}"
        ) from None


class HallucinationPlugin(StrictModel):
    """A decision's plugin entry; only ``type: hallucination`` exists in this package."""

    type: Literal["hallucination"]
    configuration: PluginConfiguration = Field(default_factory=PluginConfiguration)


class DecisionPolicy(StrictModel):
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


class ResolvedSettings(StrictModel):
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
        claim_check: The claim checker's cascade settings (``None``: no checker).
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
    claim_check: ClaimCheckSettings | None = None


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


class Policy(StrictModel):
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
        problems += self._claim_calibration_problems()
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

    def _claim_calibration_problems(self) -> list[str]:
        problems = []
        for i, d in enumerate(self.decisions):
            where = f"decisions[{i}].plugins[0].configuration.calibration: {d.plugin.calibration!r}"
            try:
                fitted_cascade(self.hallucination.claim_check, d.plugin.fitted_claim_check)
            except ConfigError as exc:
                problems.append(f"{where} {exc}")
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
            # a route's file fitted with the checker owns its weight and bias (checked at load)
            claim_check=fitted_cascade(g.claim_check, p.fitted_claim_check) or g.claim_check,
        )


def fitted_cascade(
    own: ClaimCheckSettings | None, fitted: ClaimCheckSettings | None
) -> ClaimCheckSettings | None:
    """The cascade a route runs when its calibration file was fitted with a claim checker.

    A file fitted with a claim checker holds the cascade's threshold and the checker's
    weight: read without that checker, or with other cascade settings, its numbers would
    decide silently wrong. So the policy must name the same checker with the same
    settings; the file gives the weight and bias.

    Args:
        own: The policy's ``hallucination.claim_check`` block.
        fitted: The block the route's file was fitted with (``None``: fitted without).

    Returns:
        The policy's block with the file's weight and bias (``None`` when the file was
        fitted without a checker).

    Raises:
        ConfigError: If the policy names no checker, or another one or other settings.
    """
    if fitted is None:
        return None
    if own is None:
        raise ConfigError(
            f"was fitted with the claim checker {fitted.checker!r} in a cascade; name it in "
            "hallucination.claim_check (the file gives its weight and bias)"
        )
    # what the fit read: all but the fitted numbers and the server's time limit
    free = {"weight", "bias", "timeout_s"}
    theirs = fitted.model_dump(exclude=free)
    differ = [
        f"{key}: policy {value!r}, file {theirs[key]!r}"
        for key, value in own.model_dump(exclude=free).items()
        if theirs[key] != value
    ]
    if differ:
        raise ConfigError(
            f"was fitted with another claim_check than the policy's ({'; '.join(differ)}); "
            "refit it (truthlens calibrate --config) or align the block"
        )
    return own.model_copy(update={"weight": fitted.weight, "bias": fitted.bias})


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
