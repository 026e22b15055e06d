"""Route a prompt to the highest-priority decision whose rules match."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._errors import ConfigError
from .._scoring import optimal_threshold
from ._adaptive import ModeSelector
from ._config import Condition, DecisionPolicy, Policy, ResolvedSettings
from ._fields import ConditionType
from ._signals import DomainClassifier, FactCheckSignal, KeywordMatcher, LexiconDomainClassifier

__all__ = [
    "DOMAIN_COST_RATIOS",
    "RouteResult",
    "Router",
    "SignalHit",
    "threshold_for_cost",
]

logger = logging.getLogger(__name__)

#: Cost ratio ranges ``C_FN / C_FP`` per domain: a missed hallucination costs this many
#: times a false alarm.
DOMAIN_COST_RATIOS: Mapping[str, tuple[float, float]] = {
    "healthcare": (10.0, 100.0),
    "finance": (5.0, 20.0),
    "support": (1.0, 2.0),
    "creative": (0.1, 0.5),
}


def threshold_for_cost(cost_ratio: float, prior: float) -> float:
    """Bayes-optimal detection threshold for a domain's cost ratio and prior.

    ``tau = 1 / (1 + cost_ratio * (1 - prior) / prior)``; see
    :data:`DOMAIN_COST_RATIOS` for the ratios per domain.

    Args:
        cost_ratio: Cost of a missed hallucination over the cost of a false alarm.
        prior: Prior probability that an answer in this domain hallucinates, in (0, 1).

    Returns:
        The threshold in (0, 1).

    Raises:
        InvalidInputError: If ``cost_ratio <= 0`` or ``prior`` is outside (0, 1).
    """
    return optimal_threshold(cost_ratio, prior)


class SignalHit(BaseModel):
    """A condition of the chosen decision that fired.

    Attributes:
        type: domain, keyword or fact_check.
        name: The condition's name.
        score: Domain score, fact-check confidence, or 1.0 for keywords.
        matched: Keywords found (keyword conditions only).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: ConditionType
    name: str
    score: float
    matched: tuple[str, ...] = ()


class RouteResult(BaseModel):
    """Where a prompt was routed and the guard settings that apply.

    Attributes:
        decision: The chosen decision, or ``None`` when none matched (global settings).
        priority: Its priority.
        settings: Effective settings: the decision's plugin merged with the global block.
        mode_source: ``decision`` (set by the decision), ``default`` (global
            ``default_mode``) or ``adaptive`` (picked by the :class:`ModeSelector`).
        signals: The chosen decision's conditions that fired.
        domain_scores: Domain classifier output, when it ran.
        fact_check_needed: Fact-check signal after the classifier threshold, when it ran.
        fact_check_confidence: The fact-check signal's confidence, when it ran.
        model_refs: Models the decision names.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision: str | None
    priority: int | None = None
    settings: ResolvedSettings
    mode_source: Literal["decision", "default", "adaptive"]
    signals: tuple[SignalHit, ...] = ()
    domain_scores: dict[str, float] = Field(default_factory=dict)
    fact_check_needed: bool | None = None
    fact_check_confidence: float | None = None
    model_refs: tuple[str, ...] = ()


class _Signals:
    """Signals of one routing call, each computed at most once and only when needed."""

    def __init__(
        self,
        router: Router,
        text: str,
        fact_check: tuple[bool, float] | None,
    ) -> None:
        self._router = router
        self.text = text
        self.domains: dict[str, float] | None = None
        self.fact_check = fact_check

    def domain_scores(self) -> dict[str, float]:
        if self.domains is None:
            self.domains = {
                k: float(v) for k, v in self._router.domains.classify(self.text).items()
            }
        return self.domains

    def fact_check_result(self) -> tuple[bool, float]:
        if self.fact_check is None:
            signal = self._router.fact_check
            if signal is None:
                raise ConfigError(
                    "a decision uses a fact_check condition but no fact-check signal was "
                    "given: pass fact_check= to Router or to Router.route()"
                )
            needs, confidence = signal(self.text)
            self.fact_check = (bool(needs), float(confidence))
        return self.fact_check

    def needs_fact_check(self) -> bool:
        needs, confidence = self.fact_check_result()
        return needs and confidence >= self._router.fact_check_threshold


class Router:
    """Picks the highest-priority decision whose rules match a prompt.

    Decisions are tried by descending priority (file order breaks ties); the first
    whose rules match wins. Signals are computed lazily, once per call.

    Args:
        policy: The policy to route by.
        domain_classifier: Scores prompts per domain; by default a
            :class:`LexiconDomainClassifier` over the policy's domain lexicons.
        fact_check: ``(prompt) -> (needs_fact_check, confidence)``, e.g. the prompt
            classifier; may instead be passed per call to :meth:`route`.
        domain_threshold: Score at which a ``domain`` condition fires.
        mode_selector: Picks the mode by Thompson sampling where the decision does
            not set one.

    Raises:
        ConfigError: If a decision names a domain the classifier does not know.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        domain_classifier: DomainClassifier | None = None,
        fact_check: FactCheckSignal | None = None,
        domain_threshold: float = 0.5,
        mode_selector: ModeSelector | None = None,
    ) -> None:
        if not 0.0 <= domain_threshold <= 1.0:
            raise ConfigError(f"domain_threshold must be between 0 and 1, got {domain_threshold}")
        self.policy = policy
        self.domains: DomainClassifier = domain_classifier or LexiconDomainClassifier(
            policy.domain_keywords()
        )
        self.fact_check = fact_check
        self.fact_check_threshold = (
            policy.hallucination_mitigation.fact_check_model.confidence_threshold
        )
        self.domain_threshold = domain_threshold
        self.mode_selector = mode_selector
        # Stable sort: equal priorities keep file order.
        self._ordered = sorted(policy.decisions, key=lambda d: -d.priority)
        self._keywords = self._build_matchers()
        self._check_domains()

    def _build_matchers(self) -> dict[tuple[str, int], KeywordMatcher]:
        lists = self.policy.keyword_lists()
        matchers: dict[tuple[str, int], KeywordMatcher] = {}
        for decision in self.policy.decisions:
            for j, cond in enumerate(decision.rules.conditions):
                if cond.type != "keyword":
                    continue
                if cond.keywords is not None:
                    matchers[decision.name, j] = KeywordMatcher(cond.keywords)
                else:
                    matchers[decision.name, j] = KeywordMatcher.from_rule(lists[cond.name])
        return matchers

    def _check_domains(self) -> None:
        known = getattr(self.domains, "domains", None)
        if known is None:
            return
        for i, decision in enumerate(self.policy.decisions):
            for j, cond in enumerate(decision.rules.conditions):
                if cond.type == "domain" and cond.name not in known:
                    raise ConfigError(
                        f"decisions[{i}].rules.conditions[{j}].name: unknown domain "
                        f"{cond.name!r} (the domain classifier knows: {', '.join(known)})"
                    )

    def route(self, text: str, *, fact_check: tuple[bool, float] | None = None) -> RouteResult:
        """Route one prompt.

        Args:
            text: The user's prompt (question).
            fact_check: A fact-check result already computed for this prompt
                (``(needs_fact_check, confidence)``), so the classifier runs once.

        Returns:
            The chosen decision (or ``None``) with its effective settings.

        Raises:
            ConfigError: If a ``fact_check`` condition must be evaluated and no
                fact-check signal is available.
        """
        signals = _Signals(self, text, fact_check)
        chosen: DecisionPolicy | None = None
        hits: list[SignalHit] = []
        for decision in self._ordered:
            hits = self._match(decision, signals)
            if hits:
                chosen = decision
                break
        result = self._result(chosen, hits, signals)
        logger.debug(
            "routed prompt to %s (mode=%s, signals=%s)",
            result.decision,
            result.settings.mode,
            [f"{h.type}:{h.name}" for h in result.signals],
        )
        return result

    def _match(self, decision: DecisionPolicy, signals: _Signals) -> list[SignalHit]:
        """Hits of ``decision``'s conditions if its rules match, else an empty list."""
        hits: list[SignalHit] = []
        is_and = decision.rules.operator == "AND"
        for j, cond in enumerate(decision.rules.conditions):
            hit = self._evaluate(decision.name, j, cond, signals)
            if hit is not None:
                hits.append(hit)
            elif is_and:
                return []
        return hits

    def _evaluate(
        self, decision: str, index: int, cond: Condition, signals: _Signals
    ) -> SignalHit | None:
        if cond.type == "domain":
            score = signals.domain_scores().get(cond.name, 0.0)
            fired = score >= self.domain_threshold
            return SignalHit(type="domain", name=cond.name, score=score) if fired else None
        if cond.type == "keyword":
            matcher = self._keywords[decision, index]
            if not matcher(signals.text):
                return None
            found = tuple(matcher.matches(signals.text))
            return SignalHit(type="keyword", name=cond.name, score=1.0, matched=found)
        needs = signals.needs_fact_check()
        _, confidence = signals.fact_check_result()
        wanted = cond.name == "needs_fact_check"
        return (
            SignalHit(type="fact_check", name=cond.name, score=confidence)
            if needs == wanted
            else None
        )

    def _result(
        self, chosen: DecisionPolicy | None, hits: list[SignalHit], signals: _Signals
    ) -> RouteResult:
        name = chosen.name if chosen is not None else None
        pinned = chosen.plugin.mode if chosen is not None else None
        if pinned is not None:
            source: Literal["decision", "default", "adaptive"] = "decision"
            settings = self.policy.settings_for(name)
        elif self.mode_selector is not None:
            source = "adaptive"
            settings = self.policy.settings_for(name, mode=self.mode_selector.select(name))
        else:
            source = "default"
            settings = self.policy.settings_for(name)
        needed = None
        confidence = None
        if signals.fact_check is not None:
            needed = signals.needs_fact_check()
            confidence = signals.fact_check[1]
        return RouteResult(
            decision=name,
            priority=chosen.priority if chosen is not None else None,
            settings=settings,
            mode_source=source,
            signals=tuple(hits),
            domain_scores=signals.domains or {},
            fact_check_needed=needed,
            fact_check_confidence=confidence,
            model_refs=tuple(ref.model for ref in chosen.model_refs) if chosen else (),
        )
