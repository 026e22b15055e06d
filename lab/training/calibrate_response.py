"""Fit the response calibration of a detector folder.

The token calibration (``lab.training.calibrate_evidence``) makes the largest token
probability a probability for answers of one or two sentences, the length of most
labelled train-role answers. RAG answers are often paragraphs, and the largest of many
token probabilities climbs with length: on held-out multi-part answers the bundled
detector flagged 83% of the clean ones. And on real LLM answers that add facts of their
own (Factcheck-GPT, BEGIN) the lexical reference's count of absent words ranks better
than the token model. This step fits ``score = sigmoid(a * logit(max token probability)
+ b * log(sentences) + d * log(1 + absent content words) + c)`` on two kinds of held-out
**train-role** answers:

* single answers: realdata's held-out part, at most ``--per-source`` per source
  (positives and negatives evened out);
* multi-part answers: 3 to 7 held-out answers of one data set joined into one answer
  over their joined contexts; half of them have one or two unsupported parts, the rest
  none (``--multi-per-family`` per data set family).

Both come from the first half of the held-out part (by a hash of the context, as the
token calibration); the second half gives the report written beside the model
(``response_calibration_metrics.json``), per source and beside the map without the
absent-word count. Each source weighs the same in the fit. Nothing eval-only is read.

    python -m lab.training.calibrate_response core/_bundled/detector
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from truthlens_integrations.evaluation import auroc, average_precision, threshold_curve

from . import realdata
from ._cli import folder_args
from .calibrate_evidence import _half, ece, fit_logistic
from .train_evidence import balanced

log = logging.getLogger("calibrate_response")

FITTED_ON = (
    "realdata held-out part, first half by context hash: single answers and multi-part "
    "answers joined from them (train-role data)"
)


@dataclass(frozen=True)
class Answer:
    """One answer to score: its grounding, its label and where it came from."""

    source: str
    context: list[str]
    question: str | None
    answer: str
    label: int
    multi: bool
    parts: tuple[Any, ...] = ()  # a multi-part answer's held-out records, in answer order


def _single(claim: Any) -> Answer:
    return Answer(
        source=claim.source,
        context=[p for p in claim.context.split("\n") if p.strip()],
        question=claim.question or None,
        answer=claim.answer,
        label=claim.label,
        multi=False,
    )


def multi_part_answers(claims: Sequence[Any], per_family: int, rng: random.Random) -> list[Answer]:
    """Answers joined from 3 to 7 held-out answers of one data set family.

    Half of them (by a coin) hold one unsupported part (two in 30% of those), the rest
    only supported parts; contexts and questions are joined the same way, so each part is
    still grounded somewhere in the joined context.
    """
    pools: dict[str, tuple[list[Any], list[Any]]] = defaultdict(lambda: ([], []))
    for c in claims:
        pools[c.source.split("/")[0]][c.label].append(c)
    out = []
    for family, (clean, unsupported) in sorted(pools.items()):
        if len(clean) < 12 or len(unsupported) < 3:
            continue  # too few to join without repeating parts
        for _ in range(per_family):
            size = rng.randint(3, 7)
            bad = (1 if rng.random() < 0.7 else 2) if rng.random() < 0.5 else 0
            parts = rng.sample(clean, size - bad) + rng.sample(unsupported, bad)
            rng.shuffle(parts)
            questions = " ".join(p.question for p in parts if p.question)
            out.append(
                Answer(
                    source=f"multi/{family}",
                    context=[q for p in parts for q in p.context.split("\n") if q.strip()],
                    question=questions or None,
                    answer=" ".join(p.answer.strip() for p in parts),
                    label=int(bad > 0),
                    multi=True,
                    parts=tuple(parts),
                )
            )
    return out


def response_features(folder: Path, answers: Sequence[Answer], batch: int = 16) -> np.ndarray:
    """``(largest token probability, sentences, absent words, sentence peak)`` of each answer.

    All are read as the runtime detector reads them (the absent words by the lexical
    reference's rule, abstention sentences left out).
    """
    from truthlens_integrations._lab_api import sentence_count, sentence_peak
    from truthlens_integrations.core import DetectionConfig, DetectionInput
    from truthlens_integrations.core.models.detection import EvidenceDetector

    detector = EvidenceDetector(
        folder, config=DetectionConfig(aggregation="max"), device="cpu", dtype="float32"
    )
    rows = []
    for first in range(0, len(answers), batch):
        chunk = answers[first : first + batch]
        items = [
            DetectionInput.create(context=a.context, question=a.question, answer=a.answer)
            for a in chunk
        ]
        results = detector.detect_batch(items)
        for a, item, result in zip(chunk, items, results, strict=True):
            absent = detector._absent_word_starts(item)
            peak = sentence_peak(a.answer, result.tokens, absent)
            rows.append((result.score, sentence_count(a.answer), len(absent), peak))
    return np.array(rows, dtype=float)


def features(rows: np.ndarray) -> np.ndarray:
    """``logit(largest p)``, ``log(sentences)``, ``log(1 + absent words)``, sentence peak."""
    p = np.clip(rows[:, 0], 1e-6, 1 - 1e-6)
    return np.c_[
        np.log(p / (1 - p)), np.log(np.maximum(rows[:, 1], 1)), np.log1p(rows[:, 2]), rows[:, 3]
    ]


# The map written to the folder. The sentence peak ranked multi-part held-out answers
# better but the held-out benchmark as a whole no better, and it ranked worse on the
# eval-only sets; it stays a reported candidate (lab/training/README.md).
SHIPPED = "length_absent_words"
# The maps compared, by the feature columns they read (``features``):
MAPS = {
    "length": (0, 1),  # the token model and the length
    "length_absent_words": (0, 1, 2),  # ... and the absent-word count
    "sentence_peak": (3, 1, 2),  # the sentence peak in place of the largest token
}


def source_weights(answers: Sequence[Answer]) -> np.ndarray:
    """Each source weighs the same, whatever its number of answers."""
    counts: dict[str, int] = defaultdict(int)
    for a in answers:
        counts[a.source] += 1
    w = np.array([1.0 / counts[a.source] for a in answers])
    return w * len(answers) / w.sum()


def report(scores: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """AP, AUROC, ECE and the share of clean answers flagged at 0.5."""
    gold = y.astype(bool).tolist()
    return {
        "n": len(y),
        "ap": round(average_precision(threshold_curve(gold, scores.tolist())), 4),
        "auroc": round(auroc(gold, scores.tolist()), 4),
        "ece": round(ece(scores, y), 4),
        "clean_flagged": round(float((scores[y == 0] >= 0.5).mean()), 4),
    }


def fit_map(rows: np.ndarray, y: np.ndarray, weights: np.ndarray, *, name: str) -> Any:
    """The fitted :class:`ResponseCalibration` of one of ``MAPS``."""
    from truthlens_integrations._lab_api import ResponseCalibration

    columns = MAPS[name]
    coef, bias = fit_logistic(features(rows)[:, list(columns)], y, weights)
    if not np.all(np.isfinite([*coef, bias])):
        raise SystemExit("the fit did not converge; nothing was written")
    by_column = dict(zip(columns, (float(c) for c in coef), strict=True))
    return ResponseCalibration.of(
        {
            "max_logit": by_column.get(0, 0.0),
            "log_sentences": by_column[1],
            "absent_words": by_column.get(2, 0.0),
            "sentence_peak": by_column.get(3, 0.0),
            "bias": bias,
        }
    )


def map_scores(calibration: Any, rows: np.ndarray) -> np.ndarray:
    """The response score a calibration gives each row of ``response_features``."""
    return np.array([calibration.probability(p, int(n), int(a), peak) for p, n, a, peak in rows])


def compare(
    answers: Sequence[Answer], rows: np.ndarray, y: np.ndarray, maps: dict[str, Any]
) -> dict[str, Any]:
    """Half-1 report: the largest token probability and each map, by kind and by source."""
    scores = {"max": rows[:, 0]}
    for name, calibration in maps.items():
        scores[name] = map_scores(calibration, rows)
    out: dict[str, Any] = {}
    for kind, multi in (("single", False), ("multi_part", True)):
        mask = np.array([a.multi == multi for a in answers])
        out[kind] = {name: report(s[mask], y[mask]) for name, s in scores.items()}
    sources = np.array([_family(a) for a in answers])
    out["auroc_by_source"] = {
        source: {
            name: report(s[sources == source], y[sources == source])["auroc"]
            for name, s in scores.items()
        }
        for source in sorted({str(s) for s in sources})
        if 0 < y[sources == source].sum() < (sources == source).sum()
    }
    return out


def _family(answer: Answer) -> str:
    return "multi" if answer.multi else answer.source.split("/")[0]


def leave_one_source_out(
    sets: dict[int, list[Answer]], rows: dict[int, np.ndarray], y: dict[int, np.ndarray]
) -> dict[str, dict[str, float]]:
    """Half-1 AUROC of each source under maps fitted on half 0 *without* that source.

    How the maps do on a kind of data they never saw, the case of every real deployment.
    """
    fit_families = np.array([_family(a) for a in sets[0]])
    test_families = np.array([_family(a) for a in sets[1]])
    out = {}
    for family in sorted({str(f) for f in test_families}):
        test = test_families == family
        if not 0 < y[1][test].sum() < test.sum():
            continue  # one class only: no AUROC
        keep = fit_families != family
        weights = source_weights([a for a, k in zip(sets[0], keep, strict=True) if k])
        out[family] = {}
        for name in MAPS:
            calibration = fit_map(rows[0][keep], y[0][keep], weights, name=name)
            scores = map_scores(calibration, rows[1][test]).tolist()
            out[family][name] = round(auroc(y[1][test].astype(bool).tolist(), scores), 4)
    return out


def main(argv: list[str] | None = None) -> None:
    args = folder_args(__doc__, argv, per_source=100, multi_per_family=60)
    started = time.time()
    held = realdata.load_real(part="heldout", seed=args.seed)
    halves: dict[int, list[Any]] = defaultdict(list)
    for c in held:
        halves[_half(c)].append(c)
    sets = {}
    for half in (0, 1):
        rng = random.Random(args.seed + half)
        sets[half] = [_single(c) for c in balanced(halves[half], args.per_source, rng)]
        sets[half] += multi_part_answers(halves[half], args.multi_per_family, rng)
    rows = {half: response_features(args.folder, sets[half]) for half in (0, 1)}
    y = {half: np.array([a.label for a in sets[half]], dtype=float) for half in (0, 1)}
    weights = source_weights(sets[0])
    maps = {name: fit_map(rows[0], y[0], weights, name=name) for name in MAPS}
    calibration = maps[SHIPPED]
    metrics: dict[str, Any] = {"shipped": SHIPPED, "coefficients": calibration.to_config(FITTED_ON)}
    metrics["maps"] = {name: m.to_config(FITTED_ON) for name, m in maps.items()}
    metrics["heldout_half_1"] = compare(sets[1], rows[1], y[1], maps)
    metrics["auroc_leave_one_source_out"] = leave_one_source_out(sets, rows, y)
    metrics["fit_answers"] = len(sets[0])
    metrics["minutes"] = round((time.time() - started) / 60, 1)
    log.info("response calibration: %s", json.dumps(metrics, indent=1))
    config_path = args.folder / "config.json"
    config = json.loads(config_path.read_text())
    config.setdefault("truthlens", {})["response_calibration"] = calibration.to_config(FITTED_ON)
    config_path.write_text(json.dumps(config, indent=2) + "\n")
    out = args.folder / "response_calibration_metrics.json"
    out.write_text(json.dumps(metrics, indent=1) + "\n")


if __name__ == "__main__":
    main()
