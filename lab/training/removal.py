"""Evidence removal: unsupported sentences in an LLM's own words, labelled without a judge.

Most of RAGTruth's hallucinations are *baseless information*: a phrase or sentence, in
the writer's own words, that the context does not back. The labelled train-role answers
rarely look like that (their errors are mostly edits), and the planted-change LLM answers
(``lab.training.llm_answers``) teach one changed value. This module makes such sentences from
answers that are already clean beside their context: it removes from the context the
pieces that back one answer sentence, so that sentence now states something the context
does not give, in words the LLM chose. The same answer beside the whole context stays a
clean record, so only the evidence tells the two apart.

A piece of context is a sentence of a passage, or a field of a JSON record (the data-to-
text contexts). The pieces that back a sentence are those holding its *distinctive* words
(content words that occur in few pieces, weighed by how rare they are there), and a
variant is kept only when:

* at least ``MIN_LOST`` of the sentence's content words are gone from the context after the
  removal (else the fact may still be stated elsewhere, in the same words);
* every other answer sentence keeps its support: its share of content words found in the
  context falls by at most ``MAX_OTHER_DROP``;
* at most ``MAX_REMOVED`` of the pieces go, and at least two stay.

The span is the whole sentence (RAGTruth's spans are phrases and sentences). These are
rules, not a judge: a removed piece may be paraphrased by another one the rules keep, and a
"clean" LLM answer may hold an invention of its own (``lab.training.llm_answers`` says which).

    python -m lab.training.removal --stats
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from truthlens_integrations._lab_api import (
    COMPOUND_WORD,
    LEXICAL_STOPWORDS,
    normalize_word,
    split_sentences,
)

from . import llm_answers
from ._cli import stats_args
from .realdata import Claim

__all__ = [
    "MAX_OTHER_DROP",
    "MAX_REMOVED",
    "MIN_LOST",
    "load_removals",
    "removal_pairs",
    "removal_variants",
]

MIN_LOST = 0.4
MAX_OTHER_DROP = 0.1
MAX_REMOVED = 0.4
# Sentences with fewer content words say too little to lose their support measurably.
MIN_WORDS = 4


@dataclass(frozen=True)
class _Piece:
    """One removable piece of context and its normalised content words."""

    key: tuple[Any, ...]
    words: frozenset[str]


def _vocab(text: str) -> frozenset[str]:
    out = set()
    for word in COMPOUND_WORD.findall(text):
        if word.lower() in LEXICAL_STOPWORDS:
            continue
        out.add(normalize_word(word))
        # "OutdoorSeating" in a record is the words "outdoor" and "seating"
        out.update(normalize_word(p) for p in _camel_parts(word))
    return frozenset(w for w in out if w and w.lower() not in LEXICAL_STOPWORDS)


def _camel_parts(word: str) -> list[str]:
    parts, current = [], ""
    for ch in word:
        if ch.isupper() and current and not current[-1].isupper():
            parts.append(current)
            current = ch
        else:
            current += ch
    parts.append(current)
    return parts if len(parts) > 1 else []


# ---------------------------------------------------------------- context pieces


def _record(context: str) -> dict[str, Any] | None:
    text = context.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterable[tuple[tuple[Any, ...], str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    else:
        yield path, f"{path[-1] if path else ''} {value}"


def _pieces(context: str) -> list[_Piece]:
    record = _record(context)
    if record is not None:
        return [_Piece(path, _vocab(text)) for path, text in _leaves(record)]
    out = []
    for p, passage in enumerate(context.split("\n")):
        for s, (a, b) in enumerate(split_sentences(passage)):
            out.append(_Piece((p, s), _vocab(passage[a:b])))
    return out


def _without(context: str, removed: set[tuple[Any, ...]]) -> str:
    """The context with the ``removed`` pieces left out, in its own format."""
    record = _record(context)
    if record is not None:
        return json.dumps(_drop(record, removed, ()))
    passages = []
    for p, passage in enumerate(context.split("\n")):
        kept = [
            passage[a:b]
            for s, (a, b) in enumerate(split_sentences(passage))
            if (p, s) not in removed
        ]
        if kept:
            passages.append(" ".join(kept))
    return "\n".join(passages)


def _drop(value: Any, removed: set[tuple[Any, ...]], path: tuple[Any, ...]) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if (*path, k) in removed:
                continue
            kept = _drop(v, removed, (*path, k))
            if kept != {} and kept != []:
                out[k] = kept
        return out
    if isinstance(value, list):
        items = [_drop(v, removed, (*path, i)) for i, v in enumerate(value)]
        return [v for i, v in enumerate(items) if (*path, i) not in removed and v not in ({}, [])]
    return value


# ---------------------------------------------------------------- choosing what to remove


def _grounded(words: frozenset[str], vocab: set[str]) -> float:
    return len(words & vocab) / len(words) if words else 1.0


def _backing(target: frozenset[str], pieces: Sequence[_Piece]) -> set[tuple[Any, ...]]:
    """The pieces that hold the target's distinctive words.

    A word found in many pieces (the topic, the subject's name) backs nothing in
    particular; the weight ``log(1 + n / df)`` keeps it from deciding.
    """
    df = Counter(w for piece in pieces for w in piece.words & target)
    n = len(pieces)
    weight = {w: math.log(1 + n / df[w]) for w in df}
    total = sum(weight.values())
    if total == 0:
        return set()
    chosen = set()
    for piece in pieces:
        share = sum(weight[w] for w in piece.words & target) / total
        if share >= 0.25:
            chosen.add(piece.key)
    return chosen


def _variant(claim: Claim, target: int) -> Claim | None:
    sentences = split_sentences(claim.answer)
    question = _vocab(claim.question)
    words = [_vocab(claim.answer[a:b]) - question for a, b in sentences]
    if len(words[target]) < MIN_WORDS:
        return None
    pieces = _pieces(claim.context)
    removed = _backing(words[target], pieces)
    if not removed or len(removed) > MAX_REMOVED * len(pieces) or len(pieces) - len(removed) < 2:
        return None
    before = set().union(*(p.words for p in pieces))
    after = set().union(*(p.words for p in pieces if p.key not in removed))
    if 1 - _grounded(words[target], after) < MIN_LOST:
        return None
    for i, w in enumerate(words):
        if i != target and _grounded(w, before) - _grounded(w, after) > MAX_OTHER_DROP:
            return None
    context = _without(claim.context, removed)
    a, b = sentences[target]
    while b > a and claim.answer[b - 1] in ".!?":
        b -= 1  # the span is the statement, not its full stop
    uid = hashlib.sha1(f"{claim.uid}\x1f{target}".encode()).hexdigest()
    source = "removal/" + claim.source.split("/")[-1]
    return Claim(source, context, claim.question, claim.answer, 1, ((a, b),), uid)


def removal_pairs(
    claims: Iterable[Claim], per_answer: int, rng: random.Random
) -> list[tuple[Claim, Claim]]:
    """Up to ``per_answer`` evidence-removal variants of each clean claim, with the claim.

    Args:
        claims: Records to start from; only clean ones (label 0) are used.
        per_answer: How many of an answer's sentences to try to unsupport (each its own
            record), drawn in random order until that many are kept.
        rng: Draws the sentence order.

    Returns:
        ``(claim, variant)`` pairs; the variant has label 1 and the sentence as its span.
    """
    out = []
    for claim in claims:
        if claim.label != 0:
            continue
        order = list(range(len(split_sentences(claim.answer))))
        rng.shuffle(order)
        kept = 0
        for target in order:
            variant = _variant(claim, target)
            if variant is not None:
                out.append((claim, variant))
                kept += 1
                if kept == per_answer:
                    break
    return out


def removal_variants(claims: Iterable[Claim], per_answer: int, rng: random.Random) -> list[Claim]:
    """The variants of :func:`removal_pairs`, without the claims they came from."""
    return [variant for _, variant in removal_pairs(claims, per_answer, rng)]


def load_removals(
    part: llm_answers.Part = "train", per_answer: int = 1, seed: int = 13
) -> tuple[list[Claim], list[Claim]]:
    """The clean LLM answers of ``part`` that have a variant, and the variants.

    Returns:
        ``(clean, unsupported)``: the clean records (renamed to the ``removal/<task>``
        source, so each pair is measured in one group), then the variants.
    """
    clean = [c for c in llm_answers.load_llm_answers(part) if c.label == 0]
    pairs = removal_pairs(clean, per_answer, random.Random(seed))
    bases = {base.uid: base for base, _ in pairs}
    return [_renamed(base) for base in bases.values()], [variant for _, variant in pairs]


def _renamed(claim: Claim) -> Claim:
    source = "removal/" + claim.source.split("/")[-1]
    return Claim(source, claim.context, claim.question, claim.answer, 0, (), claim.uid)


def main(argv: list[str] | None = None) -> None:
    shows = "print N examples of the test part"
    args = stats_args(__doc__, argv, "print counts per part and task", shows)
    for part in ("train", "test"):
        clean, variants = load_removals(part)  # type: ignore[arg-type]
        counts = Counter(v.source for v in variants)
        print(part, "clean with a variant:", len(clean), "variants:", dict(sorted(counts.items())))
    if args.show:
        _, variants = load_removals("test")
        for v in variants[: args.show]:
            ((a, b),) = v.spans  # type: ignore[misc]
            print(
                "---",
                v.source,
                "\nCONTEXT:",
                v.context[:600],
                "\nANSWER:",
                v.answer,
                "\nSPAN:",
                v.answer[a:b],
            )


if __name__ == "__main__":
    main()
