"""Candidates 27, 27b and 27c of issue 27: a temperature on the default map's logit, by its rule.

``lab/records/rag_selection/RULE_candidate27.md`` (committed before this script):
the default map's logit divided by ``T`` (every coefficient and the bias times ``1/T``), so
that a score of 0.5 stays 0.5 and no verdict at the default threshold or ranking moves.
``T`` minimises the log loss of the select split of ``ragtruth_dev``; the select figures
are cross-fitted (5 folds by source). AttributionBench and the 1,500 FaithJudge answers of
the select sources are read with the ``T`` fitted on all select answers, as are the
held-out train-role answers (``bench_heldout.py --per-source 30`` draws), the hard-case
test set and the padded Eiffel answer, which are scored afresh by the runtime detector.
Reads the caches of ``lab.training.rag_features``; nothing eval-only is read.

27b (``RULE_candidate27b.md``) fits ``T`` on the three select-role sets together, each
weighing the same, and cross-fits all three by source; 27c (``RULE_candidate27c.md``)
is 27b without AttributionBench's claims whose context is empty.

    python -m lab.training.temperature --out lab/records/rag_selection/candidate27.json
    python -m lab.training.temperature --variant 27b \
        --out lab/records/rag_selection/candidate27b.json   # and 27c [--write]

The committed figures were made at commit 6452de1, before ``--write`` put the tempered map
in the folder and before candidate 28 changed the absent-word count; at a later commit the
script fits a temperature on top of the shipped (tempered) map.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from truthlens_integrations.evaluation import auroc

from ._cli import emit_json, parse_logged, selection_parser
from .calibrate_evidence import ece
from .free_length_map import cached_answers, runtime_answers, scores
from .rag_features import hard_case_examples
from .rag_response import (
    Scored,
    folder_map,
    load_set,
    padded_answers,
    source_bootstrap,
    source_folds,
)
from .rule_change import heldout_items

log = logging.getLogger("temperature")

SETS = (("ragtruth_dev_select", None), ("attributionbench", None), ("faithjudge_select", 1500))


def _coefficients() -> tuple[str, ...]:
    """The map's linear coefficients: the stored keys but the floors (1 switches one on)."""
    from truthlens_integrations._lab_api import COEFFICIENTS

    return tuple(k for k in COEFFICIENTS if k not in ("rule_floor", "rule_sentence_floor"))


def tempered(response: Any, temperature: float) -> Any:
    """``response`` with its logit divided by ``temperature`` (0.5 stays 0.5)."""
    if response.long_answers is not None or response.rule_floor:
        # Neither is in the default map; a floor on the score would not scale with it.
        raise ValueError("a temperature is defined here for a single map without a score floor")
    changes = {k: response[k] / temperature for k in _coefficients()}
    return type(response).of({**changes, "rule_sentence_floor": response.rule_sentence_floor})


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return np.log(p / (1 - p))


def fit_temperature(p: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The ``T`` that minimises the (weighted) log loss of ``sigmoid(logit(p) / T)``.

    The loss is convex in ``1/T``, so a bisection on its derivative is exact to 1e-6
    without an optimiser dependency.
    """
    z = _logit(p)

    def slope(inverse: float) -> float:  # d(mean log loss)/d(1/T)
        q = 1 / (1 + np.exp(-z * inverse))
        return float(np.average((q - y) * z, weights=weights))

    low, high = 0.05, 20.0
    if slope(low) > 0 or slope(high) < 0:
        raise ValueError("the log loss has no minimum inside 1/T in [0.05, 20]")
    while high - low > 1e-6:
        mid = (low + high) / 2
        low, high = (mid, high) if slope(mid) < 0 else (low, mid)
    return 1 / ((low + high) / 2)


def rescore(p: np.ndarray, temperature: float) -> np.ndarray:
    """Scores ``p`` read through the temperature (what ``tempered`` gives, up to rounding)."""
    return 1 / (1 + np.exp(-_logit(p) / temperature))


def cross_fitted(
    p: np.ndarray, y: np.ndarray, sources: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, list[float]]:
    """Each answer rescored with the ``T`` fitted on the other folds' sources."""
    fold_of = source_folds(sources.tolist())
    folds = np.array([fold_of[s] for s in sources])
    out, temperatures = np.empty_like(p), []
    for k in sorted(set(folds.tolist())):
        held = folds == k
        t = fit_temperature(p[~held], y[~held], None if weights is None else weights[~held])
        temperatures.append(round(t, 4))
        out[held] = rescore(p[held], t)
    return out, temperatures


def figures(before: np.ndarray, after: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """ECE on both sides; AUROC and the verdicts at 0.5, which must be equal."""
    gold = y.astype(bool).tolist()
    return {
        "n": len(y),
        "ece_before": round(ece(before, y), 4),
        "ece_after": round(ece(after, y), 4),
        "auroc_before": round(auroc(gold, before.tolist()), 4),
        "auroc_after": round(auroc(gold, after.tolist()), 4),
        "verdicts_changed": int(((before >= 0.5) != (after >= 0.5)).sum()),
    }


def ece_bootstrap(
    before: np.ndarray, after: np.ndarray, y: np.ndarray, sources: np.ndarray
) -> dict[str, float]:
    """ECE(after) - ECE(before) with a 95% interval, resampling sources."""
    return source_bootstrap(lambda r: ece(after[r], y[r]) - ece(before[r], y[r]), sources)


def select_only(read: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """Candidate 27: ``T`` fitted on the select split, its figures cross-fitted."""
    select, p = read["ragtruth_dev_select"]
    crossed, fold_temperatures = cross_fitted(p, select.y, select.sources)
    return fit_temperature(p, select.y), {
        "fold_temperatures": fold_temperatures,
        "ragtruth_dev_select": {
            **figures(p, crossed, select.y),
            "ece_difference": ece_bootstrap(p, crossed, select.y, select.sources),
        },
    }


def all_select_role(read: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """Candidate 27b: ``T`` fitted on the three select-role sets, each weighing the same.

    Cross-fitted by source over the union (a FaithJudge answer shares its select source's
    fold); each set reports its cross-fitted ECE beside the figures of the ``T`` fitted
    on all rows.
    """
    names = [name for name, _ in SETS]
    p = np.concatenate([read[n][1] for n in names])
    y = np.concatenate([read[n][0].y for n in names])
    sources = np.concatenate([[f"{_family(n)}/{s}" for s in read[n][0].sources] for n in names])
    weights = np.concatenate([np.full(len(read[n][1]), 1 / len(read[n][1])) for n in names])
    crossed, fold_temperatures = cross_fitted(p, y, sources, weights)
    out: dict[str, Any] = {"fold_temperatures": fold_temperatures}
    at = 0
    for n in names:
        data, before = read[n]
        mine = crossed[at : at + len(before)]
        at += len(before)
        out[n] = {"ece_cross_fitted": round(ece(mine, data.y), 4)}
        if n == "ragtruth_dev_select":
            out[n]["ece_difference"] = ece_bootstrap(before, mine, data.y, data.sources)
    return fit_temperature(p, y, weights), out


def has_context(data: Scored) -> np.ndarray:
    """Which rows have a context to check against (the runtime scores no other)."""
    return np.array([bool("".join(e.to_input().context).strip()) for e in data.examples])


def with_context(data: Scored) -> Scored:
    """``data`` without its rows whose context is empty (27c)."""
    keep = has_context(data)
    return Scored(
        examples=[e for e, k in zip(data.examples, keep, strict=True) if k],
        rows=[r for r, k in zip(data.rows, keep, strict=True) if k],
        signals=[g for g, k in zip(data.signals, keep, strict=True) if k],
        y=data.y[keep],
        sources=data.sources[keep],
        tasks=data.tasks[keep],
    )


def _family(dataset: str) -> str:
    """FaithJudge answers answer the select split's prompts: same sources, same folds."""
    return "attributionbench" if dataset == "attributionbench" else "ragtruth"


def main(argv: Sequence[str] | None = None) -> None:
    parser = selection_parser(__doc__, "where to write the figures and the decision")
    parser.add_argument("--variant", choices=("27", "27b", "27c"), default="27")
    parser.add_argument(
        "--write", action="store_true", help="write the tempered map into the folder if it passes"
    )
    args = parse_logged(parser, argv)
    shipped = folder_map(args.folder)
    read = {}
    for dataset, limit in SETS:
        data = load_set(args.folder, dataset, limit)
        if args.variant == "27c":
            data = with_context(data)
        read[dataset] = (data, scores(shipped, cached_answers(data)))
    fitted = select_only if args.variant == "27" else all_select_role  # 27b and 27c
    temperature, result = fitted(read)
    after_map = tempered(shipped, temperature)
    result = {
        "folder": str(args.folder),
        "rule": f"lab/records/rag_selection/RULE_candidate{args.variant}.md",
        "temperature": round(temperature, 4),
        **result,
    }
    after = {}
    for dataset, _ in SETS:
        data, before = read[dataset]
        after[dataset] = scores(after_map, cached_answers(data))
        result.setdefault(dataset, {}).update(
            {
                k: v
                for k, v in figures(before, after[dataset], data.y).items()
                if k not in result.get(dataset, {})
            }
        )
    data, before = read["attributionbench"]
    kept = has_context(data)
    result["attributionbench"]["with_context"] = figures(
        before[kept], after["attributionbench"][kept], data.y[kept]
    )
    result["attributionbench"]["empty_context"] = int((~kept).sum())
    log.info("select-role sets done")
    cases = hard_case_examples("test")
    items, gold_held, _groups = heldout_items()
    parts = {
        "hard_cases": ([c.to_input() for c in cases], [c.hallucinated for c in cases]),
        "heldout_all": (items, gold_held),
    }
    for name, (inputs, gold) in parts.items():
        answers = runtime_answers(args.folder, inputs)
        y = np.array(gold, dtype=float)
        result[name] = figures(scores(shipped, answers), scores(after_map, answers), y)
        log.info("%s done", name)
    padding = runtime_answers(args.folder, padded_answers())
    result["padding"] = {
        "before": [round(float(v), 4) for v in scores(shipped, padding)],
        "after": [round(float(v), 4) for v in scores(after_map, padding)],
    }
    result["map_after"] = {k: round(getattr(after_map, k), 6) for k in _coefficients()}
    result["decision"] = decide(result, args.variant)
    emit_json(result, args.out)
    if args.write and result["decision"]["passes"]:
        write_map(args.folder, after_map, temperature, args.variant)


def write_map(folder: Path, response: Any, temperature: float, variant: str) -> None:
    """Replace the folder's default map's coefficients by ``response``'s (the tempered map)."""
    path = folder / "config.json"
    config = json.loads(path.read_text())
    stored = config["truthlens"]["response_calibration"]
    stored.update({k: round(response[k], 6) for k in _coefficients() if k in stored})
    stored["fitted_on"] += (
        f"; temperature {temperature:.4f} (every coefficient divided by it; 0.5 stays 0.5): "
        f"candidate {variant}, fitted on the select-role sets (RULE_candidate{variant}.md, "
        "lab/training/temperature.py)"
    )
    path.write_text(json.dumps(config, indent=2) + "\n")
    log.info("wrote the tempered map into %s", path)


def decide(result: dict[str, Any], variant: str) -> dict[str, Any]:
    """The conditions 1-4 of RULE_candidate27.md or 27b (5, the suite, is run apart).

    27 reads the select split cross-fitted and the other two with the ``T`` of all; 27b
    reads the three sets cross-fitted, and condition 4 with the ``T`` of all.
    """
    key = "ece_after" if variant == "27" else "ece_cross_fitted"
    sets = ("ragtruth_dev_select", "attributionbench", "faithjudge_select")
    sets += ("hard_cases", "heldout_all")
    select = result["ragtruth_dev_select"]
    pad = result["padding"]["after"]
    conditions = {
        "1_select_ece_lower_and_interval_below_0": select[key] < select["ece_before"]
        and select["ece_difference"]["high"] < 0,
        "2_attributionbench_and_faithjudge_ece_not_higher": all(
            result[s][key] <= result[s]["ece_before"]
            for s in ("attributionbench", "faithjudge_select")
        ),
        "3_heldout_and_hard_cases_ece_at_most_0.02_higher": all(
            result[s]["ece_after"] <= result[s]["ece_before"] + 0.02
            for s in ("hard_cases", "heldout_all")
        ),
        "4_aurocs_and_verdicts_unchanged_padding_flat": all(
            result[s]["auroc_after"] == result[s]["auroc_before"]
            and result[s]["verdicts_changed"] == 0
            for s in sets
        )
        and max(pad) - min(pad) < 1e-4,
    }
    return {**conditions, "passes": all(conditions.values())}


if __name__ == "__main__":
    main()
