"""The guard engine's three models served by ``truthlens serve``.

When a policy sets ``service.url``, the engine (and every adapter built on it) keeps its
routing, actions and mitigation in-process and asks the service for the model work:
detection (``/v1/detect``), NLI (``/v1/nli``) and prompt classification
(``/v1/classify``). With ``service.on_error: unverifiable`` a failed call degrades
towards checking, never towards passing: the classifier calls every prompt factual,
the NLI explainer keeps every span (``neutral``, confidence 0) and the detector marks
the answer unverifiable.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .._errors import ServiceError
from .._types import NLILabel
from ..detection._remote import OnError, RemoteDetector, ServiceClient, shared_client
from ..policy import Policy

__all__ = ["RemoteFactCheckClassifier", "RemoteNLIExplainer", "remote_detector"]

logger = logging.getLogger(__name__)

_LABELS = frozenset({"entailment", "neutral", "contradiction"})


def _client(policy: Policy) -> ServiceClient:
    service = policy.service
    assert service.url is not None  # callers check
    return shared_client(service.url, timeout_s=service.timeout_s, retries=service.retries)


def remote_detector(policy: Policy) -> RemoteDetector:
    """The policy's service as a detector; its token threshold must match the service's."""
    from .._types import DetectionConfig

    token_threshold = policy.hallucination_mitigation.hallucination_model.threshold
    client = _client(policy)
    return RemoteDetector(
        client.url,
        config=DetectionConfig(token_threshold=token_threshold),
        on_error=policy.service.on_error,
        client=client,
    )


class RemoteNLIExplainer:
    """:class:`NLIExplainer` over ``POST /v1/nli``.

    Args:
        client: The service's client.
        on_error: ``"raise"`` or ``"unverifiable"`` (keep every span, unexplained).
    """

    def __init__(self, client: ServiceClient, *, on_error: OnError = "raise") -> None:
        self.client = client
        self.on_error = on_error
        self.model_id = f"truthlens-service-nli@{client.url}"

    @classmethod
    def from_policy(cls, policy: Policy) -> RemoteNLIExplainer:
        """The explainer of the policy's service."""
        return cls(_client(policy), on_error=policy.service.on_error)

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[NLILabel, float]]:
        """One ``(label, confidence)`` per pair, from the service."""
        if not pairs:
            return []
        try:
            reply = self.client.post("/v1/nli", {"pairs": [list(p) for p in pairs]})
            return _labels(reply, len(pairs), self.client.url)
        except ServiceError as exc:
            if self.on_error == "raise":
                raise
            logger.warning("NLI service failed, spans kept unexplained: %s", exc)
            # neutral keeps the span flagged; confidence 0 says nobody judged it.
            return [("neutral", 0.0) for _ in pairs]


class RemoteFactCheckClassifier:
    """:class:`FactCheckClassifier` over ``POST /v1/classify``.

    Args:
        client: The service's client.
        on_error: ``"raise"`` or ``"unverifiable"`` (every prompt counts as factual).
    """

    def __init__(self, client: ServiceClient, *, on_error: OnError = "raise") -> None:
        self.client = client
        self.on_error = on_error
        self.model_id = f"truthlens-service-classifier@{client.url}"

    @classmethod
    def from_policy(cls, policy: Policy) -> RemoteFactCheckClassifier:
        """The classifier of the policy's service."""
        return cls(_client(policy), on_error=policy.service.on_error)

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        """One ``(needs_fact_check, confidence)`` per prompt, from the service."""
        if not prompts:
            return []
        try:
            reply = self.client.post("/v1/classify", {"prompts": list(prompts)})
            return _decisions(reply, len(prompts), self.client.url)
        except ServiceError as exc:
            if self.on_error == "raise":
                raise
            logger.warning("classifier service failed, every prompt is checked: %s", exc)
            return [(True, 1.0) for _ in prompts]


def _rows(reply: Any, key: str, count: int, where: str) -> list[Any]:
    rows = reply.get(key) if isinstance(reply, dict) else None
    if not isinstance(rows, list) or len(rows) != count:
        raise ServiceError(f"malformed reply from {where}: expected {count} {key}")
    return rows


def _labels(reply: Any, count: int, url: str) -> list[tuple[NLILabel, float]]:
    out: list[tuple[NLILabel, float]] = []
    for row in _rows(reply, "labels", count, f"{url}/v1/nli"):
        if not (isinstance(row, list) and len(row) == 2 and row[0] in _LABELS):
            raise ServiceError(f"malformed reply from {url}/v1/nli: {row!r}")
        label: NLILabel = row[0]
        out.append((label, _unit(row[1], f"{url}/v1/nli")))
    return out


def _decisions(reply: Any, count: int, url: str) -> list[tuple[bool, float]]:
    out: list[tuple[bool, float]] = []
    for row in _rows(reply, "results", count, f"{url}/v1/classify"):
        if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], bool)):
            raise ServiceError(f"malformed reply from {url}/v1/classify: {row!r}")
        out.append((row[0], _unit(row[1], f"{url}/v1/classify")))
    return out


def _unit(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ServiceError(f"malformed reply from {where}: confidence {value!r}")
    return float(value)
