"""Mitigation on a real model behind a real server (issue 50): what each mode buys.

llama.cpp's OpenAI-compatible server (``benchmarks/_llama_server.py``) serves the registry's
Qwen2.5-Coder-1.5B-Instruct on 127.0.0.1, and a second one SmolLM2-135M-Instruct (the
premium mode's second verifier). The guard talks to them through ``OpenAICompatibleLLM``,
as it would to a user's endpoint.

Data: HaluEval QA, the project's held-out part (the last 1,000 items; HaluEval has the train
role, and this part is never trained on): a context, a question, the right answer (gold)
and a planted hallucinated answer.

Arms, per item (one row each, written as it finishes; ``--resume`` goes on):

- ``natural``: Qwen answers the question from the context; ``planted``: HaluEval's
  hallucinated answer. For each start: ``lightweight`` (the guard flags, nothing is
  rewritten: the baseline), ``standard`` (self-refine), ``premium`` (Qwen at two
  temperatures and SmolLM2 verify, Qwen judges) and ``reference`` (the same model asked
  to check and rewrite its answer against the context, as many rounds as standard mode
  may refine, without the guard: what asking again buys without a detector);
- ``lacking``: the context lacks the evidence (another item's passage stands in for the
  item's own). Qwen answers from it; ``lacking/lightweight`` is the guard's flag alone and
  ``lacking/retrieval`` the retrieval-feedback loop, given a lexical index over the
  held-out passages.

The measure of a hallucination is not the detector's: the gold answer's words not contained
in the final answer (``missing``), and a stricter one where the planted answer differs
from the gold: gold missing, or the planted answer's words contained (``strict``).

    python benchmarks/bench_mitigation_server.py run --limit 300 --resume
    # or two one-thread shards side by side, writing to the same rows file:
    #   ... run --limit 300 --resume --threads 1 --shard 0 --shards 2  (and --shard 1)
    python benchmarks/bench_mitigation_server.py report  # benchmarks/results/mitigation_server.md
    # your own model: --gguf PATH --rows FILE on both commands (the report lands beside FILE)
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import platform
import random
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._llama_server import (  # noqa: E402
    QWEN_FILE,
    LlamaServer,
    qwen_gguf,
    smollm2_gguf,
)
from benchmarks._rows import (  # noqa: E402
    add_shard_arguments,
    append_row,
    check_shard,
    in_shard,
    read_rows,
)

ROWS = ROOT / "benchmarks" / "results" / "mitigation_server.jsonl"
MODES = ("lightweight", "standard", "premium", "reference")
_WORD = re.compile(r"\w+")
_ANSWER = (
    "Answer the question from the context in one or two sentences.\n\n"
    "Context: {context}\n\nQuestion: {question}\nAnswer:"
)
_REFERENCE = (
    "Check the answer against the context. Rewrite it so that it states only what the "
    "context supports, in one or two sentences. Reply with the rewritten answer only.\n\n"
    "Context: {context}\n\nQuestion: {question}\nAnswer: {answer}\nRewritten answer:"
)


class AlwaysFactual:
    """Every item is a factual question with grounding: the prompt classifier is skipped."""

    model_id = "always-factual"

    def classify(self, prompts: Sequence[str]) -> list[tuple[bool, float]]:
        return [(True, 1.0) for _ in prompts]


def _words(text: str | None) -> str:
    return " ".join(_WORD.findall((text or "").lower()))


def missing(answer: str | None, gold: str) -> bool:
    """The gold answer's words do not stand, in order and whole, in the answer.

    A yes / no gold is read from the answer's first word: "Yes, ... are not both" does
    not hold "no".
    """
    said = _words(answer)
    if _words(gold) in ("yes", "no"):
        return said.split(" ", 1)[0] != _words(gold)
    return f" {_words(gold)} " not in f" {said} "


def words_missing(answer: str | None, gold: str) -> bool:
    """A word of the gold answer is not in the answer, in any order.

    Looser than ``missing``: "Barbara Carroll Forrest" holds the gold "Barbara Forrest".
    """
    return not set(_words(gold).split()) <= set(_words(answer).split())


def strict(answer: str | None, gold: str, planted: str) -> bool:
    """Gold missing, or the planted answer's words there (where it differs from the gold)."""
    if missing(answer, gold):
        return True
    wrong = _words(planted)
    return bool(wrong) and wrong != _words(gold) and f" {wrong} " in f" {_words(answer)} "


def _items(limit: int) -> list[dict[str, Any]]:
    from truthlens_integrations._lab_api import default_data_dir
    from truthlens_integrations.evaluation import halueval_split

    data = default_data_dir() / "halueval" / "dataset_halueval_qa.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    held = halueval_split(rows, "heldout")
    for i, row in enumerate(held):
        row["id"] = f"halueval-qa-{len(rows) - len(held) + i}"
    return held[:limit]


def _done(rows: Path) -> dict[tuple[str, str], str | None]:
    """The (item, arm) pairs already written, each with its final answer."""
    return {(r["id"], r["arm"]): r.get("final") for r in read_rows(rows)}


def _lexical_index(passages: list[str]) -> Any:
    from truthlens_integrations.core.mitigation import retriever_from_callables

    sets = [set(_words(p).split()) for p in passages]

    def search(query: str) -> list[str]:
        q = set(_words(query).split())
        ranked = sorted(range(len(passages)), key=lambda i: -len(q & sets[i]))
        return [passages[i] for i in ranked[:3]]

    return retriever_from_callables(search)


def _guard(mode: str, iterations: int) -> Any:
    from truthlens_integrations import TruthLens
    from truthlens_integrations.core.mitigation import MitigationOptions

    policy = {
        "hallucination": {
            "default_mode": "lightweight" if mode == "lightweight" else mode,
            "standard": {"max_iterations": iterations},
            "premium": {"max_iterations": iterations},
        }
    }
    options = MitigationOptions(max_tokens=96)
    return TruthLens.from_config(policy, fact_checker=AlwaysFactual(), mitigation_options=options)


def run(args: argparse.Namespace) -> None:
    from truthlens_integrations.core.llm import OpenAICompatibleLLM

    rows: Path = args.rows
    if rows.exists() and not args.resume:
        raise SystemExit(f"{rows} exists: pass --resume to go on, or remove it")
    model = args.gguf or qwen_gguf()
    _write_model(rows, model)
    done = _done(rows)
    items = _items(args.limit)
    index = _lexical_index([it["knowledge"] for it in items])
    guards = {
        mode: _guard(mode, args.iterations) for mode in ("lightweight", "standard", "premium")
    }
    with (
        LlamaServer(model, alias="qwen", threads=args.threads) as qwen_server,
        LlamaServer(smollm2_gguf(), alias="smollm2", threads=args.threads) as small_server,
    ):

        def client(server: LlamaServer, name: str, temperature: float) -> Any:
            return OpenAICompatibleLLM(
                name,
                base_url=server.url,
                timeout=180.0,
                max_attempts=2,
                default_max_tokens=96,
                default_temperature=temperature,
            )

        qwen = client(qwen_server, "qwen", 0.0)
        tools = {
            "standard": {"llm": qwen},
            "premium": {
                "llm": qwen,
                "verification_llms": [
                    client(qwen_server, "qwen", 0.7),
                    client(small_server, "smollm2", 0.7),
                ],
                "judge_llm": qwen,
            },
        }
        for n, it in enumerate(items, 1):
            if not in_shard(n - 1, args):
                continue
            natural = _answer(it, qwen, done, it["knowledge"], "answer", rows)
            for start, answer in (("natural", natural), ("planted", it["hallucinated_answer"])):
                for mode in MODES:
                    arm = f"{start}/{mode}"
                    if (it["id"], arm) in done:
                        continue
                    if mode == "reference":
                        row = _reference(it, answer, qwen, args.iterations)
                    else:
                        row = _guarded(
                            it, answer, guards[mode], tools.get(mode, {}), it["knowledge"]
                        )
                    append_row(rows, {"id": it["id"], "arm": arm, **row})
            _lacking(it, items, qwen, guards, index, done, rows)
            print(f"{n}/{len(items)} {it['id']}", flush=True)


def _lacking(
    it: dict[str, Any],
    items: list[dict[str, Any]],
    qwen: Any,
    guards: dict[str, Any],
    index: Any,
    done: dict[tuple[str, str], str | None],
    rows: Path,
) -> None:
    """The context lacks the evidence: another item's passage stands in for the item's own.

    Qwen answers from that passage (``answer-lacking``); ``lacking/lightweight`` is the
    guard's flag alone on that answer, and ``lacking/retrieval`` the retrieval-feedback
    loop, which rewrites the query and searches the held-out passages.
    """
    other = items[(items.index(it) + len(items) // 2) % len(items)]["knowledge"]
    answer = _answer(it, qwen, done, other, "answer-lacking", rows)
    for arm, guard, tools in (
        ("lacking/lightweight", guards["lightweight"], {}),
        ("lacking/retrieval", guards["standard"], {"llm": qwen, "retriever": index}),
    ):
        if (it["id"], arm) not in done:
            row = _guarded(it, answer, guard, tools, other)
            append_row(rows, {"id": it["id"], "arm": arm, **row})


def _answer(
    it: dict[str, Any],
    qwen: Any,
    done: dict[tuple[str, str], str | None],
    context: str,
    arm: str,
    rows: Path,
) -> str:
    """Qwen's answer from ``context``, written once as the ``arm`` row (``done`` keeps it)."""
    if (it["id"], arm) in done:
        return str(done[(it["id"], arm)])
    started = time.perf_counter()
    reply = qwen.complete(_ANSWER.format(context=context, question=it["question"]))
    row = _measured(it, reply.text.strip(), calls=1, tokens=_tokens(reply), started=started)
    append_row(rows, {"id": it["id"], "arm": arm, **row})
    done[(it["id"], arm)] = reply.text.strip()
    return reply.text.strip()


def _tokens(reply: Any) -> int:
    return reply.usage.total_tokens if reply.usage is not None else 0


def _measured(it: dict[str, Any], final: str | None, **extra: Any) -> dict[str, Any]:
    started = extra.pop("started")
    return {
        "final": final,
        "missing": missing(final, it["right_answer"]),
        "strict": strict(final, it["right_answer"], it["hallucinated_answer"]),
        "seconds": round(time.perf_counter() - started, 3),
        **extra,
    }


def _guarded(
    it: dict[str, Any], answer: str, guard: Any, tools: dict[str, Any], context: str
) -> dict[str, Any]:
    started = time.perf_counter()
    verdict = guard.guard(context=context, question=it["question"], answer=answer, **tools)
    # Withheld (blocked) or not: what the user would read; the engine's final answer.
    final = verdict.final_answer if verdict.final_answer is not None else answer
    return _measured(
        it,
        final,
        started=started,
        flagged_before=_flagged_before(verdict),
        checked=verdict.checked,
        status=verdict.status,
        calls=verdict.cost.llm_calls,
        tokens=verdict.cost.total_tokens,
    )


def _flagged_before(verdict: Any) -> bool | None:
    """Whether the guard flagged the answer it was given (before any rewrite)."""
    if not verdict.checked:
        return None
    if verdict.history:  # the first step is the answer as given
        first = verdict.history[0].effective_score
        return first is not None and first >= verdict.threshold
    return bool(verdict.detected)


def _reference(it: dict[str, Any], answer: str, qwen: Any, rounds: int) -> dict[str, Any]:
    """Ask the model to check and rewrite its answer ``rounds`` times, with no guard.

    As many calls as standard mode may make (one refinement a round), so the two compare
    at equal calls: what the detector adds over simply asking again.
    """
    started = time.perf_counter()
    tokens, current = 0, answer
    for n in range(rounds):
        prompt = _REFERENCE.format(context=it["knowledge"], question=it["question"], answer=current)
        try:
            reply = qwen.complete(prompt)
        except Exception as exc:  # noqa: BLE001 - a failed call keeps the answer, and says so
            return _measured(
                it, current, started=started, calls=n + 1, tokens=tokens, status=f"error: {exc}"
            )
        tokens += _tokens(reply)
        current = reply.text.strip()
    return _measured(it, current, started=started, calls=rounds, tokens=tokens, status="rewritten")


# -- the report ---------------------------------------------------------------------------


def _wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    z, p = 1.96, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # rounding leaves -0.0 at k == 0 (printed "-0%")
    return max(0.0, centre - half), min(1.0, centre + half)


def abstained(final: str | None, item: dict[str, Any]) -> bool:
    """Every sentence of the final answer only says the sources lack the answer.

    The product's own reading of an abstention (the rule that leaves such sentences
    unflagged): an abstention is not a wrong answer, nor a right one, so the report
    counts it apart.
    """
    from truthlens_integrations._lab_api import abstentions

    text = (final or "").strip()
    if not text:
        return False
    spans = abstentions(text, [item["knowledge"]], item["question"])
    covered = sum(end - start for start, end in spans)
    return covered >= len(text.rstrip(". ")) - 2


def _write_model(rows: Path, model: Path) -> None:
    """Record which GGUF answers, beside the rows; a second model in the same rows is refused."""
    written = _written_model(rows)
    if written is not None and written != model.name:
        raise SystemExit(f"{rows} holds answers of {written}, not {model.name}: pass --rows")
    if written is None:
        rows.parent.mkdir(parents=True, exist_ok=True)
        rows.with_suffix(".model.json").write_text(json.dumps({"model": model.name}) + "\n")


def _written_model(rows: Path) -> str | None:
    """The GGUF file name the rows were written with (``None``: not recorded yet)."""
    meta = rows.with_suffix(".model.json")
    return str(json.loads(meta.read_text())["model"]) if meta.is_file() else None


def report(args: argparse.Namespace) -> None:
    rows = read_rows(args.rows)
    items = {it["id"]: it for it in _items(10_000)}
    by_arm: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        # the measures are read again from the final answer: the rows' own were written
        # with an earlier reading (a substring: "no" in "not", "nine" in "ninety")
        it = items[r["id"]]
        r["missing"] = missing(r.get("final"), it["right_answer"])
        r["strict"] = strict(r.get("final"), it["right_answer"], it["hallucinated_answer"])
        r["abstained"] = abstained(r.get("final"), it)
        r["loose"] = words_missing(r.get("final"), it["right_answer"])
        by_arm.setdefault(r["arm"], {})[r["id"]] = r
    # the stricter data: items whose gold answer stands word for word in the context (a
    # span of it), where a grounded answer can always be right
    spans = {i for i, it in items.items() if not missing(it["knowledge"], it["right_answer"])}
    lines = [
        "# Mitigation behind a real server (issue 50)",
        "",
        f"Machine: {platform.machine()}, 2 cores, no GPU. Server: llama.cpp (llama-cpp-python "
        f"0.3.36) on 127.0.0.1 serving `{_written_model(args.rows) or QWEN_FILE}` "
        "(answers, refines, judges) "
        "and SmolLM2-135M (premium's second verifier), "
        "one or two threads (the legs, and what ran beside them: "
        "`lab/records/server_benchmarks/`); compare seconds as ratios within an item.",
        "Data: HaluEval QA, held-out part (train role, never trained on). Command: "
        "`python benchmarks/bench_mitigation_server.py run --limit N --resume` (or two "
        "shards: `--threads 1 --shard K --shards 2`), then `report`.",
        "",
        *_arm_table(by_arm, "all items", None),
        *_arm_table(by_arm, "items whose gold answer is a span of the context", spans),
        *_design_claims(by_arm),
        *_paired(by_arm),
        *_flags(by_arm),
        *_endings(by_arm),
    ]
    out = args.rows.with_suffix(".md")
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _arm_table(
    by_arm: dict[str, dict[str, dict[str, Any]]], title: str, only: set[str] | None
) -> list[str]:
    """One row per arm: the hallucination rate by containment, its change, and the cost."""
    lines = [
        f"## {title}",
        "",
        "| arm | answers | missing gold (95% CI) | vs lightweight | wrong, not abstaining "
        "| vs lightweight | strict | gold words missing | abstained | LLM calls | tokens "
        "| s / answer |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for arm in sorted(by_arm):
        part = [r for i, r in by_arm[arm].items() if only is None or i in only]
        if arm.startswith("answer") or not part:
            continue
        n, k = len(part), sum(r["missing"] for r in part)
        low, high = _wilson(k, n)
        base = by_arm.get(f"{arm.split('/')[0]}/lightweight", {})
        lines.append(
            f"| {arm} | {n} | {k / n:.1%} ({low:.1%}-{high:.1%}) | "
            f"{_change(part, base, _wrong_or_abstaining)} | "
            f"{sum(_wrong(r) for r in part) / n:.1%} | {_change(part, base, _wrong)} | "
            f"{sum(r['strict'] for r in part) / n:.1%} | "
            f"{sum(r['loose'] for r in part) / n:.1%} | "
            f"{sum(r['abstained'] for r in part) / n:.1%} | "
            f"{statistics.mean(r.get('calls', 0) for r in part):.2f} | "
            f"{statistics.mean(r.get('tokens', 0) for r in part):.0f} | "
            f"{statistics.mean(r['seconds'] for r in part):.1f} |"
        )
    return [*lines, ""]


_CLAIMED = {"standard": "-40% to -60%", "premium": "-70% to -85%"}


def _design_claims(by_arm: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Each mode's change against lightweight beside the design's claim and the reference."""
    lines = [
        "## Beside the design's claims",
        "",
        "Change in answers missing the gold against lightweight on the same items (wrong "
        "answers apart from abstentions in brackets); the reference arm asks the same model "
        "to check and rewrite, as many rounds as standard mode may refine, with no guard. "
        "Intervals: 2,000 paired bootstrap resamples of the items.",
        "",
        "| answers | mode | change (95% CI) | design claims | reference arm "
        "| LLM calls: mode / reference |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for start in ("natural", "planted"):
        base = by_arm.get(f"{start}/lightweight", {})
        reference = [r for r in by_arm.get(f"{start}/reference", {}).values() if r["id"] in base]
        for mode in ("standard", "premium"):
            part = [r for r in by_arm.get(f"{start}/{mode}", {}).values() if r["id"] in base]
            if not part or not reference:
                continue
            lines.append(
                f"| {start} | {mode} | {_change(part, base, _wrong_or_abstaining)} "
                f"{_change_interval(part, base)} ({_change(part, base, _wrong)}) | "
                f"{_CLAIMED[mode]} | "
                f"{_change(reference, base, _wrong_or_abstaining)} "
                f"({_change(reference, base, _wrong)}) | "
                f"{statistics.mean(r.get('calls', 0) for r in part):.2f} / "
                f"{statistics.mean(r.get('calls', 0) for r in reference):.2f} |"
            )
    return [*lines, ""]


def _change_interval(part: list[dict[str, Any]], base: dict[str, dict[str, Any]]) -> str:
    """A 95% paired bootstrap interval of the relative change in answers missing the gold."""
    pairs = [(bool(base[r["id"]]["missing"]), bool(r["missing"])) for r in part]
    draw, changes = random.Random(41), []
    for _ in range(2000):
        sample = draw.choices(pairs, k=len(pairs))
        was = sum(w for w, _ in sample)
        if was:
            changes.append((sum(n for _, n in sample) - was) / was)
    if len(changes) < 100:
        return ""
    changes.sort()
    return f"[{changes[int(0.025 * len(changes))]:+.0%}, {changes[int(0.975 * len(changes))]:+.0%}]"


def _wrong_or_abstaining(row: dict[str, Any]) -> bool:
    return bool(row["missing"])


def _wrong(row: dict[str, Any]) -> bool:
    """The answer misses the gold and says something else (an abstention is not wrong)."""
    return bool(row["missing"]) and not row["abstained"]


def _change(part: list[dict[str, Any]], base: dict[str, dict[str, Any]], bad: Any) -> str:
    """The relative change of ``bad`` answers against lightweight, on the same items."""
    paired = [r for r in part if r["id"] in base]
    was = sum(bad(base[r["id"]]) for r in paired)
    now = sum(bad(r) for r in paired)
    return f"{(now - was) / was:+.0%}" if was else "n/a"


def _paired(by_arm: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """McNemar's discordant pairs: which arm fixes what the other leaves, item by item."""
    out = [
        "Paired (same items): answers only the first arm gets right / only the second, "
        "with McNemar's exact two-sided p.",
    ]
    pairs = [
        (start, a, b)
        for start in ("natural", "planted")
        for a, b in (("standard", "lightweight"), ("premium", "lightweight"),
                     ("standard", "reference"), ("premium", "reference"))
    ] + [("lacking", "retrieval", "lightweight")]  # fmt: skip
    for start, a, b in pairs:
        first, second = by_arm.get(f"{start}/{a}", {}), by_arm.get(f"{start}/{b}", {})
        common = set(first) & set(second)
        if not common:
            continue
        only_a = sum(not first[i]["missing"] and second[i]["missing"] for i in common)
        only_b = sum(first[i]["missing"] and not second[i]["missing"] for i in common)
        p = _mcnemar(only_a, only_b)
        out.append(f"- {start}: {a} {only_a} / {b} {only_b} (of {len(common)}), p = {p:.3f}")
    return out


def _flag_line(start: str, rows: dict[str, dict[str, Any]]) -> str:
    """Precision (flagged answers that miss the gold) and recall (wrong answers flagged)."""
    flagged = [r for r in rows.values() if r.get("flagged_before")]
    wrong = [r for r in rows.values() if r["missing"]]
    loose = [r for r in flagged if r["loose"]]
    precision = f"{sum(r['missing'] for r in flagged) / len(flagged):.0%}" if flagged else "n/a"
    recall = (
        f"{sum(bool(r.get('flagged_before')) for r in wrong) / len(wrong):.0%}" if wrong else "n/a"
    )
    return (
        f"- {start}: {len(flagged)} of {len(rows)} flagged; the flag is right on {precision} "
        f"({len(loose)} by the looser measure); {recall} of the {len(wrong)} answers "
        "missing the gold are flagged."
    )


def _mcnemar(b: int, c: int) -> float:
    """The exact two-sided McNemar p-value: a binomial test on the discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _flags(by_arm: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The guard's flag against the gold, then standard mode's latency per flagged answer."""
    starts = [s for s in ("natural", "planted", "lacking") if by_arm.get(f"{s}/lightweight")]
    if not starts:
        return []
    lines = ["", "The guard's flag against the gold (the answers it would send to mitigation):"]
    return [
        *lines,
        *(_flag_line(s, by_arm[f"{s}/lightweight"]) for s in starts),
        *_fixed_by_flag(by_arm),
        *_latency(by_arm),
    ]


def _fixed_by_flag(by_arm: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Wrong answers each arm set right, apart for those the guard flagged and those it did not.

    Standard and premium act only on flagged answers; the reference arm rewrites every one,
    so this splits what the guard's flag costs (the wrong answers it lets through) from what
    its rewrite does with the ones it sends.
    """
    lines = ["", "Wrong answers set right, apart by the guard's flag:"]
    for start in ("natural", "planted"):
        base = by_arm.get(f"{start}/lightweight", {})
        for flagged in (True, False):
            wrong = [
                i
                for i, r in base.items()
                if r["missing"] and bool(r.get("flagged_before")) == flagged
            ]
            fixed = [
                f"{mode} {_set_right(by_arm.get(f'{start}/{mode}', {}), wrong)}"
                for mode in ("standard", "premium", "reference")
            ]
            lines.append(
                f"- {start}, {'flagged' if flagged else 'not flagged'}: of {len(wrong)} wrong "
                f"answers, set right by {', '.join(fixed)}."
            )
    return [*lines, ""]


def _set_right(rows: dict[str, dict[str, Any]], ids: list[str]) -> str:
    """How many of ``ids`` the arm set right, with the share and its 95% Wilson interval."""
    if not ids:
        return "0"
    k = sum(not rows[i]["missing"] for i in ids if i in rows)
    low, high = _wilson(k, len(ids))
    return f"{k} ({k / len(ids):.0%}, {low:.0%}-{high:.0%})"


def _endings(by_arm: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """How each arm's loop ended, as the verdict's status says (``not_needed``: not flagged)."""
    lines = ["", "How the loop ended, per arm (the verdict's `status`; `not_needed`: not flagged):"]
    for arm in sorted(by_arm):
        if arm.startswith("answer"):
            continue
        counts = collections.Counter(str(r.get("status")) for r in by_arm[arm].values())
        ended = ", ".join(f"{status} {n}" for status, n in counts.most_common())
        lines.append(f"- {arm}: {ended}")
    return lines


def _latency(by_arm: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Standard's latency over lightweight's on the natural answers the guard flagged."""
    base, standard = by_arm.get("natural/lightweight", {}), by_arm.get("natural/standard", {})
    # what the user waits for: the answer's generation, then the guard (and its rewrites)
    answer = by_arm.get("answer", {})
    ratio = [
        (answer[r["id"]]["seconds"] + standard[r["id"]]["seconds"])
        / (answer[r["id"]]["seconds"] + r["seconds"])
        for r in base.values()
        if r.get("flagged_before") and r["id"] in standard and r["id"] in answer
    ]
    if not ratio:
        return []
    return [
        f"Standard's latency over lightweight's per flagged answer (the answer's generation "
        f"included): p50 {statistics.median(ratio):.1f}x."
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--limit", type=int, default=300)
    r.add_argument("--iterations", type=int, default=2)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--resume", action="store_true")
    add_shard_arguments(r)
    r.add_argument(
        "--gguf",
        type=Path,
        default=None,
        help="the GGUF that answers, refines and judges (default: the registry's Qwen2.5 1.5B)",
    )
    for command in (r, sub.add_parser("report")):
        command.add_argument(
            "--rows",
            type=Path,
            default=ROWS,
            help="the per-item rows (one model each); the report is written beside them (.md)",
        )
    args = parser.parse_args()
    if args.command == "run":
        check_shard(parser, args)
    run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    main()
