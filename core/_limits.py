"""How much text one check may carry: the limits the service and the CLI share.

The detector's work grows with the answer (one model row per answer unit) and, more
slowly, with the context (every unit's evidence is chosen from all of it). A limit in
characters is a cheap proxy of that work, computed before any model runs: English text
is about 4 characters per token, so 12,000 characters is about 3,000 tokens; a script
of one character per token (Chinese) reaches 12,000 tokens, still a bounded cost.

Measured on 2 CPU cores (bundled detector, one thread): a 1,000-character answer takes
0.3 s, 5,000 characters 1.7 s, 20,000 characters 8.4 s (14 s with a 100,000-character
context); a 400 KB answer took 45 s on the service before these limits.

Characters are counted as the model reads them, after normalisation (``core/_normalize``
folds compatibility forms with NFKC): one U+FDFA is 18 characters to the model, and 2,000
of them counted as 2,000 took 22 s against 2.3 s for 12,000 ASCII characters. The count
is the longer of the text and its NFKC form, computed in C before anything else runs;
normalisation only drops characters beyond NFKC, so the model never reads more.

A request's total work is bounded in model tokens too (:func:`check_request_tokens`):
the character totals bound answers and contexts apart, the token budget bounds all the
text one request hands the models together, in any endpoint's shape.

Characters do not bound the work of an answer made of many short sentences: each
sentence is judged on its own (its evidence query, the number and negation rules, its
signals), so 12,000 characters of short claims (800 sentences) cost more than 12,000 of
prose (110). Answers are therefore also bounded in sentences, split as the detector
splits them (:data:`MAX_ANSWER_SENTENCES`, :data:`MAX_REQUEST_ANSWER_SENTENCES`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ._errors import InputTooLargeError
from ._normalize import normalize
from ._text import AnswerText
from ._types import DetectionInput

# Public through the core package: the service and the command line share these.
__all__ = [
    "InputLimits",
    "answer_sentences",
    "at_most_one_token_per_char",
    "check_input_sizes",
    "check_request_tokens",
    "readable_chars",
]

#: Characters of one answer.
MAX_ANSWER_CHARS = 12_000
#: Characters of one input's context passages and question together.
MAX_CONTEXT_CHARS = 200_000
#: Characters of all answers of one request (or one CLI record batch).
MAX_REQUEST_ANSWER_CHARS = 48_000
#: Characters of all contexts and questions of one request.
MAX_REQUEST_CONTEXT_CHARS = 800_000
#: Sentences of one answer, as the detector splits it (after normalisation): 12,000
#: characters of prose are about 110, of one-line claims 800, of numbered items 2,000.
#: The guard's work grows with them (each sentence is judged, each flagged one explained
#: by NLI): 500 short wrong claims take about 3 s on 2 cores, as much as an answer at the
#: character limit of prose with its context.
MAX_ANSWER_SENTENCES = 500
#: Sentences of all answers of one request: four answers at the limit (as many as the
#: characters of a request allow), about 12 s of short wrong claims.
MAX_REQUEST_ANSWER_SENTENCES = 2_000
#: Model tokens of all the text of one request (answers, contexts and questions; NLI
#: premises and hypotheses; prompts). One input at the character limits in English
#: (12,000 + 200,000 characters) is about 53,000 tokens and fits; four of them (113 s
#: of /v1/guard on 2 cores) do not.
MAX_REQUEST_TOKENS = 65_536


@dataclass(frozen=True)
class InputLimits:
    """Per-input and per-request size limits, in characters (code points).

    Attributes:
        max_answer_chars: One answer.
        max_context_chars: One input's context passages and question together.
        max_request_answer_chars: All answers of one request.
        max_request_context_chars: All contexts and questions of one request.
        max_request_tokens: All text of one request, in model tokens
            (:func:`check_request_tokens`).
        max_answer_sentences: One answer, in sentences (:func:`answer_sentences`).
        max_request_answer_sentences: All answers of one request, in sentences.
    """

    max_answer_chars: int = MAX_ANSWER_CHARS
    max_context_chars: int = MAX_CONTEXT_CHARS
    max_request_answer_chars: int = MAX_REQUEST_ANSWER_CHARS
    max_request_context_chars: int = MAX_REQUEST_CONTEXT_CHARS
    max_request_tokens: int = MAX_REQUEST_TOKENS
    max_answer_sentences: int = MAX_ANSWER_SENTENCES
    max_request_answer_sentences: int = MAX_REQUEST_ANSWER_SENTENCES


def readable_chars(text: str) -> int:
    """Characters of ``text`` as the model reads it: at least what normalisation leaves.

    ``len(text)`` for ASCII; otherwise the longer of ``text`` and its NFKC form (NFKC is
    where normalisation expands text, U+FDFA to 18 characters; everything else it does
    drops characters). C-speed, so it can run on text a limit is about to refuse.
    """
    if text.isascii():
        return len(text)
    return max(len(text), len(unicodedata.normalize("NFKC", text)))


def answer_sentences(answer: str) -> int:
    """Sentences of ``answer`` as the detector splits it: normalised, by the one sentence rule.

    The detector judges each sentence on its own; this is the count its work grows with.
    """
    return len(AnswerText.of(normalize(answer).text).sentences)


def _context_chars(item: DetectionInput) -> int:
    return sum(readable_chars(passage) for passage in item.context) + readable_chars(
        item.question or ""
    )


def at_most_one_token_per_char(text: str) -> int:
    """A token count without a tokenizer: the non-space characters the model reads.

    A word-piece token covers at least one character, so this bounds the tokens from
    above: a budget checked with it never lets through more than it says.
    """
    return sum(1 for ch in text if not ch.isspace())


def check_request_tokens(
    texts: Iterable[str],
    budget: int,
    count: Callable[[str], int] = at_most_one_token_per_char,
    *,
    what: str = "the text of this request",
) -> int:
    """Refuse a request whose text is more than ``budget`` model tokens, before any model runs.

    Each text is normalised first (what the models read, ``core/_normalize``) and counted
    with ``count`` (the model's tokenizer, or :func:`at_most_one_token_per_char`). The
    count stops at the first text that goes over the budget, so refusing a huge request
    costs about as much as counting the budget's worth of text.

    Args:
        texts: Every text the request hands a model.
        budget: Most tokens of one request.
        count: Tokens of one normalised text.
        what: How the message names the request's text.

    Returns:
        The tokens counted (all of them, when within the budget).

    Raises:
        InputTooLargeError: Naming the budget and the tokens counted so far (at least
            that many: the count stopped there).
    """
    total = 0
    for text in texts:
        if not text:
            continue
        total += count(normalize(text).text)
        if total > budget:
            raise InputTooLargeError(
                f"{what}: at least {total:,} model tokens; the limit is {budget:,} per request "
                "(service.max_request_tokens): send it as several smaller requests",
                limit=budget,
                size=total,
            )
    return total


def check_input_sizes(
    items: Sequence[DetectionInput], limits: InputLimits, *, where: str = "input"
) -> None:
    """Refuse inputs over the size limits, before any model runs.

    Characters are counted as the model reads them (:func:`readable_chars`), the
    answers' sentences as the detector splits them (:func:`answer_sentences`).

    Args:
        items: The inputs of one request.
        limits: The limits.
        where: How messages name one input (``"input"`` gives ``input 3``; a single
            input is named without a number).

    Raises:
        InputTooLargeError: Naming the limit, the size and the input.
    """
    answers = contexts = sentences = 0
    for n, item in enumerate(items, start=1):
        name = where if len(items) == 1 else f"{where} {n}"
        answer = readable_chars(item.answer)
        if answer > limits.max_answer_chars:
            raise _too_large(f"the answer of {name}", answer, limits.max_answer_chars)
        size = _context_chars(item)
        if size > limits.max_context_chars:
            raise _too_large(f"the context and question of {name}", size, limits.max_context_chars)
        count = answer_sentences(item.answer)
        if count > limits.max_answer_sentences:
            raise _too_many(f"the answer of {name}", count, limits.max_answer_sentences)
        answers += answer
        contexts += size
        sentences += count
    if answers > limits.max_request_answer_chars:
        raise _too_large("the answers of this request", answers, limits.max_request_answer_chars)
    if contexts > limits.max_request_context_chars:
        raise _too_large(
            "the contexts and questions of this request", contexts, limits.max_request_context_chars
        )
    if sentences > limits.max_request_answer_sentences:
        raise _too_many(
            "the answers of this request", sentences, limits.max_request_answer_sentences
        )


def _too_large(what: str, size: int, limit: int) -> InputTooLargeError:
    return InputTooLargeError(
        f"{what}: {size:,} characters as the model reads them (after normalisation); "
        f"the limit is {limit:,}",
        limit=limit,
        size=size,
    )


def _too_many(what: str, size: int, limit: int) -> InputTooLargeError:
    return InputTooLargeError(
        f"{what}: {size:,} sentences; the limit is {limit:,} (each sentence is judged on its "
        "own, so the work grows with them): send fewer or longer sentences, or split it",
        limit=limit,
        size=size,
    )
