"""What reading the rules once saves: the bundled detector with its rule verdicts memoised or not.

Usage (from the repository root, on a quiet machine)::

    python benchmarks/bench_rule_pass.py [--contexts 1000 20000] [--items 5] [--repeats 20]
        [--out benchmarks/results/rule_pass.md]

The default map's rule sentence floor reads the unit and negation rules' conflicts, which
the token stage has just run on the same answer; ``_adjust._rule_verdicts`` keeps them.
The bundled detector (its defaults, ``auto`` backend) on the inputs of
``bench_evidence.py`` (a 100-token answer), with the memo and with the plain function in
its place (every call then runs the rules twice), calls of the two interleaved.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).parent))
from bench_evidence import _pct, _sentences, _triple

from truthlens_integrations.core.models._onnx import _threads


def main() -> None:
    from truthlens_integrations.core.models.detection import _adjust, load_detector

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contexts", type=int, nargs="+", default=[1000, 20000])
    ap.add_argument("--items", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/rule_pass.md"))
    args = ap.parse_args()
    root = Path(
        os.environ.get("TRUTHLENS_BENCHDATA", Path(__file__).parents[2] / "shared" / "benchdata")
    )
    detector = load_detector()
    tokenizer = detector._loaded.tokenizer  # type: ignore[attr-defined]
    memoised = _adjust._rule_verdicts
    variants = {"rules read once (memo)": memoised, "rules read twice": memoised.__wrapped__}
    pool = _sentences(root)
    rows = []
    for tokens in args.contexts:
        rng = random.Random(5)
        items = [_triple(tokenizer, pool, tokens, 100, rng) for _ in range(args.items)]
        times: dict[str, list[float]] = {name: [] for name in variants}
        for item in items:
            for _ in range(args.repeats + 1):  # the first round warms up
                for name, function in variants.items():
                    memoised.cache_clear()
                    with mock.patch.object(_adjust, "_rule_verdicts", function):
                        t0 = time.perf_counter()
                        detector.detect_batch([item])
                        times[name].append((time.perf_counter() - t0) * 1000)
            for name in variants:
                del times[name][-(args.repeats + 1)]  # drop this item's warm-up call
        rows += [
            f"| {tokens} | {name} | {_pct(t, 50):.1f} | {_pct(t, 90):.1f} | {len(t)} |"
            for name, t in times.items()
        ]
    lines = [
        "# Rule verdicts read once or twice per answer (bundled detector)",
        "",
        f"- command: `{' '.join(['python benchmarks/bench_rule_pass.py', *sys.argv[1:]])}`",
        f"- date: {time.strftime('%Y-%m-%d')}; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, backend {detector.backend}, {_threads()} threads",
        f"- inputs: bench_evidence's, 100-token answer, {args.items} per context size, "
        f"{args.repeats} timed calls each, the two variants interleaved; the memo is cleared "
        "before every call, so each call pays its first read",
        "",
        "| context tokens | variant | p50 ms | p90 ms | calls |",
        "|---:|---|---:|---:|---:|",
        *rows,
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
