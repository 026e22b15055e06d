"""What the rule pass costs: the bundled detector with parts of its rules switched.

Usage (from the repository root, on a quiet machine)::

    python benchmarks/bench_rule_pass.py [--compare memo|number-readers]
        [--contexts 1000 20000] [--items 5] [--repeats 20] [--out FILE]

``--compare memo`` (the default; ``benchmarks/results/rule_pass.md``): the default map's
rule sentence floor reads the unit and negation rules' conflicts, which the token stage
has just run on the same answer; ``_rules._rule_verdicts`` keeps them. Measured with the
memo and with the plain function in its place (every call then runs the rules twice).

``--compare number-readers`` (``benchmarks/results/number_readers.md``): the readers of
source citations, halves in words and halves as fractions (issue 27, candidates 19-21)
on, as shipped, and off.

The bundled detector (its defaults, ``auto`` backend) on the inputs of
``bench_evidence.py`` (a 100-token answer), calls of the two variants interleaved.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import random
import sys
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).parent))
from bench_evidence import _pct, _sentences, _triple

from lab.training.rule_switches import switches
from truthlens_integrations._lab_api import onnx_threads

TITLES = {
    "memo": "Rule verdicts read once or twice per answer (bundled detector)",
    "number-readers": "Citation, half and fraction readers on or off (bundled detector)",
}


def _variants(compare: str) -> dict[str, list[tuple[object, str, object]]]:
    """Each variant's patches (module, name, value); the first variant is the shipped one."""
    from truthlens_integrations._lab_api import rules_module as _adjust

    if compare == "memo":
        plain = _adjust._rule_verdicts.__wrapped__
        return {
            "rules read once (memo)": [],
            "rules read twice": [(_adjust, "_rule_verdicts", plain)],
        }
    # candidates 19-21's off-switches, as lab.training.rule_change measured them
    off = [patch for candidate in ("19", "20", "21") for patch in switches(candidate)]
    return {"readers on (shipped)": [], "readers off": off}


def main() -> None:
    from truthlens_integrations._lab_api import rules_module as _adjust
    from truthlens_integrations.core.models.detection import load_detector

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", choices=tuple(TITLES), default="memo")
    ap.add_argument("--contexts", type=int, nargs="+", default=[1000, 20000])
    ap.add_argument("--items", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", type=Path, help="default: rule_pass.md or number_readers.md")
    args = ap.parse_args()
    results = Path("benchmarks/results")
    out = args.out or results / ("rule_pass.md" if args.compare == "memo" else "number_readers.md")
    root = Path(
        os.environ.get("TRUTHLENS_BENCHDATA", Path(__file__).parents[2] / "shared" / "benchdata")
    )
    detector = load_detector()
    tokenizer = detector._loaded.tokenizer  # type: ignore[attr-defined]
    memoised = _adjust._rule_verdicts
    variants = _variants(args.compare)
    pool = _sentences(root)
    rows = []
    for tokens in args.contexts:
        rng = random.Random(5)
        items = [_triple(tokenizer, pool, tokens, 100, rng) for _ in range(args.items)]
        times: dict[str, list[float]] = {name: [] for name in variants}
        for item in items:
            for _ in range(args.repeats + 1):  # the first round warms up
                for name, patches in variants.items():
                    memoised.cache_clear()
                    with contextlib.ExitStack() as stack:
                        for target, attribute, value in patches:
                            stack.enter_context(mock.patch.object(target, attribute, value))
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
        f"# {TITLES[args.compare]}",
        "",
        f"- command: `{' '.join(['python benchmarks/bench_rule_pass.py', *sys.argv[1:]])}`",
        f"- date: {time.strftime('%Y-%m-%d')}; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, backend {detector.backend}, {onnx_threads()} threads",
        f"- inputs: bench_evidence's, 100-token answer, {args.items} per context size, "
        f"{args.repeats} timed calls each, the two variants interleaved; the memo is cleared "
        "before every call, so each call pays its first read",
        "",
        "| context tokens | variant | p50 ms | p90 ms | calls |",
        "|---:|---|---:|---:|---:|",
        *rows,
    ]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
