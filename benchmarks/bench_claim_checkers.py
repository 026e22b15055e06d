"""Claim checkers behind a real server: the endpoint checker alone and in the cascade.

Starts llama.cpp's OpenAI-compatible server (``benchmarks/_llama_server.py``) on 127.0.0.1
with the registry's Qwen2.5-Coder-1.5B-Instruct GGUF, and reads every claim of every
answer of a set with :class:`EndpointChecker` through it, exactly as a user's endpoint
would be read. Each answer's row (the bundled detector's and the lexical reference's
scores, and per claim: the checker's probability, label or reason, and milliseconds) is
written as it finishes, so a stopped run goes on with ``--resume``.

The cascade is computed from the rows (``report``): an answer whose detector score lies
in the band gets the combined score, ``sigmoid(logit(score) + weight * logit(1 - worst)
+ bias)``, as the engine computes it; the others keep the detector's.

    python benchmarks/bench_claim_checkers.py run --set phenomena --resume
    python benchmarks/bench_claim_checkers.py run --set faithjudge_select --limit 300 --resume
    python benchmarks/bench_claim_checkers.py run --set ragtruth_dev_select --resume
    python benchmarks/bench_claim_checkers.py run --set attributionbench --limit 300 --resume
    python benchmarks/bench_claim_checkers.py report  # -> benchmarks/results/claim_checkers.md
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import random
import statistics
import sys
import time
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._llama_server import LlamaServer, qwen_gguf  # noqa: E402
from benchmarks._rows import (  # noqa: E402
    add_shard_arguments,
    append_row,
    check_shard,
    in_shard,
    read_rows,
)

ROWS = ROOT / "benchmarks" / "results" / "claim_checkers"
SUITE = ROOT / "lab" / "records" / "phenomena" / "suite.jsonl"
BENCHDATA = ROOT.parent / "shared" / "benchdata"
SETS = ("phenomena", "faithjudge_select", "ragtruth_dev_select", "attributionbench")
WRONG_GROUPS = ("negation", "boolean", "quantifier", "comparative", "negation_flip",
                "swapped_roles", "restated_number")  # fmt: skip
SUPPORTED_GROUPS = ("syntactic_alternation", "syntactic_variation", "correct_restatement")


def _items(name: str, limit: int | None) -> list[dict[str, Any]]:
    """The set's answers as plain rows: id, label (1 = wrong), group, context, question, answer."""
    if name == "phenomena":
        rows = [json.loads(line) for line in SUITE.read_text().splitlines() if line]
        items = [{**r, "gold": int(r["label"] != "supported"), "group": r["group"]} for r in rows]
    else:
        from truthlens_integrations.evaluation import load_detection_dataset

        xs = load_detection_dataset(name, BENCHDATA)
        items = [
            {
                "id": x.id,
                "gold": int(bool(x.hallucinated)),
                "group": x.dataset,
                "context": list(x.context),
                "question": x.question,
                "answer": x.answer,
            }
            for x in xs
        ]
    if limit is not None and len(items) > limit:
        items = random.Random(41).sample(items, limit)
    return items


def _done(out: Path) -> set[str]:
    return {row["id"] for row in read_rows(out)}


def run(args: argparse.Namespace) -> None:
    from truthlens_integrations._lab_api import answer_claims
    from truthlens_integrations.core import DetectionInput
    from truthlens_integrations.core.llm import OpenAICompatibleLLM
    from truthlens_integrations.core.models import load_detector
    from truthlens_integrations.core.models.claims import EndpointChecker

    out = ROWS / f"{args.set}.{args.protocol}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists() and not args.resume:
        raise SystemExit(f"{out} exists: pass --resume to go on, or remove it")
    done = _done(out)
    items = [
        it
        for n, it in enumerate(_items(args.set, args.limit))
        if it["id"] not in done and in_shard(n, args)
    ]
    print(f"{args.set}: {len(done)} done, {len(items)} to go", flush=True)
    if not items:
        return
    detector, lexical = load_detector(), load_detector("lexical")
    with LlamaServer(qwen_gguf(), alias="qwen", threads=args.threads, n_ctx=4096) as server:
        llm = OpenAICompatibleLLM("qwen", base_url=server.url, timeout=120.0, max_attempts=2)
        checker = EndpointChecker(llm=llm, protocol=args.protocol)
        for it in items:
            data = DetectionInput.create(
                context=it["context"], question=it["question"], answer=it["answer"]
            )
            [found] = detector.detect_batch([data])
            [reference] = lexical.detect_batch([data])
            claims = answer_claims(data.answer, data.context, top_k=checker.evidence_sentences)
            row = {
                "id": it["id"],
                "gold": it["gold"],
                "group": it["group"],
                "score": found.score,
                "lexical": reference.score,
                "context_chars": sum(len(c) for c in data.context),
                "claims": _judged(checker, claims),
            }
            append_row(out, row)
            print(f"{it['id']}: {len(claims)} claims", flush=True)


def _judged(checker: Any, claims: Sequence[Any]) -> list[dict[str, Any]]:
    """Each claim's judgement and milliseconds, read as the engine reads an answer.

    ``minicheck`` makes one call a claim, so each claim is timed alone; ``json`` packs an
    answer's claims into calls, so the answer is read at once and each claim gets an
    even share of its time.
    """
    if checker.claims_per_call == 1:
        return [row for claim in claims for row in _timed(checker, [claim])]
    return _timed(checker, claims)


def _timed(checker: Any, claims: Sequence[Any]) -> list[dict[str, Any]]:
    started = time.perf_counter()
    judgements = checker.check(list(claims)) if claims else []
    ms = (time.perf_counter() - started) * 1000.0 / max(len(claims), 1)
    return [
        {
            "chars": len(c.text),
            "evidence_chars": len(c.evidence),
            "supported": j.supported,
            "label": j.label,
            "reason": j.reason,
            "ms": round(ms, 1),
        }
        for c, j in zip(claims, judgements, strict=True)
    ]


# -- the report ---------------------------------------------------------------------------


def cascade(row: dict[str, Any], band: tuple[float, float], weight: float, bias: float) -> Any:
    """The row's score under the cascade; ``None`` when it ends up not checked."""
    score = row["score"]
    if score is None:
        return None
    if not _in_band(score, band):
        return score
    return combined(row, score, weight, bias)


def _in_band(score: float | None, band: tuple[float, float]) -> bool:
    """Whether the cascade sends an answer of this detector score to the checker."""
    return score is not None and band[0] <= score <= band[1]


def combined(row: dict[str, Any], score: float, weight: float, bias: float) -> Any:
    """The detector's score with the checker's worst claim, as the engine combines them."""
    judged = [c["supported"] for c in row["claims"] if c["supported"] is not None]
    if not judged:
        return None if row["claims"] else score
    from truthlens_integrations._lab_api import combined_score

    value = combined_score(score, min(judged), weight, bias)
    if len(judged) < len(row["claims"]) and value < 0.5:
        return None  # a claim not judged, and what was judged does not flag it
    return value


def alone(row: dict[str, Any]) -> Any:
    """The checker alone: 1 - the worst claim's probability of support."""
    judged = [c["supported"] for c in row["claims"] if c["supported"] is not None]
    if len(judged) < len(row["claims"]):
        return None
    return 1 - min(judged) if judged else 0.0


def crossfit(rows: Sequence[dict[str, Any]], band: tuple[float, float]) -> list[Any]:
    """The cascade with its weight and bias fitted on the other fold of the set's answers.

    Two folds by a stable hash of the id; each fold's escalated answers are scored with
    the fit on the other fold's (``fit_claim_weight``, what ``truthlens calibrate``
    runs). A fold whose other half lacks two answers of a label gets ``None`` there.
    """
    from truthlens_integrations._lab_api import fit_claim_weight

    def fold(row: dict[str, Any]) -> int:
        return zlib.crc32(row["id"].encode()) % 2

    fits: dict[int, Any] = {}
    for k in (0, 1):
        train = [
            r for r in rows if fold(r) != k and _in_band(r["score"], band) and alone(r) is not None
        ]
        labels = [bool(r["gold"]) for r in train]
        if min(sum(labels), len(labels) - sum(labels)) < 2:
            continue
        worst = [1.0 - alone(r) for r in train]
        fits[k] = fit_claim_weight([r["score"] for r in train], worst, labels)
    out: list[Any] = []
    for r in rows:
        fit = fits.get(fold(r))
        out.append(None if fit is None else cascade(r, band, fit.weight, fit.bias))
    return out


def _protocols() -> Iterator[str]:
    """The two protocols on the same answers, where a set was read with both."""
    for name in SETS:
        minicheck = {r["id"]: r for r in _rows(name, "minicheck")}
        judge = {r["id"]: r for r in _rows(name, "json")}
        common = sorted(set(minicheck) & set(judge))
        if not common:
            continue
        yield f"Protocols on the same {len(common)} answers of {name}:"
        for protocol, by_id in (("minicheck", minicheck), ("json", judge)):
            rows = [by_id[i] for i in common]
            f = _figures(rows, [alone(r) for r in rows])
            ms = [c["ms"] for r in rows for c in r["claims"]]
            yield (
                f"- {protocol}: AUROC {_cell(f['auroc'])}, caught {_cell(f['caught'])}, "
                f"flagged {_cell(f['flagged'])}, not checked {f['not_checked']}, "
                f"p50 {statistics.median(ms) if ms else 0:.0f} ms a claim"
            )
        yield ""


def _figures(rows: Sequence[dict[str, Any]], scores: Sequence[Any]) -> dict[str, Any]:
    from truthlens_integrations.evaluation import auroc

    kept = [(r["gold"], s) for r, s in zip(rows, scores, strict=True) if s is not None]
    gold = [g for g, _ in kept]
    wrong = [s >= 0.5 for g, s in kept if g]
    right = [s >= 0.5 for g, s in kept if not g]
    return {
        "auroc": auroc(gold, [s for _, s in kept]) if 0 < sum(gold) < len(gold) else None,
        "caught": sum(wrong) / len(wrong) if wrong else None,
        "flagged": sum(right) / len(right) if right else None,
        "not_checked": len(rows) - len(kept),
    }


def _rows(name: str, protocol: str) -> list[dict[str, Any]]:
    file = ROWS / f"{name}.{protocol}.jsonl"
    return read_rows(file)


def report(args: argparse.Namespace) -> None:
    band, weight, bias = (args.band[0], args.band[1]), args.weight, args.bias
    lines = [
        "# Claim checkers behind a real server (issue 48)",
        "",
        f"Machine: {platform.processor() or platform.machine()}, 2 cores, no GPU. Server: "
        "llama.cpp (llama-cpp-python 0.3.36) serving Qwen2.5-Coder-1.5B-Instruct Q4_K_M on "
        "127.0.0.1, read by `EndpointChecker` through `OpenAICompatibleLLM`; 2 threads alone, "
        "or 1 beside another one-thread run (the legs: `lab/records/server_benchmarks/`), so "
        "the timings below are upper bounds for a quiet machine.",
        f"Cascade: band [{band[0]}, {band[1]}], weight {weight}, bias {bias}. Command: "
        "`python benchmarks/bench_claim_checkers.py run --set NAME [--limit N] --resume`, "
        "then `report`.",
        "",
        "`cascade` uses that weight; `cascade, fitted` fits the weight and bias as `truthlens "
        "calibrate` does, on half of the set's escalated answers, and scores the other half "
        "(two folds by id, so no answer is scored by a fit that read it). `always` sends every "
        "answer to the checker (`when: always`) with that weight.",
        "",
        "| set | protocol | answers | figure | detector | lexical | checker alone | cascade "
        "| cascade, fitted | always |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in SETS:
        for protocol in ("minicheck", "json"):
            rows = _rows(name, protocol)
            if not rows:
                continue
            columns = {
                "detector": [r["score"] for r in rows],
                "lexical": [r["lexical"] for r in rows],
                "alone": [alone(r) for r in rows],
                "cascade": [cascade(r, band, weight, bias) for r in rows],
                "fitted": crossfit(rows, band),
                "always": [cascade(r, (0.0, 1.0), weight, bias) for r in rows],
            }
            figures = {k: _figures(rows, v) for k, v in columns.items()}
            for figure in ("auroc", "caught", "flagged", "not_checked"):
                cells = [_cell(figures[k][figure]) for k in columns]
                lines.append(
                    f"| {name} | {protocol} | {len(rows)} | {figure} | " + " | ".join(cells) + " |"
                )
            sent = [r for r in rows if _in_band(r["score"], band)]
            lines.append(
                f"| {name} | {protocol} | {len(rows)} | sent to the checker | | | | "
                f"{len(sent) / len(rows):.0%} | {len(sent) / len(rows):.0%} | 100% |"
            )
    lines += ["", *_differences(band, weight, bias), "", *_protocols(), *list(_timings(band))]
    if (ROWS / "overhead.md").exists():
        lines += ["", (ROWS / "overhead.md").read_text().strip()]
    out = ROOT / "benchmarks" / "results" / "claim_checkers.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _differences(band: tuple[float, float], weight: float, bias: float) -> Iterator[str]:
    """The cascade's AUROC against the detector's on the same answers, with an interval.

    A paired bootstrap over answers (1,000 resamples, seed 0); answers either leaves not
    checked are left out of both.
    """
    from truthlens_integrations.evaluation import auroc

    yield "AUROC, the cascade minus the detector (paired bootstrap over answers, 95%):"
    for name in SETS:
        rows = _rows(name, "minicheck")
        pairs = [
            (r["gold"], r["score"], c)
            for r in rows
            if (c := cascade(r, band, weight, bias)) is not None and r["score"] is not None
        ]
        if not 0 < sum(g for g, _, _ in pairs) < len(pairs):
            continue
        rng, deltas = random.Random(0), []
        for _ in range(1000):
            sample = [pairs[rng.randrange(len(pairs))] for _ in pairs]
            gold = [g for g, _, _ in sample]
            if 0 < sum(gold) < len(gold):
                deltas.append(
                    auroc(gold, [c for _, _, c in sample]) - auroc(gold, [d for _, d, _ in sample])
                )
        deltas.sort()
        gold = [g for g, _, _ in pairs]
        delta = auroc(gold, [c for _, _, c in pairs]) - auroc(gold, [d for _, d, _ in pairs])
        low, high = deltas[int(0.025 * len(deltas))], deltas[int(0.975 * len(deltas)) - 1]
        yield f"- {name} ({len(pairs)}): {delta:+.3f} [{low:+.3f}, {high:+.3f}]"


def _timings(band: tuple[float, float]) -> Iterator[str]:
    claims = [
        c
        for name in SETS
        for p in ("minicheck", "json")
        for r in _rows(name, p)
        for c in r["claims"]
    ]
    if not claims:
        return
    p50 = statistics.median(c["ms"] for c in claims)
    yield f"Per claim: p50 {p50:.0f} ms over {len(claims)} claims."
    long = [
        sum(c["ms"] for c in r["claims"])
        for name in SETS
        for r in _rows(name, "minicheck")
        if 3000 <= r["context_chars"] <= 6000 and r["claims"]
    ]
    if long:
        yield (
            f"Per answer with a context of about 1k tokens (3,000-6,000 characters): p50 "
            f"{statistics.median(long) / 1000:.1f} s over {len(long)} answers."
        )
    for name in SETS:
        rows = _rows(name, "minicheck")
        sent = [sum(c["ms"] for c in r["claims"]) for r in rows if _in_band(r["score"], band)]
        if sent:
            yield (
                f"Escalated answers of {name} (minicheck): {len(sent)} of {len(rows)} "
                f"({len(sent) / len(rows):.0%}), the checker's p50 "
                f"{statistics.median(sent) / 1000:.1f} s an answer."
            )


def overhead(args: argparse.Namespace) -> None:
    """The guard's latency on answers the cascade does not escalate, with and without it.

    The same answers, the two guards interleaved answer by answer (so a busy machine
    slows both alike), after one warm-up pass; the checker's server is never reached for
    these answers, so none runs. Writes its line to ``overhead.md``, which ``report``
    adds to the table.
    """
    from truthlens_integrations import TruthLens

    band = (args.band[0], args.band[1])
    cascade_policy = {"hallucination": {"claim_check": {
        "checker": "http://127.0.0.1:9/v1", "model": "unused", "band": list(band),
    }}}  # fmt: skip
    plain, cascaded = TruthLens.from_config({}), TruthLens.from_config(cascade_policy)
    items = _items("ragtruth_dev_select", args.limit)
    kept, times = [], {"plain": [], "cascade": []}
    for it in items:
        args_ = {"context": it["context"], "question": it["question"], "answer": it["answer"]}
        verdict = plain.guard(**args_)
        if verdict.score is None or _in_band(verdict.score, band):
            continue  # escalated (or not checked): not what this measures
        cascaded.guard(**args_)  # warm-up
        kept.append(args_)
    for args_ in kept:
        best = {"plain": math.inf, "cascade": math.inf}
        pair = [("plain", plain), ("cascade", cascaded)]
        for n in range(args.repeat):  # the fastest of a few: what is left of the noise
            # each goes first in turn: the second call on a context finds caches warm
            for name, guard in pair if n % 2 == 0 else pair[::-1]:
                started = time.perf_counter()
                verdict = guard.guard(**args_)
                best[name] = min(best[name], time.perf_counter() - started)
                if name == "cascade" and verdict.claim_check and verdict.claim_check.judgements:
                    raise SystemExit("an answer outside the band reached the checker")
        for name, seconds in best.items():
            times[name].append(seconds)
    p50 = {k: statistics.median(v) * 1000.0 for k, v in times.items()}
    line = (
        f"Not escalated ({len(kept)} of {len(items)} `ragtruth_dev` select answers outside the "
        f"band): guard p50 {p50['plain']:.1f} ms without a cascade, {p50['cascade']:.1f} ms "
        f"with one ({p50['cascade'] / p50['plain'] - 1:+.1%}; each the fastest of "
        f"{args.repeat}). Command: `python benchmarks/bench_claim_checkers.py overhead "
        f"--limit {args.limit} --repeat {args.repeat}`."
    )
    print(line)
    (ROWS / "overhead.md").write_text(line + "\n")


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--set", choices=SETS, required=True)
    r.add_argument("--limit", type=int, default=None)
    r.add_argument("--protocol", choices=("minicheck", "json"), default="minicheck")
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--resume", action="store_true")
    add_shard_arguments(r)
    p = sub.add_parser("report")
    p.add_argument("--band", type=float, nargs=2, default=(0.2, 0.8))
    p.add_argument("--weight", type=float, default=1.0)
    p.add_argument("--bias", type=float, default=0.0)
    o = sub.add_parser("overhead")
    o.add_argument("--band", type=float, nargs=2, default=(0.2, 0.8))
    o.add_argument("--limit", type=int, default=200)
    o.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.command == "run":
        check_shard(parser, args)
    {"run": run, "report": report, "overhead": overhead}[args.command](args)


if __name__ == "__main__":
    main()
