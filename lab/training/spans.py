"""Synthetic span-level examples with exact character labels.

Every generator returns an answer string and the character spans of the text it
changed or added, so ``answer[start:end]`` is exactly the unsupported text. Clean
paraphrase-like edits return no spans. All randomness comes from the ``random.Random``
passed in, so the data is reproducible from the training seed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

Span = tuple[int, int]

_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w])")
_YEAR = re.compile(r"^(1[5-9]\d\d|20[0-4]\d)$")
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_UNITS = {
    "meters": "feet",
    "feet": "meters",
    "metres": "feet",
    "kilometers": "miles",
    "miles": "kilometers",
    "kilometres": "miles",
    "kilograms": "pounds",
    "pounds": "kilograms",
    "million": "billion",
    "billion": "million",
    "thousand": "million",
    "percent": "times",
    "hours": "minutes",
    "minutes": "hours",
    "days": "weeks",
    "weeks": "months",
    "months": "years",
    "years": "months",
    "dollars": "euros",
    "euros": "dollars",
    "centuries": "decades",
    "decades": "centuries",
    "inches": "centimeters",
    "tons": "kilograms",
    "acres": "hectares",
    "square miles": "square kilometers",
}
_UNIT_RE = re.compile(
    r"\b(" + "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True)) + r")\b"
)
_AUX = re.compile(r"\b(is|are|was|were|can|will|could|would|should|has been|have been|had been)\b")
_NEG = re.compile(
    r"\b(is|are|was|were|can|will|could|would|should|did|does|do|has|have|had)( not|n't)\b"
)
_ENTITY = re.compile(r"\b[A-Z][a-zA-Z'\-]+(?:\s+(?:of|the|de|and|van|von)?\s*[A-Z][a-zA-Z'\-]+)*")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])|(?<=[a-z0-9][.!?])(?=[A-Z][a-z])")
_APPROX = ["roughly", "about", "approximately", "around", "nearly", "almost"]
_SAFE_APPROX = {"roughly", "about", "approximately", "around"}
_ENTITY_STOP = {
    "The",
    "A",
    "An",
    "In",
    "On",
    "At",
    "It",
    "He",
    "She",
    "They",
    "We",
    "I",
    "This",
    "That",
    "His",
    "Her",
    "Their",
    "Its",
    "But",
    "And",
    "Or",
    "As",
    "After",
    "Before",
    "When",
    "While",
    "There",
    "These",
    "Those",
    "For",
    "By",
    "With",
    "From",
    "If",
    "Yes",
    "No",
    "Mr",
    "Mrs",
}


@dataclass
class SpanExample:
    """One detector training example: context, question, answer, unsupported spans."""

    context: list[str]
    question: str | None
    answer: str
    spans: list[Span] = field(default_factory=list)
    kind: str = "clean"


def split_sentences(text: str) -> list[str]:
    """Split text into sentences (also where HaluEval glued sentences without a space)."""
    return [s.strip() for s in _SENT_SPLIT.split(text) if s and s.strip()]


def _format_like(value: float, template: str, decimals: str | None) -> str:
    if decimals:
        return f"{value:.{len(decimals) - 1}f}"
    as_int = round(value)
    return f"{as_int:,}" if "," in template else str(as_int)


def change_number(sentence: str, rng: random.Random) -> tuple[str, list[Span]] | None:
    """Replace one number (a year shifts by a few years) with a different value."""
    matches = list(_NUMBER.finditer(sentence))
    if not matches:
        return None
    m = rng.choice(matches)
    whole, decimals = m.group(1), m.group(2)
    value = float(whole.replace(",", "") + (decimals or ""))
    if _YEAR.match(whole) and not decimals:
        new = str(int(value) + rng.choice([-1, 1]) * rng.randint(1, 40))
    else:
        factor = rng.choice([0.5, 0.7, 1.3, 1.5, 2, 3, 10])
        new_value = value * factor if value >= 10 else value + rng.randint(1, 9)
        new = _format_like(new_value, whole, decimals)
    if new == m.group(0):
        return None
    out = sentence[: m.start()] + new + sentence[m.end() :]
    return out, [(m.start(), m.start() + len(new))]


def change_month(sentence: str, rng: random.Random) -> tuple[str, list[Span]] | None:
    """Swap a month name for another month."""
    found = list(re.finditer(r"\b(" + "|".join(_MONTHS) + r")\b", sentence))
    if not found:
        return None
    m = rng.choice(found)
    new = rng.choice([x for x in _MONTHS if x != m.group(0)])
    return sentence[: m.start()] + new + sentence[m.end() :], [(m.start(), m.start() + len(new))]


def change_unit(sentence: str, rng: random.Random) -> tuple[str, list[Span]] | None:
    """Swap a unit or magnitude word (meters to feet, million to billion)."""
    found = list(_UNIT_RE.finditer(sentence))
    if not found:
        return None
    m = rng.choice(found)
    new = _UNITS[m.group(0)]
    return sentence[: m.start()] + new + sentence[m.end() :], [(m.start(), m.start() + len(new))]


def entities(text: str) -> list[str]:
    """Capitalised name-like phrases in a text, without leading function words."""
    out: list[str] = []
    for m in _ENTITY.finditer(text):
        words = m.group(0).split()
        while words and words[0] in _ENTITY_STOP:
            words = words[1:]
        name = " ".join(words)
        if len(name) >= 3 and name not in out:
            out.append(name)
    return out


def swap_entity(
    sentence: str, pool: list[str], rng: random.Random
) -> tuple[str, list[Span]] | None:
    """Replace a name in the sentence with another name taken from the pool (the context)."""
    here = [e for e in entities(sentence) if e in sentence]
    if not here:
        return None
    target = rng.choice(here)
    options = [
        e for e in pool if e != target and e not in target and target not in e and e not in sentence
    ]
    if not options:
        return None
    new = rng.choice(options)
    start = sentence.index(target)
    out = sentence[:start] + new + sentence[start + len(target) :]
    return out, [(start, start + len(new))]


def flip_negation(sentence: str, rng: random.Random) -> tuple[str, list[Span]] | None:
    """Remove a negation (marking the verb) or add one (marking ``not``)."""
    neg = _NEG.search(sentence)
    if neg:
        out = sentence[: neg.end(1)] + sentence[neg.end() :]
        return out, [(neg.start(1), neg.end(1))]
    found = list(_AUX.finditer(sentence))
    if not found:
        return None
    m = rng.choice(found)
    aux = m.group(0)
    if " " in aux:  # "has been" -> "has not been"
        head, tail = aux.split(" ", 1)
        out = sentence[: m.start()] + f"{head} not {tail}" + sentence[m.end() :]
        pos = m.start() + len(head) + 1
        return out, [(pos, pos + 3)]
    out = sentence[: m.end()] + " not" + sentence[m.end() :]
    return out, [(m.end() + 1, m.end() + 4)]


def paraphrase(sentence: str, rng: random.Random) -> str:
    """Meaning-preserving surface edits; the result is a clean (unlabelled) answer."""
    out = sentence

    def approx(m: re.Match[str]) -> str:
        word = m.group(0)
        new = rng.choice(sorted(_SAFE_APPROX - {word.lower()}))
        return new.capitalize() if word[0].isupper() else new

    out = re.sub(r"\b(?:[Rr]oughly|[Aa]pproximately|[Aa]round)\b", approx, out)

    def fmt(m: re.Match[str]) -> str:
        whole, dec = m.group(1), m.group(2) or ""
        if _YEAR.match(whole) or dec:
            return m.group(0)
        if "," in whole:
            return whole.replace(",", "") + dec
        if len(whole) >= 4 and whole[0] != "0":
            return f"{int(whole):,}"
        return m.group(0)

    if rng.random() < 0.7:
        out = _NUMBER.sub(fmt, out)
    swaps = [
        (r"\bper cent\b", "percent"),
        (r"\bpercent\b", "per cent"),
        (r"\bdo not\b", "don't"),
        (r"\bdoes not\b", "doesn't"),
        (r"\bis not\b", "isn't"),
        (r"\bdid not\b", "didn't"),
        (r"\bIt is\b", "It's"),
        (r"\bcannot\b", "can't"),
        (r"\bUnited States\b", "US"),
        (r"\bhowever\b", "but"),
        (r"\bapproximately\b", "about"),
        (r"\bpurchased\b", "bought"),
        (r"\bcommenced\b", "began"),
        (r"\bnumerous\b", "many"),
        (r"\bassist\b", "help"),
    ]
    for pattern, repl in swaps:
        if rng.random() < 0.6:
            out = re.sub(pattern, repl, out)
    if rng.random() < 0.3:
        out = re.sub(r"\s*\([^()]{1,80}\)", "", out)  # dropping a parenthesis omits, never adds
    return out


PERTURBATIONS = ("number", "month", "unit", "entity", "negation")


def perturb_sentence(
    sentence: str, kind: str, pool: list[str], rng: random.Random
) -> tuple[str, list[Span]] | None:
    """Apply one named perturbation; ``None`` when the sentence offers nothing to change."""
    if kind == "number":
        return change_number(sentence, rng)
    if kind == "month":
        return change_month(sentence, rng)
    if kind == "unit":
        return change_unit(sentence, rng)
    if kind == "entity":
        return swap_entity(sentence, pool, rng)
    if kind == "negation":
        return flip_negation(sentence, rng)
    raise ValueError(kind)


def first_perturbation(
    sentence: str, order: list[str], pool: list[str], rng: random.Random
) -> tuple[tuple[str, list[Span]], str] | None:
    """The first perturbation in ``order`` that applies to ``sentence``, with its name."""
    for name in order:
        done = perturb_sentence(sentence, name, pool, rng)
        if done is not None:
            return done, name
    return None


def join_sentences(parts: list[tuple[str, list[Span]]]) -> tuple[str, list[Span]]:
    """Join sentences with spaces, shifting each sentence's spans to answer offsets."""
    text = ""
    spans: list[Span] = []
    for sentence, local in parts:
        if text:
            text += " "
        base = len(text)
        text += sentence
        spans.extend((base + s, base + e) for s, e in local)
    return text, spans


def synthesize(
    context_sentences: list[str],
    question: str | None,
    other_sentences: list[str],
    rng: random.Random,
) -> SpanExample | None:
    """Build one synthetic answer from a context, with exact labels.

    The answer copies (or lightly paraphrases) 1-3 context sentences; then, by chance,
    one of them is perturbed (number, date, unit, entity, negation), a sentence held
    out of the context is added (on-topic but unsupported), a sentence from another
    document is added, or nothing is changed (a clean negative).
    """
    if len(context_sentences) < 2:
        return None
    n = min(len(context_sentences), rng.choice([1, 1, 2, 2, 3]))
    start = rng.randrange(0, len(context_sentences) - n + 1)
    chosen = context_sentences[start : start + n]
    context = list(context_sentences)
    pool = entities(" ".join(context_sentences))
    parts: list[tuple[str, list[Span]]] = [(paraphrase(s, rng), []) for s in chosen]
    roll = rng.random()
    kind = "clean"
    if roll < 0.45:
        order = list(PERTURBATIONS)
        rng.shuffle(order)
        idx = rng.randrange(len(parts))
        found = first_perturbation(parts[idx][0], order, pool, rng)
        if found is not None:
            parts[idx], kind = found
    elif roll < 0.6:
        # An on-topic sentence removed from the context becomes an unsupported addition.
        rest = [i for i in range(len(context_sentences)) if not start <= i < start + n]
        if rest:
            drop = rng.choice(rest)
            added = context_sentences[drop]
            context = [s for i, s in enumerate(context_sentences) if i != drop]
            parts.insert(rng.randint(0, len(parts)), (added, [(0, len(added))]))
            kind = "added"
    elif roll < 0.72 and other_sentences:
        added = rng.choice(other_sentences)
        parts.insert(rng.randint(0, len(parts)), (added, [(0, len(added))]))
        kind = "borrowed"
    answer, spans = join_sentences(parts)
    return SpanExample([" ".join(context)], question, answer, spans, kind)


def synthesize_long(
    context_sentences: list[str],
    question: str | None,
    other_sentences: list[str],
    rng: random.Random,
) -> SpanExample | None:
    """A long, mostly faithful answer (4-7 sentences) with 0-2 planted errors.

    RAG answers and summaries are paragraphs that restate many context sentences; a
    detector trained only on one-sentence answers learns that length itself is
    suspicious. Here the sentences are drawn in context order (not always adjacent),
    lightly paraphrased, and about half of the answers stay clean. Errors are the same
    kinds as :func:`synthesize` (perturbations, on-topic sentences removed from the
    context, sentences borrowed from another document), each labelled exactly.
    """
    if len(context_sentences) < 5:
        return None
    n = min(len(context_sentences) - 1, rng.randint(4, 7))
    picked = sorted(rng.sample(range(len(context_sentences)), n))
    context = list(context_sentences)
    pool = entities(" ".join(context_sentences))
    parts: list[tuple[str, list[Span]]] = [(paraphrase(context[i], rng), []) for i in picked]
    kinds: list[str] = []
    for _ in range(rng.choice([0, 0, 0, 1, 1, 2])):
        roll = rng.random()
        if roll < 0.6:
            idx = rng.randrange(len(parts))
            if parts[idx][1]:
                continue  # one planted error per sentence keeps the labels exact
            order = list(PERTURBATIONS)
            rng.shuffle(order)
            found = first_perturbation(parts[idx][0], order, pool, rng)
            if found is not None:
                parts[idx] = found[0]
                kinds.append(found[1])
        elif roll < 0.8:
            unused = [i for i in range(len(context)) if i not in picked]
            if not unused:
                continue
            drop = rng.choice(unused)
            added = context[drop]
            if context.count(added) > 1:
                continue  # a repeated sentence would stay supported by its twin
            context = [s for i, s in enumerate(context) if i != drop]
            picked = [i - (i > drop) for i in picked]
            parts.insert(rng.randint(0, len(parts)), (added, [(0, len(added))]))
            kinds.append("added")
        elif other_sentences:
            added = rng.choice(other_sentences)
            parts.insert(rng.randint(0, len(parts)), (added, [(0, len(added))]))
            kinds.append("borrowed")
    answer, spans = join_sentences(parts)
    kind = "long_" + ("+".join(kinds) if kinds else "clean")
    return SpanExample([" ".join(context)], question, answer, spans, kind)
