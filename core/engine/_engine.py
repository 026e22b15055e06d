"""The TruthLens guard engine: classify -> route -> (skip | detect) -> NLI -> decide -> act."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .._errors import InvalidArgumentError, ModelLoadError
from .._metadata import build_metadata
from .._types import (
    Decision,
    DetectionInput,
    DetectionResult,
    DetectionStatus,
    HallucinationSpan,
    NLILabel,
)
from ..llm import LLM
from ..mitigation import (
    Assessment,
    GroundedAnswerer,
    MitigationOptions,
    MitigationRequest,
    MitigationResult,
    Retriever,
    amitigate,
    mitigate,
    wants_mitigation,
)
from ..models import Detector, FactCheckClassifier, NLIExplainer
from ..observability import Metrics, StageSpan, Tracer, log_event
from ..policy import Action, Policy, PolicySource, Router, RouteResult
from ..policy import load_policy as _load_policy
from ._alignment import align_quantities
from ._blocked import blocked_error
from ._injection import ContextFlag, split_instructions
from ._models import load_classifier, load_nli, load_policy_detector
from ._options import (
    EngineOptions,
    PolicyKnobs,
    check_guard_tools,
    parse_engine_options,
    split_options,
)
from ._premise import answer_sentence, select_premise
from ._verdict import SEVERITY, NotCheckedReason, Verdict, mitigation_fields, redact_verdict

__all__ = ["TruthLens"]

logger = logging.getLogger(__name__)


@dataclass
class _Item:
    """Per-request working state; one per item of one call, never shared."""

    data: DetectionInput
    fact_check: tuple[bool, float] = (True, 1.0)
    route: RouteResult | None = None
    factual: bool = True
    detection: DetectionResult | None = None
    kept: list[HallucinationSpan] = field(default_factory=list)
    dropped: list[HallucinationSpan] = field(default_factory=list)
    latency_ms: dict[str, float] = field(default_factory=dict)
    mitigation: MitigationResult | None = None
    instructions: list[ContextFlag] = field(default_factory=list)

    @classmethod
    def of(cls, data: DetectionInput) -> _Item:
        """An item whose evidence leaves out passages that carry instructions."""
        evidence, flags = split_instructions(data.context)
        if flags:
            data = data.model_copy(update={"context": evidence})
        return cls(data=data, instructions=flags)

    @property
    def question(self) -> str:
        return self.data.question or ""


@dataclass(frozen=True)
class _Tools:
    """The caller's models for mitigation; none given means lightweight behaviour."""

    llm: LLM | None = None
    retriever: Retriever | None = None
    answerer: GroundedAnswerer | None = None
    verification_llms: Sequence[LLM] | None = None
    judge_llm: LLM | None = None
    options: MitigationOptions | None = None

    @property
    def given(self) -> bool:
        return self.llm is not None or self.answerer is not None


class _Runtime:
    """The engine's detector and NLI model, as the mitigation loops see them."""

    def __init__(self, engine: TruthLens, item: _Item) -> None:
        self._engine = engine
        self._item = item

    def assess(self, context: Sequence[str], answer: str) -> Assessment:
        return self._engine._assess(self._item, context, answer)

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[NLILabel, float]] | None:
        explainer = self._engine.nli
        if explainer is None:
            return None
        if not pairs:
            return []
        labels = explainer.explain(list(pairs))
        self._engine.metrics.record_model_use(
            model=_model_name(explainer, "nli"), role="nli", count=len(pairs)
        )
        return [(label, float(conf)) for label, conf in labels]


def _model_name(obj: object, fallback: str) -> str:
    name = getattr(obj, "model_id", None)
    return name if isinstance(name, str) and name else fallback


def _with_warning(answer: str, warning: str) -> str:
    """The answer followed by the warning, added once even if guarded twice."""
    note = warning.strip()
    if answer.rstrip().endswith(note):
        return answer
    return f"{answer.rstrip()}\n\n{note}"


class TruthLens:
    """Guards LLM answers according to a policy.

    Build it with :meth:`from_config`. Every call keeps its state in locals, so one
    engine can serve many threads; models are loaded once, on first use.

    Args:
        policy: The validated policy.
        **options: Engine options, all defined once in
            :class:`~truthlens_integrations.core.engine.EngineOptions` (``detector``,
            ``nli``, ``fact_checker``, ``metrics``, ``tracer``, ``domain_classifier``,
            ``raise_on_block``, ``align_quantities``, ``mitigation_options``,
            ``redact``, ``audit_hook``); see there for each.

    Raises:
        UnknownArgumentError: For an option that does not exist (with a suggestion).
        InvalidArgumentError: For an option of the wrong type (``nli=42``).
    """

    def __init__(self, policy: Policy, **options: Any) -> None:
        if not isinstance(policy, Policy):
            raise InvalidArgumentError(
                f"TruthLens takes a Policy, got {type(policy).__name__}; use "
                "TruthLens.from_config(path_or_dict) to load one"
            )
        self.options: EngineOptions = parse_engine_options(options, "TruthLens")
        opts = self.options
        self.policy = policy
        self.raise_on_block = opts.raise_on_block
        self.align_quantities = opts.align_quantities
        self.mitigation_options = opts.mitigation_options or MitigationOptions()
        self.metrics: Metrics = opts.metrics or Metrics(enabled=False)
        self.tracer: Tracer = opts.tracer or Tracer(enabled=False)
        self._detector: Detector | None = opts.detector
        self._nli: NLIExplainer | None = opts.nli
        self._nli_resolved = opts.nli is not None
        self._fact_checker: FactCheckClassifier | None = opts.fact_checker
        self._load_lock = threading.Lock()
        self.router = Router(policy, domain_classifier=opts.domain_classifier)
        self.fact_check_threshold = policy.hallucination_mitigation.fact_check_model.threshold
        self.nli_threshold = policy.hallucination_mitigation.nli_model.threshold

    @classmethod
    def from_config(
        cls,
        config: PolicySource | Sequence[PolicySource] = None,
        *,
        mode: str | None = None,
        threshold: float | None = None,
        action: str | None = None,
        **options: Any,
    ) -> TruthLens:
        """Build an engine from a policy file, YAML text, dict, list of these, or defaults.

        Args:
            config: Anything :func:`~truthlens_integrations.core.policy.load_policy`
                accepts; ``None`` for the built-in defaults.
            mode: Overrides the mode on every route (``lightweight``, ``standard``,
                ``premium``); ``None`` keeps the policy's.
            threshold: Overrides the flagging threshold on every route.
            action: Overrides ``hallucination_action`` on every route.
            **options: Engine options (see :class:`TruthLens`).

        Returns:
            The engine.

        Raises:
            ConfigError: If the policy is malformed.
            UnknownArgumentError: For an option that does not exist.
            InvalidArgumentError: For an option or knob of the wrong type.
        """
        knobs = _knobs(options, "TruthLens.from_config", mode, threshold, action)
        return cls(knobs.apply(_load_policy(config)), **options)

    def derive(
        self,
        *,
        policy: Policy | None = None,
        mode: str | None = None,
        threshold: float | None = None,
        action: str | None = None,
        **options: Any,
    ) -> TruthLens:
        """A new engine with some options or policy knobs changed; loaded models are shared.

        Adapters use it when given both an ``engine`` and options for it, so that
        neither is silently ignored.

        Args:
            policy: A replacement policy; ``None`` keeps this engine's.
            mode: See :meth:`from_config`.
            threshold: See :meth:`from_config`.
            action: See :meth:`from_config`.
            **options: Engine options to change (see :class:`TruthLens`).

        Returns:
            The new engine (this one is unchanged).
        """
        knobs = _knobs(options, "TruthLens.derive", mode, threshold, action)
        current = {k: getattr(self.options, k) for k in self.options.model_fields_set}
        # Models this engine has loaded already are handed over, not loaded again.
        loaded = {"detector": self._detector, "nli": self._nli, "fact_checker": self._fact_checker}
        current.update({k: v for k, v in loaded.items() if v is not None})
        return type(self)(knobs.apply(policy or self.policy), **{**current, **options})

    # -- models, loaded once on first use -------------------------------------------

    @property
    def detector(self) -> Detector:
        """The detector, loaded on first use."""
        if self._detector is None:
            with self._load_lock:
                if self._detector is None:
                    self._detector = load_policy_detector(self.policy)
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
            with self._load_lock:
                if self._fact_checker is None:
                    self._fact_checker = load_classifier(self.policy)
        return self._fact_checker

    # -- public API ---------------------------------------------------------------------

    def guard(
        self,
        *,
        context: str | Sequence[str] | None,
        question: str | None,
        answer: str,
        llm: LLM | None = None,
        retriever: Retriever | None = None,
        verification_llms: Sequence[LLM] | None = None,
        judge_llm: LLM | None = None,
        answerer: GroundedAnswerer | None = None,
        mitigation_options: MitigationOptions | None = None,
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
            llm: The model that refines, regenerates and (by default) judges.
            retriever: Enables the retrieval-feedback loop.
            verification_llms: Premium verifiers; without them premium mode
                falls back to self-refine.
            judge_llm: Premium judge; ``llm`` when ``None``.
            answerer: Re-runs the caller's whole pipeline with a rewritten query
                (retrieval-feedback loop); an alternative to ``retriever`` + ``llm``.
            mitigation_options: Loop tuning and prompt overrides for this call;
                ``None`` uses the engine's ``mitigation_options``.

        Returns:
            The verdict, with the text to show in ``output``.

        Raises:
            InvalidInputError: If the answer is empty or the context is not text.
            BlockedResponseError: If the answer was blocked and ``raise_on_block``
                is set; the verdict is attached as ``error.verdict``.
        """
        check_guard_tools(
            llm=llm,
            retriever=retriever,
            answerer=answerer,
            verification_llms=verification_llms,
            judge_llm=judge_llm,
            mitigation_options=mitigation_options,
        )
        item = DetectionInput.create(context=context, question=question, answer=answer)
        tools = _Tools(llm, retriever, answerer, verification_llms, judge_llm, mitigation_options)
        verdict = self._run([item], tools if tools.given else None)[0]
        return self._raise_if_blocked(verdict)

    def _raise_if_blocked(self, verdict: Verdict) -> Verdict:
        if verdict.blocked and self.raise_on_block:
            raise blocked_error(verdict)
        return verdict

    def guard_batch(self, inputs: Sequence[DetectionInput]) -> list[Verdict]:
        """Guard many answers with one classifier, detector and NLI pass each.

        Blocked answers come back as blocked verdicts even with ``raise_on_block``,
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
        llm: LLM | None = None,
        retriever: Retriever | None = None,
        verification_llms: Sequence[LLM] | None = None,
        judge_llm: LLM | None = None,
        answerer: GroundedAnswerer | None = None,
        mitigation_options: MitigationOptions | None = None,
    ) -> Verdict:
        """Async :meth:`guard`.

        The models run in a worker thread; LLM calls use ``acomplete`` (verifiers
        concurrently) and retrievals ``aretrieve``.
        """
        check_guard_tools(
            llm=llm,
            retriever=retriever,
            answerer=answerer,
            verification_llms=verification_llms,
            judge_llm=judge_llm,
            mitigation_options=mitigation_options,
            where="TruthLens.aguard",
        )
        tools = _Tools(llm, retriever, answerer, verification_llms, judge_llm, mitigation_options)
        if not tools.given:
            return await asyncio.to_thread(
                self.guard, context=context, question=question, answer=answer
            )
        item = DetectionInput.create(context=context, question=question, answer=answer)
        return self._raise_if_blocked(await self._arun(item, tools))

    async def aguard_batch(self, inputs: Sequence[DetectionInput]) -> list[Verdict]:
        """Async :meth:`guard_batch`; the models run in a worker thread."""
        return await asyncio.to_thread(self.guard_batch, list(inputs))

    # -- pipeline -----------------------------------------------------------------------

    def _run(self, inputs: list[DetectionInput], tools: _Tools | None = None) -> list[Verdict]:
        started = time.perf_counter()
        items = [_Item.of(x) for x in inputs]
        with self.tracer.stage("guard", batch_size=len(items)) as root:
            self._analyse(items)
            request = self._mitigation_request(items[0], tools, started)
            if request is not None:
                with self.tracer.stage("mitigation", mode=request.settings.mode) as stage:
                    items[0].mitigation = mitigate(request, _Runtime(self, items[0]))
                items[0].latency_ms["mitigation"] = stage.elapsed_ms
            verdicts = self._conclude(items, started, root)
        for verdict in verdicts:
            self._observe(verdict)
        return verdicts

    async def _arun(self, data: DetectionInput, tools: _Tools) -> Verdict:
        started = time.perf_counter()
        item = _Item.of(data)
        with self.tracer.stage("guard", batch_size=1) as root:
            await asyncio.to_thread(self._analyse, [item])
            request = self._mitigation_request(item, tools, started)
            if request is not None:
                with self.tracer.stage("mitigation", mode=request.settings.mode) as stage:
                    item.mitigation = await amitigate(request, _Runtime(self, item))
                item.latency_ms["mitigation"] = stage.elapsed_ms
            verdict = self._conclude([item], started, root)[0]
        self._observe(verdict)
        return verdict

    def _mitigation_request(
        self, it: _Item, tools: _Tools | None, started: float
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
            options=tools.options or self.mitigation_options,
            deadline=None if budget is None else started + budget,
        )
        return request if wants_mitigation(request) else None

    def _assessment(self, it: _Item, result: DetectionResult) -> Assessment:
        assert it.route is not None
        flagged = bool(it.kept and result.score >= it.route.settings.threshold)
        return Assessment(answer=result.answer, score=result.score, spans=it.kept, flagged=flagged)

    def _assess(self, it: _Item, context: Sequence[str], answer: str) -> Assessment:
        """Detect and NLI-filter a candidate answer with ``it``'s route (for the loops).

        Passages carrying instructions never count as evidence, also when a retrieval
        round brought them in.
        """
        evidence, _ = split_instructions(context)
        data = DetectionInput.create(context=evidence, question=it.data.question, answer=answer)
        probe = _Item(data=data, fact_check=it.fact_check, route=it.route, factual=it.factual)
        self._detect([probe])
        self._explain([probe])
        assert probe.detection is not None
        return self._assessment(probe, probe.detection)

    def _analyse(self, items: list[_Item]) -> None:
        """Classify, route, detect and NLI-explain, filling in each item's state."""
        self._classify(items)
        self._route(items)
        # With grounding given, the answer is checked whatever the prompt classifier
        # thinks, unless the policy says to skip non-factual prompts.
        to_detect = [
            it
            for it in items
            if it.route is not None
            and it.route.settings.enabled
            and it.data.grounded
            and (it.factual or not it.route.settings.skip_non_factual_grounded)
        ]
        self._detect(to_detect)
        self._explain(to_detect)

    def _conclude(self, items: list[_Item], started: float, root: StageSpan) -> list[Verdict]:
        with self.tracer.stage("action") as stage:
            total_ms = (time.perf_counter() - started) * 1000.0 / len(items)
            verdicts = [self._verdict(it, total_ms, stage) for it in items]
        root.set_attribute("truthlens.mitigated", sum(not v.passed for v in verdicts))
        return verdicts

    def _classify(self, items: list[_Item]) -> None:
        asked = [it for it in items if it.data.question is not None]
        if not asked:
            return
        with self.tracer.stage("classifier", prompts=len(asked)) as stage:
            checker = self.fact_checker
            results = checker.classify([it.question for it in asked])
        if len(results) != len(asked):
            raise ModelLoadError(
                f"the prompt classifier returned {len(results)} results for {len(asked)} prompts"
            )
        share = stage.elapsed_ms / len(asked)
        self.metrics.record_model_use(
            model=_model_name(checker, "classifier"), role="classifier", count=len(asked)
        )
        for it, (needs, confidence) in zip(asked, results, strict=True):
            it.fact_check = (bool(needs), float(confidence))
            it.latency_ms["classifier"] = share

    def _route(self, items: list[_Item]) -> None:
        with self.tracer.stage("routing") as stage:
            for it in items:
                it.route = self.router.route(it.question, fact_check=it.fact_check)
                needs, confidence = it.fact_check
                it.factual = needs and confidence >= self.fact_check_threshold
        share = stage.elapsed_ms / len(items)
        for it in items:
            it.latency_ms["routing"] = share

    def _detect(self, items: list[_Item]) -> None:
        if not items:
            return
        with self.tracer.stage("detector", inputs=len(items)) as stage:
            detector = self.detector
            results = detector.detect_batch([it.data for it in items])
        self.metrics.record_model_use(model=detector.model_id, role="detector", count=len(items))
        share = stage.elapsed_ms / len(items)
        for it, result in zip(items, results, strict=True):
            it.detection = result
            it.kept = list(result.spans)
            it.latency_ms["detector"] = share

    def _explain(self, items: list[_Item]) -> None:
        wanted = [
            it for it in items if it.kept and it.route is not None and it.route.settings.use_nli
        ]
        if not wanted:
            return
        explainer = self.nli
        if explainer is None:
            return
        pairs: list[tuple[str, str]] = []
        owners: list[tuple[_Item, HallucinationSpan]] = []
        with self.tracer.stage("context", spans=sum(len(it.kept) for it in wanted)) as ctx:
            for it in wanted:
                for span in it.kept:
                    hypothesis = answer_sentence(it.data.answer, span.start, span.end)
                    pairs.append((select_premise(it.data.context, hypothesis), hypothesis))
                    owners.append((it, span))
        with self.tracer.stage("nli", pairs=len(pairs)) as stage:
            labels = explainer.explain(pairs)
        self.metrics.record_model_use(
            model=_model_name(explainer, "nli"), role="nli", count=len(pairs)
        )
        for it in wanted:
            it.kept = []
            it.latency_ms["context"] = ctx.elapsed_ms / len(wanted)
            it.latency_ms["nli"] = stage.elapsed_ms / len(wanted)
        if len(labels) != len(pairs):
            raise ModelLoadError(
                f"the NLI explainer returned {len(labels)} labels for {len(pairs)} pairs"
            )
        for (it, span), predicted in zip(owners, labels, strict=True):
            label, confidence = self._label(it, span, predicted)
            labelled = span.model_copy(
                update={
                    "nli_label": label,
                    "nli_confidence": float(confidence),
                    "severity": SEVERITY[label],
                }
            )
            # A confident entailment means the detector flagged supported text; a
            # weaker one does not confirm the span, so it counts as neutral.
            if label == "entailment" and confidence >= self.nli_threshold:
                it.dropped.append(labelled)
            elif label == "entailment":
                neutral = {"nli_label": "neutral", "severity": SEVERITY["neutral"]}
                it.kept.append(labelled.model_copy(update=neutral))
            else:
                it.kept.append(labelled)

    def _label(
        self, it: _Item, span: HallucinationSpan, predicted: tuple[str, float]
    ) -> tuple[NLILabel, float]:
        label, confidence = predicted
        if label not in SEVERITY:
            raise ModelLoadError(
                f"the NLI explainer returned {label!r}; expected entailment, neutral "
                "or contradiction"
            )
        if self.align_quantities:
            # Numbers are checked against the whole context, not only the premise.
            aligned = align_quantities(it.data.context, it.data.answer, span.start, span.end)
            if aligned is not None:
                return aligned
        return cast("NLILabel", label), float(confidence)

    def _verdict(self, it: _Item, total_ms: float, stage: StageSpan) -> Verdict:
        assert it.route is not None  # set by _route for every item
        settings = it.route.settings
        result = it.detection
        score = result.score if result is not None else None
        detected = bool(result is not None and it.kept and result.score >= settings.threshold)
        original_score, flagged_at_first = score, detected
        answer, kept = it.data.answer, it.kept
        mitigated = it.mitigation
        if mitigated is not None:
            # Everything below describes the answer that will be shown: the best one.
            answer, kept = mitigated.final.answer, mitigated.final.spans
            score, detected = mitigated.final.score, mitigated.final.flagged
        reason = _not_checked(it)
        # A factual prompt without grounding, or grounding the detector could not
        # read, is answered but unverified: the route's unverified action applies.
        unverified = bool(
            settings.enabled
            and ((it.factual and reason == "no_grounding") or reason == "unverifiable")
        )
        action: Action | None = None
        if detected:
            action = settings.hallucination_action
        elif unverified:
            action = settings.unverified_factual_action
        blocked = action == "block"
        output: str | None
        if blocked:
            output = None
        elif action == "body" or (settings.enabled and settings.require_disclaimer):
            output = _with_warning(answer, settings.warning_template)
        else:
            output = answer
        spans = kept if detected else []
        iterations = mitigated.iterations if mitigated is not None else 0
        include_details = settings.include_hallucination_details and not blocked
        if self.options.redact:
            include_details = False
        for span in spans:
            stage.record_hallucination_span(
                span, action=action or "none", include_details=include_details
            )
        latency = {**it.latency_ms, "total": total_ms}
        verdict = Verdict(
            decision=Decision.MITIGATE
            if action is not None or mitigated is not None
            else Decision.PASS,
            score=score,
            threshold=settings.threshold,
            detected=detected,
            spans=spans,
            dropped_spans=it.dropped,
            max_severity=max((s.severity or 0 for s in spans), default=0),
            contradiction_count=sum(s.nli_label == "contradiction" for s in spans),
            fact_check_needed=it.factual,
            fact_check_confidence=it.fact_check[1] if it.data.question is not None else None,
            unverified=unverified,
            context_missing=not it.data.grounded,
            enabled=settings.enabled,
            mode=settings.mode,
            iterations=iterations,
            latency_ms=latency,
            original_answer=it.data.answer,
            output=output,
            blocked=blocked,
            action=action,
            route=it.route.decision,
            metadata=build_metadata(
                enabled=settings.enabled and result is not None,
                mode=settings.mode,
                score=score,
                detected=detected,
                iterations=iterations,
                latency_ms=total_ms,
                fact_check_needed=it.factual,
                spans=spans,
                unverified_factual=unverified,
                context_missing=not it.data.grounded,
                include_details=include_details,
                not_checked_reason=reason,
                context_instructions=len(it.instructions),
            ),
            detection=result,
            checked=reason is None,
            not_checked_reason=reason,
            context_instructions=it.instructions,
            **mitigation_fields(
                mitigated,
                original=it.data.answer,
                original_score=original_score,
                flagged=flagged_at_first,
                final_answer=None if blocked else answer,
            ),
        )
        if reason is not None and mitigated is None:
            verdict = verdict.model_copy(update={"status": "not_checked"})
        if mitigated is not None:
            for use in mitigated.cost.models:
                self.metrics.record_model_use(model=use.model, role=use.role, count=use.calls)
        log_event(
            logger,
            "guard.verdict",
            level=logging.DEBUG if verdict.passed else logging.INFO,
            decision=verdict.decision.value,
            route=verdict.route,
            mode=verdict.mode,
            score=verdict.score,
            spans=len(spans),
            dropped=len(it.dropped),
            action=action,
            status=verdict.status,
            not_checked=reason,
            iterations=iterations,
            latency_ms=round(total_ms, 3),
        )
        return self._deliver(verdict)

    def _deliver(self, verdict: Verdict) -> Verdict:
        """Hand the full verdict to the audit hook; redact it for the caller if asked."""
        if self.options.audit_hook is not None:
            self.options.audit_hook(verdict)
        if not self.options.redact:
            return verdict
        return redact_verdict(verdict, verdict.metadata)

    def _observe(self, verdict: Verdict) -> None:
        ran = verdict.detection is not None
        self.metrics.record_detection(
            decision=verdict.route,
            mode=verdict.mode,
            detected=verdict.detected,
            score=verdict.score,
            iterations=verdict.iterations if ran else None,
        )
        for operation, ms in verdict.latency_ms.items():
            self.metrics.observe_latency(mode=verdict.mode, operation=operation, seconds=ms / 1000)


def _knobs(
    options: dict[str, Any], where: str, mode: object, threshold: object, action: object
) -> PolicyKnobs:
    """The policy knobs, after checking ``options`` (unknown names get a suggestion)."""
    given = {"mode": mode, "threshold": threshold, "action": action}
    split = split_options(
        {**options, **{k: v for k, v in given.items() if v is not None}}, own=(), where=where
    )
    return split.knobs


def _not_checked(it: _Item) -> NotCheckedReason | None:
    """Why ``it``'s answer was not checked against grounding, or ``None`` if it was."""
    assert it.route is not None
    if not it.route.settings.enabled:
        return "disabled"
    if not it.data.grounded:
        return "no_grounding"
    if it.detection is None:
        return "non_factual"
    if it.detection.status is DetectionStatus.UNVERIFIABLE:
        return "unverifiable"
    return None
