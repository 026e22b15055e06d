"""The global blocks of a policy: ``hallucination`` and ``hallucination_mitigation``.

Every threshold is named for what it thresholds (:func:`named_thresholds`); a response
threshold may be declared by what a mistake costs (:class:`CostThreshold`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, Strict, ValidationError, model_validator

from .._calibration._claim import MAX_CLAIM_BIAS, MAX_CLAIM_WEIGHT
from .._checker_kinds import CHECKER_OPTIONS, checker_kind
from .._decision import Action, reaches
from .._language import DEFAULT_LANGUAGES, Languages, check_languages
from .._scoring import optimal_threshold
from ._fields import (
    DEFAULT_WARNING_TEMPLATE,
    Backend,
    Budget,
    Flag,
    Iterations,
    Mode,
    Name,
    Precision,
    StrictModel,
    Unit,
)

__all__ = [
    "ClaimCheckSettings",
    "CostThreshold",
    "DetectorModelSettings",
    "FactCheckModelSettings",
    "HallucinationSettings",
    "MitigationModels",
    "ModelSettings",
    "NLIModelSettings",
    "PremiumSettings",
    "StandardSettings",
    "named_thresholds",
]


class CostThreshold(StrictModel):
    """A response threshold declared by what a mistake costs (the design's proposition 1).

    ``threshold = 1 / (1 + ratio * (1 - prior) / prior)``: with the default prior of 0.5
    it is ``1 / (1 + ratio)``, the threshold at which flagging a calibrated probability
    costs least. A ratio of 9 (a missed hallucination costs nine false alarms) flags at
    0.1; a ratio of 0.25 (creative writing) at 0.8.

    Attributes:
        ratio: The cost of a missed hallucination over the cost of a false alarm (> 0).
        prior: The share of this route's answers that hallucinate, in (0, 1).
    """

    ratio: Annotated[float, Strict(), Field(gt=0.0, le=1e6)]
    prior: Annotated[float, Strict(), Field(gt=0.0, lt=1.0)] = 0.5

    @property
    def threshold(self) -> float:
        """The response threshold these costs call for."""
        return optimal_threshold(self.ratio, self.prior)


def named_thresholds(data: Any, name: str) -> Any:
    """``data`` (a policy block as read) with its thresholds under their one name.

    Every threshold of a policy is named for what it thresholds; the design documents'
    bare ``threshold`` is refused, and the error names the key to write instead. Where
    ``name`` is ``response_threshold``, a ``cost`` block (:class:`CostThreshold`) may
    declare it instead: it becomes that threshold here, so the loaded policy, its knobs
    and its copies carry one number.

    Raises:
        ValueError: If ``data`` has a ``threshold`` key, or both ``cost`` and ``name``.
    """
    if not isinstance(data, Mapping):
        return data
    if "threshold" in data:
        raise ValueError(
            f"'threshold' is not a policy key; write {name} (each threshold is named for "
            "what it thresholds)"
        )
    if name != "response_threshold" or "cost" not in data:
        return data
    if data.get(name) is not None:
        raise ValueError(f"give {name} or cost, not both (cost declares {name})")
    try:
        cost = CostThreshold.model_validate(data["cost"])
    except ValidationError as exc:
        problems = [
            f"cost.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}".replace("cost.:", "cost:")
            for e in exc.errors(include_url=False, include_input=False)
        ]
        raise ValueError("; ".join(problems)) from None
    out = {k: v for k, v in data.items() if k != "cost"}
    out[name] = cost.threshold
    return out


class StandardSettings(StrictModel):
    """Standard mode: self-refinement with the same model.

    Attributes:
        max_iterations: Refinement rounds at most.
        convergence_threshold: Stop refining once the score falls below this.
    """

    max_iterations: Iterations = 3
    convergence_threshold: Unit = 0.4


class PremiumSettings(StrictModel):
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


ClaimCheckWhen = Literal["uncertain", "flagged", "always"]


class ClaimCheckSettings(StrictModel):
    """The ``claim_check:`` block: a claim checker behind the detector, in a cascade.

    Attributes:
        checker: ``bundled`` (the bundled entailment branch), a model folder or a hub id
            (a sequence classifier: MiniCheck, FactCG, an NLI cross-encoder, HHEM), the
            URL of an OpenAI-compatible server (``http://localhost:11434/v1``), or a
            ``.gguf`` file run in this process (the ``llama-cpp`` extra).
        protocol: For a server or a GGUF file: ``minicheck`` (Document / Claim, Yes or
            No) or ``json`` (a judge's verdict and quote per claim).
        model: For a server: the model to ask; unset, the server's only model.
        supported_label: For a sequence classifier whose labels do not say which class
            means supported (``LABEL_0`` / ``LABEL_1``): that class's index or name.
        trust_remote_code: For a sequence classifier that ships its own code (HHEM):
            run it. Off unless set.
        when: Which answers the checker reads: ``uncertain`` (detector score inside
            ``band``; the default, so the common case costs what the detector costs),
            ``flagged`` (score at or above the route's threshold) or ``always``.
        band: ``[low, high]`` detector scores that count as uncertain.
        weight: How much the checker's worst claim moves the response score (the
            ``claim`` term of the response map; ``truthlens calibrate`` fits it).
        bias: Added to the combined score's logit.
        timeout_s: For a server: seconds one call may take.
    """

    checker: Name = "bundled"
    protocol: Literal["minicheck", "json"] | None = None
    model: Name | None = None
    supported_label: Annotated[int, Strict()] | Name | None = None
    trust_remote_code: Flag = False
    when: ClaimCheckWhen = "uncertain"
    band: tuple[Unit, Unit] = (0.2, 0.8)
    weight: Annotated[float, Strict(), Field(ge=0.0, le=MAX_CLAIM_WEIGHT)] = 1.0
    bias: Annotated[float, Strict(), Field(ge=-MAX_CLAIM_BIAS, le=MAX_CLAIM_BIAS)] = 0.0
    timeout_s: Budget = 30.0

    def sends(self, score: float, threshold: float) -> bool:
        """Whether the cascade sends an answer of detector score ``score`` to the checker.

        Args:
            score: The answer's (calibrated) detector score.
            threshold: The route's threshold (``when: flagged`` sends at it).
        """
        if self.when == "always":
            return True
        if self.when == "flagged":
            return reaches(score, threshold)
        low, high = self.band
        return low <= score <= high

    @model_validator(mode="after")
    def _fits_the_checker(self) -> ClaimCheckSettings:
        low, high = self.band
        if not low < high:
            raise ValueError(f"band must be [low, high] with low < high, got [{low}, {high}]")
        if "band" in self.model_fields_set and self.when != "uncertain":
            raise ValueError(f"band applies to when: uncertain, not when: {self.when}")
        kind = checker_kind(self.checker)
        options = ("protocol", "model", "timeout_s", "supported_label", "trust_remote_code")
        allowed = CHECKER_OPTIONS[kind]
        given = [n for n in options if n in self.model_fields_set and n not in allowed]
        if given:
            named = f"checker {self.checker!r} (a {kind} checker)"
            raise ValueError(f"{', '.join(given)} do(es) not apply to {named}")
        return self


class HallucinationSettings(StrictModel):
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
        response_threshold: Response score at or above which an answer is flagged; a
            ``cost`` block (:class:`CostThreshold`: ``ratio``, ``prior``) may declare it.
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
        claim_check: A claim checker behind the detector (:class:`ClaimCheckSettings`);
            ``None``: none.
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
    claim_check: ClaimCheckSettings | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_threshold(cls, data: Any) -> Any:
        return named_thresholds(data, "response_threshold")


class ModelSettings(StrictModel):
    """One model of the HaluGate pipeline (the three below add their threshold).

    Attributes:
        model_id: Local path or hub id; ``None`` uses the bundled model.
        use_cpu: Force the CPU; ``False`` lets the device helper choose.
    """

    # The model's threshold, named for what it thresholds.
    _threshold_key: ClassVar[str] = ""

    model_id: str | None = None
    use_cpu: Flag = False

    @model_validator(mode="before")
    @classmethod
    def _bare_threshold(cls, data: Any) -> Any:
        if not cls._threshold_key:
            return data
        return named_thresholds(data, cls._threshold_key)


class FactCheckModelSettings(ModelSettings):
    """The prompt classifier (``fact_check_model``).

    Attributes:
        confidence_threshold: The confidence a ``needs_fact_check`` prediction needs.
    """

    _threshold_key: ClassVar[str] = "confidence_threshold"

    confidence_threshold: Unit = 0.6


class DetectorModelSettings(ModelSettings):
    """The token detector (``hallucination_model``).

    Attributes:
        token_threshold: The token probability above which a token is flagged (spans
            are runs of flagged words).
        languages: The languages the detector reads (ISO 639 codes, ``[en]`` for the
            bundled models; ``any`` for a multilingual model). An answer in another
            language is not checked (reason ``language``: the route's
            ``unverified_factual_action`` applies), and context passages in another
            language are left out of the evidence (the verdict's ``context_not_read``).
            The detector's setting of the same name (``DetectionConfig.languages``).
    """

    _threshold_key: ClassVar[str] = "token_threshold"

    token_threshold: Unit = 0.5
    languages: Annotated[Languages, BeforeValidator(check_languages)] = DEFAULT_LANGUAGES


class NLIModelSettings(ModelSettings):
    """The NLI explainer (``nli_model``).

    Attributes:
        confidence_threshold: The confidence an NLI label needs to count: an entailment
            this sure drops the span as a false positive, a contradiction (or
            entailment) below it reads neutral.
    """

    _threshold_key: ClassVar[str] = "confidence_threshold"

    confidence_threshold: Unit = 0.9


class MitigationModels(StrictModel):
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
