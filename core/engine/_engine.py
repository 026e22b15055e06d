"""The TruthLens guard engine: classify -> route -> (skip | detect) -> NLI -> decide -> act."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar, Unpack

from .._decision import flagged
from .._errors import InvalidArgumentError
from .._types import DetectionInput, DetectionResult, DetectionStatus
from ..mitigation import MitigationOptions
from ..mitigation._mitigate import MitigationRequest, amitigate, mitigate, wants_mitigation
from ..mitigation._results import Assessment
from ..models import Detector, FactCheckClassifier, NLIExplainer
from ..models.claims import ClaimChecker
from ..observability import Metrics, Tracer
from ..observability._tracing import StageSpan
from ..policy import Policy, PolicySource, Router
from ..policy import load_policy as _load_policy
from ..policy._settings import ClaimCheckSettings
from ._blocked import blocked_error, shown_text
from ._claim_stage import ClaimStage, run_claim_check, settle_claim_check
from ._conclude import adeliver, deliver, finish, observe
from ._models import (
    detector_id,
    load_claim_checker,
    load_classifier,
    load_nli,
    load_policy_detector,
)
from ._options import (
    EngineKwargs,
    EngineOptions,
    GuardKwargs,
    OnBlock,
    parse_engine_options,
    split_options,
)
from ._runtime import Runtime
from ._stages import (
    Item,
    NLIStage,
    classify,
    detect,
    explain,
    needs_detection,
    normalised,
    route,
    route_calibrations,
    wants_nli,
)
from ._tools import GuardTools, ToolSet
from ._verdict import Verdict

__all__ = ["TruthLens"]

logger = logging.getLogger(__name__)

_M = TypeVar("_M")


class TruthLens:
    """Guards LLM answers according to a policy.

    Build it with :meth:`from_config`. Every call keeps its state in locals, so one
    engine can serve many threads; models are loaded once, on first use.

    Args:
        policy: The validated policy.
        **options: Engine options, typed by
            :class:`~truthlens_integrations.core.engine.EngineKwargs` and defined once
            in :class:`~truthlens_integrations.core.engine.EngineOptions` (``detector``,
            ``nli``, ``fact_checker``, ``metrics``, ``tracer``, ``domain_classifier``,
            ``on_block``, ``blocked_message``, ``expose_blocked_text``,
            ``align_quantities``, ``mitigation_options``, ``redact``,
            ``audit_hook``); see there for each.

    Raises:
        UnknownArgumentError: For an option that does not exist (with a suggestion).
        InvalidArgumentError: For an option of the wrong type (``nli=42``).
        ConfigError: If a route's calibration was fitted for another detector.
    """

    def __init__(self, policy: Policy, **options: Unpack[EngineKwargs]) -> None:
        if not isinstance(policy, Policy):
            raise InvalidArgumentError(
                f"TruthLens takes a Policy, got {type(policy).__name__}; use "
                "TruthLens.from_config(path_or_dict) to load one"
            )
        self.options: EngineOptions = parse_engine_options(options, "TruthLens")
        opts = self.options
        policy.check_calibrations(detector_id(opts.detector, policy))
        self.policy = policy
        self.align_quantities = opts.align_quantities
        self.mitigation_options = opts.mitigation_options or MitigationOptions()
        self.metrics: Metrics = opts.metrics or Metrics(enabled=False)
        self.tracer: Tracer = opts.tracer or Tracer(enabled=False)
        self._detector: Detector | None = opts.detector
        self._nli: NLIExplainer | None = opts.nli
        self._nli_resolved = opts.nli is not None
        self._fact_checker: FactCheckClassifier | None = opts.fact_checker
        self._claim_checker: ClaimChecker | None = opts.claim_checker
        self._load_lock = threading.Lock()
        self.router = Router(policy, domain_classifier=opts.domain_classifier)
        self._calibrations = route_calibrations(policy)  # each route's map, read once
        self.fact_check_threshold = (
            policy.hallucination_mitigation.fact_check_model.confidence_threshold
        )
        self.nli_threshold = policy.hallucination_mitigation.nli_model.confidence_threshold

    @classmethod
    def from_config(
        cls, config: PolicySource | Sequence[PolicySource] = None, **options: Unpack[GuardKwargs]
    ) -> TruthLens:
        """Build an engine from a policy file, YAML text, dict, list of these, or defaults.

        Args:
            config: Anything :func:`~truthlens_integrations.core.policy.load_policy`
                accepts; ``None`` for the built-in defaults.
            **options: Engine options (see :class:`EngineOptions`) and the policy
                knobs ``mode``, ``threshold`` and ``action`` (see
                :class:`PolicyKnobs`), which override the policy on every route;
                a knob left ``None`` keeps the policy's value. Typed by
                :class:`GuardKwargs`.

        Returns:
            The engine.

        Raises:
            ConfigError: If the policy is malformed.
            UnknownArgumentError: For an option that does not exist.
            InvalidArgumentError: For an option or knob of the wrong type.
        """
        split = split_options(options, own=(), where="TruthLens.from_config")
        return cls(split.knobs.apply(_load_policy(config)), **split.engine)

    def derive(self, *, policy: Policy | None = None, **options: Unpack[GuardKwargs]) -> TruthLens:
        """A new engine with some options or policy knobs changed; loaded models are shared.

        Adapters use it when given both an ``engine`` and options for it, so that
        neither is silently ignored.

        Args:
            policy: A replacement policy; ``None`` keeps this engine's.
            **options: Engine options and policy knobs to change (see
                :meth:`from_config`).

        Returns:
            The new engine (this one is unchanged).
        """
        split = split_options(options, own=(), where="TruthLens.derive")
        current = {k: getattr(self.options, k) for k in self.options.model_fields_set}
        # Models this engine has loaded already are handed over, not loaded again.
        models = ("detector", "nli", "fact_checker", "claim_checker")
        loaded = {name: getattr(self, f"_{name}") for name in models}
        current.update({k: v for k, v in loaded.items() if v is not None})
        return type(self)(split.knobs.apply(policy or self.policy), **{**current, **split.engine})

    @property
    def on_block(self) -> OnBlock:
        """What a blocked answer becomes: ``"message"`` or ``"raise"``."""
        return self.options.on_block

    @property
    def blocked_message(self) -> str:
        """The text shown in place of a blocked answer."""
        return self.options.blocked_message

    def shown(self, verdict: Verdict) -> str:
        """The text to show the user for ``verdict``, by this engine's ``on_block``.

        Args:
            verdict: A verdict of this engine.

        Returns:
            ``blocked_message`` for a blocked answer, else the verdict's output.

        Raises:
            BlockedResponseError: If the answer was blocked and ``on_block="raise"``.
        """
        return shown_text(
            verdict,
            raise_blocked=self.options.on_block == "raise",
            blocked_message=self.options.blocked_message,
        )

    # -- models, loaded once on first use -------------------------------------------

    @property
    def detector(self) -> Detector:
        """The detector, loaded on first use."""
        if self._detector is None:
            return self._load("_detector", load_policy_detector)
        return self._detector

    @property
    def nli(self) -> NLIExplainer | None:
        """The NLI explainer, or ``None`` when none is available."""
        if not self._nli_resolved:
            with self._load_lock:
                if not self._nli_resolved:
                    self._nli = load_nli(self.policy)
                    self._nli_resolved = True
        return self._nli

    @property
    def fact_checker(self) -> FactCheckClassifier:
        """The prompt classifier; treats every prompt as factual when none is available."""
        if self._fact_checker is None:
            return self._load("_fact_checker", load_classifier)
        return self._fact_checker

    @property
    def claim_stage(self) -> ClaimStage | None:
        """The cascade's claim checker and settings; ``None`` when there is none.

        The checker is the ``claim_checker`` option, else the one the policy's
        ``hallucination.claim_check`` block names, loaded on first use.
        """
        settings = self.policy.hallucination.claim_check
        if settings is not None and self._claim_checker is None:
            return ClaimStage(self._load("_claim_checker", load_claim_checker), settings)
        if self._claim_checker is None:
            return None
        return ClaimStage(self._claim_checker, settings or ClaimCheckSettings())

    def _load(self, attr: str, load: Callable[[Policy], _M]) -> _M:
        """The model in ``attr``, loaded with ``load`` and stored there if still unset.

        Runs under the lock, so threads that raced past the caller's check get the
        model the first one loaded.
        """
        with self._load_lock:
            model: _M | None = getattr(self, attr)
            if model is None:
                model = load(self.policy)
                setattr(self, attr, model)
            return model

    # -- public API ---------------------------------------------------------------------

    def guard(
        self,
        *,
        context: str | Sequence[str] | None,
        question: str | None,
        answer: str,
        **tools: Unpack[GuardTools],
    ) -> Verdict:
        """Guard one answer, and mitigate it when given a model and the route says so.

        Without ``llm`` (or ``answerer``) only the route's action applies
        (lightweight behaviour). With one, a flagged answer on a ``standard`` route is
        self-refined, on a ``premium`` route cross-checked by ``verification_llms``
        and arbitrated by ``judge_llm``; with a ``retriever`` (or ``answerer``),
        spans the context does not support (NLI neutral) trigger the
        retrieval-feedback loop instead. ``final_answer``, ``status``, ``history``,
        ``diff`` and ``cost`` on the verdict report what happened.

        Args:
            context: Grounding passages (documents, tool results); ``None`` or empty
                when the answer was not grounded.
            question: The user's prompt; routed and classified. Without one the
                prompt is treated as factual.
            answer: The LLM answer.
            **tools: The models mitigation may use (``llm``, ``retriever``,
                ``answerer``, ``verification_llms``, ``judge_llm``) and
                ``mitigation_options``; see :class:`GuardTools`.

        Returns:
            The verdict, with the text to show in ``output``.

        Raises:
            InvalidInputError: If the answer is empty or the context is not text.
            InvalidArgumentError: For a tool of the wrong type or an unknown one.
            BlockedResponseError: If the answer was blocked and ``on_block`` is
                ``"raise"``; the verdict is attached as ``error.verdict``.
        """
        given = ToolSet.of(tools, "TruthLens.guard")
        item = DetectionInput.create(context=context, question=question, answer=answer)
        verdict = self._run([item], given if given.given else None)[0]
        return self._raise_if_blocked(verdict)

    def _raise_if_blocked(self, verdict: Verdict) -> Verdict:
        if verdict.blocked and self.options.on_block == "raise":
            raise blocked_error(verdict)
        return verdict

    def guard_batch(self, inputs: Sequence[DetectionInput]) -> list[Verdict]:
        """Guard many answers with one classifier, detector and NLI pass each.

        Blocked answers come back as blocked verdicts even with ``on_block="raise"``,
        so that one blocked answer does not discard the others.

        Args:
            inputs: Validated inputs (see :meth:`DetectionInput.create`).

        Returns:
            One verdict per input, in input order.
        """
        return self._run(list(inputs)) if inputs else []

    async def aguard(
        self,
        *,
        context: str | Sequence[str] | None,
        question: str | None,
        answer: str,
        **tools: Unpack[GuardTools],
    ) -> Verdict:
        """Async :meth:`guard`.

        The models run in a worker thread; LLM calls use ``acomplete`` (verifiers
        concurrently) and retrievals ``aretrieve``.
        """
        given = ToolSet.of(tools, "TruthLens.aguard")
        item = DetectionInput.create(context=context, question=question, answer=answer)
        if not given.given:
            verdicts = await asyncio.to_thread(self._run, [item], None, hand_out=False)
            return self._raise_if_blocked(await adeliver(verdicts[0], self.options))
        return self._raise_if_blocked(await self._arun(item, given))

    async def aguard_batch(self, inputs: Sequence[DetectionInput]) -> list[Verdict]:
        """Async :meth:`guard_batch`; the models run in a worker thread."""
        items = list(inputs)
        verdicts = await asyncio.to_thread(self._run, items, hand_out=False) if items else []
        return [await adeliver(v, self.options) for v in verdicts]

    # -- pipeline -----------------------------------------------------------------------

    def _run(
        self, inputs: list[DetectionInput], tools: ToolSet | None = None, *, hand_out: bool = True
    ) -> list[Verdict]:
        """Analyse, mitigate, conclude; ``hand_out=False``: the async caller audits."""
        started = time.perf_counter()
        items = [Item.of(x) for x in inputs]
        with self.tracer.stage("guard", batch_size=len(items)) as root:
            self._analyse(items)
            request = self._mitigation_request(items[0], tools, started)
            if request is not None:
                with self.tracer.stage("mitigation", mode=request.settings.mode) as stage:
                    items[0].mitigation = mitigate(request, Runtime(self, items[0]))
                items[0].latency_ms["mitigation"] = stage.elapsed_ms
            verdicts = self._conclude(items, started, root)
        for verdict in verdicts:
            observe(verdict, self.metrics)
        return [deliver(v, self.options) for v in verdicts] if hand_out else verdicts

    async def _arun(self, data: DetectionInput, tools: ToolSet) -> Verdict:
        started = time.perf_counter()
        item = Item.of(data)
        with self.tracer.stage("guard", batch_size=1) as root:
            await asyncio.to_thread(self._analyse, [item])
            request = self._mitigation_request(item, tools, started)
            if request is not None:
                with self.tracer.stage("mitigation", mode=request.settings.mode) as stage:
                    item.mitigation = await amitigate(request, Runtime(self, item))
                item.latency_ms["mitigation"] = stage.elapsed_ms
            verdict = self._conclude([item], started, root)[0]
        observe(verdict, self.metrics)
        return await adeliver(verdict, self.options)

    def _mitigation_request(
        self, it: Item, tools: ToolSet | None, started: float
    ) -> MitigationRequest | None:
        if tools is None or it.route is None or it.detection is None:
            return None
        budget = it.route.settings.time_budget_s
        request = MitigationRequest(
            context=it.data.context,
            question=it.data.question,
            initial=self._assessment(it, it.detection),
            settings=it.route.settings,
            llm=tools.llm,
            retriever=tools.retriever,
            answerer=tools.answerer,
            verification_llms=tools.verification_llms,
            judge_llm=tools.judge_llm,
            options=tools.mitigation_options or self.mitigation_options,
            deadline=None if budget is None else started + budget,
        )
        return request if wants_mitigation(request) else None

    def _assessment(self, it: Item, result: DetectionResult) -> Assessment:
        assert it.route is not None
        judged = flagged(result, it.kept, it.route.settings.threshold)
        return Assessment(answer=result.answer, score=result.score, spans=it.kept, flagged=judged)

    def _assess(self, it: Item, context: Sequence[str], answer: str) -> Assessment:
        """Detect and NLI-filter a candidate answer with ``it``'s route (for the loops).

        Passages carrying instructions never count as evidence, also when a retrieval
        round brought them in.
        """
        data = DetectionInput.create(context=context, question=it.data.question, answer=answer)
        probe = Item.of(data)
        probe.fact_check, probe.route, probe.factual = it.fact_check, it.route, it.factual
        with normalised([probe]):
            self._check([probe])
        assert probe.detection is not None
        if probe.detection.status is DetectionStatus.UNVERIFIABLE:
            # A candidate the detector cannot read is not a fixed answer: it stays
            # flagged, with no score, so no loop converges on it.
            return Assessment(answer=probe.data.answer, score=None, flagged=True)
        return self._assessment(probe, probe.detection)

    def _analyse(self, items: list[Item]) -> None:
        """Classify, route, detect and NLI-explain, filling in each item's state."""
        with normalised(items):
            classify(items, lambda: self.fact_checker, tracer=self.tracer, metrics=self.metrics)
            route(
                items,
                self.router,
                tracer=self.tracer,
                fact_check_threshold=self.fact_check_threshold,
            )
            self._check([it for it in items if needs_detection(it)])

    def _check(self, items: list[Item]) -> None:
        """Detect, read the claims the cascade sends on, NLI-explain what routes ask for.

        The claim checker's spans join the kept ones after NLI: the stronger model's
        reading is not relabelled by the weaker one.
        """
        tracer, metrics, maps = self.tracer, self.metrics, self._calibrations
        detect(items, lambda: self.detector, tracer=tracer, metrics=metrics, calibrations=maps)
        claims = self.claim_stage
        if claims is not None:
            run_claim_check(items, claims, tracer=tracer, metrics=metrics)
        wanted = [it for it in items if wants_nli(it)]
        explainer = self.nli if wanted else None
        if explainer is not None:
            nli = NLIStage(explainer, threshold=self.nli_threshold, align=self.align_quantities)
            explain(wanted, nli, tracer=tracer, metrics=metrics)
        settle_claim_check(items)

    def _conclude(self, items: list[Item], started: float, root: StageSpan) -> list[Verdict]:
        with self.tracer.stage("action") as stage:
            total_ms = (time.perf_counter() - started) * 1000.0 / len(items)
            redact, metrics = self.options.redact, self.metrics
            verdicts = [finish(it, total_ms, stage, redact, metrics, logger) for it in items]
        root.set_attribute("truthlens.mitigated", sum(not v.passed for v in verdicts))
        root.set_attribute("truthlens.not_checked", sum(not v.checked for v in verdicts))
        return verdicts
