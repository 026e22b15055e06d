"""Real generated text judged against its source, as one record type (``Claim``).

Every train-role set in ``benchdata/MANIFEST.md``'s "real-output" table plus HaluEval is turned
into ``Claim`` records: the grounding (``context``), an optional question, the generated text that
was judged (``answer``), an example label (1 = not supported) and, where the data has them, the
character spans of ``answer`` that are not supported.

Choices where the sources leave room (the module constants below name them):

* **Labels.** TRUE, SummaC and SummEdits use 1 = consistent; they are flipped. BEGIN and the
  FaithDial audit's "generic" (and FaithDial's "uncooperative" alone, or no label) are skipped:
  they say nothing about support. PolyTope counts as unsupported only for its fidelity errors
  (``Inaccuracy_internal``, ``Inaccuracy_external``, ``Positive_Negative_Aspect``); "Addition",
  "Omission" and "Duplication" are content-selection and fluency errors, not unsupported text.
  Factcheck-GPT: "completely-support" -> 0, "refute" and "partially-support" -> 1, "irrelevant"
  is skipped (the evidence is mostly unrelated web text, a trivially easy and dominant negative).
* **Spans.** WiCE non-supported tokens are mapped to character spans of the claim. XSumFaith
  spans use a per-character **majority** of the (three) annotators: the example is unsupported
  when at least two annotators marked something, and its spans are the characters at least two
  marked (``None`` when two marked disjoint text, so no character has a majority). SummEdits
  inconsistent edits get the words that differ from the seed summary (a word diff, edge
  punctuation trimmed; ``None`` when the edit only deletes words or changes more than 12 words).
  These are derived, not annotated (``DERIVED_SPAN_SOURCES``): an edit may also reword text
  that stays supported. A clean answer gets ``()``: all its characters are supported. An
  unsupported answer without span labels gets ``None``.
* **Split.** ``heldout`` holds 10% of the contexts, chosen by a seeded hash of a normalised
  context prefix (the same document in two sources lands in the same part), so no document is in
  both parts. HaluEval is split this way too (``lab/training/data.py`` splits it by line index:
  do not mix the two splits).
* **Dedupe.** Records with the same normalised context, question and answer are kept once (the
  first seen: span-labelled sources are read first).

Eval-only files (RAGTruth subsets, FaithBench, SNLI test, WiCE ``test.jsonl``) are refused by
``_path`` before anything is opened.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import hashlib
import json
import os
import random
import re
import sys
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from truthlens_integrations._lab_api import wice_token_spans as _eval_wice_spans
from truthlens_integrations.core import ConfigError

from . import data as _data

__all__ = [
    "DERIVED_SPAN_SOURCES",
    "HELDOUT_FRACTION",
    "NATURAL_FAMILIES",
    "SOURCES",
    "Claim",
    "load_real",
    "main",
    "split_of_context",
]

HELDOUT_FRACTION = 0.1
FACTCHECK_STANCE = {"completely-support": 0, "partially-support": 1, "refute": 1}
POLYTOPE_FIDELITY_ERRORS = frozenset(
    {"Inaccuracy_internal", "Inaccuracy_external", "Positive_Negative_Aspect"}
)
# Sources whose spans are derived (a word diff against the seed summary), not annotated: an
# edit may also reword text that stays supported, so the spans can be wider than the error.
DERIVED_SPAN_SOURCES = ("summedits/",)
# SummEdits: inconsistent edits larger than this many changed words get no spans (too coarse).
SUMMEDITS_MAX_CHANGED_WORDS = 12
# The sources whose texts a system or person wrote freely and people judged afterwards, by
# family (the same data seen through two collections is one family). Every other source's
# labels come from a construction: planted edits (SummEdits, PAWS, FactCC, DialFact's
# rewritten claims) or hallucinations written on instruction (HaluEval).
NATURAL_FAMILIES = {
    "begin": "begin",
    "true/begin": "begin",
    "faithdial": "faithdial",
    "factcheck_gpt": "factcheck_gpt",
    "wice": "wice",
    "xsumfaith": "xsumfaith",
    "true/frank": "summaries",
    "true/qags_cnndm": "summaries",
    "true/qags_xsum": "summaries",
    "true/summeval": "summaries",
    "summac/polytope": "summaries",
    "summac/summeval": "summaries",
    "true/q2": "q2",
}

Span = tuple[int, int]


@dataclass(frozen=True)
class Claim:
    """One generated text judged against its grounding.

    Attributes:
        source: Data set and subset, e.g. ``"summedits/news"`` or ``"halueval/qa"``.
        context: The grounding text (document, knowledge or evidence sentences joined by ``\\n``).
        question: The question or previous dialogue turn; ``""`` when none.
        answer: The generated text that was judged.
        label: 1 when the answer is not supported by the context, else 0.
        spans: Character spans of ``answer`` that are not supported; ``()`` for a clean answer;
            ``None`` when only an example-level label exists.
        uid: Stable id (source plus a hash of the text).
    """

    source: str
    context: str
    question: str
    answer: str
    label: int
    spans: tuple[Span, ...] | None
    uid: str


# ---------------------------------------------------------------- paths and small helpers


def _root(root: Path | None) -> Path:
    if root is not None:
        return Path(root)
    env = os.environ.get("TRUTHLENS_BENCHDATA")
    return Path(env) if env else _data.DATA_ROOT


def _path(*parts: str, root: Path) -> Path:
    """``lab.training.data._path`` plus the WiCE test files, which are eval-only too."""
    path = _data._path(*parts, root=root)
    if "wice" in path.parts and path.name.startswith("test"):
        raise PermissionError(f"{path} is eval-only data and must never be read by training code")
    return path


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _csv(path: Path, delimiter: str = ",") -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        if delimiter == "\t":  # BEGIN's tsv files quote nothing; quotes are text
            return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
        return list(csv.DictReader(fh))


def _unescape(text: str) -> str:
    # FRANK and XSumFaith keep the SQL-style escapes of their dumps (``bahrain\'s``).
    return text.replace("\\'", "'").replace('\\"', '"')


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


_NOT_ALNUM = re.compile(r"[^0-9a-z]+")


def _context_key(context: str) -> str:
    # Case, spacing and punctuation differ between copies of one document (TRUE vs SummaC).
    return _NOT_ALNUM.sub("", context.lower())[:400]


def split_of_context(context: str, seed: int = 13) -> Literal["train", "heldout"]:
    """The part a context belongs to: a seeded hash of its normalised prefix.

    Args:
        context: The grounding text.
        seed: Changes which contexts are held out.

    Returns:
        ``"heldout"`` for about ``HELDOUT_FRACTION`` of contexts, else ``"train"``.
    """
    digest = hashlib.sha1(f"{seed}:{_context_key(context)}".encode()).digest()
    return "heldout" if int.from_bytes(digest[:8], "big") / 2**64 < HELDOUT_FRACTION else "train"


def _uid(source: str, context: str, question: str, answer: str) -> str:
    digest = hashlib.sha1("\x1f".join((source, context, question, answer)).encode()).hexdigest()
    return f"{source}:{digest[:16]}"


def _claim(
    source: str,
    context: str,
    answer: str,
    label: int,
    spans: tuple[Span, ...] | None,
    question: str = "",
) -> Claim | None:
    """A ``Claim`` with stripped text, or ``None`` for an empty context or answer."""
    stripped = answer.strip()
    if spans:
        # stripping moves the span offsets by the leading whitespace removed
        lead = len(answer) - len(answer.lstrip())
        spans = _clip(tuple((s - lead, e - lead) for s, e in spans), len(stripped))
    answer, context, question = stripped, context.strip(), question.strip()
    if not answer or not context:
        return None
    if label == 0:
        spans = ()
    elif spans == ():
        spans = None
    return Claim(
        source, context, question, answer, label, spans, _uid(source, context, question, answer)
    )


def _clip(spans: tuple[Span, ...], length: int) -> tuple[Span, ...]:
    out = [(max(0, s), min(length, e)) for s, e in spans]
    return tuple((s, e) for s, e in out if s < e)


def _merge(spans: Iterable[Span], text: str) -> tuple[Span, ...]:
    """Sorted spans with overlapping ones, or ones separated only by spaces, joined."""
    out: list[list[int]] = []
    for start, end in sorted(spans):
        if out and (start <= out[-1][1] or not text[out[-1][1] : start].strip()):
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return tuple((s, e) for s, e in out)


# ---------------------------------------------------------------- converters


def _wice(root: Path) -> Iterator[Claim]:
    for split in ("train", "dev"):
        for row in _jsonl(_path("wice", "non_supported_tokens", f"{split}.jsonl", root=root)):
            spans = wice_token_spans(row["claim"], row["claim_tokens"], row["non_supported_spans"])
            label = 1 if any(row["non_supported_spans"]) else 0
            claim = _claim("wice", "\n".join(row["evidence"]), row["claim"], label, spans)
            if claim is not None:
                yield claim
    for row in _jsonl(_path("wice", "entailment_retrieval", "claim", "dev.jsonl", root=root)):
        label = 0 if row["label"] == "supported" else 1
        claim = _claim("wice", "\n".join(row["evidence"]), row["claim"], label, None)
        if claim is not None:
            yield claim


def wice_token_spans(claim: str, tokens: list[str], flags: list[bool]) -> tuple[Span, ...] | None:
    """Character spans of the flagged WiCE tokens in ``claim`` (the eval harness's mapping).

    Args:
        claim: The claim text.
        tokens: Its tokens, in order.
        flags: ``True`` for a token the evidence does not support.

    Returns:
        Merged spans, or ``None`` when a token cannot be found in the claim text.
    """
    try:
        spans = _eval_wice_spans(claim, tokens, flags)
    except ConfigError:
        return None
    return tuple((s.start, s.end) for s in spans)


def _xsumfaith(root: Path) -> Iterator[Claim]:
    docs = {
        row["bbcid"]: row["document"]
        for row in json.loads(
            _path("summac", "xsumfaith.json", root=root).read_text("utf-8")
        ).values()
    }
    marks: dict[tuple[str, str], dict[str, list[Span | None]]] = defaultdict(dict)
    summaries: dict[tuple[str, str], str] = {}
    rows = _csv(_path("xsumfaith", "hallucination_annotations_xsum_summaries.csv", root=root))
    for row in rows:
        if row["bbcid"] not in docs:
            continue
        key = (row["bbcid"], row["system"])
        summary = summaries.setdefault(key, _unescape(row["summary"]))
        worker = marks[key].setdefault(row["worker_id"], [])
        if row["hallucination_type"] != "NULL":
            worker.append(xsum_span(summary, row))
    for (bbcid, system), workers in marks.items():
        summary = summaries[(bbcid, system)]
        label, spans = xsum_majority(summary, list(workers.values()))
        claim = _claim("xsumfaith", docs[bbcid], summary, label, spans)
        if claim is not None:
            yield claim


def xsum_span(summary: str, row: dict[str, str]) -> Span | None:
    """Where one XSumFaith annotation's span text lies in the (unescaped) summary.

    The csv offsets are 1-based and count escapes differently, so the span text is searched and
    the occurrence nearest the given start is taken.

    Args:
        summary: The unescaped summary.
        row: One csv row (``hallucinated_span``, ``hallucinated_span_start``).

    Returns:
        ``(start, end)`` in ``summary``, or ``None`` when the text is not in it.
    """
    text = _unescape(row["hallucinated_span"]).strip()
    if not text:
        return None
    hint = int(row["hallucinated_span_start"]) - 1
    found = [m.start() for m in re.finditer(re.escape(text), summary)]
    if not found:
        return None
    start = min(found, key=lambda s: abs(s - hint))
    return start, start + len(text)


def xsum_majority(
    summary: str, workers: list[list[Span | None]]
) -> tuple[int, tuple[Span, ...] | None]:
    """Example label and spans from several annotators by majority.

    Args:
        summary: The summary text.
        workers: Each annotator's spans (``[]`` = nothing marked; ``None`` = a span not found).

    Returns:
        ``(label, spans)``: label 1 when more than half the annotators marked something; spans
        are the characters more than half marked, or ``None`` when that cannot be read exactly.
    """
    need = len(workers) // 2 + 1
    marked = sum(1 for spans in workers if spans)
    if marked < need:
        return 0, ()
    if any(span is None for spans in workers for span in spans):
        return 1, None
    votes = [0] * len(summary)
    for spans in workers:
        covered: set[int] = set()
        for span in spans:
            assert span is not None
            covered.update(range(*span))
        for i in covered:
            votes[i] += 1
    chars = [i for i, v in enumerate(votes) if v >= need and not summary[i].isspace()]
    if not chars:
        return 1, None
    return 1, _merge(((i, i + 1) for i in chars), summary)


def _summedits(root: Path) -> Iterator[Claim]:
    for path in sorted(_path("summedits", root=root).glob("summedits_*.json")):
        domain = path.stem.removeprefix("summedits_")
        for row in json.loads(path.read_text("utf-8")):
            label = 1 - int(row["label"])
            spans = summedits_spans(row["summary"], row["original_summary"]) if label else ()
            claim = _claim(f"summedits/{domain}", row["doc"], row["summary"], label, spans)
            if claim is not None:
                yield claim


_WORDS = re.compile(r"\S+")


def summedits_spans(summary: str, original: str) -> tuple[Span, ...] | None:
    """The words of an edited summary that differ from its seed summary.

    Args:
        summary: The edited (inconsistent) summary.
        original: The seed summary it was edited from.

    Returns:
        Merged spans of inserted or replaced words; ``None`` when the edit only deletes words,
        changes nothing, or changes more than ``SUMMEDITS_MAX_CHANGED_WORDS`` words.
    """
    new = list(_WORDS.finditer(summary))
    old = [m.group() for m in _WORDS.finditer(original)]
    matcher = difflib.SequenceMatcher(None, old, [m.group() for m in new], autojunk=False)
    spans: list[Span] = []
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            spans.append(_trim(summary, new[j1].start(), new[j2 - 1].end()))
    spans = [(s, e) for s, e in spans if s < e]  # an edit of punctuation alone
    changed = sum(len(_WORDS.findall(summary[s:e])) for s, e in spans)
    if not spans or changed > SUMMEDITS_MAX_CHANGED_WORDS:
        return None
    return _merge(spans, summary)


def _trim(text: str, start: int, end: int) -> Span:
    """Shrink a span past the punctuation words carry (``"Ross,"`` -> ``"Ross"``)."""
    while start < end and text[start] in _EDGE_PUNCT:
        start += 1
    while end > start and text[end - 1] in _EDGE_PUNCT:
        end -= 1
    return start, end


_EDGE_PUNCT = frozenset("\"'()[],.;:!?")

_TRUE_FILES = ("dialfact", "paws", "summeval", "q2", "begin", "frank", "qags_cnndm", "qags_xsum")


def _true(root: Path) -> Iterator[Claim]:
    for name in _TRUE_FILES:
        for row in _csv(_path("true", f"{name}.csv", root=root)):
            label = 1 - int(float(row["label"]))
            question = row.get("previous turn", "")
            answer = _unescape(row["generated_text"]) if name == "frank" else row["generated_text"]
            claim = _claim(f"true/{name}", row["grounding"], answer, label, None, question)
            if claim is not None:
                yield claim


_BEGIN = {"fully attributable": 0, "not fully attributable": 1, "entailment": 0, "hallucination": 1}


def _begin(root: Path) -> Iterator[Claim]:
    files = sorted(_path("begin", root=root).glob("*/*.tsv"))
    files.append(_path("begin", "example_filtered_proc.tsv", root=root))
    for path in files:
        for row in _csv(path, delimiter="\t"):
            raw = (row.get("begin_label") or row.get("gold label") or "").strip().lower()
            if raw not in _BEGIN:  # "generic": neither supported nor unsupported
                continue
            context = row.get("knowledge") or row.get("evidence") or ""
            question = row.get("message") or row.get("previous turn") or ""
            claim = _claim("begin", context, row["response"], _BEGIN[raw], None, question)
            if claim is not None:
                yield claim


def faithdial_label(raw: str) -> int | None:
    """FaithDial audit BEGIN column -> 1 (hallucination), 0 (entailment) or ``None`` (skip)."""
    raw = raw.lower()
    if "hallucinat" in raw:  # hallucination, partial hallucination, entailment,hallucination
        return 1
    if "entailment" in raw:  # entailment, entailment,uncooperative (and one "entailmentt")
        return 0
    return None  # generic, uncooperative alone, or unlabelled


def _faithdial(root: Path) -> Iterator[Claim]:
    for path in sorted(_path("faithdial_audit", root=root).glob("*/*.csv")):
        for row in _csv(path):
            label_key = "BEGIN" if "BEGIN" in row else "begin_label"
            label = faithdial_label(row.get(label_key) or "")
            if label is None:
                continue
            context = row.get("knowledge") or row.get("evidence") or ""
            answer_key = next(
                k
                for k in row
                if k
                not in {
                    "knowledge",
                    "evidence",
                    "history",
                    "BEGIN",
                    "VRM",
                    "begin_label",
                    "vrm_label",
                }
            )
            claim = _claim(
                "faithdial", context, row[answer_key] or "", label, None, row.get("history") or ""
            )
            if claim is not None:
                yield claim


def _summac(root: Path) -> Iterator[Claim]:
    # summac/xsumfaith.json is read by _xsumfaith (with span labels) and only adds its
    # example labels here for pairs the span data lacks.
    for name in ("polytope", "factcc", "summeval", "xsumfaith"):
        rows = json.loads(_path("summac", f"{name}.json", root=root).read_text("utf-8"))
        for row in rows.values():
            if name == "polytope":
                label = 1 if POLYTOPE_FIDELITY_ERRORS & set(row.get("errors") or []) else 0
            else:
                label = 1 - int(row["label"])
            claim = _claim(f"summac/{name}", row["document"], _unescape(row["claim"]), label, None)
            if claim is not None:
                yield claim


def _factcheck(root: Path) -> Iterator[Claim]:
    path = _path("factcheck_gpt", "subtasks", "subtask3_claim_evidence_stance.jsonl", root=root)
    for row in _jsonl(path):
        label = FACTCHECK_STANCE.get(row["stance"])
        if label is None:  # "irrelevant"
            continue
        claim = _claim("factcheck_gpt", row["evidence"], row["claim"], label, None)
        if claim is not None:
            yield claim


def _halueval(root: Path) -> Iterator[Claim]:
    tasks = (
        ("qa", "knowledge", "question", "right_answer", "hallucinated_answer"),
        ("dialogue", "knowledge", "dialogue_history", "right_response", "hallucinated_response"),
        ("summarization", "document", "", "right_summary", "hallucinated_summary"),
    )
    for task, ctx_key, q_key, right, wrong in tasks:
        for row in _jsonl(_path("halueval", f"dataset_halueval_{task}.jsonl", root=root)):
            question = row[q_key] if q_key else ""
            for key, label in ((right, 0), (wrong, 1)):
                claim = _claim(f"halueval/{task}", row[ctx_key], row[key], label, None, question)
                if claim is not None:
                    yield claim


# Span-labelled sources first: deduplication keeps the first copy of a record.
SOURCES: dict[str, Callable[[Path], Iterator[Claim]]] = {
    "wice": _wice,
    "xsumfaith": _xsumfaith,
    "summedits": _summedits,
    "summac": _summac,
    # BEGIN's own (revised) labels win over TRUE's older copy of it (23 of 110 shared rows differ)
    "begin": _begin,
    "true": _true,
    "faithdial": _faithdial,
    "factcheck_gpt": _factcheck,
    "halueval": _halueval,
}


# ---------------------------------------------------------------- public loader


def load_real(
    root: Path | None = None,
    *,
    part: Literal["train", "heldout"] = "train",
    seed: int = 13,
    max_per_source: int | None = None,
    sources: Iterable[str] | None = None,
) -> list[Claim]:
    """All train-role real-output records of one part of the split.

    Args:
        root: The benchdata folder; default ``$TRUTHLENS_BENCHDATA`` or ``../shared/benchdata``.
        part: ``"train"`` or ``"heldout"`` (10% of contexts, by a seeded hash).
        seed: Chooses the held-out contexts, and the sample when ``max_per_source`` is set.
        max_per_source: Keep at most this many records per source (a seeded sample, in order).
        sources: Converter names from ``SOURCES`` to read; default all.

    Returns:
        Deduplicated ``Claim`` records, grouped by source in file order.

    Raises:
        FileNotFoundError: ``root`` does not exist.
        ValueError: Unknown ``part`` or source name.
    """
    if part not in ("train", "heldout"):
        raise ValueError(f"part must be 'train' or 'heldout', not {part!r}")
    base = _root(root)
    if not base.is_dir():
        raise FileNotFoundError(f"benchdata folder not found: {base} (set $TRUTHLENS_BENCHDATA)")
    names = list(SOURCES) if sources is None else list(sources)
    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        raise ValueError(f"unknown sources {unknown}; known: {list(SOURCES)}")
    seen: set[str] = set()
    by_source: dict[str, list[Claim]] = defaultdict(list)
    for name in names:
        for claim in _read(name, base):
            key = hashlib.sha1(
                "\x1f".join(map(_norm, (claim.context, claim.question, claim.answer))).encode()
            ).hexdigest()
            if key in seen:
                continue
            seen.add(key)
            if split_of_context(claim.context, seed) == part:
                by_source[claim.source].append(claim)
    out: list[Claim] = []
    for source, claims in by_source.items():
        if max_per_source is not None and len(claims) > max_per_source:
            rng = random.Random(f"{seed}:{source}")
            keep = set(rng.sample(range(len(claims)), max_per_source))
            out.extend(c for i, c in enumerate(claims) if i in keep)
        else:
            out.extend(claims)
    return out


def _read(name: str, root: Path) -> Iterator[Claim]:
    try:
        yield from SOURCES[name](root)
    except FileNotFoundError as exc:
        warnings.warn(f"realdata: source {name!r} skipped, file missing: {exc}", stacklevel=3)


# ---------------------------------------------------------------- CLI


def _stats(root: Path | None, seed: int) -> str:
    parts = {p: load_real(root, part=p, seed=seed) for p in ("train", "heldout")}
    rows: dict[str, dict[str, Counter[str]]] = defaultdict(
        lambda: {"train": Counter(), "heldout": Counter()}
    )
    for part, claims in parts.items():
        for c in claims:
            counts = rows[c.source][part]
            counts["n"] += 1
            counts["pos"] += c.label
            counts["spans"] += c.spans is not None
            counts["pos_spans"] += bool(c.label and c.spans is not None)
    head = (
        f"{'source':24} {'train':>7} {'heldout':>7} {'pos% tr':>7} {'pos% ho':>7}"
        f" {'spans':>7} {'pos+spans':>9}"
    )
    lines = [head, "-" * len(head)]
    total = {"train": Counter(), "heldout": Counter()}  # type: dict[str, Counter[str]]
    for source in sorted(rows):
        tr, ho = rows[source]["train"], rows[source]["heldout"]
        total["train"].update(tr)
        total["heldout"].update(ho)
        lines.append(_row(source, tr, ho))
    lines += ["-" * len(head), _row("total", total["train"], total["heldout"])]
    return "\n".join(lines)


def _row(name: str, tr: Counter[str], ho: Counter[str]) -> str:
    def pct(c: Counter[str]) -> str:
        return f"{100 * c['pos'] / c['n']:.1f}" if c["n"] else "-"

    spans = tr["spans"] + ho["spans"]
    pos_spans = tr["pos_spans"] + ho["pos_spans"]
    return (
        f"{name:24} {tr['n']:>7} {ho['n']:>7} {pct(tr):>7} {pct(ho):>7} {spans:>7} {pos_spans:>9}"
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m lab.training.realdata --stats``: per-source counts of both parts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stats", action="store_true", help="print per-source counts")
    parser.add_argument("--root", type=Path, default=None, help="benchdata folder")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    if not args.stats:
        parser.print_help()
        return 2
    print(_stats(args.root, args.seed))
    print(
        "\nspans = records with span labels (clean answers: (), unsupported: exact spans);"
        " pos+spans = unsupported records with spans"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
