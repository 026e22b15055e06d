"""Overhead of the LangChain adapter over calling the core engine directly.

Usage:
    python benchmarks/bench_langchain_adapter.py [--repeats 2000] [--rounds 5]
        [--out benchmarks/results/langchain_adapter.md]

Two measurements:

1. **Adapter overhead** (the number the issue targets): the engine is a ``TruthLens``
   whose ``guard`` / ``aguard`` / ``guard_batch`` return a precomputed verdict, so the
   engine costs the same near-zero time on both sides and the difference between
   ``TruthLensRunnable.invoke`` and ``engine.guard`` is the adapter alone: LangChain's
   run/config machinery (``_call_with_config``), input parsing, the
   ``truthlens_detection`` event and the type-keeping output. No callbacks attached
   (the default); a second row attaches a no-op handler, to show the cost of a
   traced run.
2. **End to end** with a real detector (the tiny keyword model the tests use, built
   in a temporary folder), to put the overhead next to a real pipeline call.

Reported: median over ``--rounds`` rounds of the mean per-call time of ``--repeats``
calls, direct vs adapter, and the difference.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402

from tests._langchain_support import make_engine  # noqa: E402
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION  # noqa: E402
from truthlens_integrations.core import DetectionInput  # noqa: E402
from truthlens_integrations.core.engine import TruthLens, Verdict  # noqa: E402
from truthlens_integrations.langchain_adapter import TruthLensRunnable  # noqa: E402

DICT_INPUT = {"answer": EIFFEL_ANSWER, "context": [EIFFEL_CONTEXT], "question": EIFFEL_QUESTION}
STATE_INPUT = {
    "messages": [
        HumanMessage(EIFFEL_QUESTION),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "1"}]),
        ToolMessage(EIFFEL_CONTEXT, tool_call_id="1"),
        AIMessage(EIFFEL_ANSWER),
    ]
}


class CachedEngine(TruthLens):
    """A TruthLens whose calls return one precomputed verdict (constant, ~0 cost)."""

    def __init__(self, real: TruthLens, verdict: Verdict) -> None:
        super().__init__(real.policy, detector=real.detector)
        self._verdict = verdict

    def guard(self, **_: Any) -> Verdict:  # type: ignore[override]
        return self._verdict

    async def aguard(self, **_: Any) -> Verdict:  # type: ignore[override]
        return self._verdict

    def guard_batch(self, inputs: Sequence[DetectionInput]) -> list[Verdict]:
        return [self._verdict for _ in inputs]


class NoOp(BaseCallbackHandler):
    pass


def per_call_ms(func: Callable[[], Any], repeats: int, rounds: int) -> float:
    for _ in range(min(50, repeats)):
        func()
    means = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(repeats):
            func()
        means.append((time.perf_counter() - started) * 1000.0 / repeats)
    return statistics.median(means)


def async_per_call_ms(make: Callable[[], Any], repeats: int, rounds: int) -> float:
    async def many() -> None:
        for _ in range(repeats):
            await make()

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(many())
        means = []
        for _ in range(rounds):
            started = time.perf_counter()
            loop.run_until_complete(many())
            means.append((time.perf_counter() - started) * 1000.0 / repeats)
    finally:
        loop.close()
    return statistics.median(means)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--e2e-repeats", type=int, default=100)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/langchain_adapter.md"
    )
    args = parser.parse_args(argv)

    import torch

    from tests._tiny_models import build_keyword_model
    from truthlens_integrations.core.models.detection import load_detector

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        detector = load_detector(build_keyword_model(Path(tmp), ["1950", "500", "meters"]))
        real = make_engine(detector)
        verdict = real.guard(
            context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
        )
        cached = CachedEngine(real, verdict)
        r, n = args.repeats, args.rounds
        adapter = TruthLensRunnable(engine=cached)
        traced = {"callbacks": [NoOp()]}
        direct = per_call_ms(
            lambda: cached.guard(
                context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
            ),
            r,
            n,
        )
        rows: list[tuple[str, float, float]] = [
            ("invoke(dict)", direct, per_call_ms(lambda: adapter.invoke(DICT_INPUT), r, n)),
            (
                "invoke(agent state, ToolMessage grounding)",
                direct,
                per_call_ms(lambda: adapter.invoke(STATE_INPUT), r, n),
            ),
            ("invoke(str)", direct, per_call_ms(lambda: adapter.invoke(EIFFEL_ANSWER), r, n)),
            (
                "invoke(dict) + a callback handler",
                direct,
                per_call_ms(lambda: adapter.invoke(DICT_INPUT, traced), r, n),
            ),
            (
                "stream(dict), verified mode",
                direct,
                per_call_ms(lambda: list(adapter.stream(DICT_INPUT)), r, n),
            ),
        ]
        adirect = async_per_call_ms(
            lambda: cached.aguard(
                context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
            ),
            r,
            n,
        )
        rows.append(
            ("ainvoke(dict)", adirect, async_per_call_ms(lambda: adapter.ainvoke(DICT_INPUT), r, n))
        )
        items = [
            DetectionInput.create(
                context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
            )
        ] * 16
        bdirect = per_call_ms(lambda: cached.guard_batch(items), max(1, r // 16), n) / 16
        rows.append(
            (
                "batch(16 dicts), per item",
                bdirect,
                per_call_ms(lambda: adapter.batch([DICT_INPUT] * 16), max(1, r // 16), n) / 16,
            )
        )

        e = args.e2e_repeats
        real_adapter = TruthLensRunnable(engine=real)
        e2e_direct = per_call_ms(
            lambda: real.guard(
                context=[EIFFEL_CONTEXT], question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
            ),
            e,
            n,
        )
        e2e_adapter = per_call_ms(lambda: real_adapter.invoke(DICT_INPUT), e, n)

    lines = [
        "# LangChain adapter overhead",
        "",
        f"Command: `python benchmarks/bench_langchain_adapter.py --repeats {r} --rounds {n} "
        f"--e2e-repeats {e}`",
        "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs (shared with other jobs), torch threads 1, "
        f"load average {os.getloadavg()[0]:.2f}",
        "",
        "Median of the per-call mean over the rounds. The engine returns a precomputed verdict",
        "on both sides, so the difference is the adapter alone (LangChain run and config",
        "handling, parsing, the `truthlens_detection` event, output building). Target: < 1 ms.",
        "",
        "| call | engine direct (ms) | adapter (ms) | overhead (ms) |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {name} | {d:.4f} | {a:.4f} | {a - d:.4f} |" for name, d, a in rows]
    lines += [
        "",
        "End to end with a real detector (tiny keyword BERT, rule-based NLI and classifier "
        "stand-ins):",
        "",
        "| call | engine.guard (ms) | TruthLensRunnable.invoke (ms) | difference (ms) |",
        "|---|---:|---:|---:|",
        f"| Eiffel example | {e2e_direct:.3f} | {e2e_adapter:.3f} "
        f"| {e2e_adapter - e2e_direct:.3f} |",
        "",
        "The end-to-end difference is the adapter overhead above plus the run-to-run noise",
        "of the model call on a shared machine; the first table isolates the adapter.",
    ]
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
