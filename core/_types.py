"""Typed inputs and results of the detection engine."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Literal, TypedDict

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from ._errors import InvalidInputError
from ._language import DEFAULT_LANGUAGES, Languages, check_languages

__all__ = [
    "Aggregation",
    "Coverage",
    "Decision",
    "DetectionConfig",
    "DetectionConfigKwargs",
    "DetectionInput",
    "DetectionResult",
    "DetectionStatus",
    "HallucinationSpan",
    "NLILabel",
    "TokenScore",
    "UnreadPassage",
]

NLILabel = Literal["entailment", "neutral", "contradiction"]
Aggregation = Literal["noisy_or", "span_max", "max", "calibrated"]


class Decision(StrEnum):
    """What the engine recommends for a scored answer."""

    PASS = "PASS"  # noqa: S105 - a decision name, not a secret
    MITIGATE = "MITIGATE"


class DetectionStatus(StrEnum):
    """Outcome of one detection.

    ``UNVERIFIABLE`` means there was no grounding to check against. It is never the
    same as ``SUPPORTED``: an answer without context was not checked at all.
    """

    SUPPORTED = "supported"
    HALLUCINATED = "hallucinated"
    UNVERIFIABLE = "unverifiable"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


#: Unicode categories (first letter) of characters a reader or a tokenizer can make
#: sense of: letters, numbers, punctuation, symbols. Text made only of the others
#: (spaces, control characters such as NUL, format characters such as the zero-width
#: space, private-use and unassigned code points) has nothing in it to check.
_READABLE_CATEGORIES = frozenset("LNPS")


def _is_readable(text: str) -> bool:
    """Whether ``text`` holds at least one letter, digit, punctuation mark or symbol."""
    return any(unicodedata.category(ch)[0] in _READABLE_CATEGORIES for ch in text)


def _check_encodable(text: str, where: str) -> None:
    """Raise when ``text`` holds lone surrogates, which no tokenizer (or UTF-8) accepts."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{where} is not valid Unicode text: character {exc.start} ({text[exc.start]!r}) "
            "is a lone surrogate that cannot be encoded as UTF-8; decode the source bytes "
            "with errors='replace' (or fix the producer) before checking it"
        ) from None


def _check_answer(answer: object) -> str:
    if not isinstance(answer, str):
        raise InvalidInputError(f"answer must be a string, got {type(answer).__name__}")
    if not answer.strip():
        raise InvalidInputError("answer is empty: there is nothing to check")
    _check_encodable(answer, "answer")
    if not _is_readable(answer):
        raise InvalidInputError(
            "answer has no readable characters (only spaces, control, zero-width or "
            "private-use characters): there is nothing to check"
        )
    return answer


def _check_question(question: object) -> str | None:
    if question is None:
        return None
    if not isinstance(question, str):
        raise InvalidInputError(f"question must be a string, got {type(question).__name__}")
    _check_encodable(question, "question")
    return question if _is_readable(question) else None


def _as_text_list(context: object) -> list[str]:
    """The readable passages of ``context``; blank or unreadable ones are dropped.

    A passage with nothing readable in it (NULs, zero-width spaces) cannot ground an
    answer, so it is dropped like a blank one: a context made only of such passages
    gives an ``unverifiable`` result, never a checked one.
    """
    if context is None:
        return []
    if isinstance(context, str):
        context = [context]
    if not isinstance(context, Sequence):
        raise InvalidInputError(
            f"context must be a string or a list of strings, got {type(context).__name__}"
        )
    passages: list[str] = []
    for i, item in enumerate(context):
        if not isinstance(item, str):
            raise InvalidInputError(
                f"context[{i}] must be a string, got {type(item).__name__}; "
                "convert documents or tool output to text first"
            )
        _check_encodable(item, f"context[{i}]")
        if _is_readable(item):
            passages.append(item)
    return passages


class DetectionInput(_Frozen):
    """One (context, question, answer) triple to check.

    Build it with :meth:`create`, which accepts a single string or a list of strings as
    context and raises :class:`InvalidInputError` with a readable message on bad input.
    Blank or unreadable passages are dropped; an empty context is allowed and yields an
    ``unverifiable`` result.

    What cannot be checked is never let through as checked:

    - an empty answer, or one with no readable character (only spaces, control
      characters such as NUL, zero-width or other format characters, private-use
      code points) raises :class:`InvalidInputError`, like any other input that
      leaves nothing to check;
    - text that is not valid Unicode (lone surrogates such as ``U+DC80``, which
      cannot be encoded as UTF-8) raises :class:`InvalidInputError`, in the answer,
      the question or any passage;
    - a passage with nothing readable in it does not count as grounding, so a context
      made only of such passages gives ``unverifiable``; an unreadable question is
      treated as no question.

    The same rules hold when the model is built directly (``DetectionInput(...)``);
    the error then comes wrapped in pydantic's ``ValidationError`` (a ``ValueError``).
    """

    context: tuple[str, ...] = ()
    question: str | None = None
    answer: str

    @field_validator("context", mode="after")
    @classmethod
    def _readable_context(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_as_text_list(value))

    @field_validator("question", mode="after")
    @classmethod
    def _readable_question(cls, value: str | None) -> str | None:
        return _check_question(value)

    @field_validator("answer", mode="after")
    @classmethod
    def _readable_answer(cls, value: str) -> str:
        return _check_answer(value)

    @classmethod
    def create(
        cls, *, context: str | Sequence[str] | None, question: str | None, answer: str
    ) -> DetectionInput:
        """Validate raw values and build an input.

        Args:
            context: Grounding passages: one string, a list of strings, or ``None``.
            question: The user's question, or ``None`` (e.g. summarisation).
            answer: The LLM answer to check; must hold readable text.

        Returns:
            The validated input.

        Raises:
            InvalidInputError: If the answer is missing, empty or unreadable, an item is
                not text, or any text is not valid Unicode (lone surrogates).
        """
        checked_answer = _check_answer(answer)
        checked_question = _check_question(question)
        return cls(
            context=tuple(_as_text_list(context)),
            question=checked_question,
            answer=checked_answer,
        )

    @property
    def grounded(self) -> bool:
        """Whether there is any context to check the answer against."""
        return bool(self.context)


class TokenScore(_Frozen):
    """Hallucination probability of one answer token, with its character offsets."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str
    probability: float = Field(ge=0.0, le=1.0)


class HallucinationSpan(_Frozen):
    """A run of answer characters the detector judged unsupported by the context.

    ``start`` and ``end`` index the answer string (``answer[start:end] == text``).
    The NLI fields are filled in by the explainer stage of the guard pipeline.
    """

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str
    confidence: float = Field(ge=0.0, le=1.0)
    nli_label: NLILabel | None = None
    nli_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    severity: int | None = Field(default=None, ge=0, le=4)

    @model_validator(mode="after")
    def _check_bounds(self) -> HallucinationSpan:
        if self.end < self.start:
            raise ValueError(f"span end {self.end} is before its start {self.start}")
        return self


class UnreadPassage(_Frozen):
    """A context passage left out of the evidence: the detector does not read its language.

    Attributes:
        index: The passage's position in the context as given (0-based).
        language: Its language (an ISO 639 code, as the identifier names it).
    """

    index: int = Field(ge=0)
    language: str


class Coverage(_Frozen):
    """What part of the input the detector actually scored, and how."""

    answer_chars: int = Field(ge=0, description="Length of the answer in characters.")
    answer_chars_scored: int = Field(ge=0, description="Answer characters inside scored tokens.")
    answer_pieces: int = Field(default=1, ge=1, description="Pieces the answer was split into.")
    context_windows: int = Field(
        default=1, ge=0, description="Context windows scored (0 when there is no context)."
    )
    context_split: bool = Field(
        default=False, description="Whether the context had to be split into windows."
    )
    max_length: int = Field(ge=0, description="Model window in tokens.")
    evidence_sentences: int | None = Field(
        default=None,
        ge=0,
        description="Evidence selection: context sentences read for any unit (None: windows).",
    )
    context_sentences: int | None = Field(
        default=None, ge=0, description="Evidence selection: sentences in the whole context."
    )
    passages_not_read: list[UnreadPassage] = Field(
        default_factory=list,
        description=(
            "Context passages in a language the detector does not read (DetectionConfig."
            "languages): left out of what it scored."
        ),
    )
    answer_language_not_read: str | None = Field(
        default=None,
        description=(
            "The language of the answer's sentences in a language the detector does not "
            "read: they do not count in answer_chars_scored."
        ),
    )

    @property
    def scored_fraction(self) -> float:
        """Share of the answer's characters inside scored tokens (0 to 1)."""
        return self.answer_chars_scored / self.answer_chars if self.answer_chars else 0.0

    @property
    def answer_split(self) -> bool:
        """Whether the answer alone was too long for one window."""
        return self.answer_pieces > 1


class DetectionConfig(_Frozen):
    """Thresholds and limits of a detector.

    Attributes:
        token_threshold: A token whose hallucination probability exceeds this is flagged
            (LettuceDetect uses 0.5, HaluGate 0.8).
        threshold: Response score at or above which the answer is ``detected``.
        aggregation: ``noisy_or`` over flagged tokens, ``span_max`` (max span score), or
            ``max`` (the largest token probability, flagged or not: a probability when the
            model is calibrated, and a ranking score for every answer), or ``calibrated``
            (the model folder's response calibration: the token probabilities read with
            the answer's length and absent words; the bundled detector's default, see
            :class:`~truthlens_integrations.core._calibration._map.ResponseCalibration`).
        min_span_chars: Spans shorter than this many non-space characters are dropped.
        min_span_confidence: Spans whose confidence is below this are dropped.
        max_length: Model window in tokens; ``None`` reads it from the model.
        window_overlap: Tokens shared by neighbouring context windows.
        batch_size: Sequences per forward pass.
        max_windows: Upper bound on windows per input, to bound the cost of huge contexts.
        early_exit: Stop scoring further context windows of an answer once no token is
            above ``token_threshold`` in any window scored so far (windows are scored most
            relevant first). Spans, scores and decisions are the same as without it;
            the probabilities of unflagged tokens may then be higher than the minimum over
            all windows. Turn it off for exact probabilities (the evaluation harness does).
        evidence_tokens: Evidence-selection detectors: token budget of the context
            sentences (and question) each answer unit is judged against.
        unit_tokens: Evidence-selection detectors: most tokens per answer unit (one or
            a few consecutive sentences). The bundled model was trained on units of up
            to 48 tokens; 96 ranks the same on held-out data with half the rows.
        min_coverage: Fewer scored answer characters than this share of the answer's
            non-space characters (text the vocabulary cannot read, e.g. a script it has
            no tokens for) makes the result ``unverifiable``, never ``supported``.
        languages: The languages the detector reads (ISO 639 codes; ``"any"`` for a
            multilingual model). An answer in another language is not checked
            (``unverifiable``, ``unread_language`` set), and context passages in another
            language are left out of the evidence (``coverage.passages_not_read``); see
            ``core/_language.py`` for how a language is told. The bundled models read
            English.
    """

    # Strict: `threshold=True` is not 1.0 and `"0.3"` is not 0.3; NaN and infinities
    # are refused (a NaN threshold compares false with every score).
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    token_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    aggregation: Aggregation = "noisy_or"
    min_span_chars: int = Field(default=1, ge=0)
    min_span_confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    max_length: int | None = Field(default=None, ge=32)
    window_overlap: int = Field(default=64, ge=0)
    batch_size: int = Field(default=16, ge=1)
    max_windows: int = Field(default=64, ge=1)
    early_exit: bool = True
    evidence_tokens: int = Field(default=192, ge=32)
    unit_tokens: int = Field(default=96, ge=8)
    min_coverage: float = Field(default=0.8, ge=0.0, le=1.0)
    # Read before the strict check: a list (a service's /healthz, a policy) is a tuple.
    languages: Annotated[Languages, BeforeValidator(check_languages)] = DEFAULT_LANGUAGES


class DetectionConfigKwargs(TypedDict, total=False):
    """:class:`DetectionConfig` as typed keyword arguments (``load_detector(threshold=0.6)``).

    One key per field, typed for editors and type checkers; each is described on
    :class:`DetectionConfig`, which still checks the values at runtime.
    """

    token_threshold: float
    threshold: float
    aggregation: Aggregation
    min_span_chars: int
    min_span_confidence: float
    max_length: int | None
    window_overlap: int
    batch_size: int
    max_windows: int
    early_exit: bool
    evidence_tokens: int
    unit_tokens: int
    min_coverage: float
    languages: Languages


class DetectionResult(_Frozen):
    """What the detector found in one answer.

    An answer the detector could not check (``status`` ``unverifiable``: no context, an
    unreadable answer, a failed service) has no score: ``score`` is ``None`` there, and
    only there, so no surface can show a number that reads as clean.
    """

    answer: str
    spans: list[HallucinationSpan]
    score: float | None = Field(
        ge=0.0,
        le=1.0,
        description="Response-level hallucination score; null when the answer was not checked.",
    )
    threshold: float = Field(ge=0.0, le=1.0)
    detected: bool
    status: DetectionStatus
    tokens: list[TokenScore] = Field(default_factory=list)
    coverage: Coverage
    model_id: str
    latency_ms: float = Field(ge=0.0)
    error: str | None = Field(
        default=None,
        description=(
            "Why the answer could not be checked (e.g. the detection service failed); "
            "set only on unverifiable results."
        ),
    )
    unread_language: str | None = Field(
        default=None,
        description=(
            "The language of an input the detector does not read (the answer's, or the "
            "context's when no passage of it is read): why it was not checked. Set only "
            "on unverifiable results."
        ),
    )

    @model_validator(mode="after")
    def _score_only_when_checked(self) -> DetectionResult:
        # Not checked is never clean: no score (not even 0.0) beside "unverifiable",
        # and a checked answer always has one.
        unchecked = self.status is DetectionStatus.UNVERIFIABLE
        if unchecked and (self.score is not None or self.detected):
            raise ValueError("an unverifiable result has no score and is not detected")
        if not unchecked and self.score is None:
            raise ValueError(f"a {self.status.value} result needs a score")
        return self

    @property
    def grounded(self) -> bool:
        """Whether there was context to check against."""
        return self.status is not DetectionStatus.UNVERIFIABLE

    @property
    def decision(self) -> Decision:
        """PASS below the threshold, MITIGATE at or above it."""
        return Decision.MITIGATE if self.detected else Decision.PASS
