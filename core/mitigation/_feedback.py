"""The retrieval-feedback loop: rewrite the query from the detection report, retrieve again.

When flagged spans are unsupported (NLI neutral: the context lacks the evidence), a
query refiner turns them into a new query (an LLM asked for JSON, parsed strictly
through pydantic, with a deterministic fallback), the retriever is asked again, new
passages are added to the context (de-duplicated, within a token budget), the answer
is regenerated against the grown context and detected. Spans that contradict the
context are fixed against the same context instead (no new retrieval).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._errors import LLMError, LLMTimeoutError, RetrievalError
from .._types import HallucinationSpan
from ..llm import LLM, ChatMessage
from ._loop import LoopSettings, MitigationOptions, Recorder, ask_model
from ._ops import Generate, Ledger, Loop, Op, answer_query, assess, generate, retrieve
from ._prompts import _DATA_RULE, build_answer_messages, build_refine_messages, defuse
from ._protocols import GroundedAnswerer, Retriever
from ._results import Assessment, MitigationStatus
from ._text import approx_tokens, is_near_duplicate, normalise

__all__ = [
    "RefinedQuery",
    "accumulate_context",
    "build_refiner_messages",
    "fallback_query",
    "parse_refined_query",
    "retrieval_feedback",
]

logger = logging.getLogger(__name__)


class RefinedQuery(BaseModel):
    """What the query refiner must return (as JSON).

    Attributes:
        query: The new retrieval query.
        missing_facts: The facts the context lacked (informative only).
    """

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    query: str = Field(min_length=3, max_length=400)
    missing_facts: list[str] = Field(default_factory=list, max_length=20)

    @field_validator("query")
    @classmethod
    def _has_words(cls, value: str) -> str:
        if not re.search(r"\w", value):
            raise ValueError("the query has no words")
        return " ".join(value.split())


REFINER_SYSTEM = (
    "You rewrite search queries so that a search engine finds the missing evidence. "
    + _DATA_RULE
    + ' Reply with one JSON object and nothing else: {"query": "<new search query>", '
    '"missing_facts": ["<fact the documents lacked>", ...]}'
)


def build_refiner_messages(
    *, question: str | None, query: str, unsupported: Sequence[HallucinationSpan]
) -> list[ChatMessage]:
    """The query-refiner prompt: the question, the last query and the unsupported claims.

    Args:
        question: The user's question.
        query: The query used last.
        unsupported: Spans the context did not support.

    Returns:
        A system and a user message.
    """
    claims = "\n".join(f"- {defuse(s.text.strip())}" for s in unsupported) or "- (none)"
    user = (
        f"<question>\n{defuse(question or '(none)')}\n</question>\n\n"
        f"Last search query: {defuse(query)}\n\n"
        f"The retrieved documents did not support these statements of the answer:\n{claims}\n\n"
        "Write a better search query that would find documents confirming or refuting "
        "them. JSON only."
    )
    return [ChatMessage.system(REFINER_SYSTEM), ChatMessage.user(user)]


_FENCE = re.compile(r"```(?:json)?", re.IGNORECASE)


def parse_refined_query(text: str) -> RefinedQuery | None:
    """Parse the refiner's reply strictly; ``None`` for anything but the expected JSON.

    The first ``{...}`` object is taken (models wrap JSON in prose or code fences);
    it must be valid JSON with a string ``query``. Model output is never evaluated.
    """
    body = _FENCE.sub("", text)
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        return RefinedQuery.model_validate_json(body[start : end + 1])
    except (ValidationError, json.JSONDecodeError, ValueError):
        return None


def fallback_query(base: str, unsupported: Sequence[HallucinationSpan]) -> str:
    """The deterministic query: the original query plus the unsupported facts."""
    facts: list[str] = []
    for span in unsupported:
        text = " ".join(span.text.split())
        if text and normalise(text) not in {normalise(f) for f in facts}:
            facts.append(text)
    return " ".join([base.strip(), *facts]).strip()


def accumulate_context(
    context: list[str],
    passages: Sequence[str],
    *,
    budget: int,
    max_new: int,
    similarity: float,
) -> int:
    """Append new, non-duplicate passages to ``context`` while they fit the budget.

    Args:
        context: The context so far; extended in place. Its passages are never dropped.
        passages: Newly retrieved passages, best first.
        budget: Upper bound on the whole context, in approximate tokens.
        max_new: Passages to add at most.
        similarity: Jaccard similarity at which a passage counts as a duplicate.

    Returns:
        How many passages were added.
    """
    used = sum(approx_tokens(p) for p in context)
    added = 0
    for passage in passages:
        text = passage.strip()
        if added >= max_new:
            break
        if not text or is_near_duplicate(text, context, similarity):
            continue
        cost = approx_tokens(text)
        if used + cost > budget:
            continue
        context.append(text)
        used += cost
        added += 1
    return added


def _new_query(
    refiner: LLM | None,
    question: str | None,
    query: str,
    unsupported: Sequence[HallucinationSpan],
    options: MitigationOptions,
) -> Generator[Op, object, str]:
    fallback = fallback_query(question or query, unsupported)
    if refiner is None:
        return fallback
    build = options.refiner_messages or build_refiner_messages
    messages = build(question=question, query=query, unsupported=unsupported)
    try:
        response = yield from generate(
            Generate(refiner, tuple(messages), role="refiner", max_tokens=128, temperature=0.0)
        )
    except LLMError as exc:
        logger.info("query refiner failed (%s); using the fallback query", exc)
        return fallback
    parsed = parse_refined_query(response.text)
    if parsed is None:
        logger.info("query refiner returned no valid JSON; using the fallback query")
        return fallback
    return parsed.query


def _gather(
    retriever: Retriever | None, answerer: GroundedAnswerer | None, query: str
) -> Generator[Op, object, tuple[str | None, list[str]]]:
    if answerer is not None:
        text, passages = yield from answer_query(answerer, query)
        return text, passages
    assert retriever is not None
    passages = yield from retrieve(retriever, query)
    return None, passages


def _regenerate(
    llm: LLM, search: _Search, current: Assessment, settings: LoopSettings, *, grew: bool
) -> Generator[Op, object, str]:
    """A new answer: afresh from the grown context, else the current one refined.

    The answer being fixed was written without the evidence the search just added; a
    model asked to correct it tends to keep it (a 1.5B model kept "age 21" beside a
    passage saying "nine"), so after new passages the question is answered again.
    """
    if grew:
        messages = build_answer_messages(context=search.context, question=search.question)
    else:
        build = settings.options.refine_messages or build_refine_messages
        messages = build(
            context=search.context,
            question=search.question,
            answer=current.answer,
            spans=current.spans,
        )
    return (yield from ask_model(llm, messages, role="generator", options=settings.options))


@dataclass
class _Found:
    """What one search step produced."""

    text: str | None = None
    added: int = 0
    query: str | None = None
    stop: tuple[MitigationStatus, str] | None = None


class _Search:
    """The growing context and the queries asked so far."""

    def __init__(self, context: list[str], question: str | None, settings: LoopSettings) -> None:
        self.context = context
        self.question = question
        self.query = question or ""
        self.asked = {normalise(self.query)}
        self.options = settings.options

    def run(
        self,
        llm: LLM | None,
        retriever: Retriever | None,
        answerer: GroundedAnswerer | None,
        unsupported: Sequence[HallucinationSpan],
    ) -> Generator[Op, object, _Found]:
        """Rewrite the query, retrieve (or re-run the pipeline), grow the context."""
        query = yield from _new_query(llm, self.question, self.query, unsupported, self.options)
        if normalise(query) in self.asked:
            return _Found(query=query, stop=("query_stagnation", "the query did not change"))
        self.asked.add(normalise(query))
        self.query = query
        try:
            text, passages = yield from _gather(retriever, answerer, query)
        except RetrievalError as exc:
            return _Found(query=query, stop=("retrieval_error", str(exc)))
        except LLMTimeoutError as exc:  # the request's time budget ran out
            return _Found(query=query, stop=("llm_timeout", str(exc)))
        added = accumulate_context(
            self.context,
            passages,
            budget=self.options.context_token_budget,
            max_new=self.options.max_new_passages,
            similarity=self.options.dedupe_similarity,
        )
        if added == 0:
            return _Found(query=query, stop=("query_stagnation", "no new passages retrieved"))
        return _Found(text=text, added=added, query=query)


def retrieval_feedback(
    context: Sequence[str],
    question: str | None,
    initial: Assessment,
    *,
    llm: LLM | None,
    retriever: Retriever | None,
    answerer: GroundedAnswerer | None,
    settings: LoopSettings,
    ledger: Ledger,
) -> Loop:
    """Refine the query, retrieve, regenerate, detect.

    Stops on success, when rounds run out, or when the query or the retrieved set
    stops changing (``query_stagnation``).

    Args:
        context: The original passages (always kept).
        question: The user's question (the first query).
        initial: The original answer's assessment.
        llm: Refines the query and regenerates; without it the query falls back to
            the deterministic rewrite and ``answerer`` must produce the answers.
        retriever: Finds passages for a query.
        answerer: Re-runs the caller's pipeline for a query (used instead of
            ``retriever`` + ``llm`` when given).
        settings: Rounds, convergence threshold, budget options.
        ledger: The request's cost ledger.

    Returns:
        The loop, to run with ``drive`` / ``adrive``.
    """
    rec = Recorder(initial, ledger, settings.convergence_threshold)
    search = _Search(list(context), question, settings)
    status, error = yield from _rounds(rec, search, llm, retriever, answerer, settings)
    return rec.result(
        "retrieval_feedback", status, context=search.context, error=error, success="success"
    )


def _rounds(
    rec: Recorder,
    search: _Search,
    llm: LLM | None,
    retriever: Retriever | None,
    answerer: GroundedAnswerer | None,
    settings: LoopSettings,
) -> Generator[Op, object, tuple[MitigationStatus, str | None]]:
    """Run the rounds; return the status and error to stop with."""
    for current in rec.each_round(settings.max_iterations):
        unsupported = [s for s in current.spans if s.nli_label in (None, "neutral")]
        if not unsupported and llm is None:
            unsupported = list(current.spans)  # only the answerer can act: re-ask
        found = _Found()
        if unsupported:
            found = yield from search.run(llm, retriever, answerer, unsupported)
            if found.stop is not None:
                status, stop_reason = found.stop
                rec.record("retrieve", None, error=stop_reason, query=found.query)
                # Stagnation is a normal end; a failing retriever or the budget is not.
                return status, (
                    stop_reason if status in ("retrieval_error", "llm_timeout") else None
                )
        text = found.text
        if text is None:
            assert llm is not None
            try:
                text = yield from _regenerate(llm, search, current, settings, grew=found.added > 0)
            except LLMError as exc:
                return rec.failed("retrieve", exc, query=found.query, new_passages=found.added)
        cleaned = rec.usable("retrieve", text, reference=current.answer, query=found.query)
        if cleaned is None:
            continue
        candidate = yield from assess(search.context, cleaned)
        rec.record("retrieve", candidate, query=found.query, new_passages=found.added)
    return "max_iterations_reached", None
