"""Fit the response map on RAG answers and decide by the selection rule (issue 27).

Follows ``benchmarks/results/rag_selection/RULE.md``: the map is fitted on the
**select** split of ``ragtruth_dev`` (85 sources). Every select-split figure is
cross-fitted (5 folds grouped by ``source_id``, each answer scored by a map that did not
see its source); FaithJudge answers to the select sources are scored the same way (by
the map of their source's fold). The map written to the folder is then refitted on all
select sources and measured on AttributionBench (select role), and, for reference, on
the train split and ExpertQA (train role). Nothing eval-only is read.

Reads the detector outputs cached by ``training.rag_features`` (run it first, same
``--folder``). Candidates compared (RULE.md): the folder's current map (``shipped``),
the RAG-fitted length-safe map (``rag``), and beside them the lexical reference and the
issue's floor (a free logistic fit of the current score with absent words, length and
task type).

    python -m training.rag_features --folder F --dataset ragtruth_dev_select \
        --dataset attributionbench --dataset faithjudge_select --limit 1500
    python -m training.rag_response --folder F --out benchmarks/results/rag_selection [--write]
"""

from __future__ import annotations

import argparse
import json
import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from truthlens_integrations.evaluation import auroc, average_precision, threshold_curve

from .calibrate_evidence import ece, fit_logistic
from .rag_features import ROOT, cache_file, read_cache

log = logging.getLogger("rag_response")

FOLDS = 5
BOOTSTRAP = 2000
FITTED_ON = (
    "ragtruth_dev select split (85 sources, training/data/ragtruth_dev_split.json), "
    "length-safe logistic map (training/rag_response.py)"
)


class _Token(NamedTuple):
    start: int
    end: int
    probability: float


def signals_of(examples: Sequence[Any], rows: Sequence[dict[str, Any]]) -> list[Any]:
    """Each cached answer's :class:`ResponseSignals`, read as the runtime detector reads it."""
    from truthlens_integrations.core.models.detection._adjust import abstentions
    from truthlens_integrations.core.models.detection._lexical import absent_words
    from truthlens_integrations.core.models.detection._response import response_signals

    by_id = {e.id: e for e in examples}
    out = []
    for row in rows:
        example = by_id[row["id"]]
        item = example.to_input()
        skip = abstentions(item.answer, item.context, item.question)
        absent = absent_words(item, skip)
        tokens = [_Token(*t) for t in row["tokens"]]
        out.append(
            response_signals(
                item.answer,
                tokens,  # type: ignore[arg-type]
                [start for start, _ in absent],
                absent_numbers=sum(1 for _, key in absent if key.startswith("#")),
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
    from truthlens_integrations.evaluation import load_detection_dataset

    rows = read_cache(cache_file(folder, dataset, limit))
    examples = load_detection_dataset(dataset, limit=limit)
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
    from truthlens_integrations.core.models import LexicalDetector

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


def fit_rag(signals: Sequence[Any], y: np.ndarray) -> Any:
    """Candidate 2: the length-safe map on every signal."""
    from truthlens_integrations.core.models.detection._response_fit import fit_response_map

    return fit_response_map(signals, y.astype(bool).tolist())


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
    select: Scored, shipped: np.ndarray, others: dict[str, tuple[Scored, np.ndarray]]
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, np.ndarray]]]:
    """Cross-fitted scores of the select split and of sets sharing its sources."""
    folds = source_folds(select.sources.tolist())
    fold = np.array([folds[s] for s in select.sources])
    x_floor = _floor_features(shipped, select.signals, select.tasks)
    out = {"rag": np.zeros(len(select.y)), "floor": np.zeros(len(select.y))}
    other_out = {
        name: {"rag": np.zeros(len(d.y)), "floor": np.zeros(len(d.y))}
        for name, (d, _) in others.items()
    }
    for k in range(FOLDS):
        train = fold != k
        rag = fit_rag([s for s, t in zip(select.signals, train, strict=True) if t], select.y[train])
        floor = fit_floor(x_floor[train], select.y[train])
        test = ~train
        out["rag"][test] = rag_scores(
            rag, [s for s, t in zip(select.signals, test, strict=True) if t]
        )
        out["floor"][test] = floor_scores(floor, x_floor[test])
        for name, (data, data_shipped) in others.items():
            mask = np.array([folds.get(s, -1) == k for s in data.sources])
            sig = [s for s, m in zip(data.signals, mask, strict=True) if m]
            other_out[name]["rag"][mask] = rag_scores(rag, sig)
            x = _floor_features(data_shipped, data.signals, data.tasks)
            other_out[name]["floor"][mask] = floor_scores(floor, x[mask])
    return out, other_out


def paired_bootstrap(
    a: np.ndarray, b: np.ndarray, y: np.ndarray, sources: np.ndarray, seed: int = 0
) -> dict[str, float]:
    """AUROC(a) - AUROC(b) with a 95% interval, resampling sources (RULE.md)."""
    rng = np.random.default_rng(seed)
    unique = sorted(set(sources.tolist()))
    index = {s: np.flatnonzero(sources == s) for s in unique}
    diffs = []
    for _ in range(BOOTSTRAP):
        picks = rng.integers(0, len(unique), len(unique))
        rows = np.concatenate([index[unique[i]] for i in picks])
        gold = y[rows].astype(bool).tolist()
        if not 0 < sum(gold) < len(gold):
            continue
        diffs.append(auroc(gold, a[rows].tolist()) - auroc(gold, b[rows].tolist()))
    gold_all = y.astype(bool).tolist()
    return {
        "difference": round(auroc(gold_all, a.tolist()) - auroc(gold_all, b.tolist()), 4),
        "low": round(float(np.percentile(diffs, 2.5)), 4),
        "high": round(float(np.percentile(diffs, 97.5)), 4),
        "draws": len(diffs),
    }


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
        "--write", action="store_true", help="write the refitted map into the folder's config"
    )
    parser.add_argument(
        "--hard-cases", action="store_true", help="also RULE.md condition 4 (450 hard cases)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    from truthlens_integrations.core.models.detection._response import read_response_calibration

    config = json.loads((args.folder / "config.json").read_text())
    current = read_response_calibration(_Config(config.get("truthlens")))
    if current is None:
        raise SystemExit(f"{args.folder} has no response map to compare with")
    select = load_set(args.folder, "ragtruth_dev_select")
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
        select, shipped["select"], {"faithjudge_select": (faith, shipped["faithjudge_select"])}
    )
    final = fit_rag(select.signals, select.y)
    lexical = {name: lexical_scores(d) for name, d in {**sets, "select": select}.items()}
    lexical["faithjudge_select"] = lexical_scores(faith)

    result: dict[str, Any] = {"folder": str(args.folder), "map": final.to_config(FITTED_ON)}
    result["length_safe"] = final.length_safe
    result["select_crossfitted"] = {
        "shipped": {
            **report(shipped["select"], select.y),
            "by_task": by_task(shipped["select"], select),
        },
        "rag": {**report(crossed["rag"], select.y), "by_task": by_task(crossed["rag"], select)},
        "floor": {
            **report(crossed["floor"], select.y),
            "by_task": by_task(crossed["floor"], select),
        },
        "lexical": {
            **report(lexical["select"], select.y),
            "by_task": by_task(lexical["select"], select),
        },
    }
    result["select_bootstrap_rag_minus_shipped"] = paired_bootstrap(
        crossed["rag"], shipped["select"], select.y, select.sources
    )
    result["select_bootstrap_rag_minus_lexical"] = paired_bootstrap(
        crossed["rag"], lexical["select"], select.y, select.sources
    )
    fj = crossed_other["faithjudge_select"]
    result["faithjudge_select_crossfitted"] = {
        "shipped": report(shipped["faithjudge_select"], faith.y),
        "rag": report(fj["rag"], faith.y),
        "floor": report(fj["floor"], faith.y),
        "lexical": report(lexical["faithjudge_select"], faith.y),
    }
    for name, data in sets.items():
        result[name] = {
            "shipped": {**report(shipped[name], data.y), "by_task": by_task(shipped[name], data)},
            "rag_final": {
                **report(rag_scores(final, data.signals), data.y),
                "by_task": by_task(rag_scores(final, data.signals), data),
            },
            "lexical": {**report(lexical[name], data.y), "by_task": by_task(lexical[name], data)},
        }
    if args.hard_cases:
        result["hard_cases_auroc"] = hard_case_aurocs(
            args.folder, {"shipped": current, "rag": final}
        )
    result["decision"] = decide(result)
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
                "RAG map (cross-fitted)": (crossed["rag"], select.y),
            },
        )
    if args.write:
        config.setdefault("truthlens", {})["response_calibration"] = final.to_config(FITTED_ON)
        (args.folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        log.info("wrote the map into %s", args.folder / "config.json")


class _Config:
    def __init__(self, truthlens: Any) -> None:
        self.truthlens = truthlens


def decide(result: dict[str, Any]) -> dict[str, Any]:
    """RULE.md's conditions 1-3 for candidate 2 (4: bench_rules and the tests, run apart)."""
    boot = result["select_bootstrap_rag_minus_shipped"]
    ab = result["attributionbench"]
    fj = result["faithjudge_select_crossfitted"]
    conditions = {
        "1_select_auroc_above_with_interval_above_0": boot["low"] > 0,
        "2_attributionbench_at_most_0.02_below": ab["rag_final"]["auroc"]
        >= ab["shipped"]["auroc"] - 0.02,
        "3_faithjudge_clean_flagged_not_higher": fj["rag"]["clean_flagged"]
        <= fj["shipped"]["clean_flagged"],
    }
    if "hard_cases_auroc" in result:
        hard = result["hard_cases_auroc"]
        conditions["4_hard_cases_at_most_0.02_below"] = hard["rag"] >= hard["shipped"] - 0.02
    return {**conditions, "passes": all(conditions.values())}


def hard_case_aurocs(folder: Path, maps: dict[str, Any]) -> dict[str, float]:
    """RULE.md condition 4: AUROC on the hard-case test set under each map, one detector pass.

    The records ``benchmarks/bench_rules.py`` scores (``training/data/hardcases_test.jsonl``,
    both rules on, the runtime path); the tokens are scored once and each map re-reads them.
    """
    from truthlens_integrations.core import DetectionConfig, DetectionInput
    from truthlens_integrations.core.models.detection import EvidenceDetector
    from truthlens_integrations.core.models.detection._calibration_file import answer_signals

    from .train_evidence import _hard_cases

    cases = _hard_cases("test")
    items = [
        DetectionInput.create(
            context=c.context
            if isinstance(c.context, list)
            else [p for p in c.context.split("\n") if p.strip()],
            question=c.question or None,
            answer=c.answer,
        )
        for c in cases
    ]
    config = DetectionConfig(aggregation="max", early_exit=False)
    detector = EvidenceDetector(folder, config=config, device="cpu", dtype="float32")
    results = []
    for first in range(0, len(items), 16):
        results.extend(detector.detect_batch(items[first : first + 16]))
    signals = [answer_signals(i, r.tokens) for i, r in zip(items, results, strict=True)]
    gold = [bool(c.label) for c in cases]
    return {name: round(auroc(gold, [m.score(s) for s in signals]), 4) for name, m in maps.items()}


if __name__ == "__main__":
    main()
