"""Tests of ``core/_language.py``: which texts are in a language the detector does not read.

Issue 51 (kind 2): an answer or a context in another language was scored by the English
models as if they had read it. These tests pin the rules the module states: foreign text
in many languages and scripts is told, and ordinary English (answers, passages, names,
numbers, code, JSON) and short texts are never called foreign.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from truthlens_integrations.core import DetectionConfig
from truthlens_integrations.core import _language as language
from truthlens_integrations.core._language import (
    KNOWN_LANGUAGES,
    answer_language,
    check_languages,
    read_languages,
    text_language,
)
from truthlens_integrations.core.policy import load_policy

EN = ("en",)

# The same wrong answer in the languages of the issue, and a few more.
FOREIGN = {
    "fr": "La tour Eiffel a été construite en 1950 et mesure 500 mètres de haut.",
    "de": "Der Eiffelturm wurde 1950 gebaut und ist 500 Meter hoch.",
    "es": "La Torre Eiffel fue construida en 1950 y mide 500 metros de altura.",
    "it": "La Torre Eiffel è stata costruita nel 1950 ed è alta 500 metri.",
    "pt": "A Torre Eiffel foi construída em 1950 e tem 500 metros de altura.",
    "nl": "De Eiffeltoren werd in 1950 gebouwd en is 500 meter hoog.",
    "pl": "Wieża Eiffla została zbudowana w 1950 roku i ma 500 metrów wysokości.",
    "tr": "Eyfel Kulesi 1950 yılında inşa edildi ve 500 metre yüksekliğindedir.",
    "id": "Menara Eiffel dibangun pada tahun 1950 dan tingginya 500 meter.",
    "ru": "Эйфелева башня была построена в 1950 году, её высота 500 метров.",
    "uk": "Ейфелева вежа була збудована у 1950 році і має висоту 500 метрів.",
    "ar": "بني برج إيفل عام 1950 ويبلغ ارتفاعه 500 متر.",
    "ja": "エッフェル塔は1950年に建てられ、高さは500メートルです。",
    "ko": "에펠탑은 1950년에 지어졌으며 높이는 500미터입니다.",
    "zh": "埃菲尔铁塔建于1950年，高500米。",
    "el": "Ο Πύργος του Άιφελ χτίστηκε το 1950 και έχει ύψος 500 μέτρα.",
    "hi": "एफिल टॉवर 1950 में बनाया गया था और यह 500 मीटर ऊंचा है।",
}

# Ordinary English the detector must keep reading: answers, passages, names, numbers,
# units, code, JSON, tables, foreign names and one foreign quotation inside English.
ENGLISH = [
    "The Eiffel Tower was built from 1887 to 1889 and is 330 metres tall.",
    "Shaun Livingston was born on September 12, 1985.",
    "Béla Viktor János Bartók",
    "Kënga Magjike",
    "Saint-Étienne",
    "Alden Ehrenreich",
    "Gustave Eiffel",
    "1889",
    "330 m",
    "29 October 1964",
    "Yes.",
    "Arthur's Magazine was started first.",
    "The motto of France is 'Liberté, égalité, fraternité', adopted in 1848.",
    "def height(tower):\n    return tower.metres * 3.28",
    json.dumps({"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters"}),
    "| year | height |\n|------|--------|\n| 1889 | 312 m |\n| 2022 | 330 m |",
    "Click Start, select Control Panel, then Power Options and change the sleep time.",
    "°C | °F. Climate data for Tallahassee, Longitude: -84.3533, Latitude: 30.3931.",
]


def test_the_known_codes_are_the_identifiers() -> None:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    labels = set(LanguageIdentifier.from_model_file(MODEL_FILE).labels)
    assert labels - {"zxx"} == KNOWN_LANGUAGES


@pytest.mark.parametrize(("code", "text"), FOREIGN.items(), ids=FOREIGN.keys())
def test_an_answer_in_another_language_is_told(code: str, text: str) -> None:
    # The identifier names Chinese varieties as it sees them (this one Wu Chinese).
    assert text_language(text, EN) == code or text_language(text, EN) in ("wuu", "yue")


@pytest.mark.parametrize("text", ENGLISH)
def test_ordinary_english_names_numbers_and_code_are_read(text: str) -> None:
    assert text_language(text, EN) is None
    assert read_languages(text, [text], EN) == language.LanguageReading(None, (), (), 1)


def test_text_in_a_script_of_no_language_is_left_to_the_coverage_rule() -> None:
    runes = " ".join(["ᚠᚢᚦᚨᚱᚲ ᚷᚹᚺᚾᛁᛃ ᛇᛈᛉᛊᛏᛒ ᛖᛗᛚᛜᛞᛟ"] * 8)
    # The identifier calls it Amharic with 0.99; runes are no language it knows.
    assert language._identifier().rank(runes)[0][0] == "am"
    assert text_language(runes, EN) is None


def test_a_language_read_is_read_and_any_reads_everything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert text_language(FOREIGN["fr"], ("en", "fr")) is None
    assert text_language(FOREIGN["de"], ("en", "fr")) == "de"

    def no_identifier() -> None:
        raise AssertionError("'any' must not load the identifier")

    monkeypatch.setattr(language, "_identifier", no_identifier)
    reading = read_languages(FOREIGN["ko"], [FOREIGN["de"]], "any")
    assert reading.unread is None and reading.passages == ()


def test_sentences_in_another_language_inside_an_english_answer_are_found() -> None:
    english = "The Eiffel Tower was built from 1887 to 1889 and is 330 metres tall."
    french = (
        "Elle a été repeinte en rouge vif en 1968 par des ouvriers italiens venus de Turin, "
        "et ses ascenseurs furent remplacés par des escaliers en bois."
    )
    answer = f"{english} {french}"
    assert text_language(answer, EN) == "fr"  # mostly French as a whole ...
    whole, ((start, end, code),) = answer_language(answer, EN)
    assert whole is None  # ... but an English sentence is read: what it says is checked
    assert answer[start:end] == french and code == "fr"
    reading = read_languages(answer, [english], EN)
    assert reading.unread is None and reading.sentences_language == "fr"
    assert reading.unread_chars(answer) == sum(not c.isspace() for c in french)
    # an English answer quoting a foreign title keeps every sentence read
    assert answer_language(f"{english} Its motto reads 'La dame de fer'.", EN) == (None, ())
    # no sentence read: the answer is in another language
    assert answer_language(f"{french} {FOREIGN['fr']}", EN) == ("fr", ())
    # sentences too short to tell one by one are told together
    assert answer_language("Oui. Elle est haute. Elle date de 1950. Très belle.", EN)[0] == "fr"


def test_a_context_with_no_passage_read_is_unread_and_names_its_language() -> None:
    english = "The tower is 330 metres tall."
    some = read_languages(english, [english, FOREIGN["de"]], EN)
    assert some.unread is None and some.passages == ((1, "de"),)
    assert some.kept([english, FOREIGN["de"]]) == (english,)
    none = read_languages(english, [FOREIGN["de"], FOREIGN["nl"]], EN)
    assert none.unread in ("de", "nl")
    assert none.reason(EN).startswith("language: no passage of the context")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("en", "non-empty list"),
        ([], "non-empty list"),
        (["EN"], "did you mean 'en'"),
        (["english"], "not a language code"),
        ([3], "not a language code"),
    ],
)
def test_a_wrong_setting_of_the_languages_read_is_refused(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_languages(value)
    with pytest.raises(ValidationError, match=message):
        DetectionConfig(languages=value)  # type: ignore[arg-type]


def test_the_policy_sets_the_languages_read_once_for_the_detector() -> None:
    default = load_policy(None).hallucination_mitigation.hallucination_model
    assert default.languages == ("en",) == DetectionConfig().languages
    policy = load_policy(
        {"hallucination_mitigation": {"hallucination_model": {"languages": ["en", "de"]}}}
    )
    assert policy.hallucination_mitigation.hallucination_model.languages == ("en", "de")
    assert (
        load_policy(
            {"hallucination_mitigation": {"hallucination_model": {"languages": "any"}}}
        ).hallucination_mitigation.hallucination_model.languages
        == "any"
    )
    from truthlens_integrations.core import ConfigError

    with pytest.raises(ConfigError, match="languages"):
        load_policy({"hallucination_mitigation": {"hallucination_model": {"languages": ["xx"]}}})
