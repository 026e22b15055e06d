"""Structured logging through :mod:`logging`: an event name plus fields."""

from __future__ import annotations

import importlib
import json
import logging
from typing import Any

__all__ = ["FIELDS_ATTRIBUTE", "JsonFormatter", "get_logger", "import_optional", "log_event"]

FIELDS_ATTRIBUTE = "truthlens"
_ROOT = "truthlens_integrations"


def get_logger(name: str) -> logging.Logger:
    """A logger under the package's ``truthlens_integrations`` hierarchy.

    Args:
        name: Module or component name; prefixed unless it already is.
    """
    full = name if name == _ROOT or name.startswith(_ROOT + ".") else f"{_ROOT}.{name}"
    return logging.getLogger(full)


def import_optional(module: str, logger: logging.Logger, missing: str) -> Any:
    """``module``, or ``None`` when it is not installed (logged at DEBUG as ``missing``).

    Metrics and tracing use it: without their extra they become no-ops, not errors.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        logger.debug(missing)
        return None


def log_event(
    logger: logging.Logger, event: str, *, level: int = logging.INFO, **fields: Any
) -> None:
    """Log ``event`` with structured ``fields``.

    The fields travel on the record as ``record.truthlens`` (a dict, for JSON
    formatters and log shippers) and are also appended to the message as
    ``key=value`` pairs for plain-text handlers.

    Args:
        logger: Logger to use.
        event: Short event name, e.g. ``guard.verdict``.
        level: Logging level.
        **fields: JSON-friendly values.
    """
    if not logger.isEnabledFor(level):
        return
    pairs = " ".join(f"{k}={v!r}" for k, v in fields.items())
    logger.log(
        level,
        "%s %s",
        event,
        pairs,
        extra={FIELDS_ATTRIBUTE: {"event": event, **fields}},
        stacklevel=2,
    )


class JsonFormatter(logging.Formatter):
    """Formats records as one JSON object per line, with the structured fields merged in."""

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as JSON."""
        payload: dict[str, Any] = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, FIELDS_ATTRIBUTE, None)
        if isinstance(fields, dict):
            payload.update(fields)
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str, ensure_ascii=False)
