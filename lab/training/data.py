"""Load train-role data and turn it into labelled examples for the three tasks.

Only data sets whose role in ``benchdata/MANIFEST.md`` is **train** are read here. The
eval-only sets (RAGTruth subset, FaithBench, the SNLI *test* files) are never opened:
``_path`` refuses them. HaluEval is split by line index: the last 10% of every file is a
held-out split used only to pick thresholds and report metrics.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import data2txt
from .spans import Span, SpanExample, split_sentences, synthesize, synthesize_long

# $TRUTHLENS_BENCHDATA points at a copy of the folder (e.g. on a training machine
# that only has a packed copy of the train-role files).
DATA_ROOT = Path(
    os.environ.get("TRUTHLENS_BENCHDATA")
    or Path(__file__).resolve().parents[3] / "shared" / "benchdata"
)
HELDOUT_FRACTION = 0.1
_EVAL_ONLY = ("ragtruth_subsets", "faithbench", "s1.test", "s2.test", "labels.test", ".test")
NLI_LABELS = ("entailment", "neutral", "contradiction")

_WORD = re.compile(r"\w+(?:[.,'’\-]\w+)*")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "by",
        "with",
        "from",
        "and",
        "or",
        "but",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "he",
        "she",
        "they",
        "his",
        "her",
        "their",
        "them",
        "i",
        "you",
        "we",
        "my",
        "your",
        "our",
        "as",
        "not",
        "no",
        "yes",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "will",
        "would",
        "can",
        "could",
        "should",
        "so",
        "than",
        "then",
        "there",
        "here",
        "also",
        "very",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "some",
        "more",
        "most",
        "much",
        "many",
        "such",
        "only",
        "just",
        "into",
        "about",
        "over",
        "after",
        "before",
        "up",
        "down",
        "out",
        "s",
        "t",
    ]
)


def _path(*parts: str, root: Path | None = None) -> Path:
    path = (root or DATA_ROOT).joinpath(*parts)
    if any(marker in str(path) for marker in _EVAL_ONLY):
        raise PermissionError(f"{path} is eval-only data and must never be read by training code")
    return path


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def split_of(index: int, total: int) -> str:
    """``"heldout"`` for the last 10% of a file by line index, else ``"train"``."""
    return "heldout" if index >= int(total * (1 - HELDOUT_FRACTION)) else "train"


# ---------------------------------------------------------------- HaluEval -> spans


def _norm(word: str) -> str:
    return word.lower().replace(",", "").rstrip("s") if not word.isdigit() else word


def unsupported_spans(answer: str, references: list[str]) -> list[Span]:
    """Character spans of answer words found in none of the references.

    Content words absent from every reference are unsupported; runs of them that are
    separated only by stop words or punctuation are merged into one span.
    """
    known = {_norm(w) for ref in references for w in _WORD.findall(ref)}
    spans: list[Span] = []
    last_supported = -1  # end of the last supported content word
    for m in _WORD.finditer(answer):
        word = m.group(0)
        if word.lower() in _STOP:
            continue
        if _norm(word) in known:
            last_supported = m.end()
            continue
        prev = spans[-1] if spans else None
        if prev and prev[1] > last_supported and _bridgeable(answer, prev[1], m.start()):
            spans[-1] = (prev[0], m.end())
        else:
            spans.append((m.start(), m.end()))
    return spans


def _bridgeable(answer: str, prev_end: int, start: int) -> bool:
    gap = answer[prev_end:start]
    return all(w.lower() in _STOP for w in _WORD.findall(gap)) and len(gap) < 20


def _select_context(document: str, answers: list[str], max_words: int) -> str:
    """Document sentences that best overlap the answers, in order, within a word budget.

    Long news articles do not fit the training window; keeping the sentences the
    summaries draw on keeps right summaries supported by what the model sees.
    """
    sents = split_sentences(document)
    if sum(len(s.split()) for s in sents) <= max_words:
        return document
    target = {_norm(w) for a in answers for w in _WORD.findall(a) if w.lower() not in _STOP}
    scored = sorted(
        range(len(sents)),
        key=lambda i: (-len(target & {_norm(w) for w in _WORD.findall(sents[i])}), i),
    )
    keep: set[int] = set()
    used = 0
    for i in scored:
        n = len(sents[i].split())
        if used + n > max_words:
            continue
        keep.add(i)
        used += n
    return " ".join(sents[i] for i in sorted(keep))


def halueval_examples(
    split: str, _rng: random.Random, max_doc_words: int = 220
) -> list[SpanExample]:
    """Right answers (no spans) and hallucinated answers (aligned spans) from HaluEval."""
    out: list[SpanExample] = []
    qa = _jsonl(_path("halueval", "dataset_halueval_qa.jsonl"))
    for i, r in enumerate(qa):
        if split_of(i, len(qa)) != split:
            continue
        ctx, q = [r["knowledge"]], r["question"]
        out.append(SpanExample(ctx, q, r["right_answer"], [], "halueval_qa_right"))
        out.append(_hallucinated(ctx, q, r["hallucinated_answer"], r["right_answer"], "qa"))
    dia = _jsonl(_path("halueval", "dataset_halueval_dialogue.jsonl"))
    for i, r in enumerate(dia):
        if split_of(i, len(dia)) != split:
            continue
        ctx, q = [r["knowledge"]], r["dialogue_history"].strip()
        out.append(SpanExample(ctx, q, r["right_response"], [], "halueval_dialogue_right"))
        out.append(
            _hallucinated(ctx, q, r["hallucinated_response"], r["right_response"], "dialogue")
        )
    summ = _jsonl(_path("halueval", "dataset_halueval_summarization.jsonl"))
    for i, r in enumerate(summ):
        if split_of(i, len(summ)) != split:
            continue
        doc = _select_context(
            r["document"], [r["right_summary"], r["hallucinated_summary"]], max_doc_words
        )
        out.append(SpanExample([doc], None, r["right_summary"], [], "halueval_summ_right"))
        out.append(
            _hallucinated([doc], None, r["hallucinated_summary"], r["right_summary"], "summ")
        )
    return [e for e in out if e.answer.strip()]


def _hallucinated(
    ctx: list[str], question: str | None, answer: str, right: str, task: str
) -> SpanExample:
    refs = [*ctx, right] + ([question] if question else [])
    spans = unsupported_spans(answer, refs)
    if not spans:  # a wrong choice among things the context names: mark what differs
        spans = unsupported_spans(answer, [right])
    if not spans:
        spans = [(0, len(answer.rstrip()))]
    return SpanExample(ctx, question, answer, spans, f"halueval_{task}_hallucinated")


def halueval_contexts(split: str) -> Iterator[tuple[list[str], str | None]]:
    """(context sentences, question) pairs from HaluEval, for synthetic examples."""
    qa = _jsonl(_path("halueval", "dataset_halueval_qa.jsonl"))
    for i, r in enumerate(qa):
        if split_of(i, len(qa)) == split:
            yield split_sentences(r["knowledge"]), r["question"]
    summ = _jsonl(_path("halueval", "dataset_halueval_summarization.jsonl"))
    for i, r in enumerate(summ):
        if split_of(i, len(summ)) == split:
            sents = split_sentences(r["document"])
            # a window of consecutive sentences keeps the context within the training window
            for start in range(0, min(len(sents), 24), 8):
                yield sents[start : start + 8], None


def long_contexts(split: str, max_sentences: int = 12) -> list[list[str]]:
    """Windows of up to ``max_sentences`` consecutive HaluEval news sentences.

    Long enough for paragraph answers (RAG answers and summaries) and still within a
    512-token training window beside a 4-7 sentence answer.
    """
    summ = _jsonl(_path("halueval", "dataset_halueval_summarization.jsonl"))
    out: list[list[str]] = []
    for i, r in enumerate(summ):
        if split_of(i, len(summ)) != split:
            continue
        sents = [s for s in split_sentences(r["document"]) if len(s) <= 300]
        window = sents[:max_sentences]
        if len(window) >= 8 and sum(len(s.split()) for s in window) <= 230:
            out.append(window)
    return out


def synthetic_examples(
    split: str, rng: random.Random, n: int, long_fraction: float = 0.0
) -> list[SpanExample]:
    """``n`` synthetic examples.

    About 20% are data-to-text records, ``long_fraction`` are paragraph answers over
    longer news contexts (:func:`synthesize_long`), the rest short answers over HaluEval
    contexts.
    """
    contexts = [c for c in halueval_contexts(split) if len(c[0]) >= 2]
    all_sentences = [s for c, _ in contexts for s in c if 30 <= len(s) <= 240]
    longs = long_contexts(split) if long_fraction > 0 else []
    out: list[SpanExample] = []
    while len(out) < n:
        roll = rng.random()
        if roll < 0.2:
            out.append(data2txt.make_example(rng))
            continue
        if longs and roll < 0.2 + long_fraction:
            ex = synthesize_long(rng.choice(longs), None, all_sentences, rng)
        else:
            sents, q = rng.choice(contexts)
            ex = synthesize(sents, q, all_sentences, rng)
        if ex is not None and ex.answer.strip():
            out.append(ex)
    return out


# ---------------------------------------------------------------- token labels


def encode_detection(
    tokenizer: Any, ex: SpanExample, max_length: int, format_prompt: Any
) -> dict[str, Any]:
    """Tokenize ``[CLS] prompt [SEP] answer [SEP]`` and label answer tokens.

    Prompt and special tokens get -100; an answer token is 1 when its characters
    overlap a labelled span, else 0. Only the prompt is truncated, and the result says
    so (``truncated``): a supported answer sentence whose evidence was cut off would
    teach the model to ignore the context, so training drops those examples.
    """
    prompt = format_prompt(ex.context, ex.question)
    full = len(tokenizer(prompt, ex.answer)["input_ids"])
    try:
        enc = tokenizer(
            prompt,
            ex.answer,
            truncation="only_first",
            max_length=max_length,
            return_offsets_mapping=True,
        )
    except Exception:  # the answer alone is too long: cut both (labels follow the offsets)  # noqa: BLE001
        enc = tokenizer(
            prompt,
            ex.answer,
            truncation="longest_first",
            max_length=max_length,
            return_offsets_mapping=True,
        )
    labels = token_labels(enc.sequence_ids(), enc["offset_mapping"], ex.spans)
    return {"input_ids": enc["input_ids"], "labels": labels, "truncated": full > max_length}


def token_labels(
    sequence_ids: list[int | None], offsets: list[tuple[int, int]], spans: list[Span]
) -> list[int]:
    """Per-token labels from character spans over the second sequence (the answer)."""
    labels: list[int] = []
    for seq, (start, end) in zip(sequence_ids, offsets, strict=True):
        if seq != 1 or end <= start:
            labels.append(-100)
        else:
            labels.append(int(any(start < e and s < end for s, e in spans)))
    return labels


# ---------------------------------------------------------------- NLI


@dataclass
class NLIExample:
    premise: str
    hypothesis: str
    label: int
    source: str


def _detok(text: str) -> str:
    return re.sub(r"\s+([.,!?;:'])", r"\1", text.strip())


def nli_examples(rng: random.Random) -> tuple[list[NLIExample], list[NLIExample]]:
    """(train, heldout) NLI pairs: SNLI dev, SICK, CLIMATE-FEVER; 10% of each held out."""
    out: list[NLIExample] = []
    root = _path("esnli")
    s1 = (root / "s1.dev").read_text(encoding="utf-8").splitlines()
    s2 = (root / "s2.dev").read_text(encoding="utf-8").splitlines()
    labels = (root / "labels.dev").read_text(encoding="utf-8").splitlines()
    for a, b, lab in zip(s1, s2, labels, strict=True):
        if lab.strip() in NLI_LABELS:
            out.append(NLIExample(_detok(a), _detok(b), NLI_LABELS.index(lab.strip()), "snli"))
    with _path("sick", "SICK.txt").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            lab = row["entailment_judgment"].strip().lower()
            out.append(
                NLIExample(row["sentence_A"], row["sentence_B"], NLI_LABELS.index(lab), "sick")
            )
    cmap = {"SUPPORTS": 0, "NOT_ENOUGH_INFO": 1, "REFUTES": 2}
    out.extend(
        NLIExample(ev["evidence"], r["claim"], cmap[ev["evidence_label"]], "climate")
        for r in _jsonl(_path("climate_fever", "climate-fever.jsonl"))
        for ev in r["evidences"]
    )
    rng.shuffle(out)
    cut = int(len(out) * (1 - HELDOUT_FRACTION))
    return out[:cut], out[cut:]


def synthetic_nli(rng: random.Random, n: int, split: str = "train") -> list[NLIExample]:
    """Sentence-level NLI pairs from HaluEval contexts and the span perturbations.

    A perturbed sentence contradicts its original; a paraphrased copy is entailed; a
    sentence from elsewhere in the document is neutral. These teach the explainer the
    number / date / entity contradictions the detector flags.
    """
    from .spans import entities, paraphrase, perturb_sentence

    contexts = [c for c, _ in halueval_contexts(split) if len(c) >= 3]
    out: list[NLIExample] = []
    while len(out) < n:
        sents = rng.choice(contexts)
        i = rng.randrange(len(sents))
        premise = sents[i]
        roll = rng.random()
        if roll < 0.45:
            kinds = ["number", "month", "unit", "entity", "negation"]
            rng.shuffle(kinds)
            for kind in kinds:
                done = perturb_sentence(premise, kind, entities(" ".join(sents)), rng)
                if done:
                    out.append(NLIExample(premise, done[0], 2, "synthetic"))
                    break
        elif roll < 0.75:
            out.append(NLIExample(premise, paraphrase(premise, rng), 0, "synthetic"))
        else:
            j = rng.choice([k for k in range(len(sents)) if k != i])
            out.append(NLIExample(premise, sents[j], 1, "synthetic"))
    return out


# ---------------------------------------------------------------- prompt classifier

_NEG_PATTERN = re.compile(
    r"\b(write|rewrite|re-write|compose|draft|generate|create|email|poem|story|haiku|code|"
    r"function|program|script|translate|convert|summari[sz]e|paraphrase|brainstorm|suggest|"
    r"recommend|design|come up with|correct|edit|proofread|make a list|tweet|post|slogan|"
    r"sort|format|pretend|imagine|role|joke|lyrics|essay|outline|sql|python|regex)\b",
    re.IGNORECASE,
)
_FELM_LABEL = {"wk": 1, "science": 1, "math": 0, "reasoning": 0, "writing_rec": 0}
_MT_POS = {"stem", "humanities", "knowledge"}
_MT_NEG = {
    "writing",
    "roleplay",
    "coding",
    "math",
    "reasoning",
    "extraction",
    "fermi",
    "counterfactual",
}


@dataclass
class PromptExample:
    text: str
    label: int  # 1 = needs fact check
    source: str


def prompt_examples(rng: random.Random, n_halueval: int = 1000) -> list[PromptExample]:
    """Prompts labelled 'needs fact check' (1) or not (0), from train-role sets."""
    out: list[PromptExample] = []
    with _path("truthfulqa", "TruthfulQA.csv").open(encoding="utf-8") as fh:
        out.extend(PromptExample(r["Question"], 1, "truthfulqa") for r in csv.DictReader(fh))
    for dom, lab in _FELM_LABEL.items():
        out.extend(
            PromptExample(r["prompt"], lab, f"felm_{dom}")
            for r in _jsonl(_path("felm", f"{dom}.jsonl"))
        )
    for name in ("mt_bench_question.jsonl", "vicuna_bench_question.jsonl"):
        for r in _jsonl(_path("mtbench_vicuna", name)):
            cat = r["category"]
            lab = 1 if cat in _MT_POS else 0 if cat in _MT_NEG else None
            if lab is not None:
                out.append(PromptExample(r["turns"][0], lab, f"mtbench_{cat}"))
    with gzip.open(_path("humaneval", "HumanEval.jsonl.gz"), "rt", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            text = r["prompt"] if rng.random() < 0.5 else f"Complete this function:\n{r['prompt']}"
            out.append(PromptExample(text, 0, "humaneval"))
    for name in ("user_oriented_instructions.jsonl", "seed_tasks.jsonl"):
        for r in _jsonl(_path("self_instruct", name)):
            if not _NEG_PATTERN.search(r["instruction"]):
                continue  # only the clearly non-factual tasks (rewrite, email, code, ...)
            inst = r["instances"][0]["input"] if r.get("instances") else ""
            text = r["instruction"] + (f"\n{inst}" if inst and rng.random() < 0.5 else "")
            out.append(PromptExample(text, 0, "self_instruct"))
    qa = _jsonl(_path("halueval", "dataset_halueval_qa.jsonl"))
    train_idx = [i for i in range(len(qa)) if split_of(i, len(qa)) == "train"]
    out.extend(
        PromptExample(qa[i]["question"], 1, "halueval_qa")
        for i in rng.sample(train_idx, n_halueval)
    )
    return [e for e in out if e.text.strip()]
