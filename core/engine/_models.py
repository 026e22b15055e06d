"""The engine's three models, built from a policy: detector, NLI explainer, prompt classifier.

A policy names a model (Hugging Face id or folder), the bundled one, or a ``truthlens
serve`` service (``service.url``). With a service the engine keeps its routing, actions
and mitigation in-process and asks the service for the model work: detection
(``/v1/detect``), NLI (``/v1/nli``) and prompt classification (``/v1/classify``). With
``service.on_error: unverifiable`` a failed call degrades towards checking, never towards
passing: the classifier calls every prompt factual, the NLI explainer keeps every span
(``neutral``, confidence 0) and the detector marks the answer unverifiable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from .._checker_kinds import checker_kind
from .._errors import ConfigError, ModelNotAvailableError
from .._types import DetectionConfig
from ..models import Detector, FactCheckClassifier, NLIExplainer, load_detector
from ..models._service import ServiceClient, shared_client
from ..models.claims import ClaimChecker
from ..models.claims._registry import load_checker
from ..models.classifier import (
    BundledFactCheckAdapter,
    RemoteFactCheckClassifier,
    TransformersFactCheckClassifier,
)
from ..models.detection import RemoteDetector
from ..models.nli import BundledNLIAdapter, RemoteNLIExplainer, TransformersNLIExplainer
from ..policy import Policy
from ..policy._settings import ModelSettings

__all__ = [
    "detector_id",
    "load_claim_checker",
    "load_classifier",
    "load_nli",
    "load_policy_detector",
]

logger = logging.getLogger(__name__)

_Model = TypeVar("_Model")
#: How a kind of model is built: as a service client, from a Hugging Face id, bundled.
_Kinds = tuple[Callable[..., _Model], Callable[..., _Model], Callable[..., _Model]]


class _AssumeFactual:
    """Stands in for a missing prompt classifier: every prompt gets checked."""

    model_id = "assume-factual"

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        """Call every prompt factual."""
        return [(True, 1.0) for _ in prompts]


def _client(policy: Policy) -> ServiceClient:
    service = policy.service
    assert service.url is not None  # callers check
    return shared_client(service.url, timeout_s=service.timeout_s, retries=service.retries)


def load_policy_detector(policy: Policy) -> Detector:
    """The detector the policy names; with a service, the service's.

    Args:
        policy: The engine's policy.

    Returns:
        The detector; a remote one checks that its token threshold matches the service's.
    """
    settings = policy.hallucination_mitigation.hallucination_model
    token_threshold, languages = settings.token_threshold, settings.languages
    if policy.service.url is not None:
        client = _client(policy)
        return RemoteDetector(
            client.url,
            config=DetectionConfig(token_threshold=token_threshold, languages=languages),
            on_error=policy.service.on_error,
            client=client,
        )
    return load_detector(
        policy.hallucination.model_id,
        token_threshold=token_threshold,
        languages=languages,
        device="cpu" if policy.hallucination.use_cpu else None,
        dtype=policy.hallucination.precision,
        backend=policy.hallucination.backend,
    )


def _build(policy: Policy, settings: ModelSettings, kinds: _Kinds[_Model]) -> _Model | None:
    """The service's model, else the one ``settings`` names, else the bundled one, else ``None``.

    ``kinds`` builds them: a client of the policy's service, a Hugging Face model
    from its id or folder, and the bundled one.

    A model the policy names must load (its errors propagate): silently skipping it
    would change which spans count as hallucinations or which prompts get checked.
    """
    remote, named, bundled = kinds
    if policy.service.url is not None:
        return remote(_client(policy), on_error=policy.service.on_error)
    device = "cpu" if settings.use_cpu else None
    dtype = policy.hallucination.precision
    backend = policy.hallucination.backend
    if settings.model_id is not None:
        return named(settings.model_id, device=device, dtype=dtype, backend=backend)
    try:
        return bundled(device=device, dtype=dtype, backend=backend)
    except (ModelNotAvailableError, ImportError):
        return None


def load_nli(policy: Policy) -> NLIExplainer | None:
    """The NLI explainer the policy names, the bundled one, or ``None`` if none is installed.

    Args:
        policy: The engine's policy.

    Returns:
        The explainer, or ``None`` when the policy names none and none is bundled.
    """
    kinds: _Kinds[NLIExplainer] = (RemoteNLIExplainer, TransformersNLIExplainer, BundledNLIAdapter)
    explainer = _build(policy, policy.hallucination_mitigation.nli_model, kinds)
    if explainer is None:
        logger.warning("no NLI explainer available: spans will not be explained")
    return explainer


def load_classifier(policy: Policy) -> FactCheckClassifier:
    """The prompt classifier the policy names, the bundled one, or one that checks all.

    Args:
        policy: The engine's policy.

    Returns:
        The classifier; without one installed, every prompt counts as factual.
    """
    kinds: _Kinds[FactCheckClassifier] = (
        RemoteFactCheckClassifier,
        TransformersFactCheckClassifier,
        BundledFactCheckAdapter,
    )
    classifier = _build(policy, policy.hallucination_mitigation.fact_check_model, kinds)
    if classifier is None:
        logger.warning("no prompt classifier available: every prompt is checked")
        return _AssumeFactual()
    return classifier


def detector_id(detector: object | None, policy: Policy) -> str | None:
    """The ``model_id`` of the detector an engine uses (``None``: the bundled one)."""
    if detector is None:
        return policy.hallucination.model_id
    return getattr(detector, "model_id", None) or f"<{type(detector).__name__}>"


def load_claim_checker(policy: Policy) -> ClaimChecker:
    """The claim checker the policy's ``hallucination.claim_check`` block names.

    Raises:
        ConfigError: If the policy has no such block (callers check).
    """
    settings = policy.hallucination.claim_check
    if settings is None:
        raise ConfigError("the policy has no hallucination.claim_check block")
    return load_checker(
        settings.checker,
        protocol=settings.protocol,
        model=settings.model,
        supported_label=settings.supported_label,
        trust_remote_code=settings.trust_remote_code,
        timeout_s=settings.timeout_s if checker_kind(settings.checker) == "endpoint" else None,
    )
