"""Evidence selection: which context sentences an answer unit is judged against.

Instead of scanning every window of a long context, the answer is cut into units (one
or a few consecutive sentences) and each unit is paired with the context sentences most
relevant to it, ranked by BM25 over the context's own sentences: each sentence of the
unit is a query of its own and their rankings take turns, so every answer sentence gets
its best evidence. The detector then reads ``[CLS] question + evidence [SEP] unit
[SEP]``, one short row per unit.

Three properties follow from how it is built, and tests pin them:

* **Order does not matter.** Scores depend only on the text (IDF is computed over the
  set of sentences), ties are broken by the text itself, and the chosen sentences are
  written passage by passage in an order fixed by their scores, so shuffling passages
  gives the same rows.
* **Cost grows with the answer.** Ranking is a pass over an inverted index; the model
  sees a fixed evidence budget per unit, however long the context is.
* **Evidence combines.** A unit's evidence is the best sentences from anywhere in the
  context, so facts stated far apart are read side by side.

Everything here is pure Python over a tokenizer's token counts; no model runs.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..._text import STOP_WORDS, AnswerText, split_sentences, words

__all__ = [
    "ContextIndex",
    "EvidenceRow",
    "answer_units",
    "evidence_prompt",
    "fill_budget",
    "plan_rows",
    "split_sentences",
]

# Very long "sentences" (tables, JSON, lists without full stops) are cut into pieces of
# this many words so that one of them cannot take the whole evidence budget.
_MAX_SENTENCE_WORDS = 48
_PIECE_OVERLAP_WORDS = 8
_K1 = 1.2
_B = 0.75
# Candidates looked at per unit; later ones share too little with it to matter.
_CANDIDATES = 48

CountMany = Callable[[list[str]], list[int]]
"""Token counts of several texts (the detector's tokenizer, no special tokens)."""


@dataclass(frozen=True)
class _Sentence:
    passage: int
    index: int  # position inside its passage
    start: int
    end: int
    text: str
    terms: Counter[str]


@dataclass(frozen=True)
class EvidenceRow:
    """One detector row: the evidence prompt and the answer unit it judges.

    Attributes:
        prompt: The text before the answer unit (question and evidence sentences).
        start: Character offset of the unit in the answer.
        end: End offset of the unit in the answer.
        sentences: How many context sentences the prompt holds.
    """

    prompt: str
    start: int
    end: int
    sentences: int


def _terms(text: str) -> list[str]:
    """Lower-cased content words, with a light plural strip so 'towers' meets 'tower'."""
    # "ends in s but not in ss" as index tests: this runs on every word of the context
    return [
        w[:-1] if len(w) > 3 and w[-1] == "s" and w[-2] != "s" else w
        for w in words(text)
        if w not in STOP_WORDS
    ]


def _pieces(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Cut an over-long sentence into overlapping word windows."""
    # Nearly every sentence is short enough: counting its words is cheaper than locating
    # them, and a 20,000-token context has about a thousand sentences to index per call.
    if len(text[start:end].split()) <= _MAX_SENTENCE_WORDS:
        return [(start, end)]
    words = [(m.start() + start, m.end() + start) for m in re.finditer(r"\S+", text[start:end])]
    step = _MAX_SENTENCE_WORDS - _PIECE_OVERLAP_WORDS
    out = []
    for first in range(0, len(words), step):
        last = min(first + _MAX_SENTENCE_WORDS, len(words))
        out.append((words[first][0], words[last - 1][1]))
        if last == len(words):
            break
    return out


class ContextIndex:
    """The context's sentences with a BM25 index over their terms.

    Args:
        passages: The context passages, in any order.
    """

    def __init__(self, passages: Sequence[str]) -> None:
        sentences: list[_Sentence] = []
        lengths: list[int] = []
        postings: dict[str, list[int]] = defaultdict(list)
        for p, passage in enumerate(passages):
            index = 0
            for a, b in split_sentences(passage):
                for s, e in _pieces(passage, a, b):
                    text = passage[s:e]
                    terms = _terms(text)
                    counts = Counter(terms)
                    for term in counts:
                        postings[term].append(len(sentences))
                    sentences.append(_Sentence(p, index, s, e, text, counts))
                    lengths.append(len(terms))
                    index += 1
        self.passages = list(passages)
        self.sentences = sentences
        self._postings = postings
        n = max(len(sentences), 1)
        self._idf = {
            t: math.log(1.0 + (n - len(ids) + 0.5) / (len(ids) + 0.5))
            for t, ids in postings.items()
        }
        self._lengths = lengths
        self._avg_len = sum(self._lengths) / n or 1.0
        self._counts: dict[int, int] = {}

    def token_counts(self, ids: Sequence[int], count_many: CountMany) -> list[int]:
        """Token counts of some sentences, computed once per sentence in one batch."""
        missing = [i for i in dict.fromkeys(ids) if i not in self._counts]
        if missing:
            counts = count_many([self.sentences[i].text for i in missing])
            self._counts.update(zip(missing, counts, strict=True))
        return [self._counts[i] for i in ids]

    def rank(self, query: dict[str, float]) -> list[tuple[float, int]]:
        """``(score, sentence id)`` of every sentence sharing a term with ``query``, best first.

        Ties are broken by the sentence text and then its passage text, never by position,
        so the ranking is the same for any order of the passages.
        """
        scores: dict[int, float] = defaultdict(float)
        for term, weight in query.items():
            idf = self._idf.get(term)
            if idf is None:
                continue
            for i in self._postings[term]:
                tf = self.sentences[i].terms[term]
                norm = tf + _K1 * (1 - _B + _B * self._lengths[i] / self._avg_len)
                scores[i] += weight * idf * tf * (_K1 + 1) / norm
        return sorted(
            ((score, i) for i, score in scores.items()),
            key=lambda item: (
                -item[0],
                self.sentences[item[1]].text,
                self.passages[self.sentences[item[1]].passage],
            ),
        )

    def neighbour(self, i: int, delta: int) -> int | None:
        """The sentence ``delta`` places away inside the same passage, if any."""
        j = i + delta
        if 0 <= j < len(self.sentences) and self.sentences[j].passage == self.sentences[i].passage:
            return j
        return None

    def render(self, chosen: dict[int, float]) -> list[str]:
        """The chosen sentences as evidence lines, one line per passage.

        Passages come best first (by their best sentence's score, ties by text); inside a
        passage sentences keep their order, and a gap between them is marked with "...".
        """
        by_passage: dict[int, list[int]] = defaultdict(list)
        for i in chosen:
            by_passage[self.sentences[i].passage].append(i)
        order = sorted(
            by_passage,
            key=lambda p: (-max(chosen[i] for i in by_passage[p]), self.passages[p]),
        )
        lines = []
        for p in order:
            ids = sorted(by_passage[p], key=lambda i: self.sentences[i].index)
            parts: list[str] = []
            previous: int | None = None
            for i in ids:
                if (
                    previous is not None
                    and self.sentences[i].index != self.sentences[previous].index + 1
                ):
                    parts.append("...")
                parts.append(self.sentences[i].text)
                previous = i
            lines.append(" ".join(parts))
        return lines


def _query(sentence: str, question: str | None, previous: str | None) -> dict[str, float]:
    # The sentence's own words count fully; the question and the previous sentence help to find
    # what a pronoun or an elided subject refers to, at a lower weight.
    query: dict[str, float] = defaultdict(float)
    for text, weight in ((sentence, 1.0), (question or "", 0.3), (previous or "", 0.3)):
        for term in _terms(text):
            query[term] = max(query[term], weight)
    return dict(query)


def answer_units(
    answer: str | AnswerText, count: Callable[[str], int], unit_tokens: int
) -> list[tuple[int, int]]:
    """Character ranges of the answer's units: consecutive sentences up to ``unit_tokens``.

    A sentence longer than the budget is a unit of its own and is cut at word boundaries
    into pieces of at most ``unit_tokens`` tokens.
    """
    text = AnswerText.of(answer)
    answer = text.text
    units: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    current_tokens = 0
    for start, end in text.sentences:
        n = count(answer[start:end])
        if n > unit_tokens:
            if current is not None:
                units.append(current)
                current, current_tokens = None, 0
            units.extend(_cut_long(answer, start, end, count, unit_tokens))
            continue
        if current is not None and current_tokens + n <= unit_tokens:
            current = (current[0], end)
            current_tokens += n
        else:
            if current is not None:
                units.append(current)
            current, current_tokens = (start, end), n
    if current is not None:
        units.append(current)
    return units


def _cut_long(
    answer: str, start: int, end: int, count: Callable[[str], int], unit_tokens: int
) -> list[tuple[int, int]]:
    words = [(m.start() + start, m.end() + start) for m in re.finditer(r"\S+", answer[start:end])]
    out = []
    first = 0
    while first < len(words):
        last = first + 1
        while last < len(words) and count(answer[words[first][0] : words[last][1]]) <= unit_tokens:
            last += 1
        out.append((words[first][0], words[last - 1][1]))
        first = last
    return out


def evidence_prompt(question: str | None, lines: Sequence[str]) -> str:
    """The text before the answer unit: the question (if any), then the evidence lines."""
    head = f"question: {question}\n" if question else ""
    return head + "\n".join(lines)


def plan_rows(
    index: ContextIndex,
    question: str | None,
    answer: str | AnswerText,
    *,
    count_many: CountMany,
    unit_tokens: int,
    evidence_tokens: int,
) -> list[EvidenceRow]:
    """One row per answer unit, each with the best evidence that fits ``evidence_tokens``.

    Args:
        index: The context, indexed.
        question: The question, or ``None``.
        answer: The answer to check.
        count_many: Token counts of texts (the detector's tokenizer, no special tokens).
        unit_tokens: Most tokens per answer unit.
        evidence_tokens: Token budget of the evidence (question included) per row.

    Returns:
        The rows in answer order; their units cover every sentence of the answer.
    """

    def count(text: str) -> int:
        return count_many([text])[0]

    rows = []
    previous: str | None = None
    question = _clip_question(question, count, evidence_tokens // 2)
    budget = evidence_tokens - (count(f"question: {question}") + 1 if question else 0)
    text = AnswerText.of(answer)
    for start, end in answer_units(text, count, unit_tokens):
        queries = []
        for a, b in _sentences_within(text, start, end):
            queries.append(_query(text.text[a:b], question, previous))
            previous = text.text[a:b]
        chosen = _choose(index, queries, count_many, max(budget, 16))
        rows.append(
            EvidenceRow(
                prompt=evidence_prompt(question, index.render(chosen)),
                start=start,
                end=end,
                sentences=len(chosen),
            )
        )
    return rows


def _sentences_within(text: AnswerText, start: int, end: int) -> list[tuple[int, int]]:
    """The answer's sentences inside the unit ``[start, end)``, cut to it.

    A unit is whole sentences, or a piece of a sentence too long for one unit (cut at
    white space, with no sentence end inside): its sentences are the answer's, read from
    its one split, not split again.
    """
    inside = [(max(a, start), min(b, end)) for a, b in text.sentences if a < end and b > start]
    return inside or [(start, end)]


def _clip_question(question: str | None, count: Callable[[str], int], limit: int) -> str | None:
    """The question cut to its last words that fit ``limit`` tokens.

    A long question (a whole dialogue history, several questions joined) would otherwise
    leave no room for evidence and push the row past the model's window. Its end is kept:
    the latest turn is the one the answer replies to.
    """
    if not question or count(f"question: {question}") <= limit:
        return question
    tokens = question.split()
    low, high = 0, len(tokens)  # the smallest cut (words dropped from the start) that fits
    while low < high:
        middle = (low + high) // 2
        if count("question: " + " ".join(tokens[middle:])) <= limit:
            high = middle
        else:
            low = middle + 1
    return " ".join(tokens[low:]) or None


def _interleave(rankings: Sequence[list[tuple[float, int]]]) -> list[tuple[float, int]]:
    """The rankings taken in turns (each one's best, then each one's second, ...), once each.

    A unit of several sentences then gets the best evidence of every sentence before the
    second best of any: one query for the whole unit would rank first the context
    sentences that share words with most of it, and a sentence about something else could
    be left with no evidence at all.
    """
    merged: list[tuple[float, int]] = []
    seen: set[int] = set()
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking) and ranking[rank][1] not in seen:
                seen.add(ranking[rank][1])
                merged.append(ranking[rank])
    return merged


def _choose(
    index: ContextIndex,
    queries: Sequence[dict[str, float]],
    count_many: CountMany,
    budget: int,
) -> dict[int, float]:
    """Best sentences that fit the budget, then the sentence before each (for its subject).

    ``queries`` holds one query per sentence of the unit; their rankings take turns.
    """
    ranked = _interleave([index.rank(query)[:_CANDIDATES] for query in queries])
    if not ranked:
        # Nothing shares a word with the unit: show the start of the context, so the
        # model judges against something real instead of an empty prompt.
        ranked = [(0.0, i) for i in range(min(len(index.sentences), 8))]
    return fill_budget(index, ranked, count_many, budget)


def fill_budget(
    index: ContextIndex,
    ranked: Sequence[tuple[float, int]],
    count_many: CountMany,
    budget: int,
) -> dict[int, float]:
    """The ranked sentences, best first, that fit ``budget``, then the sentence before each.

    Args:
        index: The context, indexed.
        ranked: ``(score, sentence id)`` pairs, best first.
        count_many: Token counts of texts.
        budget: Most tokens of evidence (one more per sentence for its separator).

    Returns:
        The chosen sentence ids with their scores (half its follower's for a sentence
        added only because it comes before a chosen one).
    """
    ids = [i for _, i in ranked]
    before = [index.neighbour(i, -1) for i in ids]
    counts = dict(
        zip(
            ids + [j for j in before if j is not None],
            index.token_counts(ids + [j for j in before if j is not None], count_many),
            strict=True,
        )
    )
    chosen: dict[int, float] = {}
    used = 0
    for score, i in ranked:
        cost = counts[i] + 1
        if used + cost <= budget:
            chosen[i] = score
            used += cost
    for i, j in zip(ids, before, strict=True):
        if i not in chosen or j is None or j in chosen:
            continue
        cost = counts[j] + 1
        if used + cost <= budget:
            chosen[j] = chosen[i] * 0.5
            used += cost
    return chosen
