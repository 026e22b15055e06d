"""Switches that turn one runtime-rule candidate off (or a variant on) for a measurement.

Apart from the measurement (``rule_change``), so that the feature cache
(``rag_features --rules-before``) can switch rules without importing the measurement,
which imports the cache: no import circle.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Any
from unittest import mock

__all__ = ["rule_change", "switches"]

# Candidate 28's source framings, as they were before 34 widened them.
_SOURCE_NOUN_28 = (
    r"(?:passages?|context|contexts|documents?|sources?|information|text|texts|excerpts?|"
    r"snippets?|search\s+results?)"
)
_SOURCE_FRAMING_28 = re.compile(
    r"\b(?:"
    rf"based\s+(?:solely\s+|only\s+|entirely\s+|purely\s+)?on\s+(?:the\s+)?"
    rf"(?:provided\s+|given\s+|above\s+|available\s+|following\s+|retrieved\s+)?{_SOURCE_NOUN_28}"
    r"(?:\s+(?:provided|given|above))?"
    rf"|according\s+to\s+(?:the\s+)?(?:provided\s+|given\s+|above\s+)?{_SOURCE_NOUN_28}"
    r"|(?:here\s+is|here's|here\s+are|below\s+is)\s+(?:a\s+|an\s+|my\s+|the\s+)?"
    r"(?:concise\s+|brief\s+|short\s+|quick\s+|possible\s+)?"
    r"(?:summary|answer|overview|response|breakdown)"
    rf"(?:\s+(?:of|to|for)\s+(?:the\s+)?(?:given\s+|provided\s+)?(?:{_SOURCE_NOUN_28}|question))?"
    rf"|the\s+(?:provided\s+|given\s+|above\s+)?{_SOURCE_NOUN_28}\s+"
    r"(?:discuss(?:es)?|describes?|mentions?|states?|says?|notes?|explains?|indicates?|"
    r"suggests?|covers?|provides?|highlights?)(?:\s+that)?"
    r"|as\s+(?:noted|mentioned|stated|described)\s+in\s+(?:one|the|another|a)\s+"
    rf"(?:of\s+the\s+)?{_SOURCE_NOUN_28}"
    r")\b",
    re.IGNORECASE,
)


# The number reader as it was before candidate 38: "3.5GHz" read as 3.
NUMBER_37 = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w])(?:(?:\s*|-)(%|[A-Za-z]+))?"
)


def judge_years_37(year: Any, known: Sequence[Any]) -> str | None:
    """``_quantities._judge_years`` as candidate 37 shipped it (39's judge, 39b's "before")."""
    if year.years == 1 and all(k.years == 1 for k in known):
        return None
    start, end = year.value, year.value + year.years
    if any(start <= k.value and k.value + k.years <= end for k in known):
        return "present"
    if any(k.value < end and start < k.value + k.years for k in known):
        return "unseen"
    if year.years == 1:
        return None
    return "conflict" if known else None


def marked_end_39b(_answer: str, quantity: Any, _verdict: str) -> int:
    """``_rules._marked_end`` before candidate 40: a glued unit word left unmarked."""
    from truthlens_integrations._lab_api import measure

    return int(quantity.end if measure(quantity) is not None else quantity.number_end)


def framing_28(answer: str) -> list[tuple[int, int]]:
    """``_rules.source_framing`` as candidate 28 shipped it (candidate 34's "before")."""
    return [m.span() for m in _SOURCE_FRAMING_28.finditer(answer)]


def two_words(sentence: str) -> list[str]:
    """``_negated_words`` as it was before candidate 16: the first two content words."""
    from truthlens_integrations._lab_api import STOP_WORDS, negations, words

    out: list[str] = []
    for _, end in negations(sentence):
        clause = re.split(r"[,;:.!?]|\bby\b", sentence[end:], maxsplit=1)[0]
        out += [w for w in words(clause) if w not in STOP_WORDS][:2]
    return out


def nothing(_text: str) -> list[Any]:
    """A reader switched off: it finds nothing."""
    return []


def no_word(_suffix: str) -> None:
    """``_quantities._glued_word`` switched off (candidate 38's "before"): no unit word."""


def no_amount(_word: str) -> bool:
    """``_quantities._is_amount_unit`` switched off (candidate 26's "before")."""
    return False


def switches(candidate: str) -> list[tuple[Any, str, Any]]:
    """What turns ``candidate`` off: ``(module, name, stand-in)`` for each patch."""
    from truthlens_integrations._lab_api import quantities_module as _quantities
    from truthlens_integrations._lab_api import rules_module as _adjust

    return {
        "16": [(_adjust, "_negated_words", two_words)],
        "17": [(_quantities, "_TIME", re.compile(r"(?!)"))],  # matches nothing
        "19": [(_adjust, "citations", nothing), (_quantities, "citation_numbers", nothing)],
        "20": [(_quantities, "_halves", nothing)],
        "21": [(_quantities, "_fraction_halves", nothing)],
        "25": [(_adjust, "clock_time_spans", nothing)],
        "26": [(_quantities, "_is_amount_unit", no_amount)],
        "28": [(_adjust, "source_framing", nothing)],
        "29": [(_adjust, "connectives", nothing)],
        "34": [(_adjust, "source_framing", framing_28)],
        "35": [(_adjust, "citations", _quantities.citation_numbers)],
        "36": [(_quantities, "_glued_amounts", nothing)],
        "37": [(_quantities, "_decades", nothing)],
        "38": [(_quantities, "_glued_word", no_word), (_quantities, "_NUMBER", NUMBER_37)],
        "40": [(_adjust, "_marked_end", marked_end_39b)],
        "39b": [
            (_quantities, "_centuries", nothing),
            (_quantities, "_judge_years", judge_years_37),
        ],
    }[candidate]


def _on() -> dict[str, list[tuple[Any, str, Any]]]:
    from truthlens_integrations._lab_api import quantities_module as _quantities

    # 39: 39b's code with candidate 37's judge of years
    return {"39": [(_quantities, "_judge_years", judge_years_37)]}


@contextlib.contextmanager
def rule_change(variant: str) -> Iterator[None]:
    """The rules with candidate ``variant`` on, or off for "off!<n>" (the memo cleared)."""
    from truthlens_integrations._lab_api import rules_module as _adjust

    off, candidate = variant.startswith("off!"), variant.removeprefix("off!")
    patches = switches(candidate) if off else _on().get(variant, [])
    _adjust._rule_verdicts.cache_clear()
    with contextlib.ExitStack() as stack:
        for target, name, value in patches:
            stack.enter_context(mock.patch.object(target, name, value))
        try:
            yield
        finally:
            _adjust._rule_verdicts.cache_clear()


def before_only(
    side: str, target: Any, name: str, value: Any
) -> contextlib.AbstractContextManager[Any]:
    """``target.name`` replaced by ``value`` for the ``"before"`` side, untouched otherwise."""
    return mock.patch.object(target, name, value) if side == "before" else contextlib.nullcontext()
