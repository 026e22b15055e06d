"""The analysis stages of the guard pipeline, as functions of their models.

Each stage takes the items of one call, the model it runs and the tracer and
metrics it reports to, and fills in the items' state; none keeps state of its own,
so :class:`~truthlens_integrations.core.engine.TruthLens` only chooses the models.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

from .._decision import detected_at
from .._errors import ModelLoadError
from .._normalize import Normalized, normalize_input, restore_result, span_back
from .._types import (
    DetectionConfig,
    DetectionInput,
    DetectionResult,
    DetectionStatus,
    HallucinationSpan,
    NLILabel,
    UnreadPassage,
)
from ..mitigation import MitigationResult
from ..models import Detector, FactCheckClassifier, NLIExplainer
from ..models.claims import Claim
from ..models.detection._rescore import RouteCalibration
from ..observability import Metrics, Tracer
from ..policy import Policy, Router, RouteResult
from ._alignment import align_quantities
from ._injection import ContextFlag, split_instructions
from ._premise import answer_sentence, select_premise
from ._verdict import SEVERITY, ClaimCheckReport

__all__ = [
    "Item",
    "NLIStage",
    "classify",
    "detect",
    "explain",
    "model_name",
    "needs_detection",
    "normalised",
    "route",
    "route_calibrations",
    "wants_nli",
]


@dataclass
class Item:
    """Per-request working state; one per item of one call, never shared.

    ``data`` is the caller's text, except inside :func:`normalised`, where the checks
    read its normalised form; what they find there is mapped back when the block ends.
    """

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
    partly_read: bool = False
    """Whether the detector read too little of the answer to clear it (``min_coverage``)."""
    evidence: tuple[int, ...] = ()
    """Where each passage of ``data.context`` stands in the caller's context."""
    not_read: list[UnreadPassage] = field(default_factory=list)
    """Passages left out of the evidence for their language (indexes in the caller's context)."""
    unread_at: frozenset[int] = frozenset()
    """Where those passages stood in ``data.context`` (left out of it once read)."""
    claim_report: ClaimCheckReport | None = None
    """What the cascade's claim checker said, where it read the answer."""
    claim_spans: list[HallucinationSpan] = field(default_factory=list)
    """The claims it rejected, as spans; kept apart from NLI, then added to ``kept``."""

    @classmethod
    def of(cls, data: DetectionInput) -> Item:
        """An item the checks can read: no passage that carries instructions."""
        evidence, flags = split_instructions(data.context)
        flagged = {f.index for f in flags}
        where = tuple(i for i in range(len(data.context)) if i not in flagged)
        if flags:
            data = data.model_copy(update={"context": evidence})
        return cls(data=data, instructions=flags, evidence=where)

    def read_languages_of(self, result: DetectionResult) -> None:
        """Note the passages the detector did not read (their language), from ``result``.

        When the answer was checked they leave the evidence for the rest of the checks:
        NLI premises and the number check then read only what the detector read, so a
        passage in another language cannot clear a span it could not judge. When it was
        not checked for its language the context stays as given, and every passage is
        named. (The caller's text is what :func:`normalised` puts back.)
        """
        unread = result.coverage.passages_not_read
        if not unread:
            return
        where = self.evidence or tuple(range(len(self.data.context)))
        self.not_read = [p.model_copy(update={"index": where[p.index]}) for p in unread]
        if result.unread_language is not None:
            return
        self.unread_at = frozenset(p.index for p in unread)
        self.data = self.without_unread(self.data)

    def without_unread(self, data: DetectionInput) -> DetectionInput:
        """``data`` (this item's text, caller's or normalised) without the passages not read."""
        if not self.unread_at:
            return data
        context = tuple(x for i, x in enumerate(data.context) if i not in self.unread_at)
        return data.model_copy(update={"context": context})

    @property
    def question(self) -> str:
        return self.data.question or ""


@contextmanager
def normalised(items: Sequence[Item]) -> Iterator[None]:
    """The items' text as the checks read it, for the block; the caller's text after.

    The answer, question and passages are normalised (invisible characters dropped,
    compatibility forms folded; see ``core/_normalize.py``) so that text dressed up to
    look unreadable is checked like the plain text. When the block ends, also by an
    error, each item holds the caller's text again and what the checks found (spans,
    token offsets) points into the caller's answer: mitigation prompts and the verdict
    never see the normalised text.
    """
    saved: list[tuple[Item, DetectionInput, Normalized | None]] = []
    for it in items:
        checked, source = normalize_input(it.data)
        if checked is not it.data:
            saved.append((it, it.data, source))
            it.data = checked
    try:
        yield
    finally:
        for it, original, source in saved:
            _back(it, original, source)


def _back(it: Item, original: DetectionInput, source: Normalized | None) -> None:
    """``it`` over the caller's ``original`` text again (see :func:`normalised`)."""
    it.data = it.without_unread(original)
    if source is None:
        return
    it.kept = [span_back(s, source) for s in it.kept]
    it.dropped = [span_back(s, source) for s in it.dropped]
    it.claim_spans = [span_back(s, source) for s in it.claim_spans]
    if it.claim_report is not None:
        judgements = [
            j.model_copy(update={"claim": _claim_back(j.claim, source)})
            for j in it.claim_report.judgements
        ]
        it.claim_report = it.claim_report.model_copy(update={"judgements": judgements})
    if it.detection is not None:
        it.detection = restore_result(it.detection, source)
        if it.detection.status is DetectionStatus.UNVERIFIABLE:
            # shown in another order than it reads (restore_result): nothing to show
            it.kept, it.dropped, it.claim_spans = [], [], []


def _claim_back(claim: Claim, source: Normalized) -> Claim:
    """``claim`` (over the normalised answer) over the caller's answer."""
    start, end = source.span(claim.start, claim.end)
    return claim.model_copy(update={"start": start, "end": end, "text": source.original[start:end]})


# A detector without a ``config`` (a stand-in) is held to the bundled detector's share.
_DEFAULT_MIN_COVERAGE = DetectionConfig().min_coverage


def model_name(obj: object, fallback: str) -> str:
    """The model's ``model_id`` for metrics, or ``fallback`` when it has none."""
    name = getattr(obj, "model_id", None)
    return name if isinstance(name, str) and name else fallback


def _share(items: Sequence[Item], stage: str, elapsed_ms: float) -> None:
    """Split one batched stage's time evenly over its items."""
    for it in items:
        it.latency_ms[stage] = elapsed_ms / len(items)


def classify(
    items: list[Item],
    load: Callable[[], FactCheckClassifier],
    *,
    tracer: Tracer,
    metrics: Metrics,
) -> None:
    """Run the prompt classifier over the items that have a question.

    ``load`` gives the classifier; it is called inside the stage, so a first-use
    load counts as classifier time.
    """
    asked = [it for it in items if it.data.question is not None]
    if not asked:
        return
    with tracer.stage("classifier", prompts=len(asked)) as stage:
        checker = load()
        results = checker.classify([it.question for it in asked])
    if len(results) != len(asked):
        raise ModelLoadError(
            f"the prompt classifier returned {len(results)} results for {len(asked)} prompts"
        )
    metrics.record_model_use(
        model=model_name(checker, "classifier"), role="classifier", count=len(asked)
    )
    for it, (needs, confidence) in zip(asked, results, strict=True):
        it.fact_check = (bool(needs), float(confidence))
    _share(asked, "classifier", stage.elapsed_ms)


def route(
    items: list[Item], router: Router, *, tracer: Tracer, fact_check_threshold: float
) -> None:
    """Match each item to a policy decision and settle whether its prompt is factual."""
    with tracer.stage("routing") as stage:
        for it in items:
            it.route = router.route(it.question, fact_check=it.fact_check)
            needs, confidence = it.fact_check
            it.factual = needs and confidence >= fact_check_threshold
    _share(items, "routing", stage.elapsed_ms)


def needs_detection(it: Item) -> bool:
    """Whether the detector checks ``it``'s answer.

    With grounding given, the answer is checked whatever the prompt classifier
    thinks, unless the policy says to skip non-factual prompts.
    """
    settings = it.route.settings if it.route is not None else None
    return bool(
        settings is not None
        and settings.enabled
        and it.data.grounded
        and (it.factual or not settings.skip_non_factual_grounded)
    )


def detect(
    items: list[Item],
    load: Callable[[], Detector],
    *,
    tracer: Tracer,
    metrics: Metrics,
    calibrations: Mapping[str, RouteCalibration],
) -> None:
    """Run the detector (from ``load``, inside the stage) over the items in one batch.

    A route with a calibration file has its answers re-scored by the file's map, read
    once when the engine was built (``calibrations``: one per decision that names one),
    and decided at the route's threshold. Every span starts out kept.
    """
    if not items:
        return
    with tracer.stage("detector", inputs=len(items)) as stage:
        detector = load()
        results = detector.detect_batch([it.data for it in items])
    metrics.record_model_use(model=detector.model_id, role="detector", count=len(items))
    min_coverage = _min_coverage(detector)
    for it, raw in zip(items, results, strict=True):
        settings = it.route.settings if it.route is not None else None
        result = raw
        calibration = _route_calibration(it, calibrations)
        if settings is not None and calibration is not None:
            # The route's own response map (truthlens calibrate); tokens and spans stay.
            result = calibration.rescore(it.data, raw, settings.threshold)
        it.partly_read = _partly_read(it.data, result, min_coverage)
        if settings is not None and it.partly_read and not detected_at(result, settings.threshold):
            result = _unverifiable(it.data, result, settings.threshold)
        it.detection = result
        it.kept = list(result.spans)
        it.read_languages_of(result)
    _share(items, "detector", stage.elapsed_ms)


def route_calibrations(policy: Policy) -> dict[str, RouteCalibration]:
    """Each decision's calibration file read into its map, once (for :func:`detect`)."""
    return {
        d.name: RouteCalibration.of(d.plugin.calibration_file)
        for d in policy.decisions
        if d.plugin.calibration_file is not None
    }


def _route_calibration(
    it: Item, calibrations: Mapping[str, RouteCalibration]
) -> RouteCalibration | None:
    """The map of ``it``'s route, or ``None`` where the detector's own score stands."""
    route = it.route
    if route is None or route.decision is None or route.settings.calibration is None:
        return None
    return calibrations[route.decision]


def _min_coverage(detector: Detector) -> float:
    """The share of an answer a detector must read to clear it (its ``min_coverage``)."""
    config = getattr(detector, "config", None)
    value = getattr(config, "min_coverage", None)
    return float(value) if isinstance(value, int | float) else _DEFAULT_MIN_COVERAGE


def _partly_read(item: DetectionInput, result: DetectionResult, min_coverage: float) -> bool:
    """Whether a checked answer was read too little to be cleared (an unread part stays)."""
    from ..models.detection._base import covered

    return result.grounded and not covered(item.answer, result.coverage, min_coverage)


def _unverifiable(
    item: DetectionInput, result: DetectionResult, threshold: float
) -> DetectionResult:
    """A partly read answer that scores under the route's threshold, as unverifiable.

    The detector clears a partly read answer only below its own threshold; what it read
    may flag it. The route decides at its own threshold, though: an answer the detector
    called hallucinated at 0.5 but that scores under a route's 0.7 would otherwise pass
    as checked and clean with half of it never read. Not checked is never clean.
    """
    from ..models.detection._base import unverifiable_result

    coverage = result.coverage
    language = coverage.answer_language_not_read  # sentences in a language it does not read
    return unverifiable_result(
        item,
        coverage=coverage,
        threshold=threshold,
        model_id=result.model_id,
        latency_ms=result.latency_ms,
        error=(
            ("language: " if language is not None else "")
            + f"only {coverage.answer_chars_scored} of the answer's {coverage.answer_chars} "
            f"characters could be read, and what was read scored {result.score:.2f}, below "
            f"the threshold {threshold:g}"
        ),
        unread_language=language,
    )


@dataclass(frozen=True)
class NLIStage:
    """The NLI stage's model and settings."""

    explainer: NLIExplainer
    threshold: float
    align: bool


def wants_nli(it: Item) -> bool:
    """Whether ``it`` has kept spans its route explains by NLI.

    Only an answer whose score reaches the route's threshold: NLI can clear a flagged
    answer (every span entailed) but never flag one below the threshold, and a passing
    answer's verdict shows no span. On real RAG answers, where most clean answers carry
    a span or two, this halves the guard's time.
    """
    if not it.kept or it.route is None or not it.route.settings.use_nli:
        return False
    return it.detection is not None and detected_at(it.detection, it.route.settings.threshold)


def explain(wanted: list[Item], nli: NLIStage, *, tracer: Tracer, metrics: Metrics) -> None:
    """Label each kept span of ``wanted`` by NLI against its premise.

    Confident entailments drop out; see :func:`wants_nli` for which items to pass.
    """
    pairs: list[tuple[str, str]] = []
    owners: list[tuple[Item, HallucinationSpan]] = []
    with tracer.stage("context", spans=sum(len(it.kept) for it in wanted)) as ctx:
        for it in wanted:
            for span in it.kept:
                hypothesis = answer_sentence(it.data.answer, span.start, span.end)
                pairs.append((select_premise(it.data.context, hypothesis), hypothesis))
                owners.append((it, span))
    with tracer.stage("nli", pairs=len(pairs)) as stage:
        labels = nli.explainer.explain(pairs)
    metrics.record_model_use(model=model_name(nli.explainer, "nli"), role="nli", count=len(pairs))
    for it in wanted:
        it.kept = []
    _share(wanted, "context", ctx.elapsed_ms)
    _share(wanted, "nli", stage.elapsed_ms)
    if len(labels) != len(pairs):
        raise ModelLoadError(
            f"the NLI explainer returned {len(labels)} labels for {len(pairs)} pairs"
        )
    for (it, span), predicted in zip(owners, labels, strict=True):
        _sort_span(it, span, _label(it, span, predicted, nli.align), nli.threshold)


def _sort_span(
    it: Item, span: HallucinationSpan, labelled: tuple[NLILabel, float], threshold: float
) -> None:
    """Keep or drop ``span`` by its NLI label; a label below ``threshold`` reads neutral."""
    label, confidence = labelled
    update = {"nli_label": label, "nli_confidence": float(confidence), "severity": SEVERITY[label]}
    span = span.model_copy(update=update)
    # A confident entailment means the detector flagged supported text. A weaker one does
    # not confirm the span, and a weaker contradiction does not refute it: both count as
    # neutral. On real RAG answers, contradictions below 0.9 overlapped a span people
    # marked less often than neutral spans did (RULE_contradiction_confidence.md).
    if label == "entailment" and confidence >= threshold:
        it.dropped.append(span)
    elif label != "neutral" and confidence < threshold:
        neutral = {"nli_label": "neutral", "severity": SEVERITY["neutral"]}
        it.kept.append(span.model_copy(update=neutral))
    else:
        it.kept.append(span)


def _label(
    it: Item, span: HallucinationSpan, predicted: tuple[str, float], align: bool
) -> tuple[NLILabel, float]:
    label, confidence = predicted
    if label not in SEVERITY:
        raise ModelLoadError(
            f"the NLI explainer returned {label!r}; expected entailment, neutral or contradiction"
        )
    if align:
        # Numbers are checked against the whole context, not only the premise.
        aligned = align_quantities(it.data.context, it.data.answer, span.start, span.end)
        if aligned is not None:
            return aligned
    return cast("NLILabel", label), float(confidence)
