"""What a blocked answer looks like, defined once for the engine and every adapter.

The engine raises :func:`blocked_error` when ``raise_on_block`` is set; the adapters
show :data:`DEFAULT_BLOCKED_MESSAGE` (or the caller's text) through
:func:`shown_text`, and attach the verdict as :func:`verdict_payload`.
"""

from __future__ import annotations

from typing import Any

from .._errors import BlockedResponseError
from ._verdict import Verdict

__all__ = [
    "DEFAULT_BLOCKED_MESSAGE",
    "blocked_error",
    "shown_text",
    "verdict_of",
    "verdict_payload",
]

#: The text shown in place of a blocked answer unless the caller gives another.
DEFAULT_BLOCKED_MESSAGE = (
    "I can't give a verified answer to this: the response was withheld because it "
    "could not be supported by the available sources."
)


def blocked_error(verdict: Verdict) -> BlockedResponseError:
    """The error for a blocked answer, with ``verdict`` attached as ``error.verdict``."""
    return BlockedResponseError(
        f"answer withheld by policy (route={verdict.route}, score={verdict.score})",
        verdict=verdict,
    )


def shown_text(
    verdict: Verdict, *, raise_blocked: bool, blocked_message: str = DEFAULT_BLOCKED_MESSAGE
) -> str:
    """The text to show the user for ``verdict``.

    Args:
        verdict: The engine's verdict.
        raise_blocked: Raise for a blocked answer instead of showing ``blocked_message``.
        blocked_message: Text shown in place of a blocked answer.

    Returns:
        ``blocked_message`` for a blocked answer, else the verdict's output (the
        original answer when there is none).

    Raises:
        BlockedResponseError: If the answer was blocked and ``raise_blocked`` is set.
    """
    if verdict.blocked:
        if raise_blocked:
            raise blocked_error(verdict)
        return blocked_message
    return verdict.output if verdict.output is not None else verdict.original_answer


def verdict_payload(verdict: Verdict, *, headers: bool = False) -> dict[str, Any]:
    """The verdict as JSON-friendly data, for message metadata, events and responses.

    The raw detector result (per-token scores, which can be large) is left out;
    everything else, the ``x-*`` metadata and the original answer included, is kept.

    Args:
        verdict: The verdict.
        headers: Put the ``x-truthlens-*`` / ``x-vsr-*`` header values at the top
            level (so an HTTP layer can copy them unchanged) and the verdict under
            ``"verdict"``; LlamaIndex response metadata takes this shape.

    Returns:
        The payload.
    """
    data = verdict.model_dump(mode="json", exclude={"detection"})
    if headers:
        return {**verdict.metadata, "verdict": data}
    return data


def verdict_of(exc: BlockedResponseError) -> Verdict:
    """The verdict a :class:`BlockedResponseError` carries (re-raised when it has none)."""
    if not isinstance(exc.verdict, Verdict):
        raise exc
    return exc.verdict
