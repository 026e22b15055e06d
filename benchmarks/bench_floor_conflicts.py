"""Where the unit and negation rules find conflicts in held-out train-role answers, by label.

Usage::

    python benchmarks/bench_floor_conflicts.py [--out benchmarks/results/floor_conflicts.md]

The rule sentence floor (issue 27, candidate 10b) scores an answer at least what the map
gives a sentence in rule conflict alone, so a false conflict in a clean answer now costs
that answer its length discount. This counts the answers of ``bench_heldout.py
--per-source 30`` (the same draws: single held-out answers, the hard-case test set, the
multi-part answers) with a number or a negation conflict, by label, and quotes each
conflict the rules find in a multi-part answer labelled clean, with the context passage
that shares the most words with it. No model runs: the rules read text.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.training.heldout import claim_input, heldout_claims
from truthlens_integrations._lab_api import conflict_marks, content_words

_QUOTE = 70
_OWN = ("hardcases", "multi")  # the groups that are not single held-out answers


def _context(claim: object) -> list[str]:
    return list(claim_input(claim).context)


def _nearest(passages: list[str], text: str) -> str:
    words = set(content_words(text))
    return max(passages, key=lambda p: len(words & set(content_words(p))), default="")


def _quote(text: str, at: int) -> str:
    return " ".join(text[max(0, at - _QUOTE) : at + _QUOTE].split()).replace("|", "/")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/floor_conflicts.md"))
    args = ap.parse_args()
    claims = heldout_claims(30, 30)
    groups = {
        "single held-out answers": [c for c in claims if c.source.split("/")[0] not in _OWN],
        "hard cases (test)": [c for c in claims if c.source.split("/")[0] == "hardcases"],
        "multi-part answers": [c for c in claims if c.source.split("/")[0] == "multi"],
    }
    lines = [
        "# Rule conflicts in held-out train-role answers, by label",
        "",
        f"- command: `{' '.join(['python benchmarks/bench_floor_conflicts.py', *sys.argv[1:]])}`",
        "- data: the answers of `bench_heldout.py --per-source 30` (same draws)",
        "",
        "| group | label | answers | with a number conflict | with a negation conflict |",
        "|---|---|---:|---:|---:|",
    ]
    quotes = []
    for name, claims in groups.items():
        counts: Counter[tuple[bool, str]] = Counter()
        for claim in claims:
            numbers, negations = conflict_marks(claim.answer, _context(claim))
            label = bool(claim.label)
            counts[(label, "all")] += 1
            counts[(label, "number")] += bool(numbers)
            counts[(label, "negation")] += bool(negations)
            if name.startswith("multi") and not label:
                for kind, marks in (("number", numbers), ("negation", negations)):
                    for at in marks:
                        near = _nearest(_context(claim), _quote(claim.answer, at))
                        quotes.append(
                            f"| {claim.source} | {kind} | {_quote(claim.answer, at)} | "
                            f"{' '.join(near.split())[: 2 * _QUOTE * 2].replace('|', '/')} |"
                        )
        lines.extend(
            f"| {name} | {'unsupported' if label else 'clean'} | {counts[(label, 'all')]} | "
            f"{counts[(label, 'number')]} | {counts[(label, 'negation')]} |"
            for label in (False, True)
        )
    lines += [
        "",
        "Each conflict in a multi-part answer labelled clean, with the passage nearest to it:",
        "",
        "| source | rule | the answer around the mark | nearest context passage |",
        "|---|---|---|---|",
        *quotes,
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
