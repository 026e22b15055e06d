"""The prompt classifier of a ``truthlens serve`` service (``POST /v1/classify``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..._errors import InputTooLargeError, ServiceError
from .._service import OnError, ServiceClient, reply_rows, unit_value

__all__ = ["RemoteFactCheckClassifier"]

logger = logging.getLogger(__name__)


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

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        """One ``(needs_fact_check, confidence)`` per prompt, from the service."""
        if not prompts:
            return []
        try:
            reply = self.client.post("/v1/classify", {"prompts": list(prompts)})
            return _decisions(reply, len(prompts), self.client.url)
        except (ServiceError, InputTooLargeError) as exc:
            if self.on_error == "raise":
                raise
            logger.warning("classifier service failed, every prompt is checked: %s", exc)
            return [(True, 1.0) for _ in prompts]


def _decisions(reply: Any, count: int, url: str) -> list[tuple[bool, float]]:
    out: list[tuple[bool, float]] = []
    for row in reply_rows(reply, "results", count, f"{url}/v1/classify"):
        if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], bool)):
            raise ServiceError(f"malformed reply from {url}/v1/classify: {row!r}")
        out.append((row[0], unit_value(row[1], f"{url}/v1/classify")))
    return out
