"""Test doubles shared by the test modules: RULE-BASED STAND-INS for the models.

Every label they give is predictable by hand, so a test can say exactly what the
engine must do with it. The detector in the tests is a real (tiny) transformer; these
stand in for the NLI explainer and the prompt classifier, and wrap a detector to count
its calls.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from truthlens_integrations.core import DetectionInput, DetectionResult
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.llm import (
    BaseLLM,
    ChatMessage,
    CompletionRequest,
    LLMResponse,
    TokenUsage,
)
from truthlens_integrations.core.mitigation import MitigationOptions
from truthlens_integrations.core.models import Detector
from truthlens_integrations.core.observability import Metrics, Tracer
from truthlens_integrations.core.policy import LexiconDomainClassifier

__all__ = [
    "AlwaysFactual",
    "CountingDetector",
    "FactCheck",
    "FixedNLI",
    "QuestionWordClassifier",
    "RuleNLI",
    "Scripted",
    "make_engine",
    "option_samples",
]

_NUMBER = re.compile(r"\d+")


class RuleNLI:
    """STAND-IN for an NLI model: judges by the numbers the two texts contain.

    Every number of the hypothesis in the premise -> entailment 0.97; a number the
    premise lacks while the premise has numbers -> contradiction 0.95; a premise
    without numbers -> neutral 0.8. Records each call to check batching.

    Attributes:
        numberless: The label and confidence when neither text has a number (a
            hypothesis without numbers is otherwise entailed by any premise).
    """

    model_id = "rule-nli"
    numberless: tuple[str, float] = ("entailment", 0.97)

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, float]]:
        self.calls.append(list(pairs))
        return [self._label(premise, hypothesis) for premise, hypothesis in pairs]

    def _label(self, premise: str, hypothesis: str) -> tuple[str, float]:
        have = set(_NUMBER.findall(premise))
        want = set(_NUMBER.findall(hypothesis))
        if not want and not have:
            return self.numberless
        if want <= have:
            return ("entailment", 0.97)
        if have:
            return ("contradiction", 0.95)
        return ("neutral", 0.8)


class FixedNLI:
    """STAND-IN for an NLI model that gives every pair the same label."""

    model_id = "fixed-nli"

    def __init__(self, label: str, confidence: float) -> None:
        self.label, self.confidence = label, confidence

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, float]]:
        return [(self.label, self.confidence) for _ in pairs]


class QuestionWordClassifier:
    """STAND-IN for the prompt classifier: questions (ending in '?') need a fact check."""

    model_id = "question-words"

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.calls = 0

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        self.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        return [(True, 0.95) if p.rstrip().endswith("?") else (False, 0.9) for p in prompts]


class AlwaysFactual:
    """STAND-IN for the prompt classifier: every prompt needs a fact check."""

    model_id = "always-factual"

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        return [(True, 1.0) for _ in prompts]


class CountingDetector:
    """Wraps a real detector to count its calls (the non-factual path must skip it)."""

    def __init__(self, inner: Detector) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.config: Any = inner.config
        self.batches = 0

    def detect_batch(self, inputs: Sequence[DetectionInput]) -> list[DetectionResult]:
        self.batches += 1
        return self.inner.detect_batch(inputs)


class SupportsEveryClaim:
    """A claim checker that calls every claim supported (a stand-in for the contract)."""

    name = "supports-every-claim"

    def check(self, claims: Any) -> list[Any]:
        from truthlens_integrations.core.models.claims import judged

        return [judged(c, self.name, 1.0) for c in claims]


def option_samples(
    detector: Detector, *, nli: Any, fact_checker: Any, llm: Callable[[], Any], retriever: Any
) -> dict[str, Any]:
    """A valid value for every option an adapter takes from the one definition.

    The framework-specific values come in: ``llm`` makes one of the adapter's chat
    models (called for the answering, verifying and judging model).
    """
    return {
        "detector": detector,
        "nli": nli,
        "fact_checker": fact_checker,
        "claim_checker": SupportsEveryClaim(),
        "metrics": Metrics(enabled=False),
        "tracer": Tracer(enabled=False),
        "domain_classifier": LexiconDomainClassifier({"tech": ("python",)}),
        "on_block": "raise",
        "blocked_message": "Withheld by policy.",
        "expose_blocked_text": True,
        "align_quantities": False,
        "mitigation_options": MitigationOptions(max_tokens=11),
        "redact": True,
        "audit_hook": print,
        "mode": "standard",
        "threshold": 0.42,
        "action": "body",
        "max_iterations": 2,
        "llm": llm(),
        "retriever": retriever,
        "verification_llms": [llm()],
        "judge_llm": llm(),
    }


def leaks(secret: str, text: str) -> bool:
    """Whether ``secret`` shows in ``text`` as itself, not among the digits of a number.

    A redaction check on a JSON dump must not fail because a score such as
    0.2802709997195050 holds "1950" among its digits.
    """
    return re.search(rf"(?<!\d){re.escape(secret)}(?!\d)", text) is not None


class Scripted(BaseLLM):
    """SCRIPTED FAKE LLM: returns (or raises) the next item of ``replies`` per call."""

    name = "scripted"

    def __init__(
        self, replies: Sequence[str | Exception], *, model: str = "fake", delay_s: float = 0.0
    ) -> None:
        self.model = model
        self.replies = list(replies)
        self.seen: list[list[ChatMessage]] = []
        self.delay_s = delay_s
        self.sync_calls = 0
        self.async_calls = 0
        self.active = 0
        self.max_active = 0

    def _next(self, messages: Sequence[ChatMessage]) -> LLMResponse:
        self.seen.append(list(messages))
        if not self.replies:
            raise AssertionError(f"{self.model}: unexpected extra call")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        usage = TokenUsage(prompt_tokens=20, completion_tokens=5, total_tokens=25)
        return LLMResponse(text=reply, model=self.model, usage=usage, latency_ms=1.0)

    def _complete(self, request: CompletionRequest) -> LLMResponse:
        self.sync_calls += 1
        return self._next(request.messages)

    async def _acomplete(self, request: CompletionRequest) -> LLMResponse:
        self.async_calls += 1
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            return self._next(request.messages)
        finally:
            self.active -= 1

    def prompt(self, call: int) -> str:
        return "\n".join(m.content for m in self.seen[call])


def make_engine(detector: object, config: object = None, **kwargs: object) -> TruthLens:
    """The engine on ``detector`` with the rule-based NLI and prompt classifier stand-ins."""
    kwargs.setdefault("nli", RuleNLI())
    kwargs.setdefault("fact_checker", QuestionWordClassifier())
    return TruthLens.from_config(config, detector=detector, **kwargs)  # type: ignore[arg-type]


class FactCheck:
    """Deterministic fact-check signal: factual when the prompt is a wh-question."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str) -> tuple[bool, float]:
        self.calls += 1
        factual = text.lower().startswith(("when", "who", "what", "where", "how many"))
        return factual, 0.9
