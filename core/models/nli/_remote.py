"""The NLI explainer of a ``truthlens serve`` service (``POST /v1/nli``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..._errors import InputTooLargeError, ServiceError
from ..._types import NLILabel
from .._service import OnError, ServiceClient, reply_rows, unit_value

__all__ = ["RemoteNLIExplainer"]

logger = logging.getLogger(__name__)

_LABELS = frozenset({"entailment", "neutral", "contradiction"})


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

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[NLILabel, float]]:
        """One ``(label, confidence)`` per pair, from the service."""
        if not pairs:
            return []
        try:
            reply = self.client.post("/v1/nli", {"pairs": [list(p) for p in pairs]})
            return _labels(reply, len(pairs), self.client.url)
        except (ServiceError, InputTooLargeError) as exc:
            if self.on_error == "raise":
                raise
            logger.warning("NLI service failed, spans kept unexplained: %s", exc)
            # neutral keeps the span flagged; confidence 0 says nobody judged it.
            return [("neutral", 0.0) for _ in pairs]


def _labels(reply: Any, count: int, url: str) -> list[tuple[NLILabel, float]]:
    out: list[tuple[NLILabel, float]] = []
    for row in reply_rows(reply, "labels", count, f"{url}/v1/nli"):
        if not (isinstance(row, list) and len(row) == 2 and row[0] in _LABELS):
            raise ServiceError(f"malformed reply from {url}/v1/nli: {row!r}")
        label: NLILabel = row[0]
        out.append((label, unit_value(row[1], f"{url}/v1/nli")))
    return out
