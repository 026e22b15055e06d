"""What a blocked answer looks like, defined once for the engine and every adapter.

The engine raises :func:`blocked_error` when ``on_block="raise"``; otherwise the
adapters show ``blocked_message`` (:data:`DEFAULT_BLOCKED_MESSAGE` unless the caller
gives another) through :func:`shown_text`, and attach the verdict as
:meth:`Verdict.to_dict` (:func:`verdict_payload`).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, cast

from .._errors import BlockedResponseError
from ._verdict import Verdict

__all__ = [
    "DEFAULT_BLOCKED_MESSAGE",
    "EngineBlocking",
    "OnBlock",
    "blocked_error",
    "shown_text",
    "verdict_of",
    "verdict_payload",
]


#: What a blocked answer becomes: ``"message"`` (shown in its place) or ``"raise"``.
OnBlock = Literal["message", "raise"]


class _BlockingEngine(Protocol):
    @property
    def on_block(self) -> OnBlock: ...

    @property
    def blocked_message(self) -> str: ...


class _HasEngine(Protocol):
    # The adapter declares ``engine`` (a field or an attribute); the mixin only reads it.
    engine: _BlockingEngine


class EngineBlocking:
    """``on_block`` and ``blocked_message`` of an adapter: its engine's, written once.

    Mixed into every adapter that holds a guard engine as ``engine``; the engine's
    options own both values.
    """

    @property
    def on_block(self) -> OnBlock:
        """What a blocked answer becomes (the engine's ``on_block``)."""
        return cast("_HasEngine", self).engine.on_block

    @property
    def blocked_message(self) -> str:
        """The text shown in place of a blocked answer (the engine's)."""
        return cast("_HasEngine", self).engine.blocked_message


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


def verdict_payload(verdict: Verdict) -> dict[str, Any]:
    """The verdict as a user reads it: :meth:`Verdict.to_dict`.

    What every adapter puts under the key ``"truthlens"`` (message metadata, response
    metadata, events). Kept as a function for callers of earlier releases.

    Args:
        verdict: The verdict.

    Returns:
        ``verdict.to_dict()``.
    """
    return verdict.to_dict()


def verdict_of(exc: BlockedResponseError) -> Verdict:
    """The verdict a :class:`BlockedResponseError` carries (re-raised when it has none)."""
    if not isinstance(exc.verdict, Verdict):
        raise exc
    return exc.verdict
