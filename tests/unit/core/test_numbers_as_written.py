"""Numbers written the way people write them (issue 51, kind 1).

Superscript digits anywhere they stand free, letters of other scripts that look like digits,
dingbat and circled digits, roman years after a bracket or "c.", numbers in words, "12k",
scientific notation and dates in digits are read as the numbers they show; an invisible or
format character inside a number makes the answer not checked, whatever follows it.

The readers are tested on their own, and through the public engine on the blocking route
with the Eiffel record (the bundled models), each on variants beyond the examples of the
issue: the attacks are samples of kinds.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.conftest import EIFFEL_CONTEXT, EIFFEL_QUESTION, needs_weights
from truthlens_integrations.core._normalize import normalize
from truthlens_integrations.core._quantities import (
    DATE,
    ContextQuantities,
    extract_quantities,
)
from truthlens_integrations.core._types import DetectionStatus
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import Detector, load_detector

SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _read(text: str) -> list[tuple[float, str | None]]:
    """The numbers the checks read in ``text``: normalised, then extracted."""
    return [(q.value, q.unit) for q in extract_quantities(normalize(text).text)]


# -- superscript and subscript digits, wherever they stand free --------------------------------

PLACES = {
    "one space": "It was built in {}.",
    "two spaces": "It was built in  {}.",
    "a tab": "It was built in\t{}.",
    "a no-break space": "It was built in\u00a0{}.",
    "parentheses": "It was built ({}).",
    "square brackets": "It was built [{}].",
    "quotes": "It was built in \u201c{}\u201d.",
    "a dash": "It was built \u2014{}.",
    "a line break": "It was built in\n{}.",
    "the start": "{} is when it was built.",
}


@pytest.mark.parametrize("place", PLACES.values(), ids=PLACES.keys())
@pytest.mark.parametrize("small", [SUPERSCRIPT, SUBSCRIPT], ids=["superscript", "subscript"])
def test_free_standing_small_digits_are_read_as_the_number_they_show(
    place: str, small: dict[int, int]
) -> None:
    for number in ("1950", "330", "12"):
        text = place.format(number.translate(small))
        assert normalize(text).text == normalize(place.format(number)).text, text


def test_small_digits_attached_to_what_they_follow_stay() -> None:
    # exponents, units, footnote marks, chemistry, and a footnote opening its line
    for kept in (
        "10\u2076 cells",
        "5 m\u00b2",
        "Paris\u00b9,",
        "H\u2082O",
        "tall.\u00b2",
        "\n\u00b3 Note",
    ):
        assert normalize(kept).text == kept, kept


# -- letters of other scripts that look like digits ----------------------------------------------

LOOKALIKES = {
    "Cyrillic capital O": ("\u041e", "0"),
    "Cyrillic small o": ("\u043e", "0"),
    "Greek capital Omicron": ("\u039f", "0"),
    "Greek small omicron": ("\u03bf", "0"),
    "Armenian capital Oh": ("\u0555", "0"),
    "Coptic capital O": ("\u2c9e", "0"),
    "Lisu letter O": ("\ua4f3", "0"),
    "Cyrillic capital Ze": ("\u0417", "3"),
    "Cyrillic small be": ("\u0431", "6"),
    "Cyrillic palochka": ("\u04c0", "1"),
}


@pytest.mark.parametrize("case", LOOKALIKES.values(), ids=LOOKALIKES.keys())
def test_a_letter_that_looks_like_a_digit_is_read_as_it_inside_a_number(
    case: tuple[str, str],
) -> None:
    letter, digit = case
    for shown in ("19{}5", "195{}", "1{}50"):
        text = f"It was built in {shown.format(letter)}."
        assert normalize(text).text == f"It was built in {shown.format(digit)}.", text


def test_words_of_other_scripts_with_digits_stay_words() -> None:
    for text in (
        "\u0417\u043e\u044f, 19 \u043b\u0435\u0442.",
        "12 \u0441\u043c",
        "\u041e\u041e\u041e 7",
    ):
        assert normalize(text).text == text


# -- dingbat and circled digits ---------------------------------------------------------------------

FAMILIES = {  # the code point of each family's one; zero is written with the circled zero
    "circled": 0x2460,
    "dingbat circled sans-serif": 0x2780,
    "dingbat negative circled": 0x2776,
    "dingbat negative circled sans-serif": 0x278A,
    "double circled": 0x24F5,
}


@pytest.mark.parametrize("one", FAMILIES.values(), ids=FAMILIES.keys())
@pytest.mark.parametrize("zero", ["\u24ea", "\u24ff", "\U0001f10b", "\U0001f10c"])
def test_dingbat_and_circled_digits_are_read_as_digits(one: int, zero: str) -> None:
    number = "".join(chr(one + int(d) - 1) if d != "0" else zero for d in "1950")
    found = _read(f"It was built in {number}.")
    assert (1950.0, None) in found or any(v == 1950.0 for v, _ in found), number


# -- an invisible or format character inside a number -----------------------------------------------

INVISIBLE = {
    f"U+{code:04X}": chr(code)
    for code in (
        *range(0x200B, 0x2010),  # zero-width space, joiners, direction marks
        *range(0x2060, 0x2065),  # word joiner, invisible operators
        0x00AD,  # soft hyphen
        0xFEFF,  # zero-width no-break space
        *range(0x202A, 0x202F),  # embeddings and overrides
        *range(0x2066, 0x206A),  # isolates
        0x180E,  # Mongolian vowel separator
        0x034F,  # combining grapheme joiner
        0x061C,  # Arabic letter mark
    )
}
HIDING_PLACES = {
    "between digits": "3{}30",
    "after a direction mark": "3\u200f{}30",
    "before a direction mark": "33{}\u200f0",
    "after a decimal point": "0.{}33",
    "after a thousands comma": "1,{}330",
    "on both sides of a decimal point": "0{}.{}33",
}


@pytest.mark.parametrize("mark", INVISIBLE.values(), ids=INVISIBLE.keys())
@pytest.mark.parametrize("place", HIDING_PLACES.values(), ids=HIDING_PLACES.keys())
def test_an_invisible_character_inside_a_number_is_seen(mark: str, place: str) -> None:
    text = f"The tower is {place.replace('{}', mark)} meters tall."
    folded = normalize(text)
    assert folded.hidden_in_number or folded.reordered


@pytest.mark.parametrize("mark", INVISIBLE.values(), ids=INVISIBLE.keys())
def test_an_invisible_character_outside_numbers_hides_no_number(mark: str) -> None:
    for text in (f"built in 1889{mark}.", f"{mark}The tower is 330 meters tall.", f"to{mark}wer 3"):
        assert not normalize(text).hidden_in_number, text


def test_a_digit_of_another_script_that_shows_as_another_digit_is_seen() -> None:
    assert normalize("built in 18\u09ea9").hidden_in_number  # a Bengali four shows as an 8
    assert normalize("built in 19\u06650").hidden_in_number  # an Arabic-Indic five shows as o
    assert not normalize("built in \u09e7\u09ee\u09ee\u09ef").hidden_in_number  # one script
    assert not normalize("built in \uff11\uff18\uff18\uff19").hidden_in_number  # full-width


# -- numbers in words, compact and scientific forms, roman years, dates in digits ---------------------

WRITTEN = {
    "It is five hundred meters tall.": (500.0, "meter"),
    "It is three hundred and thirty meters tall.": (330.0, "meter"),
    "It is three hundred thirty meters tall.": (330.0, "meter"),
    "It is a hundred meters tall.": (100.0, "meter"),
    "It is two thousand meters tall.": (2000.0, "meter"),
    "It is two point five kilometers long.": (2.5, "kilometer"),
    "It was built in fifteen hundred.": (1500.0, None),
    "It was built in nineteen fifty.": (1950.0, None),
    "It was built in eighteen eighty-nine.": (1889.0, None),
    "It was built in twenty twenty-four.": (2024.0, None),
    "It has twelve hundred fifty seats.": (1250.0, "seat"),
    "Five million people came.": (5.0, "million"),
    "It is 12k meters tall.": (12000.0, "meter"),
    "It is 12K meters tall.": (12000.0, "meter"),
    "It has 12k visitors.": (12.0, "thousand"),
    "It is 3.3e3 meters tall.": (3300.0, "meter"),
    "It is 3.3E+3 meters tall.": (3300.0, "meter"),
    "It is 5\u00d710\u00b2 meters tall.": (500.0, "meter"),
    "It is 3.3 x 10^3 meters tall.": (3300.0, "meter"),
    "It is 5*10**2 meters tall.": (500.0, "meter"),
    "It holds 10\u2076 cells.": (1e6, "cell"),
    "The count was 3.3e3.": (3300.0, None),  # at the end of a sentence
    "The count was 10^6.": (1e6, None),
}


@pytest.mark.parametrize("text", WRITTEN, ids=list(WRITTEN))
def test_a_number_in_words_or_in_a_compact_form_is_the_amount_it_says(text: str) -> None:
    assert _read(text) == [WRITTEN[text]]


def test_what_only_looks_like_such_a_number_is_none() -> None:
    for text in ("It is one of the best.", "A 4K screen.", "My 401k plan.", "Python 3.5.2"):
        assert all(v not in (1.0, 4000.0, 401000.0) for v, _ in _read(text)), text
    assert _read("between two and three meters") == [(2.0, None), (3.0, "meter")]
    assert _read("It opens at twelve fifteen.") == [(12.0, None), (15.0, None)]  # a time


@pytest.mark.parametrize(
    "text",
    [
        "built (MCML).",
        "built c. MCML.",
        "built ca. MCML.",
        "built circa MCML.",
        "built [MCML].",
        "built \u2013 MCML.",
        "built around MCML.",
        "built in MCML.",
    ],
)
def test_a_roman_year_is_read_where_a_year_is_meant(text: str) -> None:
    assert [(q.value, q.is_year) for q in extract_quantities(text)] == [(1950.0, True)]


def test_capitals_that_are_names_stay_names() -> None:
    for text in ("MCML was the code.", "The Movement for Democratic Change (MDC) won.", "a MIX"):
        assert extract_quantities(text) == [], text


DIGIT_DATES = ["31/03/1889", "03/31/1889", "31.03.1889", "31-03-1889", "1889/03/31", "1889-03-31"]
DATES = [*DIGIT_DATES, "31-Mar-1889", "31/Mar/1889", "Mar-31-1889", "31 March 1889"]


@pytest.mark.parametrize("date", DATES)
def test_a_date_is_one_date(date: str) -> None:
    found = extract_quantities(f"It opened on {date}.")
    dates = [q for q in found if q.unit == DATE]
    assert len(dates) == 1 and 18890331.0 in (dates[0].value, *dates[0].readings)
    assert any(q.is_year and q.value == 1889.0 for q in found)  # its year is read too


@pytest.mark.parametrize("date", DIGIT_DATES)
def test_the_day_and_month_of_a_date_in_digits_are_not_read_apart(date: str) -> None:
    found = extract_quantities(f"It opened on {date}.")
    assert sorted(q.value for q in found) == [1889.0, 18890331.0]


def test_a_two_digit_year_after_slashes_is_read_in_either_century() -> None:
    (date,) = extract_quantities("It opened on 31/03/89.")
    assert {date.value, *date.readings} == {19890331.0, 20890331.0}


def test_a_date_that_reads_both_ways_holds_both_and_an_impossible_one_is_none() -> None:
    (date, _year) = extract_quantities("on 04/03/1889")
    assert {date.value, *date.readings} == {18890304.0, 18890403.0}
    assert not [q for q in extract_quantities("on 31/02/1889") if q.unit == DATE]
    assert not [q for q in extract_quantities("Python 3.10.12") if q.unit == DATE]


@pytest.mark.parametrize("date", DATES)
def test_the_same_date_in_any_form_agrees_and_another_day_conflicts(date: str) -> None:
    known = ContextQuantities(["The Eiffel Tower opened on 31 March 1889."])
    answer = f"It opened on {date}."
    (found,) = [q for q in extract_quantities(answer) if q.unit == DATE]
    assert known.judge(found, answer) == "present"
    wrong = answer.replace("31", "30")
    (other,) = [q for q in extract_quantities(wrong) if q.unit == DATE]
    assert known.judge(other, wrong) == "conflict"


def test_the_libraries_are_loaded_only_when_a_text_needs_them() -> None:
    code = (
        "import sys, truthlens_integrations, truthlens_integrations.core.engine;"
        "from truthlens_integrations.core._quantities import extract_quantities;"
        "from truthlens_integrations.core._normalize import normalize;"
        "extract_quantities(normalize('It is 330 meters tall, built in 1889.').text);"
        "print([m for m in ('text_to_num', 'confusable_homoglyphs') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- through the engine: the blocking route on the Eiffel record ----------------------------------------

SUP = SUPERSCRIPT
# (answer, a right number, its wrong twin): the record says 330 meters, built 1887-1889
FORMS = {
    "superscript after two spaces": ("The Eiffel Tower was built in  {}.", "1889".translate(SUP), "1950".translate(SUP)),
    "superscript in parentheses": ("The Eiffel Tower was built ({}).", "1889".translate(SUP), "1950".translate(SUP)),
    "superscript after a line break": ("The Eiffel Tower was built in\n{}.", "1889".translate(SUP), "1950".translate(SUP)),
    "superscript at the start": ("{} is when the Eiffel Tower was built.", "1889".translate(SUP), "1950".translate(SUP)),
    "subscript after a tab": ("The Eiffel Tower was built in\t{}.", "1889".translate(SUBSCRIPT), "1950".translate(SUBSCRIPT)),
    "Cyrillic O": ("The Eiffel Tower is {} meters tall.", "33\u041e", "50\u041e"),
    "Greek Omicron": ("The Eiffel Tower is {} meters tall.", "33\u039f", "50\u039f"),
    "Armenian Oh": ("The Eiffel Tower is {} meters tall.", "33\u0555", "50\u0555"),
    "Cyrillic Ze": ("The Eiffel Tower was built in {}.", "1887", "19\u04170"),
    "dingbat digits": ("The Eiffel Tower was built in {}.", "\u2780\u2787\u2787\u2788", "\u2780\u2788\u2784\u24ea"),
    "negative circled digits": ("The Eiffel Tower was built in {}.", "\u2776\u277d\u277d\u277e", "\u2776\u277e\u277a\u24ff"),
    "double circled digits": ("The Eiffel Tower was built in {}.", "\u24f5\u24fc\u24fc\u24fd", "\u24f5\u24fd\u24f9\u24ea"),
    "roman year in parentheses": ("The Eiffel Tower was built ({}).", "MDCCCLXXXIX", "MCML"),
    "roman year after c.": ("The Eiffel Tower was built c. {}.", "MDCCCLXXXIX", "MCML"),
    "roman year after around": ("The Eiffel Tower was built around {}.", "MDCCCLXXXIX", "MCML"),
    "hundreds in words": ("The Eiffel Tower is {} meters tall.", "three hundred and thirty", "five hundred"),
    "thousands in words": ("The Eiffel Tower is {} meters tall.", "three hundred thirty", "two thousand"),
    "a year in words": ("The Eiffel Tower was built in {}.", "eighteen eighty-nine", "fifteen hundred"),
    "a year said in pairs": ("The Eiffel Tower was built in {}.", "eighteen eighty-seven", "nineteen fifty"),
    "thousands as k": ("The Eiffel Tower is {} meters tall.", "0.33k", "12k"),
    "e-notation": ("The Eiffel Tower is {} meters tall.", "3.3e2", "3.3e3"),
    "a power of ten": ("The Eiffel Tower is {} meters tall.", "3.3\u00d710\u00b2", "5\u00d710\u00b2"),
    "a caret power": ("The Eiffel Tower is {} meters tall.", "3.3 x 10^2", "5 x 10^2"),
}  # fmt: skip


@needs_weights
@pytest.mark.parametrize("name", FORMS, ids=list(FORMS))
def test_a_number_as_people_write_it_is_checked_right_and_wrong(
    blocking: TruthLens, name: str
) -> None:
    template, right, wrong = FORMS[name]
    answer = template.format(right)
    passed = blocking.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=answer)
    assert passed.full().checked and not passed.blocked, passed.full().score
    answer = template.format(wrong)
    verdict = blocking.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=answer).full()
    assert verdict.checked and verdict.blocked, verdict.score
    # the number itself is marked, and in contradiction: the number check read it
    at = answer.index(wrong)
    marked = [s for s in verdict.spans if s.start <= at < s.end]
    assert marked and marked[0].nli_label == "contradiction", [s.text for s in verdict.spans]


OPENED = ['{"name": "Eiffel Tower", "built": "1887-1889", "opened": "31 March 1889"}']


@needs_weights
@pytest.mark.parametrize("date", DATES)
def test_the_record_s_date_in_any_form_passes_and_another_day_is_blocked(
    blocking: TruthLens, date: str
) -> None:
    question = "When did the Eiffel Tower open?"
    right = f"The Eiffel Tower opened on {date}."
    verdict = blocking.guard(context=OPENED, question=question, answer=right)
    assert verdict.full().checked and not verdict.blocked, verdict.full().score
    wrong = right.replace("31", "30")
    assert blocking.guard(context=OPENED, question=question, answer=wrong).blocked


@pytest.fixture(scope="module")
def bundled() -> Detector:
    return load_detector()


@needs_weights
@pytest.mark.parametrize("mark", INVISIBLE.values(), ids=INVISIBLE.keys())
def test_an_invisible_character_inside_a_number_makes_the_answer_not_checked(
    blocking: TruthLens, bundled: Detector, mark: str
) -> None:
    for place in ("3{}30", "3\u200f{}30", "33\u200f{}0"):
        right = f"The Eiffel Tower is {place.format(mark)} meters tall."
        verdict = blocking.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=right)
        assert not verdict.full().checked and not verdict.passed, place
        result = bundled.detect(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=right)
        assert result.status is DetectionStatus.UNVERIFIABLE and result.spans == []
        # a wrong number stays flagged (not checked never hides a flag)
        wrong = right.replace("3", "5", 1)
        assert blocking.guard(
            context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=wrong
        ).blocked


def test_reading_costs_time_in_proportion_to_the_text() -> None:
    # a run of number words, and a long word of another script, were read in quadratic time
    # (38 s for 2,000 words "twenty two twenty two ...", 2.6 s for 8,000 Cyrillic letters)
    started = time.perf_counter()
    found = extract_quantities(" ".join(["twenty two"] * 1000))
    assert len(found) == 1000 and {q.value for q in found} == {22.0}
    normalize("\u0436" * 30_000 + " 1950")
    assert time.perf_counter() - started < 5.0
