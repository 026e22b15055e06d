"""Which held-out answers the number rule of issue 29 judges differently (no model needed).

Usage:
    python benchmarks/bench_number_rule.py

Before issue 29 a number of the answer was "present" when its value occurred anywhere in the
context; now it is judged against the passages about the same thing
(:class:`~truthlens_integrations.core._quantities.ContextQuantities`). This counts, on the
report half of ``lab.training.realdata``'s held-out part and the hard-case test records (the data
``bench_heldout.py`` reads; train role, nothing eval-only), the answers where the verdict of
their first changed number differs, by gold label. A change towards ``conflict`` on a clean
answer is a new false alarm; on an unsupported answer a new hit.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.training import realdata
from lab.training.calibrate_evidence import _half
from lab.training.train_evidence import _hard_cases
from truthlens_integrations._lab_api import ContextQuantities, extract_quantities, judge_quantity


def _context(claim: object) -> list[str]:
    context = claim.context  # type: ignore[attr-defined]
    return context if isinstance(context, list) else [p for p in context.split("\n") if p.strip()]


def main() -> None:
    held = [c for c in realdata.load_real(part="heldout") if _half(c) == 1]
    items = [(c.source, _context(c), c.answer, bool(c.label)) for c in held]
    items += [("hardcases", _context(c), c.answer, bool(c.label)) for c in _hard_cases("test")]
    started = time.perf_counter()
    changed = Counter()
    for _, context, answer, unsupported in items:
        known = ContextQuantities(context)
        for quantity in extract_quantities(answer):
            before = judge_quantity(quantity, known.all)
            now = known.judge(quantity, answer)
            if before != now:
                label = "unsupported" if unsupported else "clean"
                changed[(label, before, now)] += 1
                break
    print(f"answers: {len(items)}; changed: {sum(changed.values())}")
    for (label, before, now), count in sorted(changed.items()):
        print(f"  {label}: {before} -> {now}: {count}")
    print(f"time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
