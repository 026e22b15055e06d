"""Which languages the models read, and what of an input is written in another one.

The bundled detector, NLI model and prompt classifier were trained on English. Scored
against its context, a French or Chinese answer gets numbers that mean nothing: the
detector's vocabulary splits it into pieces it never learnt to judge, and a wrong answer
in another language passed a blocking route as checked and clean. So an answer in a
language the detector does not read is *not checked*, with the reason ``language``
(never scored as if it were read), and a context passage in such a language is left out
of the evidence, like a passage that carries instructions.

Which languages count as read is the detector's setting
(:attr:`~truthlens_integrations.core.DetectionConfig.languages`, ``["en"]`` by default;
a policy sets it as ``hallucination_mitigation.hallucination_model.languages``, and
``any`` turns the check off for a multilingual model).

How a text's language is told (measured against lingua on 75 languages, and on real
English answers and passages):

- the language is identified by ``py3langid`` (a naive Bayes model over byte n-grams,
  140 languages; BSD-3; loaded on first use, about 0.5 s, then about 0.4 ms per 1,000
  characters). Its ``zxx`` ("no linguistic content": code, tables, JSON) counts as read;
- a text mostly in a script other than Latin is in another language whenever the
  identified one is not read: Chinese, Arabic or Cyrillic text is told apart reliably
  even when short, and the English models cannot read it at all;
- a Latin-script text with fewer than :data:`MIN_LETTERS` letters outside capitalised
  words (names, numbers, units, a word or two: "Gustave Eiffel", "1889", "330 m") is
  read: it has nothing to tell a language by, and names and numbers read the same in any
  language. Longer, it is in another language only when the identifier is sure: the
  languages read hold at most :data:`MAX_READ_SHARE` of its probability and the
  identified one at least :data:`MIN_TOP_SHARE` (on real English answers and passages
  this calls about 1 in 3,800 texts foreign; a foreign sentence of 12+ letters is missed
  about 1 time in 40, mostly very short ones);
- the sentences of a read answer that are in another language count as not read, like
  text the detector's vocabulary cannot read: past its ``min_coverage`` (80% by default)
  the answer is partly read, and what was read can still flag it, never clear it. An
  English answer quoting a foreign title stays read;
- a passage is judged whole: a German page with an English quote is German.

The texts read here are the normalised ones (``core/_normalize``): filler characters and
look-alikes cannot hide a language from the identifier.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, Literal

from ._text import AnswerText

__all__ = [
    "ANY_LANGUAGE",
    "DEFAULT_LANGUAGES",
    "KNOWN_LANGUAGES",
    "MAX_READ_SHARE",
    "MIN_LETTERS",
    "MIN_TOP_SHARE",
    "LanguageReading",
    "Languages",
    "answer_language",
    "check_languages",
    "read_languages",
    "text_language",
]

#: What the bundled models read.
DEFAULT_LANGUAGES: tuple[str, ...] = ("en",)
#: Reads every language: the check is off (a multilingual detector).
ANY_LANGUAGE: Literal["any"] = "any"
Languages = tuple[str, ...] | Literal["any"]
"""The languages a detector reads: ISO 639 codes, or ``"any"``."""

#: The codes the identifier knows (py3langid 0.3 and later); a test keeps them in step.
KNOWN_LANGUAGES: frozenset[str] = frozenset(
    "ace af am an ar ary arz as az ba bcl be bg bn br bs ca crh cs cy da de dz el en eo es et eu "
    "ext fa fi fo fr fuv fy ga gcf gcr gd gl gom grc gu gug guw ha hbo he hi hr ht hu hy "
    "id ig is it ja jv ka kab kik kk km kn ko ku ky la lb lg lij ln lo lt ltg lv mg mk ml "
    "mn mr ms mt my ne nl nn no nso oc om or pa pcm pl ps pt qu ro ru rw sa sdh se si sk "
    "sl sn so sq sr st sv sw ta te tg th tk tl tr tt ug uk ur uz uzs vec vi vo wa wuu xh "
    "yo yue zh zu".split()
)
# py3langid's label for text with no language in it (code, tables, numbers): read.
_NO_LANGUAGE = "zxx"
# Languages written so close to one the detector reads that they count as it: Nigerian
# Pidgin is English-lexified, and the identifier gives it English sentences ("Shaun
# Livingston was born on September 12, 1985.").
_SAME_AS = {"en": ("pcm",)}

#: Letters outside capitalised words a Latin-script text needs before its language is told.
MIN_LETTERS = 12
#: The most probability the read languages may hold in a text called foreign.
MAX_READ_SHARE = 0.05
#: The least probability of the identified language in a text called foreign.
MIN_TOP_SHARE = 0.2

_LETTER = re.compile(r"[^\W\d_]")
_LATIN = re.compile(
    r"[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff\u2c60-\u2c7f\ua720-\ua7ff]"
)
_WORD = re.compile(r"[^\W\d_]+")


def check_languages(value: object) -> Languages:
    """``value`` as a setting of the languages read, or a ``ValueError`` saying why not.

    Args:
        value: ``"any"``, or a list of ISO 639 codes the identifier knows (``["en"]``).

    Returns:
        ``"any"``, or the codes as a tuple, in the order given, without repeats.
    """
    if value == ANY_LANGUAGE:
        return ANY_LANGUAGE
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise ValueError(
            "must be 'any' or a non-empty list of ISO 639 language codes such as ['en']"
        )
    codes: list[str] = []
    for code in value:
        if not isinstance(code, str) or code not in KNOWN_LANGUAGES:
            close = isinstance(code, str) and code.lower() in KNOWN_LANGUAGES
            hint = f" (did you mean {str(code).lower()!r}?)" if close else ""
            raise ValueError(
                f"{code!r} is not a language code the identifier knows{hint}; use ISO 639 "
                "codes such as 'en', 'de', 'zh', or 'any' for a detector that reads every "
                "language"
            )
        if code not in codes:
            codes.append(code)
    return tuple(codes)


@cache
def _identifier() -> Any:
    """py3langid's identifier with normalised probabilities, loaded once (about 0.5 s)."""
    from ._optional import require

    langid = require("py3langid.langid", extra="all", feature="telling an answer's language")
    return langid.LanguageIdentifier.from_model_file(langid.MODEL_FILE, norm_probs=True)


@cache
def _read_set(languages: tuple[str, ...]) -> frozenset[str]:
    """The identifier's labels that count as read: the languages, their twins, ``zxx``."""
    twins = (twin for code in languages for twin in _SAME_AS.get(code, ()))
    return frozenset((*languages, *twins, _NO_LANGUAGE))


def _letters(text: str) -> int:
    return len(_LETTER.findall(text))


def _lower_letters(text: str) -> int:
    """Letters outside capitalised words (names): what a language can be told by."""
    return sum(len(word) for word in _WORD.findall(text) if not word[0].isupper())


def text_language(text: str, languages: Languages) -> str | None:
    """The language of ``text`` when the detector does not read it, else ``None``.

    See the module docstring for the rules (short texts, names, numbers, other scripts).

    Args:
        text: A normalised text.
        languages: The languages read.

    Returns:
        The identifier's code of the text's language, or ``None`` when the text is read
        (in a language read, or with nothing to tell a language by).
    """
    told = _tell(text, languages)
    return told or None


# What _tell says of a text beside a language code: read, or nothing to tell it by.
_READ = ""
_UNTOLD = None


# Texts up to this long are remembered (the last _REMEMBERED of them): a retrieved page
# comes back for many questions, and a mitigation loop reads the same context each round.
_REMEMBER_CHARS = 4_000
_REMEMBERED = 2_048


def _tell(text: str, languages: Languages) -> str | None:
    """A language code the detector does not read, ``_READ``, or ``_UNTOLD`` (too short)."""
    if languages == ANY_LANGUAGE:
        return _READ
    if len(text) <= _REMEMBER_CHARS:
        return _told(text, languages)
    return _tell_now(text, languages)


@lru_cache(maxsize=_REMEMBERED)
def _told(text: str, languages: tuple[str, ...]) -> str | None:
    return _tell_now(text, languages)


def _tell_now(text: str, languages: tuple[str, ...]) -> str | None:
    letters = _letters(text)
    if letters == 0:
        return _UNTOLD
    latin = 2 * len(_LATIN.findall(text)) >= letters
    if latin and _lower_letters(text) < MIN_LETTERS:
        return _UNTOLD
    if not latin and not _script_of_a_language(text):
        return _UNTOLD  # runes, Cherokee: no language it knows; the coverage rule judges them
    read = _read_set(languages)
    identifier = _identifier()
    top, top_share = identifier.classify(text)  # the common case, English, ends here
    if top in read:
        return _READ
    if not latin:
        return str(top)
    ranked: list[tuple[str, float]] = identifier.rank(text)
    read_share = sum(share for code, share in ranked if code in read)
    sure = read_share <= MAX_READ_SHARE and top_share >= MIN_TOP_SHARE
    return str(top) if sure else _READ


# The scripts the identifier's languages are written in, by the first word of a letter's
# Unicode name. Text in another script (runes, Cherokee, Gothic) is no language it knows,
# whatever it answers (it called runes Amharic, 0.99).
_LANGUAGE_SCRIPTS = frozenset(
    "ARABIC ARMENIAN BENGALI CJK CYRILLIC DEVANAGARI ETHIOPIC GEORGIAN GREEK GUJARATI "
    "GURMUKHI HANGUL HEBREW HIRAGANA KANNADA KATAKANA KHMER LAO MALAYALAM MYANMAR ORIYA "
    "SINHALA SYRIAC TAMIL TELUGU THAANA THAI TIBETAN".split()
)
# Letters read to tell a text's script: enough for a majority, and cheap on long text.
_SCRIPT_SAMPLE = 400


def _script_of_a_language(text: str) -> bool:
    """Whether most letters of ``text`` are in the script of a language the identifier knows."""
    letters = _LETTER.findall(text, 0, 4 * _SCRIPT_SAMPLE)[:_SCRIPT_SAMPLE]
    known = sum(unicodedata.name(c, "").split(" ", 1)[0] in _LANGUAGE_SCRIPTS for c in letters)
    return 2 * known > len(letters)


def answer_language(
    answer: str, languages: Languages
) -> tuple[str | None, tuple[tuple[int, int, str], ...]]:
    """What of the answer is in a language the detector does not read.

    Returns ``(language, ())`` when the answer, as a whole, is in another language, else
    ``(None, sentences)``: its sentences in other languages, as ``(start, end, language)``.
    Each sentence is told on its own. An answer with a sentence in a language read is
    read, and its sentences in other languages count as not read (the detector's
    ``min_coverage`` rule: what was read can still flag it, never clear it); an answer
    with no sentence read and some in other languages is in another language; an answer
    of sentences too short to tell is told as a whole.

    Args:
        answer: The normalised answer.
        languages: The languages read.
    """
    if languages == ANY_LANGUAGE:
        return None, ()
    sentences = AnswerText.of(answer).sentences_or_whole()
    told = [(start, end, _tell(answer[start:end], languages)) for start, end in sentences]
    foreign = tuple((start, end, code) for start, end, code in told if code)
    if any(code == _READ for _, _, code in told):
        return None, foreign
    if foreign:
        by_letters: Counter[str] = Counter()
        for start, end, code in foreign:
            by_letters[code] += _letters(answer[start:end])
        return by_letters.most_common(1)[0][0], ()
    return (text_language(answer, languages) if len(told) > 1 else None), ()


@dataclass(frozen=True)
class LanguageReading:
    """What of one input is in a language the detector does not read.

    Attributes:
        answer: The answer's language when, as a whole, it is not read, else ``None``.
        sentences: ``(start, end, language)`` of the sentences of a read answer that are
            in another language.
        passages: ``(index, language)`` of each context passage not read.
        context_size: How many passages the context has.
    """

    answer: str | None
    sentences: tuple[tuple[int, int, str], ...]
    passages: tuple[tuple[int, str], ...]
    context_size: int

    @property
    def unread(self) -> str | None:
        """Why nothing can be checked, or ``None`` when the answer and a passage are read.

        The answer's language, or the context's when no passage of it is read.
        """
        if self.answer is not None:
            return self.answer
        if self.passages and len(self.passages) == self.context_size:
            return Counter(language for _, language in self.passages).most_common(1)[0][0]
        return None

    @property
    def sentences_language(self) -> str | None:
        """The most common language of the answer's sentences in another language."""
        if not self.sentences:
            return None
        count: Counter[str] = Counter()
        for start, end, language in self.sentences:
            count[language] += end - start
        return count.most_common(1)[0][0]

    def unread_chars(self, answer: str) -> int:
        """Non-space characters of the answer's sentences in another language."""
        return sum(
            sum(1 for c in answer[start:end] if not c.isspace()) for start, end, _ in self.sentences
        )

    def kept(self, context: Sequence[str]) -> tuple[str, ...]:
        """``context`` without the passages that are not read."""
        left_out = {index for index, _ in self.passages}
        return tuple(p for i, p in enumerate(context) if i not in left_out)

    def reason(self, languages: Languages) -> str:
        """The reason an input was not checked for its language, in one line."""
        read = ", ".join(languages) if languages != ANY_LANGUAGE else ANY_LANGUAGE
        if self.answer is not None:
            return (
                f"language: the answer is in a language the detector does not read "
                f"({self.answer}; it reads {read})"
            )
        if self.unread is not None:
            return (
                f"language: no passage of the context is in a language the detector reads "
                f"({self.unread}; it reads {read})"
            )
        return (
            f"language: too much of the answer is in a language the detector does not read "
            f"({self.sentences_language}; it reads {read}), and what it read does not flag it"
        )


def read_languages(answer: str, context: Iterable[str], languages: Languages) -> LanguageReading:
    """What of an input the detector does not read, for its languages.

    Args:
        answer: The normalised answer.
        context: The normalised passages.
        languages: The languages read (``"any"``: everything is read, nothing is loaded).

    Returns:
        The answer's language when it is not read (else its sentences in other
        languages), and the passages not read.
    """
    passages = list(context)
    if languages == ANY_LANGUAGE:
        return LanguageReading(None, (), (), len(passages))
    unread = tuple(
        (i, language)
        for i, passage in enumerate(passages)
        if (language := text_language(passage, languages)) is not None
    )
    whole, sentences = answer_language(answer, languages)
    return LanguageReading(whole, sentences, unread, len(passages))
