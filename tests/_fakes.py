"""Test doubles shared by the test modules: RULE-BASED STAND-INS for the models.

Every label they give is predictable by hand, so a test can say exactly what the
engine must do with it. The detector in the tests is a real (tiny) transformer; these
stand in for the NLI explainer and the prompt classifier, and wrap a detector to count
its calls.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from truthlens_integrations.core import DetectionInput, DetectionResult
from truthlens_integrations.core.mitigation import MitigationOptions
from truthlens_integrations.core.models import Detector
from truthlens_integrations.core.observability import Metrics, Tracer
from truthlens_integrations.core.policy import LexiconDomainClassifier

__all__ = [
    "AlwaysFactual",
    "CountingDetector",
    "FixedNLI",
    "QuestionWordClassifier",
    "RuleNLI",
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
