"""Fit the response map on RAG answers and decide by the selection rule (issue 27).

Follows ``lab/records/rag_selection/RULE.md``: the map is fitted on the
**select** split of ``ragtruth_dev`` (85 sources). Every select-split figure is
cross-fitted (5 folds grouped by ``source_id``, each answer scored by a map that did not
see its source); FaithJudge answers to the select sources are scored the same way (by
the map of their source's fold). The map written to the folder is then refitted on all
select sources and measured on AttributionBench (select role), and, for reference, on
the train split and ExpertQA (train role). Nothing eval-only is read.

Reads the detector outputs cached by ``lab.training.rag_features`` (run it first, same
``--folder``). Candidates compared (RULE.md, RULE_candidate4.md, RULE_candidate5.md): the
folder's current map (``shipped``); candidate 2, the RAG-fitted length-safe map on the
token and word signals (``rag``); candidate 4a, the same map with the unit and negation
rules' conflict counts as signals of their own (``rules``); candidate 4b, 4a with the
rules' floor (``rules_floor``: at least 0.85 for an answer either rule finds in conflict);
candidates 5a and 5b, 4a and 4b fitted on the select split **together with the 1,400
train-role hard cases** (``short`` and ``short_floor``; the two sets weigh the same in
every fit, and the hard cases join every fold's fit: they share no source with the select
split). Beside them the lexical reference and the issue's floor (a free logistic fit of
the current score with absent words, length and task type). The hard-case **test** file is
only measured (condition 4), never fitted on.

    python -m lab.training.rag_features --folder F --dataset ragtruth_dev_select \
        --dataset attributionbench --dataset hardcases_train
    python -m lab.training.rag_features --folder F --dataset faithjudge_select --limit 1500
    python -m lab.training.rag_response --folder F --out lab/records/rag_selection \
        --hard-cases [--write CANDIDATE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from truthlens_integrations.evaluation import auroc, average_precision, threshold_curve

from .calibrate_evidence import ece, fit_logistic
from .rag_features import (
    HARD_CASES,
    ROOT,
    cache_file,
    hard_case_examples,
    load_examples,
    read_cache,
)

log = logging.getLogger("rag_response")

FOLDS = 5
BOOTSTRAP = 2000
FITTED_ON = (
    "ragtruth_dev select split (85 sources, ragtruth_dev_split.json), "
    "length-safe logistic map (lab/training/rag_response.py)"
)
FITTED_ON_SHORT = (
    "ragtruth_dev select split (85 sources, ragtruth_dev_split.json) and the "
    "1,400 train-role hard cases (lab/training/data/hardcases_train.jsonl), the two sets "
    "weighing the same; length-safe logistic map (lab/training/rag_response.py)"
)
# Candidate 4b: the probability the rules give a conflicting token (_adjust._CONFLICT_FLOOR).
RULE_FLOOR = 0.85
CANDIDATES = ("rag", "rules", "rules_floor", "short", "short_floor")
# Candidates 5a and 5b (RULE_candidate5.md): fitted with the train-role hard cases too.
WITH_SHORT_ANSWERS = ("short", "short_floor")


class CachedToken(NamedTuple):
    """A token of ``lab.training.rag_features``' caches, as the response maps read it."""

    start: int
    end: int
    probability: float


def signals_of(examples: Sequence[Any], rows: Sequence[dict[str, Any]]) -> list[Any]:
    """Each cached answer's :class:`ResponseSignals`, read as the runtime detector reads it."""
    from truthlens_integrations._lab_api import absent_words, response_signals, uncounted_spans

    by_id = {e.id: e for e in examples}
    out = []
    for row in rows:
        example = by_id[row["id"]]
        item = example.to_input()
        skip = uncounted_spans(item.answer, item.context, item.question)
        absent = absent_words(item, skip)
        tokens = [CachedToken(*t) for t in row["tokens"]]
        out.append(
            response_signals(
                item.answer,
                tokens,  # type: ignore[arg-type]
                [start for start, _ in absent],
                absent_numbers=sum(1 for _, key in absent if key.startswith("#")),
                rule_conflicts=(row["number_conflicts"], row["negation_conflicts"]),
            )
        )
    return out


class Scored(NamedTuple):
    """One data set: the examples, cached rows, signals, labels and sources, aligned."""

    examples: list[Any]
    rows: list[dict[str, Any]]
    signals: list[Any]
    y: np.ndarray
    sources: np.ndarray
    tasks: np.ndarray


def load_set(folder: Path, dataset: str, limit: int | None = None) -> Scored:
    """A cached data set with its signals (the examples re-read to get the text)."""
    rows = read_cache(cache_file(folder, dataset, limit))
    examples = load_examples(dataset, limit)
    by_id = {e.id: e for e in examples}
    ordered = [by_id[r["id"]] for r in rows]
    return Scored(
        examples=ordered,
        rows=rows,
        signals=signals_of(ordered, rows),
        y=np.array([r["label"] for r in rows], dtype=float),
        sources=np.array([str(r["source_id"]) for r in rows]),
        tasks=np.array([r["task_type"] for r in rows]),
    )


def lexical_scores(data: Scored) -> np.ndarray:
    """The lexical reference's response score (its default aggregation)."""
    from truthlens_integrations.core.models.detection import LexicalDetector

    detector = LexicalDetector()
    results = detector.detect_batch([e.to_input() for e in data.examples])
    return np.array([r.score for r in results])


def report(scores: np.ndarray, y: np.ndarray, threshold: float = 0.5) -> dict[str, Any]:
    """AP, AUROC, ECE and the share of clean (and unsupported) answers flagged."""
    gold = y.astype(bool).tolist()
    flagged = scores >= threshold
    return {
        "n": len(y),
        "positives": int(y.sum()),
        "auroc": round(auroc(gold, scores.tolist()), 4),
        "ap": round(average_precision(threshold_curve(gold, scores.tolist())), 4),
        "ece": round(ece(scores, y), 4),
        "clean_flagged": round(float(flagged[y == 0].mean()), 4) if (y == 0).any() else None,
        "recall": round(float(flagged[y == 1].mean()), 4) if (y == 1).any() else None,
    }


def by_task(scores: np.ndarray, data: Scored) -> dict[str, float]:
    """AUROC within each task type."""
    out = {}
    for task in sorted(set(data.tasks.tolist())):
        mask = data.tasks == task
        if 0 < data.y[mask].sum() < mask.sum():
            out[task] = round(auroc(data.y[mask].astype(bool).tolist(), scores[mask].tolist()), 4)
    return out


def source_folds(sources: Sequence[str], folds: int = FOLDS, seed: int = 0) -> dict[str, int]:
    """Each source's fold: the sorted sources, shuffled with ``seed``, dealt in turn."""
    unique = sorted(set(sources))
    random.Random(seed).shuffle(unique)
    return {s: i % folds for i, s in enumerate(unique)}


# ----------------------------------------------------------------------------- the maps


class Short(NamedTuple):
    """The train-role hard cases candidates 5a and 5b are fitted on beside the select split."""

    signals: list[Any]
    y: np.ndarray


def fit_candidate(
    name: str,
    signals: Sequence[Any],
    y: np.ndarray,
    short: Short | None = None,
    *,
    short_weight: float = 1.0,
) -> Any:
    """One candidate's length-safe map fitted on ``signals`` (RULE_candidate4/5.md).

    ``rag`` (candidate 2): the token and word signals (``DEFAULT_SIGNALS``); ``rules``
    (4a): those and the rules' conflict counts; ``rules_floor`` (4b): 4a with the rules'
    fixed floor. ``short`` and ``short_floor`` (5a, 5b): 4a and 4b fitted on ``signals``
    together with the hard cases ``short``, each select answer weighing 1 and each hard
    case ``short_weight * len(signals) / len(short)``: with the rule's ``short_weight`` of
    1 the two sets weigh the same (other values are for ``lab.training.rag_tradeoff``'s
    train-role diagnostic only).

    Raises:
        ValueError: For 5a or 5b without hard cases.
    """
    from truthlens_integrations._lab_api import DEFAULT_SIGNALS, SIGNALS, fit_response_map

    columns = DEFAULT_SIGNALS if name == "rag" else SIGNALS
    labels = y.astype(bool).tolist()
    if name in WITH_SHORT_ANSWERS:
        if short is None or not short.signals:
            raise ValueError(f"candidate {name!r} is fitted with the hard cases; none given")
        share = short_weight * len(signals) / len(short.signals)
        weights = [1.0] * len(signals) + [share] * len(short.signals)
        signals = [*signals, *short.signals]
        labels = [*labels, *short.y.astype(bool).tolist()]
        fitted = fit_response_map(signals, labels, columns=columns, weights=weights)
    else:
        fitted = fit_response_map(signals, labels, columns=columns)
    if name in ("rules_floor", "short_floor"):
        fitted = dataclasses.replace(fitted, rule_floor=RULE_FLOOR)
    return fitted


def fitted_on(name: str) -> str:
    """What a candidate's map was fitted on (its ``fitted_on`` entry)."""
    return FITTED_ON_SHORT if name in WITH_SHORT_ANSWERS else FITTED_ON


def rag_scores(calibration: Any, signals: Sequence[Any]) -> np.ndarray:
    return np.array([calibration.score(s) for s in signals])


def _floor_features(shipped: np.ndarray, signals: Sequence[Any], tasks: np.ndarray) -> np.ndarray:
    p = np.clip(shipped, 1e-6, 1 - 1e-6)
    task_names = ("QA", "Summary", "Data2txt")
    return np.c_[
        np.log(p / (1 - p)),
        [np.log1p(s.absent_words) for s in signals],
        [np.log(max(s.sentences, 1)) for s in signals],
        *[(tasks == t).astype(float) for t in task_names[1:]],
    ]


def fit_floor(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """The issue's floor: a free logistic fit (any sign) of the current score and counts."""
    coef, bias = fit_logistic(x, y, np.ones(len(y)))
    return coef, bias


def floor_scores(fit: tuple[np.ndarray, float], x: np.ndarray) -> np.ndarray:
    coef, bias = fit
    return 1.0 / (1.0 + np.exp(-np.clip(x @ coef + bias, -40, 40)))


def cross_fit(
    select: Scored,
    shipped: np.ndarray,
    others: dict[str, tuple[Scored, np.ndarray]],
    short: Short,
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, np.ndarray]]]:
    """Cross-fitted scores of the select split and of sets sharing its sources.

    Candidates 5a and 5b add all the hard cases ``short`` to every fold's fit (they share
    no source with the select split); the held-out fold is always select answers only.
    """
    folds = source_folds(select.sources.tolist())
    fold = np.array([folds[s] for s in select.sources])
    x_floor = _floor_features(shipped, select.signals, select.tasks)
    names = (*CANDIDATES, "floor")
    out = {name: np.zeros(len(select.y)) for name in names}
    other_out = {
        other: {name: np.zeros(len(d.y)) for name in names} for other, (d, _) in others.items()
    }
    for k in range(FOLDS):
        train = fold != k
        test = ~train
        seen = [s for s, t in zip(select.signals, train, strict=True) if t]
        unseen = [s for s, t in zip(select.signals, test, strict=True) if t]
        maps = {name: fit_candidate(name, seen, select.y[train], short) for name in CANDIDATES}
        floor = fit_floor(x_floor[train], select.y[train])
        for name, fitted in maps.items():
            out[name][test] = rag_scores(fitted, unseen)
        out["floor"][test] = floor_scores(floor, x_floor[test])
        for other, (data, data_shipped) in others.items():
            mask = np.array([folds.get(s, -1) == k for s in data.sources])
            sig = [s for s, m in zip(data.signals, mask, strict=True) if m]
            for name, fitted in maps.items():
                other_out[other][name][mask] = rag_scores(fitted, sig)
            x = _floor_features(data_shipped, data.signals, data.tasks)
            other_out[other]["floor"][mask] = floor_scores(floor, x[mask])
    return out, other_out


def source_bootstrap(
    difference: Callable[[np.ndarray], float | None], sources: np.ndarray, seed: int = 0
) -> dict[str, float]:
    """A paired difference with a 95% interval, resampling sources (RULE.md: 2,000 draws).

    ``difference(rows)`` is the statistic's difference on those rows (``None`` drops a
    draw it is not defined on); it is read on every row for the point estimate.
    """
    rng = np.random.default_rng(seed)
    unique = sorted(set(sources.tolist()))
    index = {s: np.flatnonzero(sources == s) for s in unique}
    diffs = []
    for _ in range(BOOTSTRAP):
        picks = rng.integers(0, len(unique), len(unique))
        value = difference(np.concatenate([index[unique[i]] for i in picks]))
        if value is not None:
            diffs.append(value)
    whole = difference(np.arange(len(sources)))
    return {
        "difference": round(float(whole or 0.0), 4),
        "low": round(float(np.percentile(diffs, 2.5)), 4),
        "high": round(float(np.percentile(diffs, 97.5)), 4),
        "draws": len(diffs),
    }


def paired_bootstrap(
    a: np.ndarray, b: np.ndarray, y: np.ndarray, sources: np.ndarray, seed: int = 0
) -> dict[str, float]:
    """AUROC(a) - AUROC(b) with a 95% interval, resampling sources (RULE.md)."""

    def difference(rows: np.ndarray) -> float | None:
        gold = y[rows].astype(bool).tolist()
        if not 0 < sum(gold) < len(gold):
            return None
        return auroc(gold, a[rows].tolist()) - auroc(gold, b[rows].tolist())

    return source_bootstrap(difference, sources, seed)


def reliability_plot(path: Path, curves: dict[str, tuple[np.ndarray, np.ndarray]]) -> bool:
    """Observed rate against mean score in 10 bins, one line per map; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfect")
    for name, (scores, y) in curves.items():
        bins = np.minimum((scores * 10).astype(int), 9)
        xs, ys = [], []
        for b in range(10):
            mask = bins == b
            if mask.sum() >= 5:
                xs.append(scores[mask].mean())
                ys.append(y[mask].mean())
        ax.plot(xs, ys, marker="o", label=name)
    ax.set_xlabel("response score (bin mean)")
    ax.set_ylabel("share with an unsupported claim")
    ax.set_title("ragtruth_dev select split, cross-fitted")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=ROOT / "core" / "_bundled" / "detector")
    parser.add_argument("--faithjudge-limit", type=int, default=1500)
    parser.add_argument("--out", type=Path, help="folder for the metrics JSON and plot")
    parser.add_argument(
        "--write",
        choices=CANDIDATES,
        help="write this candidate's map, refitted on all select sources (and for 5a and "
        "5b the hard cases), into the folder",
    )
    parser.add_argument(
        "--hard-cases",
        action="store_true",
        help="also RULE.md condition 4 (450 hard cases) and the padding check",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    config = json.loads((args.folder / "config.json").read_text())
    current = folder_map(args.folder)
    select = load_set(args.folder, "ragtruth_dev_select")
    hard = load_set(args.folder, HARD_CASES)
    short = Short(hard.signals, hard.y)
    sets = {"attributionbench": load_set(args.folder, "attributionbench")}
    faith = load_set(args.folder, "faithjudge_select", args.faithjudge_limit)
    for name in ("ragtruth_dev_train", "expertqa"):
        if cache_file(args.folder, name).is_file():
            sets[name] = load_set(args.folder, name)
    shipped = {
        name: rag_scores(current, d.signals) for name, d in {**sets, "select": select}.items()
    }
    shipped["faithjudge_select"] = rag_scores(current, faith.signals)
    crossed, crossed_other = cross_fit(
        select,
        shipped["select"],
        {"faithjudge_select": (faith, shipped["faithjudge_select"])},
        short,
    )
    final = {name: fit_candidate(name, select.signals, select.y, short) for name in CANDIDATES}
    lexical = {name: lexical_scores(d) for name, d in {**sets, "select": select}.items()}
    lexical["faithjudge_select"] = lexical_scores(faith)

    result: dict[str, Any] = {
        "folder": str(args.folder),
        "maps": {name: m.to_config(fitted_on(name)) for name, m in final.items()},
        "length_safe": {name: m.length_safe for name, m in final.items()},
    }
    select_scores = {"shipped": shipped["select"], **crossed, "lexical": lexical["select"]}
    result["select_crossfitted"] = {
        name: {**report(scores, select.y), "by_task": by_task(scores, select)}
        for name, scores in select_scores.items()
    }
    for name in CANDIDATES:
        result[f"select_bootstrap_{name}_minus_shipped"] = paired_bootstrap(
            crossed[name], shipped["select"], select.y, select.sources
        )
        result[f"select_bootstrap_{name}_minus_lexical"] = paired_bootstrap(
            crossed[name], lexical["select"], select.y, select.sources
        )
    fj = crossed_other["faithjudge_select"]
    faith_scores = {"shipped": shipped["faithjudge_select"], **fj}
    faith_scores["lexical"] = lexical["faithjudge_select"]
    result["faithjudge_select_crossfitted"] = {
        name: report(scores, faith.y) for name, scores in faith_scores.items()
    }
    for name, data in sets.items():
        scored = {"shipped": shipped[name]}
        scored.update({c: rag_scores(m, data.signals) for c, m in final.items()})
        scored["lexical"] = lexical[name]
        result[name] = {
            c: {**report(scores, data.y), "by_task": by_task(scores, data)}
            for c, scores in scored.items()
        }
    if args.hard_cases:
        maps = {"shipped": current, **final}
        result["hard_cases_auroc"], result["hard_cases_flagged_by_kind"] = hard_case_aurocs(
            args.folder, maps
        )
        result["padding"] = padding_scores(args.folder, maps)
    result["decision"] = {name: decide(result, name) for name in CANDIDATES}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        tag = args.folder.name
        (args.out / f"crossfit_{tag}.json").write_text(text + "\n")
        reliability_plot(
            args.out / f"reliability_{tag}.png",
            {
                "shipped map": (shipped["select"], select.y),
                "candidate 2 (cross-fitted)": (crossed["rag"], select.y),
                "candidate 4a (cross-fitted)": (crossed["rules"], select.y),
                "candidate 4b (cross-fitted)": (crossed["rules_floor"], select.y),
                "candidate 5a (cross-fitted)": (crossed["short"], select.y),
                "candidate 5b (cross-fitted)": (crossed["short_floor"], select.y),
            },
        )
    if args.write:
        entry = final[args.write].to_config(fitted_on(args.write))
        config.setdefault("truthlens", {})["response_calibration"] = entry
        (args.folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        log.info("wrote the %s map into %s", args.write, args.folder / "config.json")


class _Config:
    def __init__(self, truthlens: Any) -> None:
        self.truthlens = truthlens


def folder_map(folder: Path) -> Any:
    """The response map stored in ``folder``'s config (the one the candidates are judged against).

    Raises:
        SystemExit: If the folder has none.
    """
    from truthlens_integrations._lab_api import read_response_calibration

    config = json.loads((folder / "config.json").read_text())
    current = read_response_calibration(_Config(config.get("truthlens")))
    if current is None:
        raise SystemExit(f"{folder} has no response map to compare with")
    return current


def decide(result: dict[str, Any], name: str) -> dict[str, Any]:
    """RULE.md's conditions 1-4 for one candidate against the shipped map of the same run.

    Condition 4's "the test suite passes" is checked apart (pytest).
    """
    boot = result[f"select_bootstrap_{name}_minus_shipped"]
    ab = result["attributionbench"]
    fj = result["faithjudge_select_crossfitted"]
    conditions = {
        "1_select_auroc_above_with_interval_above_0": boot["low"] > 0,
        "2_attributionbench_at_most_0.02_below": ab[name]["auroc"] >= ab["shipped"]["auroc"] - 0.02,
        "3_faithjudge_clean_flagged_not_higher": fj[name]["clean_flagged"]
        <= fj["shipped"]["clean_flagged"],
    }
    if "hard_cases_auroc" in result:
        hard = result["hard_cases_auroc"]
        conditions["4_hard_cases_at_most_0.02_below"] = hard[name] >= hard["shipped"] - 0.02
    return {**conditions, "passes": all(conditions.values())}


def hard_case_aurocs(
    folder: Path, maps: dict[str, Any]
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """RULE.md condition 4: AUROC on the hard-case test set under each map, one detector pass.

    The records ``benchmarks/bench_rules.py`` scores (``lab/training/data/hardcases_test.jsonl``,
    both rules on, the runtime path); the tokens are scored once and each map re-reads them.
    Also, per kind of hard case, the share each map flags at 0.5 (as bench_rules reports).
    """
    cases = hard_case_examples("test")
    signals = _signals_of_items(folder, [c.to_input() for c in cases])
    gold = [c.hallucinated for c in cases]
    scores = {name: [m.score(s) for s in signals] for name, m in maps.items()}
    kinds: dict[str, list[int]] = {}
    for i, case in enumerate(cases):
        kinds.setdefault(case.task_type, []).append(i)
    flagged = {
        name: {
            f"{kind} ({len(idx)}, {'unsupported' if gold[idx[0]] else 'clean'})": round(
                sum(s[i] >= 0.5 for i in idx) / len(idx), 4
            )
            for kind, idx in sorted(kinds.items())
        }
        for name, s in scores.items()
    }
    return {name: round(auroc(gold, s), 4) for name, s in scores.items()}, flagged


def exact_results(folder: Path, items: Sequence[Any]) -> list[Any]:
    """The folder's detector on each input: exact tokens (no early exit), rules on, fp32."""
    from truthlens_integrations.core import DetectionConfig
    from truthlens_integrations.core.models.detection import EvidenceDetector

    config = DetectionConfig(aggregation="max", early_exit=False)
    detector = EvidenceDetector(folder, config=config, device="cpu", dtype="float32")
    results = []
    for first in range(0, len(items), 16):
        results.extend(detector.detect_batch(items[first : first + 16]))
    return results


def _signals_of_items(folder: Path, items: Sequence[Any]) -> list[Any]:
    """Each input's response signals under the folder's detector (exact tokens, rules on)."""
    from truthlens_integrations._lab_api import answer_signals

    results = exact_results(folder, items)
    return [answer_signals(i, r.tokens) for i, r in zip(items, results, strict=True)]


# The padding check (RULE_candidate4.md): a wrong answer, then sentences copied from the context.
EIFFEL_FACTS = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
    "It was built from 1887 to 1889 as the centrepiece of the 1889 World's Fair.",
    "The tower is 330 meters tall.",
    "It is named after the engineer Gustave Eiffel, whose company designed and built it.",
    "The design was drawn up by Maurice Koechlin and Emile Nouguier.",
    "The tower has three levels for visitors, with restaurants on the first and second levels.",
    "The upper platform of the top level is 276 meters above the ground.",
    "Visitors can climb the stairs or take a lift to the first and second levels.",
    "It was the tallest man-made structure in the world until the Chrysler Building in New York "
    "was finished in 1930.",
    "Its base is a square of 125 meters on each side.",
    "The structure weighs about 10,100 tonnes.",
    "The tower is repainted every seven years to protect it from rust.",
    "About 60 tonnes of paint are used for each repainting.",
    "The tower received nearly 7 million visitors in 2015.",
    "It was criticised at first by some of France's leading artists and intellectuals.",
    "Radio transmitters were installed at the top of the tower in the early twentieth century.",
    "The first lifts of the tower were built by the Otis Elevator Company.",
    "Gustave Eiffel kept a private apartment near the top of the tower.",
    "The tower is lit every evening and sparkles for five minutes every hour after dark.",
    "It stands near the Seine river, opposite the Trocadero.",
    "It is the most visited monument with an entrance fee in the world.",
    "Gustave Eiffel used the tower for experiments in meteorology and aerodynamics.",
)
EIFFEL_WRONG = "The Eiffel Tower was built in 1950 and is 500 meters tall."
PADDING = (0, 10, 20)


def padded_answers() -> list[Any]:
    """The wrong Eiffel answer alone and followed by 10 and 20 sentences of its context."""
    from truthlens_integrations.core import DetectionInput

    padding = [f for f in EIFFEL_FACTS if "built from" not in f and "330" not in f]
    return [
        DetectionInput.create(
            context=list(EIFFEL_FACTS),
            question="Tell me about the Eiffel Tower.",
            answer=" ".join([EIFFEL_WRONG, *padding[:n]]),
        )
        for n in PADDING
    ]


def padding_scores(folder: Path, maps: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each map's score of the wrong answer padded with 0, 10 and 20 supported sentences."""
    signals = _signals_of_items(folder, padded_answers())
    return {
        name: {str(n): round(m.score(s), 4) for n, s in zip(PADDING, signals, strict=True)}
        for name, m in maps.items()
    }


if __name__ == "__main__":
    main()
