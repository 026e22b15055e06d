"""How much text one check may carry: the limits the service and the CLI share.

The detector's work grows with the answer (one model row per answer unit) and, more
slowly, with the context (every unit's evidence is chosen from all of it). A limit in
characters is a cheap proxy of that work, computed before any model runs: English text
is about 4 characters per token, so 12,000 characters is about 3,000 tokens; a script
of one character per token (Chinese) reaches 12,000 tokens, still a bounded cost.

Measured on 2 CPU cores (bundled detector, one thread): a 1,000-character answer takes
0.3 s, 5,000 characters 1.7 s, 20,000 characters 8.4 s (14 s with a 100,000-character
context); a 400 KB answer took 45 s on the service before these limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._errors import InputTooLargeError
from ._types import DetectionInput

# Public through the core package: the service and the command line share these.
__all__ = ["InputLimits", "check_input_sizes"]

#: Characters of one answer.
MAX_ANSWER_CHARS = 12_000
#: Characters of one input's context passages and question together.
MAX_CONTEXT_CHARS = 200_000
#: Characters of all answers of one request (or one CLI record batch).
MAX_REQUEST_ANSWER_CHARS = 48_000
#: Characters of all contexts and questions of one request.
MAX_REQUEST_CONTEXT_CHARS = 800_000


@dataclass(frozen=True)
class InputLimits:
    """Per-input and per-request size limits, in characters (code points).

    Attributes:
        max_answer_chars: One answer.
        max_context_chars: One input's context passages and question together.
        max_request_answer_chars: All answers of one request.
        max_request_context_chars: All contexts and questions of one request.
    """

    max_answer_chars: int = MAX_ANSWER_CHARS
    max_context_chars: int = MAX_CONTEXT_CHARS
    max_request_answer_chars: int = MAX_REQUEST_ANSWER_CHARS
    max_request_context_chars: int = MAX_REQUEST_CONTEXT_CHARS


def _context_chars(item: DetectionInput) -> int:
    return sum(len(passage) for passage in item.context) + len(item.question or "")


def check_input_sizes(
    items: Sequence[DetectionInput], limits: InputLimits, *, where: str = "input"
) -> None:
    """Refuse inputs over the limits, before any model runs.

    Args:
        items: The inputs of one request.
        limits: The limits.
        where: How messages name one input (``"input"`` gives ``input 3``; a single
            input is named without a number).

    Raises:
        InputTooLargeError: Naming the limit, the size and the input.
    """
    answers = contexts = 0
    for n, item in enumerate(items, start=1):
        name = where if len(items) == 1 else f"{where} {n}"
        if len(item.answer) > limits.max_answer_chars:
            raise _too_large(f"the answer of {name}", len(item.answer), limits.max_answer_chars)
        size = _context_chars(item)
        if size > limits.max_context_chars:
            raise _too_large(f"the context and question of {name}", size, limits.max_context_chars)
        answers += len(item.answer)
        contexts += size
    if answers > limits.max_request_answer_chars:
        raise _too_large("the answers of this request", answers, limits.max_request_answer_chars)
    if contexts > limits.max_request_context_chars:
        raise _too_large(
            "the contexts and questions of this request", contexts, limits.max_request_context_chars
        )


def _too_large(what: str, size: int, limit: int) -> InputTooLargeError:
    return InputTooLargeError(
        f"{what}: {size:,} characters; the limit is {limit:,}", limit=limit, size=size
    )
