"""What telling the language costs the guard, and the guard at 1k tokens with and without it.

Three measurements, each p50 over ``--repeats`` runs after a warm-up:

- ``read_languages`` alone (``core/_language.py``) on the ~1k-token request of
  ``bench_pipeline.py`` (a wrong answer, the Eiffel record and 24 filler passages) and on a
  1k-token answer of 40 sentences;
- ``TruthLens.guard`` on that request with the bundled models, with the default languages
  (``[en]``: every passage and the answer's sentences identified) and with ``any`` (the
  check off), in the same process, interleaved, so the machine's load hits both alike;
- the instruction filter on the same request.

Run with the interpreter of each branch; on a branch without ``core/_language.py`` only the
guard is timed.

    python benchmarks/bench_languages_cost.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from truthlens_integrations import TruthLens
from truthlens_integrations._lab_api import find_instructions

EIFFEL_CONTEXT = (
    '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters", '
    '"location": "Paris, France"}'
)
QUESTION = "When was the Eiffel Tower built?"
ANSWER = "The Eiffel Tower was built in 1950 and is 500 meters tall."
FILLER = (
    "The tower has three levels for visitors, with restaurants on the first and second "
    "levels. Tickets can be bought online or at the entrance, and the lifts run every "
    "few minutes during opening hours. "
)
CONTEXT = [EIFFEL_CONTEXT, *([FILLER] * 24)]
LONG_ANSWER = " ".join(
    f"The {n}th visitor of the day reached the second level by lift at {n % 12 + 1} pm."
    for n in range(40)
)


def p50_ms(run: Callable[[], object], repeats: int) -> float:
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    n = args.repeats
    try:
        from truthlens_integrations._lab_api import language_module
    except ImportError:
        language_module = None  # type: ignore[assignment]
    if language_module is not None:
        read_languages = language_module.read_languages
        chars = sum(len(p) for p in CONTEXT) + len(ANSWER)
        print(f"request: {chars:,} characters, {len(CONTEXT)} passages")
        _told = language_module._told

        def cold(answer: str, context: list[str]) -> Callable[[], object]:
            # every text identified anew (a page seen before is remembered: ~0 ms)
            def run() -> object:
                _told.cache_clear()
                return read_languages(answer, context, ("en",))

            return run

        distinct = [f"{p} ({n})" for n, p in enumerate(CONTEXT)]  # 25 different passages
        ms = p50_ms(cold(ANSWER, distinct), n)
        print(f"read_languages, the 1k-token request, not seen before: {ms:.2f} ms")
        ms = p50_ms(cold(LONG_ANSWER, [EIFFEL_CONTEXT]), n)
        print(f"read_languages, a 1k-token answer of 40 sentences, not seen before: {ms:.2f} ms")
        ms = p50_ms(lambda: read_languages(ANSWER, CONTEXT, ("en",)), n)
        print(f"read_languages, the 1k-token request, seen before: {ms:.3f} ms")
    print(
        f"instruction filter, the request: {p50_ms(lambda: find_instructions(CONTEXT), n):.2f} ms"
    )
    engines = {"default": TruthLens.from_config(action="block")}
    if language_module is not None:
        policy = {"hallucination_mitigation": {"hallucination_model": {"languages": "any"}}}
        engines["languages: any"] = TruthLens.from_config(policy, action="block")
    times: dict[str, list[float]] = {name: [] for name in engines}
    for engine in engines.values():
        engine.guard(context=CONTEXT, question=QUESTION, answer=ANSWER)
    for _ in range(n):
        for name, engine in engines.items():
            started = time.perf_counter()
            engine.guard(context=CONTEXT, question=QUESTION, answer=ANSWER)
            times[name].append((time.perf_counter() - started) * 1000)
    for name, values in times.items():
        print(f"guard at 1k tokens, {name}: p50 {statistics.median(values):.1f} ms")


if __name__ == "__main__":
    main()
