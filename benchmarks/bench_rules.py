"""What the explicit unit and negation rules do, rule by rule, on the hard-case test set.

Usage:
    python benchmarks/bench_rules.py [--out benchmarks/results/rules_ablation.md] [--folder DIR]

The bundled detector scores ``lab/training/data/hardcases_test.jsonl`` (train-role, kept out
of training) four times: with neither rule, with each one alone and with both (the
shipped default). A rule is switched off for the run by emptying what it reads (the unit
table, the negation check); everything else is the runtime path. The report gives AUROC
over the set and, per kind of hard case, the share flagged at the default threshold; then
the same four runs on the new user's six cases of issue 27 (``tests/data/user_cases.jsonl``:
three correct paraphrases, three errors with their exact unsupported characters), case by
case, with the characters the detector marks.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.training.train_evidence import _hard_cases
from truthlens_integrations._lab_api import quantities_module as _quantities
from truthlens_integrations._lab_api import read_ragtruth_dev
from truthlens_integrations._lab_api import rules_module as _adjust
from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models.detection import load_detector
from truthlens_integrations.evaluation import auroc, read_labelled_answers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_heldout import _inputs, _scores

USER_CASES = Path(__file__).resolve().parents[1] / "tests" / "data" / "user_cases.jsonl"
RAGTRUTH_DEV = Path(__file__).resolve().parents[2] / "shared" / "benchdata" / "ragtruth_dev"


@contextmanager
def _rules(units: bool, negation: bool) -> Iterator[None]:
    # _is_topic_word memoises what it reads from the unit table: a run without units
    # would otherwise leave its answers in the cache for the runs after it.
    _quantities._is_topic_word.cache_clear()
    _adjust._rule_verdicts.cache_clear()  # verdicts of the rules as they were
    with (
        mock.patch.dict(_quantities._UNITS, {}, clear=not units),
        mock.patch.object(
            _adjust,
            "negation_verdicts",
            _adjust.negation_verdicts if negation else (lambda *_: []),
        ),
    ):
        try:
            yield
        finally:
            _quantities._is_topic_word.cache_clear()
            _adjust._rule_verdicts.cache_clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/rules_ablation.md"))
    ap.add_argument(
        "--folder",
        type=Path,
        default=None,
        help="score a trained detector folder the way the bundled one is read "
        "(evidence selection, its calibrated response score) instead of the bundled one",
    )
    args = ap.parse_args()
    cases = _hard_cases("test")
    items = _inputs(cases)
    gold = [bool(c.label) for c in cases]
    detector = (
        load_detector()
        if args.folder is None
        else load_detector(args.folder, strategy="evidence", aggregation="calibrated")
    )
    user = read_labelled_answers(USER_CASES)
    user_items = [
        DetectionInput.create(context=list(e.context), question=e.question, answer=e.answer)
        for e in user
    ]
    runs = {}
    user_runs: dict[str, list[str]] = {}
    started = time.perf_counter()
    for name, units, negation in [
        ("neither rule", False, False),
        ("units only", True, False),
        ("negation only", False, True),
        ("both (shipped)", True, True),
    ]:
        with _rules(units, negation):
            scores, flagged, _ = _scores(detector, items)
            runs[name] = list(zip(scores, flagged, strict=True))
            user_runs[name] = [
                f"{r.score:.2f} {'flagged' if r.detected else 'passed'}: "
                + (", ".join(f"'{s.text}'" for s in r.spans) or "no span")
                for r in detector.detect_batch(user_items)
            ]
    kinds: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(cases):
        kinds[c.source.split("/")[-1]].append(i)
    lines = [
        "# The unit and negation rules, rule by rule, on the hard-case test set",
        "",
        f"- detector: {args.folder or 'the bundled one'}",
        f"- command: `{' '.join(['python', 'benchmarks/bench_rules.py', *sys.argv[1:]])}`",
        f"- date: {time.strftime('%Y-%m-%d')}; 2-core CPU, fp32; "
        f"{time.perf_counter() - started:.0f} s for the four runs",
        f"- data: `lab/training/data/hardcases_test.jsonl` ({len(cases)} records, train-role, not "
        "trained on); the rules were written for the failures these cases were generated "
        "for, so this is an in-distribution check, not a measure of real data",
        "",
        "| | " + " | ".join(runs) + " |",
        "|---|" + "---:|" * len(runs),
        "| AUROC | "
        + " | ".join(f"{auroc(gold, [s for s, _ in r]):.3f}" for r in runs.values())
        + " |",
    ]
    for kind, idx in sorted(kinds.items()):
        unsupported = gold[idx[0]]
        what = "caught" if unsupported else "clean flagged"
        cells = [f"{sum(r[i][1] for i in idx) / len(idx):.0%}" for r in runs.values()]
        lines.append(f"| {kind} ({len(idx)}, {what}) | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## The new user's six cases (issue 27)",
        "",
        "`tests/data/user_cases.jsonl`: the detector's score, verdict and marked characters "
        "(before the NLI explainer); gold: the characters that are unsupported.",
        "",
        "| case | gold | " + " | ".join(user_runs) + " |",
        "|---|---|" + "---|" * len(user_runs),
    ]
    for i, e in enumerate(user):
        gold = ", ".join(f"'{e.answer[g.start : g.end]}'" for g in e.gold_spans) or "no span"
        cells = [user_runs[name][i] for name in user_runs]
        lines.append(f"| {e.id} | {gold} | " + " | ".join(cells) + " |")
    lines += _real_answers(RAGTRUTH_DEV)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def _real_answers(folder: Path) -> list[str]:
    """Where each rule's conflict marks fall on real RAG answers (rules only, no model).

    ``ragtruth_dev`` (train role, all 1,098 answers, RAGTruth's span labels): the hard
    cases above were generated for the failures the rules were written for; these
    answers were not.
    """
    if not folder.is_dir():
        return ["", f"(`{folder}` not found: the real-answer section is skipped)"]
    examples = read_ragtruth_dev(folder)
    counts = {"unit": [0, 0, 0], "negation": [0, 0, 0]}  # marks, inside a gold span, answers
    for e in examples:
        gold = [(g.start, g.end) for g in e.gold_spans]
        rules = {
            "unit": _adjust._number_verdicts(e.answer, list(e.context)),
            "negation": _adjust.negation_verdicts(e.answer, list(e.context)),
        }
        for name, verdicts in rules.items():
            marks = [(a, b) for a, b, v in verdicts if v == "conflict"]
            counts[name][0] += len(marks)
            counts[name][1] += sum(any(a < ge and b > gs for gs, ge in gold) for a, b in marks)
            counts[name][2] += bool(marks)
    lines = [
        "",
        "## On real RAG answers",
        "",
        f"`ragtruth_dev` ({len(examples)} answers, train role, RAGTruth's span labels): the "
        "conflict marks each rule raises to 0.85 or more, and how many fall inside a span the "
        "annotators marked as unsupported (rules only, no model).",
        "",
        "| rule | conflict marks | inside a gold span | answers with a mark |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {n} | {m} | {g} | {a} |" for n, (m, g, a) in counts.items()]
    return lines


if __name__ == "__main__":
    main()
