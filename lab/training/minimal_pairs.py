"""Minimal NLI pairs made by rule from train-role contexts, each beside its faithful twin.

A sentence ``S`` of a HaluEval train context is read in its window ``P`` (the sentence and
its neighbours). One edit ``e`` changes its meaning: a clause negated (or its negation
removed), two names swapped, a number replaced, a quantifier changed. Each edit gives a
quad of pairs in which the hypothesis wording never gives the label away::

    (P,    S)    entailment          (P,    e(S)) contradiction / neutral
    (e(P), e(S)) entailment          (e(P), S)    contradiction / neutral

where ``e(P)`` is the window with ``S`` edited. Numbers add the restatements a reader
meets: the right number in words is entailed, a wrong one in words or digits is not
(``num2words`` writes the words). Only train-role data is read (``data.halueval_contexts``
with ``split="train"``; the held-out part is chosen by context, so a context's quads never
straddle the split). Run ``python -m lab.training.minimal_pairs`` for counts and samples.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator

from . import data

__all__ = ["minimal_pairs"]

_AUX = "is|are|was|were|has|have|had|can|could|will|would|should|must|may|might|does|did|do"
_NEGATED = re.compile(rf"\b({_AUX})\s+not\b|\b({_AUX})n't\b")
_AUX_WORD = re.compile(rf"\b({_AUX})\b(?!\s+not\b)")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+(?:of\s+|de\s+)?[A-Z][a-z]+)*\b")
_NUMBER = re.compile(r"(?<![\w.,/-])(\d{1,3}(?:,\d{3})+|\d{1,4})(?![\w.,/:-]?\d)(?!%?\w)")
_QUANTIFIERS = {
    # word -> (replacement, label): contradiction where the new word excludes the old
    "all": (("no", 2), ("some", 1)),
    "every": (("no", 2),),
    "always": (("never", 2), ("sometimes", 1)),
    "never": (("always", 2),),
    "some": (("no", 2), ("all", 1)),
    "many": (("no", 2), ("all", 1)),
    "several": (("no", 2), ("all", 1)),
    "most": (("few", 2), ("all", 1)),
    "only": (("also", 1),),
}
# "the most" is a superlative, "nearly all" and "all of" are not simple to edit
_QUANTIFIER = re.compile(
    r"(?<!\bthe )(?<!\bnearly )(?<!\balmost )\b(" + "|".join(_QUANTIFIERS) + r")\b(?! of\b)",
    re.IGNORECASE,
)
_LONG_WINDOW = 420  # characters: the runtime's premise is three short sentences


def negate(sentence: str) -> str | None:
    """The sentence with its first auxiliary negated, or its negation removed."""
    hit = _NEGATED.search(sentence)
    if hit is not None:
        aux = hit.group(1) or hit.group(2)
        return sentence[: hit.start()] + aux + sentence[hit.end() :]
    hit = _AUX_WORD.search(sentence)
    if hit is None or hit.start() == 0:
        return None
    return sentence[: hit.end()] + " not" + sentence[hit.end() :]


def swap_names(sentence: str) -> str | None:
    """The sentence with its first two distinct names swapped (each must occur once)."""
    names = [m for m in _NAME.finditer(sentence) if m.start() > 0]
    seen: dict[str, re.Match[str]] = {}
    for m in names:
        seen.setdefault(m.group(0), m)
    picked = [m for m in seen.values() if sentence.count(m.group(0)) == 1][:2]
    if len(picked) < 2 or picked[0].group(0) in picked[1].group(0):
        return None
    a, b = picked
    return (
        sentence[: a.start()]
        + b.group(0)
        + sentence[a.end() : b.start()]
        + a.group(0)
        + sentence[b.end() :]
    )


def _number_words(value: int, text: str) -> str:
    from num2words import num2words

    # a four-digit number without a comma reads as a year ("eighteen eighty-nine")
    if 1100 <= value <= 2099 and "," not in text:
        return str(num2words(value, to="year"))
    return str(num2words(value))


def _other_number(value: int, rng: random.Random) -> int:
    if 1100 <= value <= 2099:
        return value + rng.choice([-11, -10, -3, -1, 1, 2, 10, 20])
    return (
        max(0, value + rng.choice([-2, -1, 1, 2, 3]))
        if value < 20
        else (value * rng.choice([2, 3]) if rng.random() < 0.5 else value + rng.randint(1, 9))
    )


def change_quantifier(sentence: str, rng: random.Random) -> tuple[str, int] | None:
    """The sentence with its first quantifier replaced, and the label of the new claim."""
    hit = _QUANTIFIER.search(sentence)
    if hit is None:
        return None
    word = hit.group(1)
    new, label = rng.choice(_QUANTIFIERS[word.lower()])
    if word[0].isupper():
        new = new.capitalize()
    return sentence[: hit.start()] + new + sentence[hit.end() :], label


def _quad(window: list[str], i: int, edited: str, label: int, kind: str) -> list[data.NLIExample]:
    premise = " ".join(window)
    edited_premise = " ".join([*window[:i], edited, *window[i + 1 :]])
    sentence = window[i]
    return [
        data.NLIExample(premise, sentence, 0, f"minimal_{kind}"),
        data.NLIExample(premise, edited, label, f"minimal_{kind}"),
        data.NLIExample(edited_premise, edited, 0, f"minimal_{kind}"),
        data.NLIExample(edited_premise, sentence, label, f"minimal_{kind}"),
    ]


def _numbers(window: list[str], i: int, rng: random.Random) -> list[data.NLIExample]:
    sentence = window[i]
    hits = list(_NUMBER.finditer(sentence))
    if not hits:
        return []
    hit = rng.choice(hits)
    text = hit.group(1)
    value = int(text.replace(",", ""))
    other = _other_number(value, rng)
    if other == value:
        return []

    def put(new: str) -> str:
        return sentence[: hit.start()] + new + sentence[hit.end() :]

    out = _quad(window, i, put(str(other)), 2, "number")
    premise = " ".join(window)
    # restatements in words: the right one is entailed, a wrong one contradicts
    out.append(data.NLIExample(premise, put(_number_words(value, text)), 0, "minimal_number"))
    out.append(data.NLIExample(premise, put(_number_words(other, text)), 2, "minimal_number"))
    return out


def _edits(
    rng: random.Random,
) -> list[tuple[str, Callable[[list[str], int], list[data.NLIExample]]]]:
    def negation(window: list[str], i: int) -> list[data.NLIExample]:
        edited = negate(window[i])
        return _quad(window, i, edited, 2, "negation") if edited else []

    def swap(window: list[str], i: int) -> list[data.NLIExample]:
        edited = swap_names(window[i])
        return _quad(window, i, edited, 1, "swap") if edited else []

    def quantifier(window: list[str], i: int) -> list[data.NLIExample]:
        done = change_quantifier(window[i], rng)
        return _quad(window, i, done[0], done[1], "quantifier") if done else []

    def number(window: list[str], i: int) -> list[data.NLIExample]:
        return _numbers(window, i, rng)

    return [("negation", negation), ("swap", swap), ("number", number), ("quantifier", quantifier)]


def _windows(rng: random.Random) -> Iterator[tuple[str, list[str], int]]:
    """(context key, window, index of the edited sentence in it) over train contexts."""
    for raw, _question in data.halueval_contexts("train"):
        sents = [s.strip() for s in raw if s.strip()]
        if not sents:
            continue
        key = hashlib.sha256(sents[0].encode()).hexdigest()
        for i, sentence in enumerate(sents):
            if len(sentence.split()) < 6 or len(sentence) > 300:
                continue
            lo = max(0, i - rng.randint(0, 1))
            window = sents[lo : i + 1 + rng.randint(0, 1)]
            if len(" ".join(window)) > _LONG_WINDOW:
                window, lo = [sentence], i
            yield key, window, i - lo


def minimal_pairs(
    rng: random.Random, per_kind: int, heldout_share: float = 0.05
) -> tuple[list[data.NLIExample], list[data.NLIExample]]:
    """(train, held out) minimal pairs: at most ``per_kind`` edits of each kind."""
    edits = _edits(rng)
    done: Counter[str] = Counter()
    train: list[data.NLIExample] = []
    heldout: list[data.NLIExample] = []
    for key, window, i in _windows(rng):
        name, edit = edits[rng.randrange(len(edits))]
        if done[name] >= per_kind:
            if all(done[n] >= per_kind for n, _ in edits):
                break
            continue
        pairs = edit(window, i)
        if not pairs:
            continue
        done[name] += 1
        part = heldout if int(key[:8], 16) / 0xFFFFFFFF < heldout_share else train
        part.extend(pairs)
    return train, heldout


def main() -> None:
    train, heldout = minimal_pairs(random.Random(49), 2000)
    print("train", len(train), "held out", len(heldout))
    print(Counter((e.source, data.NLI_LABELS[e.label]) for e in train))
    rng = random.Random(1)
    for e in rng.sample(train, 12):
        label = data.NLI_LABELS[e.label]
        print(f"[{label}/{e.source}] P: {e.premise[:160]!r}\n   H: {e.hypothesis!r}")


if __name__ == "__main__":
    main()
