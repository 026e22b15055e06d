"""Cache a detector's token outputs on the RAG answer sets, once, to fit response maps from.

Scoring the 1,098 ``ragtruth_dev`` answers, 2,123 AttributionBench claims, 3,910
FaithJudge answers (selection sources) and the 1,400 train-role hard cases
(``hardcases_train``: ``lab/training/data/hardcases_train.jsonl``, built into inputs as
``benchmarks/bench_rules.py`` builds the test file's) takes CPU minutes; every fit after
that reads the cache. The hard-case test file is not a data set here: it is never fitted
on. One gzip JSON-lines file per data set, one line per answer: its id, source, task,
label, the detector's tokens (``[start, end, probability]``, exact: no early exit) and
the unit and negation rules' conflict counts (``_rules.rule_conflicts``, the runtime's
rule code), which the response map may read as signals of their own.
The cache is keyed by the folder's weights (size and mtime of ``model.safetensors``), so
a changed model is never read from a stale cache; it is not keyed by the runtime rules,
so rebuild it (delete the folder) after a rule that changes tokens ships, and with
``--rules-before N`` to measure candidate N once its code is in.

    python -m lab.training.rag_features --folder core/_bundled/detector \
        --dataset ragtruth_dev_select --dataset ragtruth_dev_train --dataset attributionbench \
        --dataset hardcases_train
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "runs" / "rag_features"
DATASETS = (
    "ragtruth_dev_select",
    "ragtruth_dev_train",
    "attributionbench",
    "faithjudge_select",
    "expertqa",
    "hardcases_train",
)
HARD_CASES = "hardcases_train"

log = logging.getLogger("rag_features")


def folder_key(folder: Path) -> str:
    """A short name for the folder's weights: its name and a hash of their size and time."""
    weights = folder / "model.safetensors"
    stat = weights.stat()
    digest = hashlib.sha1(f"{folder.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return f"{folder.name}-{digest.hexdigest()[:10]}"


def cache_file(folder: Path, dataset: str, limit: int | None = None) -> Path:
    """Where the cached outputs of ``folder`` on ``dataset`` (``limit`` of them) live."""
    name = dataset if limit is None else f"{dataset}-{limit}"
    return CACHE / folder_key(folder) / f"{name}.jsonl.gz"


def read_cache(path: Path) -> list[dict[str, Any]]:
    """The cached rows of one data set."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def hard_case_examples(part: str) -> list[Any]:
    """The committed hard cases of one part (``train`` or ``test``) as evaluation examples.

    Each input is built as ``benchmarks/bench_rules.py`` builds it (the context split
    into its passages); the task type is the hard case's kind, the source its uid.
    """
    from truthlens_integrations.evaluation import EvalExample

    from .train_evidence import _hard_cases

    return [
        EvalExample(
            id=c.uid,
            dataset=f"hardcases_{part}",
            task_type=c.source.split("/")[-1],
            context=tuple(p for p in c.context.split("\n") if p.strip()),
            question=c.question or None,
            answer=c.answer,
            hallucinated=bool(c.label),
            has_span_labels=False,
            source_id=c.uid,
        )
        for c in _hard_cases(part)
    ]


def load_examples(dataset: str, limit: int | None = None) -> list[Any]:
    """The examples of one of :data:`DATASETS` (``limit`` of them, spread evenly)."""
    from truthlens_integrations._lab_api import subsample
    from truthlens_integrations.evaluation import load_detection_dataset

    if dataset == HARD_CASES:
        examples = hard_case_examples("train")
        return examples if limit is None else list(subsample(examples, limit))
    return load_detection_dataset(dataset, limit=limit)


def _rows(detector: Any, examples: Sequence[Any], batch: int) -> Iterator[dict[str, Any]]:
    from truthlens_integrations._lab_api import rule_conflicts

    for first in range(0, len(examples), batch):
        chunk = examples[first : first + batch]
        results = detector.detect_batch([e.to_input() for e in chunk])
        for example, result in zip(chunk, results, strict=True):
            item = example.to_input()
            numbers, negations = rule_conflicts(item.answer, item.context)
            yield {
                "id": example.id,
                "source_id": example.source_id,
                "task_type": example.task_type,
                "label": int(example.hallucinated),
                "grounded": result.grounded,
                "tokens": [[t.start, t.end, round(t.probability, 6)] for t in result.tokens],
                "number_conflicts": numbers,
                "negation_conflicts": negations,
            }


def cache_dataset(folder: Path, dataset: str, *, batch: int = 16, limit: int | None = None) -> Path:
    """Score ``dataset`` with the detector in ``folder`` and write the cache (skipped if there)."""
    from truthlens_integrations.core import DetectionConfig
    from truthlens_integrations.core.models.detection import EvidenceDetector

    out = cache_file(folder, dataset, limit)
    if out.is_file():
        log.info("%s: cached at %s", dataset, out)
        return out
    examples = load_examples(dataset, limit)
    config = DetectionConfig(aggregation="max", early_exit=False, batch_size=32)
    detector = EvidenceDetector(folder, config=config, device="cpu", dtype="float32")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".part")
    started = time.time()
    with gzip.open(partial, "wt", encoding="utf-8") as handle:
        for n, row in enumerate(_rows(detector, examples, batch), start=1):
            handle.write(json.dumps(row) + "\n")
            if n % 200 == 0:
                log.info("%s: %d/%d, %.0f s", dataset, n, len(examples), time.time() - started)
    partial.replace(out)
    log.info("%s: %d answers in %.0f s -> %s", dataset, len(examples), time.time() - started, out)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=ROOT / "core" / "_bundled" / "detector")
    parser.add_argument("--dataset", action="append", choices=DATASETS, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--limit", type=int, help="score N answers spread over each set")
    parser.add_argument(
        "--rules-before",
        metavar="CANDIDATE",
        help="cache the tokens of the rules before this lab.training.rule_switches candidate "
        "(it switched off), as its measurement needs once it is in the code",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    import torch

    torch.set_num_threads(args.threads)
    with contextlib.ExitStack() as stack:
        if args.rules_before:
            from .rule_switches import rule_change

            stack.enter_context(rule_change(f"off!{args.rules_before}"))
        for dataset in args.dataset:
            cache_dataset(args.folder, dataset, limit=args.limit)


if __name__ == "__main__":
    main()
