"""Measure detector folders by issue 27's selection rule (``rag_selection/RULE.md``).

Three selection sets, read by small readers here (the evaluation readers of issue 27 may
replace them):

* ``select``: ``ragtruth_dev``'s select split (85 sources), every response, label = has a
  RAGTruth span, grouped by ``source_id``;
* ``attributionbench``: every claim of the three files, the claim beside the passages it
  cites, label = "not attributable";
* ``faithjudge``: the answers of current LLMs to the select split's sources only, beside
  that source's context; label = the judge's "Inconsistent" ("invalid" rows left out).

The two large sets are scored on a seeded sample of ``SAMPLE`` rows (the same for every
detector): on the shared CPU the full sets would take hours per detector.

``features FOLDER --name NAME`` scores each set with a detector folder as the response
map reads it (``lab.training.calibrate_response.response_features``: the largest calibrated
token probability, sentences, absent words, sentence peak) and the lexical reference's
response score, and caches them under ``runs/rag_select/``. ``report`` then compares:

* the shipped map of a folder (as stored in its ``config.json``);
* a map of the same kind (``length_absent_words``) refitted on the select split, each
  select answer scored by a map fitted on the other four folds of sources (5 folds
  grouped by ``source_id``); attributionbench, faithjudge and the hard cases are scored by
  the map fitted on all select sources;
* the paired bootstrap of the select-split AUROC difference, resampled by source (2,000
  draws, seed 0).

    python -m lab.training.rag_select features core/_bundled/detector --name stage5
    python -m lab.training.rag_select features runs/rag1 --name rag1
    python -m lab.training.rag_select report --baseline stage5 --candidate rag1 --out FILE
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from truthlens_integrations._lab_api import ragtruth_context
from truthlens_integrations.evaluation import auroc

from .calibrate_evidence import ece
from .calibrate_response import Answer, fit_map, map_scores, response_features
from .rag_rows import rag_answers
from .ragtruth_dev import DATA, TASKS, load_split

log = logging.getLogger("rag_select")

BENCHDATA = DATA.parent
CACHE = Path("runs/rag_select")
SETS = ("select", "attributionbench", "faithjudge", "hardcases")
MAP = "length_absent_words"
FOLDS = 5
DRAWS = 2000
FITTED_ON = (
    "ragtruth_dev select split (85 sources, ragtruth_dev_split.json), "
    "every response, all sources (issue 27 rule)"
)
_ATTRIBUTIONBENCH = (
    "dev_all_subset_balanced.jsonl",
    "test_all_subset_balanced_sampled500.jsonl",
    "test_ood_all_subset_balanced.jsonl",
)


# ---------------------------------------------------------------- readers


def select_answers() -> tuple[list[Answer], list[str]]:
    """The select split's responses and their source ids (the cross-fitting groups)."""
    answers, groups = [], []
    for a in rag_answers("select"):
        answers.append(
            Answer(
                f"ragtruth_dev/{a.task_type.lower()}",
                list(a.context),
                a.question,
                a.answer,
                a.label,
                multi=False,
            )
        )
        groups.append(str(a.source_id))
    return answers, groups


def attributionbench_answers(root: Path = BENCHDATA) -> tuple[list[Answer], list[str]]:
    """AttributionBench claims beside their cited passages (label 1: not attributable)."""
    answers, groups = [], []
    for name in _ATTRIBUTIONBENCH:
        with (root / "attributionbench" / name).open(encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                row = json.loads(line)
                passages = [str(p) for p in row.get("references") or [] if str(p).strip()]
                claim = str(row.get("claim") or "")
                if not passages or not claim.strip():
                    continue
                answers.append(
                    Answer(
                        f"attributionbench/{row.get('src_dataset', '')}",
                        passages,
                        str(row.get("question") or "") or None,
                        claim,
                        int(row["attribution_label"] != "attributable"),
                        multi=False,
                    )
                )
                groups.append(str(row.get("src_dataset", "")))
    return answers, groups


def _sources(data: Path = DATA) -> dict[int, tuple[str, Any]]:
    out = {}
    for stem, task in TASKS.items():
        with (data / f"ragtruth_dev_{stem}.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    out[int(row["source_id"])] = (task, row["source"])
    return out


def faithjudge_answers(root: Path = BENCHDATA) -> tuple[list[Answer], list[str]]:
    """Current LLMs' answers to the select sources, labelled by the judge (1: inconsistent)."""
    select = load_split()["select"]
    sources = _sources(root / "ragtruth_dev")
    answers, groups = [], []
    path = root / "faithjudge_llm_judged" / "faithjudge_ragtruth_dev_sources.jsonl"
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            source_id = int(row["source_id"])
            label = row.get("judge_label")
            if source_id not in select or label not in ("Consistent", "Inconsistent"):
                continue
            if not str(row["response"]).strip():
                continue
            task, source = sources[source_id]
            passages, question = ragtruth_context(task, source)
            answers.append(
                Answer(
                    f"faithjudge/{task.lower()}",
                    passages,
                    question,
                    str(row["response"]),
                    int(label == "Inconsistent"),
                    multi=False,
                )
            )
            groups.append(str(source_id))
    return answers, groups


def hardcase_answers() -> tuple[list[Answer], list[str]]:
    """The committed hard-case test records (what ``bench_rules.py`` scores)."""
    from .train_evidence import _hard_cases

    answers = []
    for c in _hard_cases("test"):
        context = c.context if isinstance(c.context, list) else c.context.split("\n")
        answers.append(
            Answer(
                c.source,
                [p for p in context if p.strip()],
                c.question or None,
                c.answer,
                int(c.label),
                multi=False,
            )
        )
    return answers, [a.source for a in answers]


READERS = {
    "select": select_answers,
    "attributionbench": attributionbench_answers,
    "faithjudge": faithjudge_answers,
    "hardcases": hardcase_answers,
}
# The shared 2-core CPU scored the 502 select answers in 15 minutes per detector, so the
# two large sets are measured on a seeded sample, the same rows for every detector.
SAMPLE = {"attributionbench": 800, "faithjudge": 800}


def read(part: str) -> tuple[list[Answer], list[str]]:
    """A set's answers and groups; the large sets sampled (seed 0, file order kept)."""
    answers, groups = READERS[part]()
    limit = SAMPLE.get(part)
    if limit is not None and limit < len(answers):
        keep = sorted(random.Random(0).sample(range(len(answers)), limit))
        answers, groups = [answers[i] for i in keep], [groups[i] for i in keep]
    return answers, groups


# ---------------------------------------------------------------- scoring


def lexical_scores(answers: Sequence[Answer], batch: int = 32) -> np.ndarray:
    """The lexical reference's response score of each answer."""
    from truthlens_integrations.core import DetectionInput
    from truthlens_integrations.core.models.detection import load_detector

    detector = load_detector("lexical")
    out = []
    for first in range(0, len(answers), batch):
        items = [
            DetectionInput.create(context=a.context, question=a.question, answer=a.answer)
            for a in answers[first : first + batch]
        ]
        out.extend(r.score for r in detector.detect_batch(items))
    return np.array(out, dtype=float)


def _cache(name: str, part: str) -> Path:
    return CACHE / f"{name}_{part}.npz"


def compute_features(folder: str, name: str, parts: Sequence[str]) -> None:
    """Score each set and cache ``rows`` (response features; lexical: the score), ``y``."""
    CACHE.mkdir(parents=True, exist_ok=True)
    for part in parts:
        started = time.time()
        answers, groups = read(part)
        y = np.array([a.label for a in answers], dtype=float)
        if folder == "lexical":
            rows = lexical_scores(answers)[:, None]
        else:
            rows = response_features(Path(folder), answers)
        np.savez(_cache(name, part), rows=rows, y=y, groups=np.array(groups))
        log.info("%s %s: %d answers in %.0f s", name, part, len(answers), time.time() - started)


def _load(name: str, part: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = np.load(_cache(name, part))
    return data["rows"], data["y"], data["groups"]


def folds_by_group(groups: np.ndarray, folds: int = FOLDS, seed: int = 0) -> np.ndarray:
    """A fold number per row; every row of one group in the same fold."""
    unique = sorted({str(g) for g in groups})
    order = np.random.default_rng(seed).permutation(len(unique))
    fold_of = {unique[i]: k % folds for k, i in enumerate(order)}
    return np.array([fold_of[str(g)] for g in groups])


def _weights(n: int) -> np.ndarray:
    return np.ones(n)


def cross_fitted(rows: np.ndarray, y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each row scored by the map fitted on the folds its source is not in."""
    fold = folds_by_group(groups)
    out = np.zeros(len(y))
    for k in range(FOLDS):
        test = fold == k
        calibration = fit_map(rows[~test], y[~test], _weights(int((~test).sum())), name=MAP)
        out[test] = map_scores(calibration, rows[test])
    return out


def shipped_map_scores(folder: str, rows: np.ndarray) -> np.ndarray:
    """The scores the folder's own stored response map gives."""
    from transformers import AutoConfig

    from truthlens_integrations._lab_api import read_response_calibration

    calibration = read_response_calibration(AutoConfig.from_pretrained(folder))
    if calibration is None:
        raise SystemExit(f"{folder} has no response calibration")
    return map_scores(calibration, rows)


def bootstrap_difference(
    a: np.ndarray, b: np.ndarray, y: np.ndarray, groups: np.ndarray, draws: int = DRAWS
) -> tuple[float, float, float]:
    """AUROC(a) - AUROC(b), and its 95% interval resampling sources (seed 0)."""
    rng = np.random.default_rng(0)
    by: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        by[str(g)].append(i)
    keys = sorted(by)
    diffs = []
    for _ in range(draws):
        idx = np.concatenate([by[keys[j]] for j in rng.integers(0, len(keys), len(keys))])
        gold = y[idx].astype(bool).tolist()
        if not 0 < sum(gold) < len(gold):
            continue
        diffs.append(auroc(gold, a[idx].tolist()) - auroc(gold, b[idx].tolist()))
    point = auroc(y.astype(bool).tolist(), a.tolist()) - auroc(y.astype(bool).tolist(), b.tolist())
    low, high = np.percentile(diffs, [2.5, 97.5])
    return float(point), float(low), float(high)


def figures(scores: np.ndarray, y: np.ndarray) -> dict[str, float]:
    gold = y.astype(bool).tolist()
    return {
        "n": len(y),
        "auroc": auroc(gold, scores.tolist()),
        "ece": ece(scores, y),
        "clean_flagged": float((scores[y == 0] >= 0.5).mean()),
        "flagged": float((scores >= 0.5).mean()),
    }


def _task(groups_or_sources: Sequence[Answer]) -> np.ndarray:
    return np.array([a.source.split("/")[-1] for a in groups_or_sources])


def scored(name: str, folder: str | None) -> dict[str, dict[str, np.ndarray]]:
    """Per set, the scores of a folder's ways of reading (or the lexical reference's)."""
    rows, y, groups = _load(name, "select")
    if folder is None:  # the lexical reference: its own score, no map
        return {part: {"lexical": _load(name, part)[0][:, 0]} for part in SETS}
    refit = fit_map(rows, y, _weights(len(y)), name=MAP)
    out: dict[str, dict[str, np.ndarray]] = {}
    for part in SETS:
        part_rows = _load(name, part)[0]
        out[part] = {
            "stored map": shipped_map_scores(folder, part_rows),
            "map refitted on select": (
                cross_fitted(rows, y, groups) if part == "select" else map_scores(refit, part_rows)
            ),
            "largest token": part_rows[:, 0],
        }
    return out


def write_map(folder: str, name: str) -> dict[str, Any]:
    """Fit the map on every select source and store it in the folder's ``config.json``."""
    rows, y, _ = _load(name, "select")
    calibration = fit_map(rows, y, _weights(len(y)), name=MAP)
    entry = calibration.to_config(FITTED_ON)
    path = Path(folder) / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.setdefault("truthlens", {})["response_calibration"] = entry
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return entry


def report(detectors: dict[str, str | None], baseline: str, candidate: str) -> dict[str, Any]:
    """Every figure of the rule for each detector, and the paired bootstrap of the choice.

    Args:
        detectors: Cache name -> folder (``None`` for the lexical reference).
        baseline: Cache name of the shipped detector (scored by its stored map).
        candidate: Cache name of the candidate (scored by the map refitted on select).
    """
    tasks = _task(read("select")[0])
    table: dict[str, Any] = {}
    all_scores: dict[str, np.ndarray] = {}
    for name, folder in detectors.items():
        for way, by_part in _transpose(scored(name, folder)).items():
            label = f"{name} / {way}"
            entry: dict[str, Any] = {}
            for part, s in by_part.items():
                y = _load(name, part)[1]
                entry[part] = figures(s, y)
                if part == "select":
                    all_scores[label] = s
                    entry["select_by_task"] = {
                        t: auroc(y[tasks == t].astype(bool).tolist(), s[tasks == t].tolist())
                        for t in sorted(set(tasks.tolist()))
                    }
            table[label] = entry
    y, groups = _load(baseline, "select")[1:]
    base = all_scores[f"{baseline} / stored map"]
    cand = all_scores[f"{candidate} / map refitted on select"]
    choice = {
        "select_auroc_difference": bootstrap_difference(cand, base, y, groups),
        "against_baseline_refitted": bootstrap_difference(
            cand, all_scores[f"{baseline} / map refitted on select"], y, groups
        ),
        # the candidate's weights read by the map they carry (RULE_candidate6.md, 6b)
        "stored_map_against_baseline": bootstrap_difference(
            all_scores[f"{candidate} / stored map"], base, y, groups
        ),
    }
    return {"table": table, "bootstrap": choice}


def markdown(result: dict[str, Any]) -> str:
    """The report's table: one line per detector and way of reading it."""
    head = (
        "| detector / response score | select AUROC (QA / Summary / Data2txt) | select ECE "
        "| select clean flagged | attributionbench AUROC | faithjudge AUROC "
        "| faithjudge consistent flagged at 0.5 | hard-case AUROC |"
    )
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|"]
    for label, e in result["table"].items():
        tasks = e["select_by_task"]
        by_task = " / ".join(f"{tasks[t]:.3f}" for t in ("qa", "summary", "data2txt"))
        lines.append(
            f"| {label} | {e['select']['auroc']:.3f} ({by_task}) | {e['select']['ece']:.3f} "
            f"| {e['select']['clean_flagged']:.0%} | {e['attributionbench']['auroc']:.3f} "
            f"| {e['faithjudge']['auroc']:.3f} | {e['faithjudge']['clean_flagged']:.0%} "
            f"| {e['hardcases']['auroc']:.3f} |"
        )
    lines.append("")
    for name, (point, low, high) in result["bootstrap"].items():
        lines.append(f"- {name}: {point:+.3f} [{low:+.3f}, {high:+.3f}]")
    return "\n".join(lines) + "\n"


def _transpose(by_part: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, np.ndarray]]:
    out: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
    for part, ways in by_part.items():
        for way, s in ways.items():
            out[way][part] = s
    return dict(out)


def eval_only(folder: str, dataset: str, limit: int | None, out: Path) -> None:
    """``truthlens eval`` on an eval-only set, with a folder read as the bundled one is.

    The CLI reads a folder with the window-scanning detector; a trained folder of this
    project is read with evidence selection and its own calibrated response score.
    Measured once, after the choice: nothing here decides anything.
    """
    import sys

    from truthlens_integrations.core.models.detection import load_detector
    from truthlens_integrations.evaluation import (
        load_detection_dataset,
        render_markdown,
        run_evaluation,
        write_report,
    )

    examples = load_detection_dataset(dataset, None, limit=limit)
    if folder == "lexical":
        detector = load_detector("lexical")
    elif folder == "bundled":
        detector = load_detector()
    else:
        detector = load_detector(folder, strategy="evidence", aggregation="calibrated")
    command = "python -m lab.training.rag_select " + " ".join(sys.argv[1:])
    report = run_evaluation(detector, examples, 16, progress=False, command=command)
    print(render_markdown(report))
    write_report(report, out, plots=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("features", help="score the sets with a folder (or 'lexical')")
    f.add_argument("folder")
    f.add_argument("--name", required=True)
    f.add_argument("--sets", nargs="*", default=list(SETS))
    w = sub.add_parser("write-map", help="store the map fitted on all select sources")
    w.add_argument("folder")
    w.add_argument("--name", required=True)
    r = sub.add_parser("report")
    r.add_argument("--detector", nargs=2, action="append", metavar=("NAME", "FOLDER"))
    r.add_argument("--baseline", required=True)
    r.add_argument("--candidate", required=True)
    r.add_argument("--out", type=Path, required=True)
    e = sub.add_parser("eval-only", help="measure a folder on an eval-only set (after the choice)")
    e.add_argument("folder", help="a folder, 'bundled' or 'lexical'")
    e.add_argument("--dataset", required=True, choices=("ragtruth", "faithbench"))
    e.add_argument("--limit", type=int, default=None)
    e.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.command == "features":
        compute_features(args.folder, args.name, args.sets)
    elif args.command == "eval-only":
        eval_only(args.folder, args.dataset, args.limit, args.out)
    elif args.command == "write-map":
        print(json.dumps(write_map(args.folder, args.name), indent=1))
    else:
        detectors = {n: (None if f == "lexical" else f) for n, f in args.detector}
        result = report(detectors, args.baseline, args.candidate)
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(markdown(result))


if __name__ == "__main__":
    main()
