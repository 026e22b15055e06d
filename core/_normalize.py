"""The text the checks read: invisible characters gone, compatibility forms folded.

An answer with a soft hyphen, a word joiner, a NUL or a combining grapheme joiner after
every character, or a combining mark on every letter, reads the same to a person as the
plain answer, yet the detector's vocabulary sees no word of it: the answer came out
``unverifiable`` and slipped past a ``block`` route. The checks therefore read a
normalised copy, and every offset they find is mapped back to the caller's text, so spans
still point into the original answer (``answer[start:end] == text``).

What normalisation does, character cluster by character cluster (a base character and
the combining marks after it):

- drops format characters (Unicode category ``Cf``: soft hyphen, zero-width space and
  joiners, word joiner, BOM, tags), other default-ignorable code points (combining
  grapheme joiner, variation selectors, Hangul fillers) and control characters that are
  not white space (NUL);
- folds compatibility forms with NFKC (full-width digits, ligatures, styled letters),
  except superscripts, subscripts and vulgar fractions, whose NFKC form changes what the
  text says ("m²" is not "m2");
- reads the decimal digits of every script as ASCII digits ("١٩٥٠" and "१९५०" are 1950,
  which NFKC leaves as they are), dingbat digits as the digits they show ("➀", "❶"; NFKC
  folds only the plain circled ones), and a free-standing run of superscript or subscript
  digits ("is ⁵⁰⁰ metres tall", "(¹⁹⁵⁰)", "¹⁹⁵⁰ was the year", after two spaces or a line
  break) as the number it shows. Attached to what comes before, it stays ("m²", "10⁶", a
  footnote's "Paris¹"), and so does a single one opening a line (a footnote's "³ Source").
  Without this, a wrong year in other digits had no number for the number check to judge;
- drops combining marks that sit on a Latin letter, a digit, a space or punctuation
  (stray marks, and Latin diacritics: "café" reads "cafe", in the answer and the context
  alike, so nothing is lost for matching); marks of other scripts (Devanagari vowel
  signs, Arabic vowels) are kept, at most four per character;
- reads letters that look like digits as digits inside a number: "l950" (lower-case L),
  "I950", "195O" (capital O), "19o5" are 1950 and 1905. Only in a word made of digits
  and these letters, with at least two real digits, and only where no unit can be meant:
  an "l" or "I" before a digit, an "O" anywhere, an "o" between digits ("5l" stays five
  litres, "CO2" and "Boeing" stay words). Letters of other scripts that look like digits
  read as those digits there too ("195О" with a Cyrillic O, "19З0" with a Cyrillic Ze;
  Unicode's confusables table, ``core/_digit_lookalikes.py``).

Bidirectional controls (embeddings, overrides and isolates, U+202A-202E, U+2066-2068)
are dropped like every format character, so the checks read the text in its logical
order; but what a person sees is then not what was checked ("1\u202e988\u202c" shows
"1889" and holds "1988"; a direction mark inside a number does the same), so
:attr:`Normalized.reordered` says so and a detector never
calls such an answer supported (:func:`restore_result`). Any invisible or format
character inside a number (between two of its digits, with whatever else is hidden
there), and a digit of another script that shows as another digit ("18৪9"), do the same
through :attr:`Normalized.hidden_in_number`: the answer is not checked, never clean.

The normalised text is what the detector, the NLI model, the number check and the
instruction filter read; it is never shown to anyone.
"""

from __future__ import annotations

import re
import unicodedata
import weakref
from dataclasses import dataclass
from functools import cache
from typing import TypeVar

from ._digit_lookalikes import misread_digits, read_lookalikes
from ._types import (
    DetectionInput,
    DetectionResult,
    DetectionStatus,
    HallucinationSpan,
    TokenScore,
)

__all__ = [
    "Normalized",
    "fold_confusables",
    "normalize",
    "normalize_input",
    "restore_result",
    "span_back",
]

# Default-ignorable code points outside category Cf (Unicode DerivedCoreProperties).
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # half-width Hangul filler
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0xE0000, 0xE0FFF),  # tags and variation selectors supplement
)
# Most marks kept on one character of a script whose marks are kept (stacked "Zalgo"
# marks beyond this are noise, not text).
_MAX_MARKS = 4
_UNSAFE_NFKC = ("<super>", "<sub>", "<fraction>")


def _ignorable(ch: str) -> bool:
    category = unicodedata.category(ch)
    if category == "Cf" or (category == "Cc" and not ch.isspace()):
        return True
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _IGNORABLE_RANGES)


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch) in ("Mn", "Me", "Mc")


def _folds_marks(base: str) -> bool:
    """Whether marks on ``base`` are dropped: Latin letters and anything not a letter."""
    if not base.isalpha():
        return True
    return unicodedata.name(base, "").startswith("LATIN")


def _fold(ch: str, free_digit: bool = False) -> str:
    """NFKC of one character, unless that changes what it says (superscripts, fractions).

    A decimal digit of any script reads as its ASCII digit; a superscript or subscript
    digit only when ``free_digit`` (it stands free inside a sentence, see ``_FREE_DIGITS``).
    """
    if ch.isascii():
        return ch
    if unicodedata.category(ch) == "Nd":
        return str(unicodedata.decimal(ch))
    if free_digit:
        return str(unicodedata.digit(ch))
    decomposition = unicodedata.decomposition(ch)
    if decomposition.startswith(_UNSAFE_NFKC):
        return ch
    if not decomposition and unicodedata.category(ch) == "No":
        return _dingbat_number(ch)
    return unicodedata.normalize("NFKC", ch)


def _dingbat_number(ch: str) -> str:
    """A number sign NFKC keeps ("➀", "❶", "⓿") as the whole number it shows, else itself."""
    value = unicodedata.numeric(ch, -1.0)
    return str(int(value)) if value >= 0 and value.is_integer() else ch


# Superscript and subscript digits.
_SMALL_DIGITS = "⁰¹²³⁴⁵⁶⁷⁸⁹₀-₉"
# A run of them that stands free: at the start, or after white space or an opening bracket,
# quote or dash, and before white space, punctuation or the end ("is ⁵⁰⁰ metres",
# "(¹⁹⁵⁰)", "¹⁹⁵⁰ was"). A footnote mark is attached to its word ("Paris¹", "tall.²") and
# an exponent to its number or unit ("10⁶", "m²"); neither matches. Read only after a word
# and one space, the same year after two spaces, in brackets, after a line break or at the
# start passed a blocking route (tests/unit/core/test_numbers_as_written.py).
_FREE_DIGITS = re.compile(
    rf"(?<![^\s(\[{{\"'\u201c\u2018\u2013\u2014/-])[{_SMALL_DIGITS}]+"
    r"(?=[\s.,;:!?)\]}\"'\u201d\u2019]|$)"
)


def _free_digits(text: str) -> set[int]:
    """Where the free-standing superscript and subscript digits of ``text`` are.

    A single one opening a line and followed by a space is a footnote's mark ("³ Source").
    """
    free: set[int] = set()
    for match in _FREE_DIGITS.finditer(text):
        start, end = match.span()
        opens_line = start == 0 or text[start - 1] == "\n"
        if end - start == 1 and opens_line and text[end : end + 1] == " ":
            continue
        free.update(range(start, end))
    return free


def _cluster(base: str, marks: list[str], free_digit: bool = False) -> str:
    """The normalised text of one base character and its marks."""
    folded = _fold(base, free_digit)
    if _folds_marks(base):
        stripped = "".join(c for c in unicodedata.normalize("NFD", folded) if not _is_mark(c))
        return unicodedata.normalize("NFC", stripped)
    return unicodedata.normalize("NFC", folded + "".join(marks[:_MAX_MARKS]))


@dataclass(frozen=True)
class Normalized:
    """A text as the checks read it, with the way back to the caller's text.

    Attributes:
        text: The normalised text.
        original: The caller's text.
        starts: For each character of ``text``, where its source starts in ``original``.
        ends: For each character of ``text``, where its source ends in ``original``.
    """

    text: str
    original: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    reordered: bool = False
    """Whether ``original`` holds bidirectional controls around text: it is shown to a
    person in another order than ``text`` reads."""
    hidden_in_number: bool = False
    """Whether a number of ``original`` holds an invisible or format character, or a digit
    that shows as another digit: what a person reads of it may not be what was checked."""

    @property
    def changed(self) -> bool:
        """Whether normalisation changed anything."""
        return self.text != self.original

    def span(self, start: int, end: int) -> tuple[int, int]:
        """``text[start:end]`` as offsets into ``original``."""
        if not self.changed:
            return start, end
        n = len(self.text)
        if n == 0:
            return 0, 0
        start = min(max(start, 0), n)
        end = min(max(end, start), n)
        if end == start:
            at = self.starts[start] if start < n else len(self.original)
            return at, at
        return self.starts[start], self.ends[end - 1]


def normalize(text: str) -> Normalized:
    """``text`` as the checks read it (see the module docstring), with its offset map.

    Args:
        text: The caller's text.

    Returns:
        The normalised text and, per character, the range of ``text`` it came from.
    """
    if text.isascii() and all(c.isprintable() or c.isspace() for c in text):
        if _DIGIT_LIKE.search(text) is None:
            return Normalized(text, text, (), ())
        folded = _digits_read(text)
        if folded == text:
            return Normalized(text, text, (), ())
        same = tuple(range(len(text)))
        return Normalized(folded, text, same, tuple(i + 1 for i in same))
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    free = _free_digits(text)
    hidden = False  # an invisible character between two digits
    previous = -1  # where the last visible character is
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if _ignorable(ch) or _is_mark(ch):
            i += 1  # invisible, or a mark with no base: nothing to read
            continue
        start, end = i, i + 1
        marks: list[str] = []
        j = i + 1
        invisible = False
        while j < n and (_is_mark(text[j]) or _ignorable(text[j])):
            if _ignorable(text[j]):  # the combining grapheme joiner is a mark, and invisible
                invisible = True
            else:
                marks.append(text[j])
                end = j + 1
            j += 1
        if invisible and not hidden and j < n:
            hidden = _inside_a_number(text, previous, i, j)
        for piece in _cluster(ch, marks, i in free):
            out.append(piece)
            starts.append(start)
            ends.append(end)
        previous, i = i, j
    reordered = _BIDI.search(text) is not None or _MARK_IN_NUMBER.search(text) is not None
    hidden = hidden or misread_digits(text)
    read = _digits_read(read_lookalikes("".join(out)))
    return Normalized(read, text, tuple(starts), tuple(ends), reordered, hidden)


def _inside_a_number(text: str, previous: int, base: int, after: int) -> bool:
    """Whether invisible characters between ``text[base]`` and ``text[after]`` are in a number.

    Between two digits, or beside a decimal point or a thousands comma that has a digit on
    its other side (``previous``: the visible character before ``base``, or -1).
    """
    before, following = text[base], text[after]
    if before in ".," and previous >= 0:
        before = text[previous]
    if following in ".,":
        rest = (c for c in text[after + 1 : after + 9] if not (_ignorable(c) or _is_mark(c)))
        following = next(rest, "")
    return before.isnumeric() and following.isnumeric()


# An embedding, override or isolate opened around at least one visible character: it
# changes the order in which that text is shown. Marks (LRM, RLM) and a lone PDF do not.
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2068][\u202a-\u202e\u2066-\u2069\s]*[^\s\u202c\u2069]")
# A direction mark inside a number splits it into runs a renderer may show in another
# order ("3<RLM>3<RLM>0" holds 330 and can show 303).
_MARK_IN_NUMBER = re.compile(r"\d[\u200e\u200f\u061c]+\d")

# A word made of digits and letters that look like digits ("l950", "195O"); see
# _digits_read for which letters are read as digits.
_DIGIT_LIKE = re.compile(
    r"(?<![^\W_])(?=[0-9lIoO]*[0-9][0-9lIoO]*[0-9])[0-9lIoO]*[lIoO][0-9lIoO]*(?![^\W_])"
)
# Inside such a word: "l" or "I" before a digit, "O" anywhere, "o" between digits. A
# trailing "l" is a unit ("5l", "100l" are litres) and a trailing "o" an ordinal ("1o").
_LOOKALIKE = re.compile(r"[lI](?=[0-9lIoO]*[0-9])|O|(?<=[0-9])o(?=[0-9])")


def _digits_read(text: str) -> str:
    """``text`` with look-alike letters read as digits inside numbers (same length)."""
    if _DIGIT_LIKE.search(text) is None:
        return text

    def fold(word: re.Match[str]) -> str:
        return _LOOKALIKE.sub(lambda m: "1" if m.group(0) in "lI" else "0", word.group(0))

    return _DIGIT_LIKE.sub(fold, text)


def normalize_input(data: DetectionInput) -> tuple[DetectionInput, Normalized | None]:
    """``data`` as the checks read it, and the answer's offset map when the answer changed.

    The one normalisation of every entry point: the engine and every in-process detector
    call it, so ``guard()``, ``detect()``, ``truthlens detect`` and the service read the
    same text. Normalising twice changes nothing the second time.

    Args:
        data: The caller's input.

    Returns:
        ``(checked, source)``: the input with its answer, question and passages
        normalised (``data`` itself when nothing changed), and the answer's
        :class:`Normalized` when it changed (for :func:`restore_result`), else ``None``.
    """
    if _CHECKED.get(id(data)) is data:
        return data, None  # the engine's normalised input, passed on to its detector
    answer = normalize(data.answer)
    if not answer.text.strip():
        return data, None  # nothing readable left: the detector says it cannot check
    context = tuple(normalize(p).text for p in data.context)
    question = normalize(data.question).text if data.question is not None else None
    if not answer.changed and context == data.context and question == data.question:
        _CHECKED[id(data)] = data
        return data, None
    update = {
        "answer": answer.text,
        "context": context,
        "question": question if question and question.strip() else None,
    }
    checked = data.model_copy(update=update)
    _CHECKED[id(checked)] = checked
    return checked, answer if answer.changed else None


# The inputs normalize_input made, while they live: reading one again would cost a second
# pass over every passage (0.8 s for 100,000 characters of Chinese) for the same text.
_CHECKED: weakref.WeakValueDictionary[int, DetectionInput] = weakref.WeakValueDictionary()


_Located = TypeVar("_Located", HallucinationSpan, TokenScore)


def span_back(span: _Located, source: Normalized) -> _Located:
    """``span`` (over the normalised answer) over the caller's answer."""
    start, end = source.span(span.start, span.end)
    return span.model_copy(update={"start": start, "end": end, "text": source.original[start:end]})


_REORDERED = (
    "the answer holds bidirectional controls: it is shown in another order than it was "
    "checked, so it cannot be called supported"
)


_HIDDEN = (
    "a number of the answer holds an invisible character or a digit that shows as another: "
    "what is shown may not be what was checked, so it cannot be called supported"
)


def restore_result(result: DetectionResult, source: Normalized) -> DetectionResult:
    """``result`` (over the normalised answer) over the caller's answer.

    Spans and token offsets point into ``source.original``. An answer shown in another
    order than it reads (:attr:`Normalized.reordered`), or with a number that may show
    otherwise than it reads (:attr:`Normalized.hidden_in_number`), is never
    ``supported``: the check read one text, the person reads another, so a clean result
    becomes ``unverifiable``, without spans (a flagged one stays flagged).
    """
    update: dict[str, object] = {
        "answer": source.original,
        "spans": [span_back(s, source) for s in result.spans],
        "tokens": [span_back(t, source) for t in result.tokens],
    }
    unread = _REORDERED if source.reordered else _HIDDEN if source.hidden_in_number else None
    if unread is not None and result.status is DetectionStatus.SUPPORTED:
        # As every unverifiable result: no spans and no score (a number would read as
        # clean next to an answer nobody checked; what was read is not what is shown).
        update |= {
            "status": DetectionStatus.UNVERIFIABLE,
            "error": unread,
            "spans": [],
            "score": None,
        }
    return result.model_copy(update=update)


# Scripts written as themselves: the filter has patterns in some of them, which read their
# letters unfolded (``keep_own_scripts``).
_OWN_SCRIPTS = (
    "ARABIC", "HEBREW", "CJK", "HIRAGANA", "KATAKANA", "HANGUL", "DEVANAGARI", "BENGALI",
    "GURMUKHI", "GUJARATI", "ORIYA", "TAMIL", "TELUGU", "KANNADA", "MALAYALAM", "SINHALA",
    "THAI", "LAO", "TIBETAN", "MYANMAR", "ETHIOPIC", "SYRIAC", "THAANA",
)  # fmt: skip
# Look-alikes Unicode's table does not list but that pass for Latin letters in running
# text: Greek epsilon, kappa, tau, chi and the final sigma that NFKC makes of a lunate
# sigma ("ϲ"), and small capitals and runes from codebox/homoglyph's extras (MIT).
_MORE_LOOKALIKES = {
    "ε": "e", "κ": "k", "τ": "t", "χ": "x", "ς": "c", "Κ": "K", "Τ": "T", "Χ": "X",
    "ʙ": "b", "ɢ": "g", "ʜ": "h", "ʟ": "l", "ɴ": "n", "ʀ": "r", "ᛒ": "B", "ᚱ": "R",
}  # fmt: skip


@cache
def _confusables(keep_own_scripts: bool) -> dict[int, str]:
    """Each letter of another script that looks like one ASCII letter, and that letter.

    Unicode's confusables data (UTS #39, as ``confusable-homoglyphs`` ships it, MIT),
    loaded on first use (about 0.1 s): Cyrillic, Greek, Armenian, Cherokee, Latin of other
    alphabets ("ı", "ɡ"), letterlike and mathematical forms, and with ``keep_own_scripts``
    false also letters of scripts such as Arabic or Hebrew that look like one ("ه" like
    "o"). Unicode reads a capital I look-alike as "l" (its skeleton); an upper-case letter
    here reads as "I".
    """
    from confusable_homoglyphs import confusables

    table: dict[int, str] = {}
    for key, entries in confusables.confusables_data.items():
        for entry in entries:
            other = entry["c"].strip("\u200e")  # the data wraps right-to-left ones in marks
            for char, looks in ((key, other), (other, key)):
                if not (len(char) == 1 == len(looks) and looks.isascii() and looks.isalpha()):
                    continue
                if char.isascii() or not unicodedata.category(char).startswith("L"):
                    continue
                if keep_own_scripts and unicodedata.name(char, "").startswith(_OWN_SCRIPTS):
                    continue
                table.setdefault(ord(char), "I" if looks == "l" and char.isupper() else looks)
    table.update({ord(k): v for k, v in _MORE_LOOKALIKES.items()})
    return table


def fold_confusables(text: str, *, keep_own_scripts: bool = False) -> str:
    """``text`` with letters of other scripts that look like Latin ones read as Latin.

    For pattern matching only (a Russian text comes out as nonsense): "Ignоre" with a
    Cyrillic "о" and "preνious" with a Greek nu read "Ignore" and "previous". The table is
    Unicode's confusables data (:func:`_confusables`); the length and offsets of ``text``
    are kept.

    Args:
        text: The text.
        keep_own_scripts: Keep the letters of scripts written as themselves (Arabic,
            Hebrew, Chinese, Japanese, Korean, the Indic scripts), for patterns written
            in those scripts.
    """
    if text.isascii():
        return text
    return text.translate(_confusables(keep_own_scripts))
