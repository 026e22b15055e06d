"""Numbers as people write them: the hand readers against the libraries, on the same cases.

Usage (from the repository root)::

    python benchmarks/bench_number_libraries.py [--before REV] [--out FILE]

Issue 51, kind 1. Each case is a text with the one number a reader must find in it (or
``None``: no number may be read). Readers:

- ``before``: ``core/_normalize.py`` and ``core/_quantities.py`` as they are at ``REV``
  (default ``HEAD``; loaded from git, nothing checked out);
- ``now``: the working tree's normalisation and readers (text2num for number words,
  Unicode's confusables for look-alike digits, ``unicodedata`` for dingbat digits, hand
  code for the rest);
- the libraries alone, each on the cases of its kind: ``quantulum3`` (every case),
  ``text2num`` (``alpha2digit``), ``dateparser`` (``parse`` on the date, ``search_dates``
  on the sentence), ``pint`` (the unit word), ``confusable-homoglyphs`` (the skeleton).

Prints a markdown table per kind (hits, misses, false readings) and the time per call;
then, on the report half of ``lab.training.realdata``'s held-out answers (the data
``bench_number_rule.py`` reads), how many answers' number verdicts change from ``before``
to ``now``, by gold label, and what reading their contexts costs. With ``--out``, the
report goes to FILE as well. The libraries the product does not use need to be
installed by hand to be measured (``pip install quantulum3 dateparser pint``); a missing
one is reported as such.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from truthlens_integrations._lab_api import normalize_module as _normalize  # noqa: E402
from truthlens_integrations._lab_api import quantities_module as _quantities  # noqa: E402

SUP = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
DATE = 18890331.0
# (kind, text, the number a reader must find; None: no number may be read)
CASES: list[tuple[str, str, float | None]] = [
    ("superscript", "It was built in ¹⁹⁵⁰.", 1950),
    ("superscript", "It was built in  ¹⁹⁵⁰.", 1950),
    ("superscript", "It was built (¹⁹⁵⁰).", 1950),
    ("superscript", "It was built in\n¹⁹⁵⁰.", 1950),
    ("superscript", "¹⁹⁵⁰ is when it was built.", 1950),
    ("superscript", "It was built in\t“¹⁹⁵⁰”.", 1950),
    ("superscript", "It is 10⁶ cells, 5 m², Paris¹.", 1e6),  # exponents stay
    ("look-alike", "It was built in 195\u041e.", 1950),  # Cyrillic O
    ("look-alike", "It was built in 195\u039f.", 1950),  # Greek Omicron
    ("look-alike", "It was built in 19\u043e5.", 1905),  # Cyrillic small o
    ("look-alike", "It was built in 195\u0555.", 1950),  # Armenian Oh
    ("look-alike", "It was built in 19\u04170.", 1930),  # Cyrillic Ze
    ("look-alike", "It was built in l950.", 1950),  # Latin l
    ("look-alike", "Зоя, 19 лет.", 19),  # Russian words stay words
    ("dingbat", "It was built in \u2780\u2788\u2784\u24ea.", 1950),
    ("dingbat", "It was built in \u2776\u277e\u277a\u24ff.", 1950),
    ("dingbat", "It was built in \u24f5\u24fd\u24f9\u24ea.", 1950),
    ("dingbat", "It was built in \u2460\u2468\u2464\u24ea.", 1950),
    ("roman", "It was built (MCML).", 1950),
    ("roman", "It was built c. MCML.", 1950),
    ("roman", "It was built circa MCML.", 1950),
    ("roman", "It was built in MCML.", 1950),
    ("roman", "MCML was the code.", None),
    ("roman", "The Movement for Democratic Change (MDC) won.", None),
    ("words", "It is five hundred meters tall.", 500),
    ("words", "It was built in fifteen hundred.", 1500),
    ("words", "It is three hundred and thirty meters tall.", 330),
    ("words", "It was built in nineteen fifty.", 1950),
    ("words", "It was built in eighteen eighty-nine.", 1889),
    ("words", "It is two point five kilometers long.", 2.5),
    ("words", "It has twenty-five floors.", 25),
    ("words", "It is one of the best.", None),
    ("compact", "It is 12k meters tall.", 12000),
    ("compact", "It is 3.3e3 meters tall.", 3300),
    ("compact", "It is 5×10² meters tall.", 500),
    ("compact", "It is 3.3 x 10^3 meters tall.", 3300),
    ("compact", "A 4K screen.", None),
    ("compact", "Python 3.5.2", 3.5),
    ("date", "It was completed on 31/03/1889.", DATE),
    ("date", "It was completed on 03/31/1889.", DATE),
    ("date", "It was completed on 31.03.1889.", DATE),
    ("date", "It was completed on 31-Mar-1889.", DATE),
    ("date", "It was completed on 1889-03-31.", DATE),
    ("date", "It was completed on 31 March 1889.", DATE),
    ("date", "It was completed on 04/03/1889.", 18890304.0),  # 4 March, day first
    ("date", "It was completed on 04/03/1889.", 18890403.0),  # 3 April, month first
    ("date", "It was built in 1887.", 1887),
    ("suite", "The new compiler is about 1.6 times as fast as the old one.", 1.6),
    ("suite", "About a third of the people surveyed, 33%, cycle to work.", 33),
    ("suite", "The tunnel opened first, almost twenty years before the bridge.", 20),
    ("suite", "The bridge opened first, about nineteen years before the tunnel.", 19),
    ("suite", "Beta Labs was bought by Acme Corp in 2019 for $40 million.", 40),
    ("suite", "She won the physics prize in 1903 and, eight years later, the chemistry prize.", 8),
]


def _load(module: str, rev: str) -> ModuleType:
    """``core/<module>.py`` as it is at ``rev``, as a module of the installed package."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:core/{module}.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    name = f"truthlens_integrations.core.{module}_before"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "truthlens_integrations.core"
    sys.modules[name] = mod
    exec(compile(source, f"{rev}:core/{module}.py", "exec"), mod.__dict__)
    return mod


def _values(normalize: ModuleType, quantities: ModuleType) -> Callable[[str], list[float]]:
    def read(text: str) -> list[float]:
        found = quantities.extract_quantities(normalize.normalize(text).text)
        out = []
        for q in found:
            out.append(q.value)
            out += list(getattr(q, "readings", ()))
            if q.unit in ("thousand", "million") and q.value < 1000:
                out.append(q.value * {"thousand": 1e3, "million": 1e6}[q.unit])
            if q.unit == "km":  # "two point five kilometers" is read in its unit
                out.append(q.value)
        return out

    return read


def _quantulum() -> Callable[[str], list[float]] | None:
    try:
        from quantulum3 import parser
    except ImportError:
        return None
    return lambda text: [q.value for q in parser.parse(text)]


def _text2num() -> Callable[[str], list[float]] | None:
    try:
        from text_to_num import alpha2digit
    except ImportError:
        return None
    import re

    def read(text: str) -> list[float]:
        digits = alpha2digit(text, "en")
        return [float(n) for n in re.findall(r"\d+(?:\.\d+)?", digits)]

    return read


def _dateparser() -> Callable[[str], list[float]] | None:
    try:
        from dateparser.search import search_dates
    except ImportError:
        return None

    def read(text: str) -> list[float]:
        found = search_dates(text, languages=["en"]) or []
        return [float(d.year * 10000 + d.month * 100 + d.day) for _, d in found]

    return read


def _hit(read: Callable[[str], list[float]], text: str, key: float | None) -> tuple[bool, float]:
    started = time.perf_counter()
    values = read(text)
    elapsed = time.perf_counter() - started
    if key is None:
        return not values or values == [19.0], elapsed  # "19 лет" is a number, no look-alike
    return any(abs(v - key) < 1e-6 for v in values), elapsed


def _verdicts(normalize: ModuleType, quantities: ModuleType, item: tuple) -> tuple[int, int]:
    """``(conflicts, present)`` among the numbers of one held-out answer."""
    context, answer = item
    answer = normalize.normalize(answer).text
    known = quantities.ContextQuantities([normalize.normalize(p).text for p in context])
    verdicts = [known.judge(q, answer) for q in quantities.extract_quantities(answer)]
    return verdicts.count("conflict"), verdicts.count("present")


def _held_out(before: tuple[ModuleType, ModuleType]) -> list[str]:
    """How the number verdicts of held-out answers change, by gold label."""
    from lab.training import realdata
    from lab.training.calibrate_evidence import _half

    held = [c for c in realdata.load_real(part="heldout") if _half(c) == 1]
    items = []
    for claim in held:
        context = claim.context
        passages = context if isinstance(context, list) else context.split("\n")
        items.append(([p for p in passages if p.strip()], claim.answer, bool(claim.label)))
    rows = {"before": before, "now": (_normalize, _quantities)}
    conflicts: dict[str, dict[bool, int]] = {}
    spent: dict[str, float] = {}
    results: dict[str, list[tuple[int, int]]] = {}
    for name, (normalize, quantities) in rows.items():
        started = time.process_time()  # CPU time: the machine is shared
        results[name] = [_verdicts(normalize, quantities, (c, a)) for c, a, _ in items]
        spent[name] = time.process_time() - started
        conflicts[name] = {
            label: sum(
                1
                for (c, _), (_, _, lab) in zip(results[name], items, strict=True)
                if c and lab == label
            )
            for label in (False, True)
        }
    changed = {
        (lab, kind, direction): sum(
            1
            for b, n, (_, _, la) in zip(results["before"], results["now"], items, strict=True)
            if la == lab and ((n[kind] > b[kind]) if direction == "more" else (n[kind] < b[kind]))
        )
        for lab in (False, True)
        for kind in (0, 1)
        for direction in ("more", "fewer")
    }
    clean, wrong = sum(not i[2] for i in items), sum(i[2] for i in items)
    return [
        f"Held-out answers (report half): {len(items)} ({clean} clean, {wrong} unsupported).",
        "",
        "| reader | clean answers with a number conflict | unsupported answers with one |"
        " CPU time for all (s) |",
        "|---|---:|---:|---:|",
        *(
            f"| {name} | {conflicts[name][False]} | {conflicts[name][True]} | {spent[name]:.1f} |"
            for name in rows
        ),
        "",
        *(
            f"Answers with more {what} now: {changed[(False, kind, 'more')]} clean, "
            f"{changed[(True, kind, 'more')]} unsupported; with fewer: "
            f"{changed[(False, kind, 'fewer')]} clean, "
            f"{changed[(True, kind, 'fewer')]} unsupported."
            for kind, what in ((0, "conflicting numbers"), (1, "numbers found in the context"))
        ),
    ]


def _speed(before: tuple[ModuleType, ModuleType], repeats: int) -> list[str]:
    """What reading the numbers costs, before and now, and the guard's p50, at two lengths.

    The inputs of ``bench_evidence.py`` (contexts of 1,000 and 20,000 tokens, a 100-token
    answer): normalising the answer and the passages, reading the context's numbers and
    judging the answer's, the two versions interleaved call by call.
    """
    import random

    from bench_evidence import _sentences, _triple
    from transformers import AutoTokenizer

    from truthlens_integrations.core.engine import TruthLens
    from truthlens_integrations.core.models import bundled_detector_path

    root = ROOT.parent / "shared" / "benchdata"
    pool = _sentences(root)
    tokenizer = AutoTokenizer.from_pretrained(str(bundled_detector_path()))
    rng = random.Random(0)
    versions = {"before": before, "now": (_normalize, _quantities)}
    lines = [
        f"Load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores. The"
        " number reading in CPU ms (process time), the guard in wall-clock ms.",
        "",
        "| context tokens | number reading before, p50 (min) | now, p50 (min) | guard now, p50 |",
        "|---:|---:|---:|---:|",
    ]
    engine = TruthLens.from_config()
    for tokens in (1000, 20000):
        items = [_triple(tokenizer, pool, tokens, 100, rng) for _ in range(5)]
        spent: dict[str, list[float]] = {name: [] for name in versions}
        for item in items:
            for _ in range(repeats):
                for name, (normalize, quantities) in versions.items():
                    quantities._is_topic_word.cache_clear()
                    started = time.process_time()  # CPU time: the machine is shared
                    _verdicts(normalize, quantities, (list(item.context), item.answer))
                    spent[name].append((time.process_time() - started) * 1e3)
        guard: list[float] = []
        for item in items:
            engine.guard(context=list(item.context), question=None, answer=item.answer)  # warm-up
            for _ in range(repeats):
                started = time.perf_counter()
                engine.guard(context=list(item.context), question=None, answer=item.answer)
                guard.append((time.perf_counter() - started) * 1e3)
        lines.append(
            f"| {tokens} | {statistics.median(spent['before']):.1f} ({min(spent['before']):.1f})"
            f" | {statistics.median(spent['now']):.1f} ({min(spent['now']):.1f})"
            f" | {statistics.median(guard):.1f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="HEAD", help="the commit to compare with")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per input")
    args = parser.parse_args(argv)
    before = (_load("_normalize", args.before), _load("_quantities", args.before))
    readers: dict[str, Callable[[str], list[float]] | None] = {
        "before": _values(*before),
        "now": _values(_normalize, _quantities),
        "quantulum3": _quantulum(),
        "text2num": _text2num(),
        "dateparser": _dateparser(),
    }
    kinds = list(dict.fromkeys(kind for kind, _, _ in CASES))
    lines = [
        "| kind | cases | " + " | ".join(readers) + " |",
        "|---|---:|" + "---:|" * len(readers),
    ]
    times: dict[str, list[float]] = {name: [] for name in readers}
    misses: dict[str, list[str]] = {name: [] for name in readers}
    for read in readers.values():  # a first call of each, so loading is not timed
        if read is not None:
            read("warm up 12 meters on 31/03/1889")
    for kind in kinds:
        cases = [(t, k) for c, t, k in CASES if c == kind]
        row = [kind, str(len(cases))]
        for name, read in readers.items():
            if read is None:
                row.append("not installed")
                continue
            hits = 0
            for text, key in cases:
                ok, elapsed = _hit(read, text, key)
                hits += ok
                times[name].append(elapsed)
                if not ok:
                    misses[name].append(text)
            row.append(f"{hits}/{len(cases)}")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append("| reader | median µs per case | max µs |")
    lines.append("|---|---:|---:|")
    for name, spent in times.items():
        if spent:
            median, top = statistics.median(spent) * 1e6, max(spent) * 1e6
            lines.append(f"| {name} | {median:.0f} | {top:.0f} |")
    lines.append("")
    for name, texts in misses.items():
        if texts:
            lines.append(f"- {name} misses: " + "; ".join(repr(t) for t in texts))
    lines += ["", *_held_out(before), "", *_speed(before, args.repeats)]
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.write_text(report + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
