"""Per-route guard policy: configuration models, loading, routing and mode selection.

Public: the policy, its loader and router, and the domain classifiers a route may use.
The configuration models of a policy file are private (``_fields``: the field types;
``_settings``: the global blocks; ``_service``: the service block; ``_config``: routes,
decisions and the whole policy): a policy is written as a file or a dict, and read
through :class:`Policy`.
"""

from __future__ import annotations

from .._decision import Action
from ._config import Policy, ResolvedSettings
from ._fields import Mode
from ._loader import PolicySource, load_policy
from ._router import Router, RouteResult
from ._signals import DomainClassifier, EmbeddingDomainClassifier, LexiconDomainClassifier

__all__ = [
    "Action",
    "DomainClassifier",
    "EmbeddingDomainClassifier",
    "LexiconDomainClassifier",
    "Mode",
    "Policy",
    "PolicySource",
    "ResolvedSettings",
    "RouteResult",
    "Router",
    "load_policy",
]
