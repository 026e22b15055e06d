"""The loops as plain generators of operations, run by a sync or an async driver.

Each loop (self-refine, cross-model, retrieval feedback) is written once, as a
generator that yields what it needs (an LLM call, a detection, a retrieval) and
receives the result. :func:`drive` runs it with blocking calls (``complete``,
``retrieve``); :func:`adrive` with ``acomplete`` / ``aretrieve`` and the models in
worker threads, so both entry points share one implementation of every rule.

A failed call is thrown into the generator as :class:`LLMError` /
:class:`RetrievalError`, so loops handle failures with ordinary ``try``/``except``.

A request's time budget (the ledger's ``deadline``) bounds every LLM call and every
retrieval or pipeline re-run (which call LLMs too): a sync call runs in a worker thread
that is abandoned at the deadline, an async one is cancelled, and either way the loop
receives :class:`LLMTimeoutError` and ends with ``llm_timeout``. No call starts after
the deadline.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar, cast

from .._errors import LLMError, LLMTimeoutError, RetrievalError
from .._quoting import quoted
from .._types import NLILabel
from ..llm import LLM, ChatMessage, LLMResponse
from ._protocols import GroundedAnswer, GroundedAnswerer, Retriever
from ._results import Assessment, CostAccount, MitigationResult, ModelUse

__all__ = [
    "AnswerQuery",
    "Assess",
    "Explain",
    "Generate",
    "GenerateAll",
    "Ledger",
    "Loop",
    "Op",
    "Retrieve",
    "Runtime",
    "adrive",
    "answer_query",
    "assess",
    "drive",
    "explain",
    "generate",
    "generate_all",
    "retrieve",
]


@dataclass(frozen=True)
class Generate:
    """Ask ``llm`` for a completion; the result is an :class:`LLMResponse`."""

    llm: LLM
    messages: tuple[ChatMessage, ...]
    role: str
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass(frozen=True)
class GenerateAll:
    """Several completions at once (in parallel).

    The result is a list of :class:`LLMResponse` or :class:`LLMError`, in call order.
    """

    calls: tuple[Generate, ...]


@dataclass(frozen=True)
class Assess:
    """Detect (and NLI-filter) ``answer`` against ``context``; result: :class:`Assessment`."""

    context: tuple[str, ...]
    answer: str


@dataclass(frozen=True)
class Explain:
    """NLI labels for (premise, hypothesis) pairs; ``None`` when no NLI model exists."""

    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Retrieve:
    """Passages for ``query``; the result is a list of strings."""

    retriever: Retriever
    query: str


@dataclass(frozen=True)
class AnswerQuery:
    """Re-run the caller's pipeline for ``query``; the result is ``(answer, passages)``."""

    answerer: GroundedAnswerer
    query: str


Op = Generate | GenerateAll | Assess | Explain | Retrieve | AnswerQuery
Loop = Generator[Op, object, MitigationResult]
"""A mitigation loop: yields operations, returns its result."""

_R = TypeVar("_R")


class Runtime(Protocol):
    """The guard's models, as the loops need them."""

    def assess(self, context: Sequence[str], answer: str) -> Assessment:
        """Detect and NLI-filter one answer with the route's settings."""
        ...

    def explain(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[NLILabel, float]] | None:
        """NLI labels, or ``None`` when no NLI model is available."""
        ...


@dataclass
class _Use:
    calls: int = 0
    failed: int = 0
    tokens: int = 0
    seconds: float = 0.0


@dataclass
class Ledger:
    """Running cost account of one request (LLM calls, tokens, time)."""

    calls: int = 0
    failed: int = 0
    unmetered: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    llm_seconds: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    uses: dict[tuple[str, str], _Use] = field(default_factory=dict)
    deadline: float | None = None

    def remaining(self) -> float | None:
        """Seconds left before the deadline (``None`` without one; may be negative)."""
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def record(self, llm: LLM, role: str, response: LLMResponse | None, seconds: float) -> None:
        """Count one call; ``response`` is ``None`` when it failed."""
        model = str(getattr(llm, "model", None) or getattr(llm, "name", None) or "llm")
        use = self.uses.setdefault((model, role), _Use())
        use.calls += 1
        use.seconds += seconds
        self.calls += 1
        self.llm_seconds += seconds
        if response is None:
            use.failed += 1
            self.failed += 1
            return
        if response.usage is None:  # tokens unknown: counted, never read as 0 tokens
            self.unmetered += 1
            return
        self.prompt_tokens += response.usage.prompt_tokens
        self.completion_tokens += response.usage.completion_tokens
        self.total_tokens += response.usage.total_tokens
        use.tokens += response.usage.total_tokens

    def snapshot(self) -> tuple[int, int, int, int]:
        """``(calls, prompt_tokens, completion_tokens, total_tokens)`` so far."""
        return self.calls, self.prompt_tokens, self.completion_tokens, self.total_tokens

    def account(self) -> CostAccount:
        """The account as a result model, wall time measured up to now."""
        return CostAccount(
            llm_calls=self.calls,
            failed_calls=self.failed,
            unmetered_calls=self.unmetered,
            seconds=time.perf_counter() - self.started,
            llm_seconds=self.llm_seconds,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            total_tokens=self.total_tokens,
            models=[
                ModelUse(
                    model=model,
                    role=role,
                    calls=u.calls,
                    failed_calls=u.failed,
                    total_tokens=u.tokens,
                    seconds=u.seconds,
                )
                for (model, role), u in self.uses.items()
            ],
        )


# -- typed helpers the loops use: `x = yield from generate(...)` ------------------------


def generate(op: Generate) -> Generator[Op, object, LLMResponse]:
    """Yield one LLM call and return its response (raises :class:`LLMError`)."""
    return cast("LLMResponse", (yield op))


def generate_all(op: GenerateAll) -> Generator[Op, object, list[LLMResponse | LLMError]]:
    """Yield parallel LLM calls and return their responses or errors."""
    return cast("list[LLMResponse | LLMError]", (yield op))


def assess(context: Sequence[str], answer: str) -> Generator[Op, object, Assessment]:
    """Yield one detection and return its assessment."""
    return cast("Assessment", (yield Assess(tuple(context), answer)))


def explain(
    pairs: Sequence[tuple[str, str]],
) -> Generator[Op, object, list[tuple[NLILabel, float]] | None]:
    """Yield NLI labelling and return the labels (``None`` without an NLI model)."""
    return cast("list[tuple[NLILabel, float]] | None", (yield Explain(tuple(pairs))))


def retrieve(retriever: Retriever, query: str) -> Generator[Op, object, list[str]]:
    """Yield one retrieval and return its passages (raises :class:`RetrievalError`)."""
    return cast("list[str]", (yield Retrieve(retriever, query)))


def answer_query(answerer: GroundedAnswerer, query: str) -> Generator[Op, object, GroundedAnswer]:
    """Yield one grounded-answerer run and return ``(answer, passages)``."""
    return cast("GroundedAnswer", (yield AnswerQuery(answerer, query)))


# -- drivers -----------------------------------------------------------------------------


def _as_llm_error(exc: Exception, llm: LLM) -> LLMError:
    # Wrapped models (LangChain, LlamaIndex, user code) may raise anything; the loop
    # must stop cleanly with the best answer rather than lose it to a stack trace.
    if isinstance(exc, LLMError):
        return exc
    model = getattr(llm, "model", "llm")
    if isinstance(exc, TimeoutError):
        return LLMTimeoutError(f"LLM {quoted(model, limit=80)!r} timed out: {quoted(exc)}")
    return LLMError(f"LLM {quoted(model, limit=80)!r} failed: {type(exc).__name__}: {quoted(exc)}")


def _checked(response: object, llm: LLM) -> LLMResponse:
    """``response``, if usable: a bad reply is the model's failure, not the caller's."""
    name = getattr(llm, "model", "llm")
    if not isinstance(response, LLMResponse):
        raise LLMError(f"LLM {name!r} returned {type(response).__name__}, not an LLMResponse")
    try:
        response.text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LLMError(
            f"LLM {name!r} replied with text that is not valid Unicode (a lone surrogate "
            f"at position {exc.start}); the reply was discarded"
        ) from None
    return response


def _out_of_time(what: str) -> LLMTimeoutError:
    return LLMTimeoutError(f"time budget spent: {what} did not finish in time")


def _llm_name(op: Generate) -> str:
    return f"LLM {getattr(op.llm, 'model', 'llm')!r} ({op.role})"


def _within(call: Callable[[], _R], seconds: float | None, what: str) -> _R:
    """``call()``, abandoned (left to finish in its thread) after ``seconds``."""
    if seconds is None:
        return call()
    if seconds <= 0:
        raise _out_of_time(what)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="truthlens-budget")
    try:
        # The caller's context (active run, tracing span) goes along to the thread.
        return pool.submit(contextvars.copy_context().run, call).result(timeout=seconds)
    except FutureTimeout:
        raise _out_of_time(what) from None
    finally:
        # Never wait for a call that overran: the guard answers at the deadline.
        pool.shutdown(wait=False, cancel_futures=True)


async def _awithin(call: Awaitable[_R], seconds: float | None, what: str) -> _R:
    """``await call``, cancelled after ``seconds``."""
    if seconds is None:
        return await call
    if seconds <= 0:
        if asyncio.iscoroutine(call):
            call.close()  # never awaited: close it so no warning is printed
        raise _out_of_time(what)
    try:
        return await asyncio.wait_for(call, timeout=seconds)
    except TimeoutError:
        raise _out_of_time(what) from None


def _complete(op: Generate) -> object:
    return op.llm.complete(list(op.messages), max_tokens=op.max_tokens, temperature=op.temperature)


def _call(op: Generate, ledger: Ledger) -> LLMResponse | LLMError:
    started = time.perf_counter()
    try:
        response = _checked(
            _within(lambda: _complete(op), ledger.remaining(), _llm_name(op)), op.llm
        )
    except Exception as exc:  # noqa: BLE001 - any backend failure is a failed call
        ledger.record(op.llm, op.role, None, time.perf_counter() - started)
        return _as_llm_error(exc, op.llm)
    ledger.record(op.llm, op.role, response, time.perf_counter() - started)
    return response


async def _acall(op: Generate, ledger: Ledger) -> LLMResponse | LLMError:
    started = time.perf_counter()
    try:
        call = op.llm.acomplete(
            list(op.messages), max_tokens=op.max_tokens, temperature=op.temperature
        )
        response = _checked(await _awithin(call, ledger.remaining(), _llm_name(op)), op.llm)
    except Exception as exc:  # noqa: BLE001 - any backend failure is a failed call
        ledger.record(op.llm, op.role, None, time.perf_counter() - started)
        return _as_llm_error(exc, op.llm)
    ledger.record(op.llm, op.role, response, time.perf_counter() - started)
    return response


@contextmanager
def _retrieval_errors(what: str) -> Iterator[None]:
    """A failing retriever or answerer raises :class:`RetrievalError`.

    The request's time budget running out (:class:`LLMTimeoutError`) passes through.
    """
    try:
        yield
    except (LLMTimeoutError, RetrievalError):
        raise
    except Exception as exc:
        raise RetrievalError(f"{what} failed: {type(exc).__name__}: {quoted(exc)}") from exc


def _execute(op: Op, runtime: Runtime, ledger: Ledger) -> object:
    if isinstance(op, Generate):
        result = _call(op, ledger)
        if isinstance(result, LLMError):
            raise result
        return result
    if isinstance(op, GenerateAll):
        if len(op.calls) <= 1:
            return [_call(c, ledger) for c in op.calls]
        with ThreadPoolExecutor(max_workers=len(op.calls)) as pool:
            return list(pool.map(lambda c: _call(c, ledger), op.calls))
    if isinstance(op, Assess):
        return runtime.assess(op.context, op.answer)
    if isinstance(op, Explain):
        return runtime.explain(op.pairs)
    left = ledger.remaining()
    if isinstance(op, Retrieve):
        retriever = op.retriever
        with _retrieval_errors("retriever"):
            return _within(lambda: retriever.retrieve(op.query), left, "the retriever")
    answerer = op.answerer
    with _retrieval_errors("grounded answerer"):
        return _within(lambda: answerer.answer(op.query), left, "the grounded answerer")


async def _aexecute(op: Op, runtime: Runtime, ledger: Ledger) -> object:
    if isinstance(op, Generate):
        result = await _acall(op, ledger)
        if isinstance(result, LLMError):
            raise result
        return result
    if isinstance(op, GenerateAll):
        return list(await asyncio.gather(*(_acall(c, ledger) for c in op.calls)))
    if isinstance(op, Assess):
        return await asyncio.to_thread(runtime.assess, op.context, op.answer)
    if isinstance(op, Explain):
        return await asyncio.to_thread(runtime.explain, op.pairs)
    left = ledger.remaining()
    if isinstance(op, Retrieve):
        with _retrieval_errors("retriever"):
            return await _awithin(op.retriever.aretrieve(op.query), left, "the retriever")
    with _retrieval_errors("grounded answerer"):
        return await _awithin(op.answerer.aanswer(op.query), left, "the grounded answerer")


class _Steps(Generic[_R]):
    """Feeds a loop the outcome of each op: its value, or the error to throw into it."""

    def __init__(self, loop: Generator[Op, object, _R]) -> None:
        self.loop = loop
        self.value: object = None
        self.error: Exception | None = None
        self.result: _R | None = None

    def next(self) -> Op | None:
        """The loop's next op; ``None`` once it has returned (see ``result``)."""
        try:
            if self.error is None:
                return self.loop.send(self.value)
            return self.loop.throw(self.error)
        except StopIteration as stop:
            self.result = cast("_R", stop.value)
            return None

    @contextmanager
    def running(self) -> Iterator[None]:
        """Around one op: a failed call goes back into the loop, which decides."""
        self.value, self.error = None, None
        try:
            yield
        except (LLMError, RetrievalError) as exc:
            self.error = exc


def drive(loop: Generator[Op, object, _R], runtime: Runtime, ledger: Ledger) -> _R:
    """Run a loop with blocking calls; parallel LLM calls use a thread pool."""
    steps = _Steps(loop)
    while (op := steps.next()) is not None:
        with steps.running():
            steps.value = _execute(op, runtime, ledger)
    return cast("_R", steps.result)


async def adrive(loop: Generator[Op, object, _R], runtime: Runtime, ledger: Ledger) -> _R:
    """Run a loop with ``acomplete`` / ``aretrieve``; models run in worker threads."""
    steps = _Steps(loop)
    while (op := steps.next()) is not None:
        with steps.running():
            steps.value = await _aexecute(op, runtime, ledger)
    return cast("_R", steps.result)
