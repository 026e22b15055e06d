"""Explicit checks that adjust token probabilities where a rule knows better than the model.

Three things the encoder reads badly and a rule reads well:

* **Numbers.** A small encoder sees "opened in 1932" and "opened in 1995" as near
  paraphrases. A number in the answer that occurs (by value: "2,400" = "2400", "three" =
  "3") anywhere in the context is most likely copied, so its tokens are made less
  suspicious; one that does not occur while the context has a comparable one (both years,
  the same unit word, or a unit of the same dimension: "4.2 miles" against "4.2 km") most
  likely contradicts it, so its tokens are raised; one in digits with nothing comparable
  is raised less (it may be computed, e.g. a duration). A clock time ("9 PM", a record's
  "21:0") is one number, a time of day, compared with times of day only.
* **Abstentions.** "The provided information does not mention who the CEO is." claims
  nothing about the world. A sentence that says the sources lack the answer, and whose
  other content words come from the question or the context (one other word allowed), is
  not flagged.
* **Negation.** "The bowls are dishwasher safe." against "The bowls are not dishwasher
  safe." differs by one word the encoder barely weighs. An answer sentence whose content
  words nearly all occur in one context sentence is compared with it (and with every
  other such sentence) for negation: when all of them disagree, the answer's negation
  word, or the words the context negates, are raised; when one agrees, the answer's
  negation word is made less suspicious (it was copied, not invented). "Not only" and a
  "not" after a comma ("tied to caloric intake, not bowel movements") are contrasts, not
  negations of the claim.

All act on token probabilities before spans and scores are made, so spans, the response
score and the NLI stage stay consistent.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate
from typing import Literal

from ..._calibration._signals import count_conflicts
from ..._quantities import (
    DATE,
    ContextQuantities,
    Quantity,
    QuantityVerdict,
    citations,
    clock_time_spans,
    extract_quantities,
    measure,
)
from ..._text import STOP_WORDS, AnswerText, content_words, split_sentences, words
from ..._types import TokenScore

__all__ = [
    "abstentions",
    "adjust_tokens",
    "conflict_marks",
    "hedge_verdicts",
    "negation_verdicts",
    "rule_conflicts",
    "uncounted_spans",
]

# Odds multiplier for a number found in the context, and floors for numbers that are not.
_PRESENT_ODDS = 0.15
_CONFLICT_FLOOR = 0.85
_UNSEEN_FLOOR = 0.6
_ABSTENTION_CAP = 0.05
# An answer sentence is compared for negation with the context sentences holding at least
# this share of its content words (and at least _MIN_ALIGNED of them).
_ALIGNED_SHARE = 0.8
_MIN_ALIGNED = 3

# "not only / just / merely / simply X but also Y" adds to X; it denies nothing.
_NEGATION = re.compile(
    r"\b(?:no(?:t(?!\s+(?:only|just|merely|simply)\b)|ne|body|thing|r|)|never|neither|"
    r"without|cannot)\b|n[’']t\b",
    re.IGNORECASE,
)
# A "not" right after a comma, dash or semicolon corrects what precedes it ("tied to
# caloric intake, not bowel movements"): a contrast, not a negation of the claim
# (tests/unit/core/models/detection/test_rules.py).
_CONTRAST_BEFORE = re.compile(r"[,;\u2013\u2014-]\s*$")
# A leading "No," answers the question; it says nothing of the sentence's own polarity.
_ANSWER_PARTICLE = re.compile(r"^\s*no\b[,.!]?", re.IGNORECASE)
# A leading "Yes," or "No," answers a yes/no question with the claim that follows it.
_YES_NO = re.compile(r"^\s*(?:yes|no)\b[,.!]?", re.IGNORECASE)
# Words a negation leaves behind once split into words ("isn't" -> "isn", "t").
_NEGATION_WORDS = frozenset(
    """not no never none nobody nothing neither nor without cannot t isn aren wasn weren
    doesn don didn hasn haven hadn won wouldn shouldn couldn can mustn""".split()
)

_ABSTAIN = re.compile(
    r"\b(?:(?:does|do|did|is|are|was|were)\s*n[o']t\s+(?:\w+\s+){0,2}?"
    r"(?:mention|mentioned|specify|specified|say|said|state|stated|indicate|indicated)|"
    r"no (?:information|mention|details?|data|indication)|"
    r"(?:cannot|can't|can not|unable to|could not|couldn't) (?:answer|determine|find|tell|say|"
    r"provide|be determined|be answered)|"
    r"not (?:enough|sufficient) information|insufficient information|"
    r"(?:i'm|i am) sorry|unable to answer)\b",
    re.IGNORECASE,
)
# "is not listed", "is not included", "is not available" say the same of the world as of
# the sources ("Acme is not listed on a stock exchange"): an abstention only when the
# sentence names the sources.
_ABSTAIN_IF_SOURCE = re.compile(
    r"\b(?:does|do|did|is|are|was|were)\s*n[o']t\s+(?:\w+\s+){0,2}?"
    r"(?:provide|provided|include|included|contain|contained|give|given|list|listed|available)\b",
    re.IGNORECASE,
)
_SOURCE = re.compile(
    r"\b(?:information|context|passages?|text|documents?|sources?|articles?|data|records?|"
    r"provided|given|above|excerpts?|snippets?|materials?)\b",
    re.IGNORECASE,
)
# The writer's talk about where the answer comes from ("Based on the provided passages",
# "Here is a concise summary of the passage:", "The passage discusses"): the context never
# holds these words, so without this every framed answer, right or wrong, counted two to
# four absent words for them (tests/unit/core/models/detection/test_rules.py). Only the
# phrase is matched; the claim after it is counted.
_SOURCE_NOUN = (
    r"(?:passages?|context|contexts|documents?|sources?|information|text|texts|excerpts?|"
    r"snippets?|search\s+results?|(?:news\s+)?articles?|stor(?:y|ies)|data|json)"
)
# "report" and "record" stay out: "The report states that sales rose" is a claim about a
# report in the world, and "based on his record" one about a person.
_SOURCE_FRAMING = re.compile(
    r"\b(?:"
    rf"based\s+(?:solely\s+|only\s+|entirely\s+|purely\s+)?on\s+(?:the\s+)?"
    rf"(?:provided\s+|given\s+|above\s+|available\s+|following\s+|retrieved\s+)?{_SOURCE_NOUN}"
    r"(?:\s+(?:provided|given|above))?"
    rf"|according\s+to\s+(?:the\s+)?(?:provided\s+|given\s+|above\s+)?{_SOURCE_NOUN}"
    r"|(?:here\s+is|here's|here\s+are|below\s+is)\s+(?:a\s+|an\s+|my\s+|the\s+)?"
    r"(?:concise\s+|brief\s+|short\s+|quick\s+|possible\s+)?"
    r"(?:summary|answer|overview|response|breakdown)"
    rf"(?:\s+(?:of|to|for)\s+(?:the\s+)?(?:given\s+|provided\s+)?(?:{_SOURCE_NOUN}|question))?"
    rf"|(?:the|this|these)\s+(?:provided\s+|given\s+|above\s+)?{_SOURCE_NOUN}\s+"
    r"(?:discuss(?:es)?|describes?|mentions?|states?|says?|notes?|explains?|indicates?|"
    r"suggests?|covers?|provides?|highlights?|reports?|focus(?:es)?\s+on|details?|"
    r"presents?|outlines?)(?:\s+that)?"
    r"|as\s+(?:noted|mentioned|stated|described)\s+in\s+(?:one|the|another|a)\s+"
    rf"(?:of\s+the\s+)?{_SOURCE_NOUN}"
    r")\b",
    re.IGNORECASE,
)
# A line that only names the kind of text after it ("**Summary:**", "Answer:").
_FRAMING_HEADER = re.compile(
    r"^[ \t>#*_-]*(?:summary|answer|overview|key\s+points|response)[ \t*_]*:[ \t*_]*",
    re.IGNORECASE | re.MULTILINE,
)
# The words that join claims ("However, ...", "Overall, ...", "In summary, ..."): they say
# how the writer links statements, not what is true, and the context rarely holds them
# (tests/unit/core/models/detection/test_rules.py). Only the connective is matched.
_CONNECTIVE = re.compile(
    r"\b(?:however|additionally|furthermore|moreover|overall|notably|importantly|"
    r"consequently|therefore|thus|hence|meanwhile|nevertheless|nonetheless|likewise|"
    r"similarly|finally|firstly|secondly|thirdly|lastly|"
    r"in\s+(?:summary|conclusion|addition|short|general)|for\s+(?:example|instance)|"
    r"on\s+the\s+other\s+hand)\b",
    re.IGNORECASE,
)
_ABSTAIN_WORDS = frozenset(
    """provided information context passage passages text document documents source sources
    mention mentioned mentions specify specified say says said state stated provide give given
    include included contain contained list listed indicate indicated available answer
    question determine find tell sorry unable enough sufficient insufficient details detail
    data indication based unfortunately however therefore regarding about any specific
    exact precise clear clearly explicitly directly name named who what when where which why
    how whom whose there this that these those it its they them their article above below
    cannot can could would should do does did doesn don didn isn aren wasn weren not no nor
    the a an and or but of to in on for with from by as at is are was were be been i i'm am
    so also only just m s t re ve ll d""".split()
)


def _number_verdicts(
    answer: str | AnswerText, context: Sequence[str]
) -> list[tuple[int, int, QuantityVerdict]]:
    """``(start, end, verdict)`` of the digits of every number of the answer."""
    text = AnswerText.of(answer)
    answer = text.text
    found = extract_quantities(answer)
    if not found:
        return []  # no pass over the context
    known = ContextQuantities(context)
    out: list[tuple[int, int, QuantityVerdict]] = []
    for q in found:
        # The verdict is about the digits, and about the unit word too when it is a
        # measurement unit ("4.2 miles" against "4.2 km": the unit is the error). Any other
        # word after a number is scored as it is: it is often not a unit ("420 people" /
        # "420 employees"), and treating it as a conflict lowered held-out AP from 0.781 to
        # 0.748 on held-out train-role answers.
        verdict = known.judge(q, text)
        if verdict == "unseen" and q.unit == DATE:
            continue  # no date in the context: the date's year and day are judged apart
        if verdict == "unseen" and not answer[q.start].isdigit():
            continue  # "the two companies": a count in words is often the answer's own
        out.append((q.start, _marked_end(answer, q, verdict), verdict))
    return out


def _marked_end(answer: str, quantity: Quantity, verdict: QuantityVerdict) -> int:
    """Where a number's mark ends: its unit too when that is a measurement unit.

    A unit glued to a conflicting or unseen number ("32GB") is marked with it: it is one
    word, which scores the mean of its pieces, so an unmarked "GB" halved the conflict
    (tests/unit/core/models/detection/test_rules.py).
    """
    if measure(quantity) is not None:
        return quantity.end
    end = quantity.number_end
    glued = end < len(answer) and answer[end].isalpha()
    return quantity.end if glued and verdict != "present" else end


def _abstains(sentence: str) -> bool:
    return bool(
        _ABSTAIN.search(sentence)
        or (_ABSTAIN_IF_SOURCE.search(sentence) and _SOURCE.search(sentence))
    )


def _known_words(context: Sequence[str], question: str | None) -> set[str]:
    """The lower-cased words of the grounding (context and question)."""
    return {w for text in (*context, question or "") for w in words(text)}


def uncounted_spans(
    answer: str | AnswerText, context: Sequence[str], question: str | None
) -> list[tuple[int, int]]:
    """``(start, end)`` of what the absent-word count leaves out of ``answer``.

    The sentences that only say the sources lack something (:func:`abstentions`: the
    rule leaves their words unflagged), the citations of a source, noun and numbers
    ("(Passage 3)", "[1]": ``_quantities.citations``; they state nothing;
    tests/unit/core/models/detection/test_rules.py), the clock times, which the unit rule
    judges (tests/unit/core/models/detection/test_rules.py), the phrases that say
    where the answer comes from (:func:`source_framing`) and the words that join claims
    (:func:`connectives`; both in tests/unit/core/models/detection/test_rules.py).
    """
    text = AnswerText.of(answer)
    plain = text.text
    return [
        *abstentions(text, context, question),
        *citations(plain),
        *clock_time_spans(plain),
        *source_framing(plain),
        *connectives(plain),
    ]


def connectives(answer: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the discourse connectives of ``answer`` ("However", "In summary")."""
    return [m.span() for m in _CONNECTIVE.finditer(answer)]


def source_framing(answer: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the phrases that say where the answer comes from.

    "Based on the provided passages", "Here is a concise summary of the passage", "This
    passage describes", a "Summary:" header: the writer's talk about the sources, not a
    claim (tests/unit/core/models/detection/test_rules.py).
    """
    found = [m.span() for m in _SOURCE_FRAMING.finditer(answer)]
    found += [m.span() for m in _FRAMING_HEADER.finditer(answer) if m.end() > m.start()]
    return sorted(found)


def abstentions(
    answer: str | AnswerText, context: Sequence[str], question: str | None
) -> list[tuple[int, int]]:
    """``(start, end)`` of the answer's sentences that only say the sources lack something."""
    text = AnswerText.of(answer)
    answer = text.text
    candidates = [
        (start, end)
        for start, end in text.sentences
        if _abstains(answer[start:end]) and not any(ch.isdigit() for ch in answer[start:end])
    ]
    if not candidates:
        return []  # the common case: no pass over a long context
    known = _known_words(context, question)
    out = []
    for start, end in candidates:
        # one unknown word is allowed ("the company", "the firm"); a name that answers the
        # question after all ("..., but it is John Smith") brings more
        said = words(answer[start:end])
        if sum(1 for w in said if w not in _ABSTAIN_WORDS and w not in known) <= 1:
            out.append((start, end))
    return out


def _content(text: str) -> set[str]:
    return content_words(text) - _NEGATION_WORDS


def _negations(sentence: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the negation words of a sentence, a leading "No," left out."""
    particle = _ANSWER_PARTICLE.match(sentence)
    skip = particle.end() if particle else 0
    return [
        m.span()
        for m in _NEGATION.finditer(sentence)
        if m.start() >= skip
        and not (m.group(0).lower() == "not" and _CONTRAST_BEFORE.search(sentence[: m.start()]))
    ]


def _negated_words(sentence: str) -> list[str]:
    """What each negation of a context sentence denies: the first content word after it.

    With the word right after it when that is a content word too (a compound: "not
    dishwasher safe" denies "dishwasher" and "safe"), and none from a passive's agent:
    "was not approved by Amara Osei" denies "approved", and an answer that drops the
    negation ("Amara Osei approved the budget") names her truly. A word further on is
    another phrase: "not familiar with the for-profit college" denies "familiar", not
    "profit" (tests/unit/core/models/detection/test_rules.py).
    """
    out: list[str] = []
    for _, end in _negations(sentence):
        clause = re.split(r"[,;:.!?]|\bby\b", sentence[end:], maxsplit=1)[0]
        found = words(clause)
        first = next((i for i, w in enumerate(found) if w not in STOP_WORDS), None)
        if first is None:
            continue
        out += [w for w in found[first : first + 2] if w not in STOP_WORDS]
    return out


_RUN = re.compile(r"\w+")


def _aligned_sentences(
    context: Sequence[str], wanted: set[str]
) -> list[tuple[str, set[str], bool]]:
    """``(text, content words, negated)`` of the context sentences sharing 3+ of ``wanted``.

    One pass over each passage's words finds the passages that hold enough of them; only
    those are split into sentences (a 20,000-word context costs a few milliseconds, not a
    full analysis). ``wanted`` holds words (letters and digits), so a passage holds one
    exactly when one of its maximal runs of word characters is that word.
    """
    out = []
    for passage in context:
        if len(wanted.intersection(_RUN.findall(passage.lower()))) < _MIN_ALIGNED:
            continue
        for start, end in split_sentences(passage):
            text = passage[start:end]
            content = _content(text)
            if len(content & wanted) >= _MIN_ALIGNED:
                out.append((text, content, bool(_negations(text))))
    return out


def negation_verdicts(
    answer: str | AnswerText, context: Sequence[str]
) -> list[tuple[int, int, Literal["agree", "conflict"]]]:
    """``(start, end, verdict)`` of answer words whose negation the context confirms or denies.

    ``"agree"`` marks a negation word of the answer (and a leading "No,") that an aligned
    context sentence shares; ``"conflict"`` marks a negation word no aligned sentence has,
    or, for an answer sentence without one, the words that every aligned sentence negates.
    """
    split = AnswerText.of(answer)
    answer = split.text
    units = [(start, end, _content(answer[start:end])) for start, end in split.sentences]
    units = [u for u in units if len(u[2]) >= _MIN_ALIGNED]
    if not units:
        return []
    sentences = _aligned_sentences(context, set().union(*(u[2] for u in units)))
    out: list[tuple[int, int, Literal["agree", "conflict"]]] = []
    for start, end, said in units:
        text = answer[start:end]
        need = max(_MIN_ALIGNED, _ALIGNED_SHARE * len(said))
        aligned = [(t, neg) for t, c, neg in sentences if len(said & c) >= need]
        if not aligned:
            continue
        negated = _negations(text)
        if any(neg == bool(negated) for _, neg in aligned):
            particle = _ANSWER_PARTICLE.match(text) if negated else None
            agreed = negated + ([particle.span()] if particle else [])
            out += [(start + a, start + b, "agree") for a, b in agreed]
        elif negated:
            out += [(start + a, start + b, "conflict") for a, b in negated]
        else:
            for word in {w for t, _ in aligned for w in _negated_words(t)}:
                # "does not run" against "runs": the answer's verb agrees with its subject
                form = rf"\b{re.escape(word)}(?:s|es|d|ed|ing)?\b"
                out += [
                    (start + m.start(), start + m.end(), "conflict")
                    for m in re.finditer(form, text, re.IGNORECASE)
                ]
    return out


# Hedges and frame adverbs: they qualify a claim without adding a fact of their own
# ("it is currently 330 meters tall"), yet a small encoder flags them as new words.
_HEDGES = frozenset(
    """currently presently now today still already also mainly mostly largely primarily
    chiefly principally predominantly generally typically usually normally commonly often
    approximately roughly about around nearly almost some overall essentially basically
    notably especially particularly""".split()
)
_HEDGE = re.compile(r"\b(?:" + "|".join(sorted(_HEDGES)) + r")\b", re.IGNORECASE)
# The rest of the sentence must be this well grounded for its hedge to be let through.
_HEDGE_GROUNDED_SHARE = 0.75


def hedge_verdicts(
    answer: str | AnswerText, context: Sequence[str], question: str | None
) -> list[tuple[int, int, Literal["agree"]]]:
    """``(start, end, "agree")`` of hedges in sentences whose other content words are grounded.

    A hedge in a sentence that is mostly new words is left to the model: there the whole
    claim may be invented, hedge and all.
    """
    split = AnswerText.of(answer)
    answer = split.text
    sentences = [(a, b) for a, b in split.sentences if _HEDGE.search(answer[a:b])]
    if not sentences:
        return []  # the common case: no pass over the context
    known = _known_words(context, question)
    out: list[tuple[int, int, Literal["agree"]]] = []
    for start, end in sentences:
        text = answer[start:end]
        others = [w for w in _content(text) if w not in _HEDGES]
        if not others or sum(w in known for w in others) < _HEDGE_GROUNDED_SHARE * len(others):
            continue
        out += [(start + m.start(), start + m.end(), "agree") for m in _HEDGE.finditer(text)]
    return out


# The token stage and the response score read the same answer's verdicts one after the
# other; each read is a pass over the context (6-17 ms at a 20k-token context). Enough
# entries for a large batch, whose tokens are all scored before any response score.
_VERDICT_CACHE = 64


@lru_cache(maxsize=_VERDICT_CACHE)
def _rule_verdicts(
    text: str | AnswerText, context: tuple[str, ...]
) -> tuple[tuple[tuple[int, int, str], ...], tuple[tuple[int, int, str], ...]]:
    """The unit and the negation rule's verdicts on an answer, memoised.

    Only pure functions of the two texts are kept; a benchmark that swaps a rule out
    clears the cache (``_rule_verdicts.cache_clear()``).
    """
    return tuple(_number_verdicts(text, context)), tuple(negation_verdicts(text, context))


def conflict_marks(answer: str | AnswerText, context: Sequence[str]) -> tuple[list[int], list[int]]:
    """Where the unit and negation rules find the answer in conflict with the context.

    Returns:
        ``(numbers, negations)``: the start of each number the unit rule judges a
        conflict, and of each word the negation rule marks in conflict.
    """
    number_verdicts, negations_found = _rule_verdicts(AnswerText.of(answer), tuple(context))
    numbers = [s for s, _, verdict in number_verdicts if verdict == "conflict"]
    negations = [s for s, _, verdict in negations_found if verdict == "conflict"]
    return numbers, negations


def rule_conflicts(answer: str | AnswerText, context: Sequence[str]) -> tuple[int, int]:
    """The unit and negation rules' evidence against an answer, as two counts.

    Returns:
        ``(numbers, sentences)``: how many of the answer's numbers the unit rule finds in
        conflict with the context (absent while a comparable number is there), and how
        many of its sentences the negation rule finds in conflict. Each verdict reads one
        answer sentence against the context, so adding sentences never lowers either count.
    """
    text = AnswerText.of(answer)
    return count_conflicts(text, conflict_marks(text, context))


def _odds_down(p: float) -> float:
    odds = _PRESENT_ODDS * p / max(1.0 - p, 1e-9)
    return odds / (1.0 + odds)


def adjust_tokens(
    tokens: list[TokenScore],
    answer: str | AnswerText,
    context: Sequence[str],
    question: str | None,
) -> list[TokenScore]:
    """Token probabilities with the number, negation, hedge and abstention rules applied."""
    text = AnswerText.of(answer)  # its sentences, split once for every rule below
    numbers, negations = _rule_verdicts(text, tuple(context))
    marks: list[tuple[int, int, str]] = [
        *numbers,
        *negations,
        *hedge_verdicts(text, context, question),
    ]
    quiet = abstentions(text, context, question)
    if not marks and not quiet:
        return _particle_follows_its_claim(tokens, text)
    verdicts = _first_marks(tokens, marks)
    out = []
    for i, token in enumerate(tokens):
        p = token.probability
        verdict = verdicts.get(i)
        if verdict in ("present", "agree"):
            p = _odds_down(p)
        elif verdict == "conflict":
            p = max(p, _CONFLICT_FLOOR)
        elif verdict is not None:
            p = max(p, _UNSEEN_FLOOR)
        if any(token.start >= s and token.end <= e for s, e in quiet):
            p = min(p, _ABSTENTION_CAP)
        out.append(token if p == token.probability else token.model_copy(update={"probability": p}))
    return _particle_follows_its_claim(out, text)


def _first_marks(
    tokens: Sequence[TokenScore], marks: Sequence[tuple[int, int, str]]
) -> dict[int, str]:
    """Token position -> the verdict of the first mark (in ``marks`` order) it overlaps.

    Each mark finds its tokens by bisection over their offsets: checking every mark
    against every token made an answer of 800 short claims quadratic
    (0.5 s of 1.5 s).
    """
    ordered = sorted(range(len(tokens)), key=lambda i: tokens[i].start)
    starts = [tokens[i].start for i in ordered]
    # Tokens do not overlap, so their ends rise with their starts; the largest end so far
    # keeps the search right if one ever did.
    ends = list(accumulate((tokens[i].end for i in ordered), max))
    found: dict[int, str] = {}
    for start, end, verdict in marks:
        first, last = bisect_right(ends, start), bisect_left(starts, end)
        for k in range(first, last):
            i = ordered[k]
            if tokens[i].end > start:
                found.setdefault(i, verdict)
    return found


def _particle_follows_its_claim(tokens: list[TokenScore], text: AnswerText) -> list[TokenScore]:
    """A leading "Yes,"/"No," is at most as suspicious as the rest of its sentence.

    A context never says "yes" or "no", so the model marks the particle of correct and
    wrong answers alike; what the particle asserts is the claim after it ("No, there is
    no Sunday service"), whose own tokens carry the evidence. A particle alone keeps its
    score.
    """
    particle = _YES_NO.match(text.text)
    if particle is None:
        return tokens
    sentences = text.sentences
    end = sentences[0][1] if sentences else len(text.text)
    rest = [t.probability for t in tokens if particle.end() <= t.start and t.end <= end]
    if not rest:
        return tokens
    cap = max(rest)
    return [
        t.model_copy(update={"probability": cap})
        if t.end <= particle.end() and t.probability > cap
        else t
        for t in tokens
    ]
