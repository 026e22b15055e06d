"""Tests of ``core/_calibration/_map.py`` and ``_signals.py``: the length-aware response map,
the signals it reads and where it applies.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION, needs_weights
from truthlens_integrations.core import DetectionConfig, DetectionInput
from truthlens_integrations.core._calibration._map import (
    ResponseCalibration,
    read_response_calibration,
)
from truthlens_integrations.core._calibration._signals import (
    ResponseSignals,
    _by_word,
    sentence_count,
    sentence_peak,
)
from truthlens_integrations.core._errors import ConfigError, InvalidInputError
from truthlens_integrations.core._scoring import word_means
from truthlens_integrations.core._types import TokenScore
from truthlens_integrations.core.models.detection import (
    LexicalDetector,
    TransformerDetector,
    load_detector,
)
from truthlens_integrations.core.models.detection._lexical import (
    absent_word_count,
    absent_word_starts,
)


def test_the_map_is_the_documented_logistic() -> None:
    calibration = ResponseCalibration.of({"max_logit": 0.8, "log_sentences": -0.5, "bias": 0.2})
    p, n = 0.9, 4
    z = 0.8 * math.log(0.9 / 0.1) - 0.5 * math.log(4) + 0.2
    assert calibration.probability(p, n) == pytest.approx(1 / (1 + math.exp(-z)))
    # saturated inputs stay finite and inside (0, 1)
    assert 0.0 < calibration.probability(0.0, 1) < calibration.probability(1.0, 1) < 1.0
    # no sentence counts as one
    assert calibration.probability(0.7, 0) == calibration.probability(0.7, 1)
    # a calibration without the absent-word term ignores the count
    assert calibration.probability(p, n, 7) == calibration.probability(p, n)
    assert not calibration.reads_absent_words


def test_the_absent_word_term() -> None:
    calibration = ResponseCalibration.of(
        {"max_logit": 0.8, "log_sentences": -0.5, "bias": 0.2, "absent_words": 0.6}
    )
    z = 0.8 * math.log(0.9 / 0.1) - 0.5 * math.log(4) + 0.6 * math.log(1 + 3) + 0.2
    assert calibration.probability(0.9, 4, 3) == pytest.approx(1 / (1 + math.exp(-z)))
    assert calibration.probability(0.9, 4, 3) > calibration.probability(0.9, 4, 0)
    assert calibration.reads_absent_words


def _token(answer: str, word: str, probability: float) -> TokenScore:
    start = answer.index(word)
    return TokenScore(start=start, end=start + len(word), text=word, probability=probability)


def test_the_sentence_peak_wants_both_signals_in_one_sentence() -> None:
    answer = "It opened in 1932. It is long. Cars and trams use it."
    logit = math.log(0.8 / 0.2)
    tokens = [_token(answer, "1932", 0.8), _token(answer, "Cars", 0.1)]
    # the suspicious token and the absent words in one sentence
    together = sentence_peak(answer, tokens, [answer.index("1932"), answer.index("opened")])
    assert together == pytest.approx(logit + math.log(3))
    # the same absent words in another sentence: each sentence has only one of the two
    apart = sentence_peak(answer, tokens, [answer.index("Cars"), answer.index("trams")])
    assert apart == pytest.approx(max(logit, math.log(0.1 / 0.9) + math.log(3)))
    assert apart < together
    # a sentence without scored tokens counts as an unsuspicious one
    assert sentence_peak("One. Two.", [], []) == pytest.approx(math.log(1e-6 / (1 - 1e-6)))


def test_the_sentence_peak_term() -> None:
    calibration = ResponseCalibration.of(
        {
            "max_logit": 0.0,
            "log_sentences": -0.5,
            "bias": 0.2,
            "absent_words": 0.3,
            "sentence_peak": 0.7,
        }
    )
    z = 0.7 * 1.5 - 0.5 * math.log(4) + 0.3 * math.log(1 + 3) + 0.2
    assert calibration.probability(0.9, 4, 3, peak=1.5) == pytest.approx(1 / (1 + math.exp(-z)))
    assert calibration.probability(0.9, 4, 3, peak=2.0) > calibration.probability(0.9, 4, 3, 1.5)
    assert calibration.reads_absent_words
    assert ResponseCalibration.of(
        {"max_logit": 0.0, "log_sentences": 0.0, "bias": 0.0, "sentence_peak": 1.0}
    ).reads_absent_words


def test_the_rule_terms_and_the_rule_floor() -> None:
    from truthlens_integrations.core._calibration._signals import ResponseSignals

    calibration = ResponseCalibration.of(
        {
            "max_logit": 0.5,
            "log_sentences": 0.0,
            "bias": -2.0,
            "number_conflicts": 0.8,
            "negation_conflicts": 1.1,
        }
    )
    assert calibration.reads_rules and calibration.length_safe
    plain = ResponseSignals(0.9, 2)
    both = ResponseSignals(0.9, 2, number_conflicts=2, negation_conflicts=1)
    z = 0.5 * math.log(0.9 / 0.1) - 2.0 + 0.8 * math.log(3) + 1.1 * math.log(2)
    assert calibration.score(both) == pytest.approx(1 / (1 + math.exp(-z)))
    assert calibration.score(both) > calibration.score(plain)
    floored = ResponseCalibration.of(
        {"max_logit": 0.5, "log_sentences": 0.0, "bias": -2.0, "rule_floor": 0.85}
    )
    assert floored.reads_rules and floored.length_safe
    assert floored.score(plain) < 0.85  # no conflict: the floor does not apply
    assert floored.score(ResponseSignals(0.9, 2, negation_conflicts=1)) == 0.85
    assert not ResponseCalibration.of(
        {"max_logit": 0.5, "log_sentences": 0.0, "bias": -2.0}
    ).reads_rules
    # stored and read back; a floor outside [0, 1] is refused
    config = SimpleNamespace(truthlens={"response_calibration": floored.to_config("test")})
    assert read_response_calibration(config) == floored
    assert "rule_floor" not in ResponseCalibration.of(
        {"max_logit": 0.5, "log_sentences": 0.0, "bias": -2.0}
    ).to_config("test")
    with pytest.raises(ConfigError, match="rule_floor"):
        ResponseCalibration.from_entry({**floored.to_config("test"), "rule_floor": 1.5})


def _tokens(answer: str, scores: dict[str, float]) -> list[TokenScore]:
    out = []
    for match in re.finditer(r"\w+", answer):
        p = scores.get(match.group(), 0.1)
        out.append(
            TokenScore(text=match.group(), start=match.start(), end=match.end(), probability=p)
        )
    return out


def test_a_sentence_alone_reads_only_its_own_signals() -> None:
    from truthlens_integrations.core._calibration._signals import sentence_signals

    answer = "It was built in 1950. It stands in Paris."
    tokens = _tokens(answer, {"1950": 0.9, "Paris": 0.6})
    absent = [(answer.index("1950"), "#1950"), (answer.index("stands"), "stands")]
    marks = ([answer.index("1950")], [])
    (first, one), (second, two) = sentence_signals(answer, tokens, absent, conflicts=marks)
    assert answer[first[0] : first[1]] == "It was built in 1950."
    assert (one.max_probability, one.sentences, one.absent_words, one.absent_numbers) == (
        0.9,
        1,
        1,
        1,
    )
    assert (one.flagged_tokens, one.number_conflicts, one.negation_conflicts) == (1, 1, 0)
    assert one.peak == pytest.approx(math.log(0.9 / 0.1) + math.log(2))
    assert answer[second[0] : second[1]] == "It stands in Paris."
    assert (two.max_probability, two.absent_words, two.number_conflicts) == (0.6, 1, 0)


def test_the_rule_sentence_floor_keeps_a_conflicting_sentence_from_being_diluted() -> None:
    from truthlens_integrations.core._calibration._map import calibrated_score

    wrong = "It was built in 1950."
    tokens_of = {"1950": 0.9}
    shrinking = ResponseCalibration.of({"max_logit": 1.0, "log_sentences": -1.5, "bias": 0.0})
    floored = ResponseCalibration.of(
        {"max_logit": 1.0, "log_sentences": -1.5, "bias": 0.0, "rule_sentence_floor": 1.0}
    )

    def score(response: ResponseCalibration, answer: str, *, marked: bool) -> float:
        marks = ([answer.index("1950")], []) if marked else ([], [])
        tokens = _tokens(answer, tokens_of)
        return calibrated_score(response, answer, tokens, [], token_threshold=0.5, conflicts=marks)

    padded = " ".join([wrong, *["It is tall."] * 8])
    alone = score(floored, wrong, marked=True)
    assert alone == pytest.approx(0.9)
    assert score(shrinking, padded, marked=True) < 0.5 < alone  # the length term dilutes it
    assert score(floored, padded, marked=True) == pytest.approx(alone)  # the floor does not
    # only a sentence the rules find in conflict floors the answer
    assert score(floored, padded, marked=False) == pytest.approx(
        score(shrinking, padded, marked=False)
    )


@pytest.mark.parametrize("value", [0.5, 2, True])
def test_the_rule_sentence_floor_is_zero_or_one(value: object) -> None:
    entry = {
        **ResponseCalibration.of({"max_logit": 1.0, "log_sentences": -0.2, "bias": 0.0}).to_config(
            "t"
        ),
        "rule_sentence_floor": value,
    }
    with pytest.raises(ConfigError, match="rule_sentence_floor"):
        ResponseCalibration.from_entry(entry)
    on = {**entry, "rule_sentence_floor": 1}
    assert ResponseCalibration.from_entry(on).reads_rules
    assert ResponseCalibration.from_entry(on).to_config("t")["rule_sentence_floor"] == 1.0


def test_a_long_answer_map_scores_answers_from_its_sentence_count() -> None:
    long_map = ResponseCalibration.of(
        {"max_logit": 0.2, "log_sentences": 0.0, "bias": -3.0, "absent_words": 0.5}
    )
    shaped = ResponseCalibration.of(
        {"max_logit": 1.0, "log_sentences": -0.5, "bias": 0.0}, long_answers=long_map, long_from=4
    )
    short = ResponseCalibration.of({"max_logit": 1.0, "log_sentences": -0.5, "bias": 0.0})
    for sentences in (1, 3):
        signals = ResponseSignals(0.9, sentences, absent_words=2)
        assert shaped.score(signals) == pytest.approx(short.score(signals))
    for sentences in (4, 9):
        signals = ResponseSignals(0.9, sentences, absent_words=2)
        assert shaped.score(signals) == pytest.approx(long_map.score(signals))
        assert shaped.score(signals) != pytest.approx(short.score(signals))
    # what the long map reads is read; the switch may lower a score, so it is not length safe
    assert shaped.reads_absent_words and not short.reads_absent_words
    assert long_map.length_safe and not shaped.length_safe


def test_the_rule_floors_of_a_shaped_map_read_a_sentence_with_the_short_map() -> None:
    from truthlens_integrations.core._calibration._map import calibrated_score

    wrong = "It was built in 1950."
    padded = " ".join([wrong, *["It is tall."] * 5])
    tokens = _tokens(padded, {"1950": 0.9})
    marks = ([padded.index("1950")], [])
    quiet = ResponseCalibration.of(
        {"max_logit": 0.0, "log_sentences": 0.0, "bias": -6.0}
    )  # scores every long answer near 0
    short = ResponseCalibration.of(
        {"max_logit": 1.0, "log_sentences": 0.0, "bias": 0.0, "rule_sentence_floor": 1.0}
    )
    shaped = dataclasses.replace(short, long_answers=quiet, long_from=2)

    def score(response: ResponseCalibration, conflicts: tuple[list[int], list[int]]) -> float:
        return calibrated_score(
            response, padded, tokens, [], token_threshold=0.5, conflicts=conflicts
        )

    assert score(shaped, ([], [])) < 0.01
    assert score(shaped, marks) == pytest.approx(0.9)  # the sentence alone, by the short map
    absolute = dataclasses.replace(quiet, bias=-6.0)
    floored = ResponseCalibration.of(
        {"max_logit": 0.0, "log_sentences": 0.0, "bias": 0.0, "rule_floor": 0.7},
        long_answers=absolute,
        long_from=2,
    )
    assert floored.score(ResponseSignals(0.1, 5, number_conflicts=1)) == pytest.approx(0.7)


def test_a_long_answer_map_round_trips_and_is_read_strictly() -> None:
    long_map = ResponseCalibration.of(
        {
            "max_logit": 0.3,
            "log_sentences": 0.0,
            "bias": -2.0,
            "absent_words": 0.6,
            "flagged_tokens": 0.2,
        }
    )
    shaped = ResponseCalibration.of(
        {"max_logit": 0.6, "log_sentences": -0.4, "bias": -0.8}, long_answers=long_map, long_from=4
    )
    entry = shaped.to_config("test")
    assert entry["long_answers"]["from_sentences"] == 4
    assert "fitted_on" not in entry["long_answers"]
    assert ResponseCalibration.from_entry(entry) == shaped
    bad_inner: list[tuple[dict[str, object], str]] = [
        ({"from_sentences": True}, "from_sentences"),
        ({"from_sentences": 1}, "from_sentences"),
        ({"from_sentences": 3.0}, "from_sentences"),
        ({"rule_floor": 0.5}, "unknown"),
        ({"long_answers": {}}, "unknown"),
        ({"bias": "x"}, "number"),
    ]
    for change, message in bad_inner:
        inner = {**entry["long_answers"], **change}
        with pytest.raises(ConfigError, match=message):
            ResponseCalibration.from_entry({**entry, "long_answers": inner})
    with pytest.raises(ConfigError, match="long_answers"):
        ResponseCalibration.from_entry({**entry, "long_answers": [1]})
    with pytest.raises(ConfigError, match="long_from"):
        ResponseCalibration.of({"max_logit": 0.6, "log_sentences": -0.4, "bias": -0.8}, long_from=3)
    with pytest.raises(ConfigError, match="floors"):
        ResponseCalibration.of(
            {"max_logit": 0.6, "log_sentences": -0.4, "bias": -0.8},
            long_answers=ResponseCalibration.of(
                {"max_logit": 1, "log_sentences": 0, "bias": 0, "rule_floor": 0.5}
            ),
            long_from=3,
        )


def test_read_from_a_model_config() -> None:
    entry = ResponseCalibration.of(
        {"max_logit": 1.0, "log_sentences": -0.25, "bias": 0.5}
    ).to_config("test data")
    config = SimpleNamespace(truthlens={"response_calibration": entry})
    assert read_response_calibration(config) == ResponseCalibration.of(
        {"max_logit": 1.0, "log_sentences": -0.25, "bias": 0.5}
    )
    with_absent = ResponseCalibration.of(
        {"max_logit": 1.0, "log_sentences": -0.25, "bias": 0.5, "absent_words": 0.3}
    )
    config = SimpleNamespace(truthlens={"response_calibration": with_absent.to_config("test")})
    assert read_response_calibration(config) == with_absent
    with_peak = ResponseCalibration.of(
        {
            "max_logit": 0.0,
            "log_sentences": -0.25,
            "bias": 0.5,
            "absent_words": 0.3,
            "sentence_peak": 0.6,
        }
    )
    config = SimpleNamespace(truthlens={"response_calibration": with_peak.to_config("test")})
    assert read_response_calibration(config) == with_peak
    # an entry written before the absent-word and peak terms reads as a map without them
    del entry["absent_words"], entry["sentence_peak"]
    config = SimpleNamespace(truthlens={"response_calibration": entry})
    assert read_response_calibration(config) == ResponseCalibration.of(
        {"max_logit": 1.0, "log_sentences": -0.25, "bias": 0.5}
    )
    assert read_response_calibration(SimpleNamespace(truthlens={})) is None
    assert read_response_calibration(SimpleNamespace()) is None


def test_sentence_count_follows_the_sentence_rule() -> None:
    assert sentence_count("It opened in 1932. It is 3.5 km long. Cars use it.") == 3
    assert sentence_count("") == 1


def test_absent_word_count_counts_what_the_lexical_reference_flags() -> None:
    item = DetectionInput.create(
        context=["The Eiffel Tower was built from 1887 to 1889 and is 330 meters tall."],
        question="When was the tower built?",
        answer="The tower was built in 1950 by Gustave Eiffel, and it is 330 meters tall.",
    )
    flagged = LexicalDetector().detect_batch([item])[0].tokens
    # 1950 and Gustave: every other content word is in the context
    assert absent_word_count(item) == sum(t.probability > 0 for t in flagged) == 2
    supported = DetectionInput.create(
        context=item.context, question=None, answer="It is 330 meters tall."
    )
    assert absent_word_count(supported) == 0


def test_calibrated_aggregation_needs_a_calibration() -> None:
    with pytest.raises(InvalidInputError, match="response calibration"):
        LexicalDetector(config=DetectionConfig(aggregation="calibrated"))


def test_a_model_without_calibration_refuses_it(tiny_bert_dir: Path) -> None:
    with pytest.raises(InvalidInputError, match="response calibration"):
        TransformerDetector(tiny_bert_dir, config=DetectionConfig(aggregation="calibrated"))


@pytest.mark.parametrize("peak", [0.0, 0.8])
def test_a_model_with_calibration_scores_by_it(
    tiny_bert_dir: Path, tmp_path: Path, peak: float
) -> None:
    folder = tmp_path / "calibrated"
    shutil.copytree(tiny_bert_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    calibration = ResponseCalibration.of(
        {
            "max_logit": 1.0,
            "log_sentences": -2.0,
            "bias": 0.0,
            "absent_words": 0.5,
            "sentence_peak": peak,
        }
    )
    config["truthlens"] = {"response_calibration": calibration.to_config("test")}
    (folder / "config.json").write_text(json.dumps(config))
    answer = "It was built in 1950. It is 500 meters tall. It stands in Paris."
    kwargs = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION, "answer": answer}
    plain = TransformerDetector(folder, config=DetectionConfig(aggregation="max")).detect(**kwargs)
    calibrated = TransformerDetector(
        folder, config=DetectionConfig(aggregation="calibrated")
    ).detect(**kwargs)
    item = DetectionInput.create(**kwargs)
    absent = absent_word_starts(item)
    assert absent
    # the map reads each token at its word's probability (RULE_candidate33.md)
    words = _by_word(answer, plain.tokens)
    expected_peak = sentence_peak(answer, words, absent)
    largest = max(t.probability for t in words)
    assert calibrated.score == pytest.approx(
        calibration.probability(largest, 3, len(absent), expected_peak)
    )
    assert calibrated.spans == plain.spans  # only the response score changes
    assert calibrated.detected == (calibrated.score >= calibrated.threshold)


def test_a_model_whose_map_reads_the_rules_scores_by_them(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    from truthlens_integrations.core._calibration._signals import ResponseSignals

    folder = tmp_path / "rules"
    shutil.copytree(tiny_bert_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    calibration = ResponseCalibration.of(
        {
            "max_logit": 0.5,
            "log_sentences": 0.0,
            "bias": -3.0,
            "number_conflicts": 1.5,
            "rule_floor": 0.7,
        }
    )
    config["truthlens"] = {"response_calibration": calibration.to_config("test")}
    (folder / "config.json").write_text(json.dumps(config))
    context = ["The Eiffel Tower was built from 1887 to 1889. It is 330 meters tall."]
    wrong = "It was built in 1950 and is 500 meters tall."
    right = "It was built from 1887 to 1889."
    scores: dict[str, list[float]] = {}
    for aggregation in ("max", "calibrated"):
        detector = TransformerDetector(folder, config=DetectionConfig(aggregation=aggregation))
        results = [
            detector.detect(context=context, question=None, answer=a) for a in (wrong, right)
        ]
        scores[aggregation] = [r.score for r in results]
        if aggregation == "max":
            # the map reads each token at its word's probability (RULE_candidate33.md)
            scores["max"] = [max(word_means(r.answer, r.tokens), default=0.0) for r in results]
    # "1950" and "500 meters" conflict with the context: two number conflicts, then the floor
    expected = calibration.score(ResponseSignals(scores["max"][0], 1, number_conflicts=2))
    assert expected >= 0.7
    assert scores["calibrated"][0] == pytest.approx(expected)
    assert scores["calibrated"][1] == pytest.approx(
        calibration.score(ResponseSignals(scores["max"][1], 1))
    )
    floor_only = ResponseCalibration.of(
        {"max_logit": 0.5, "log_sentences": 0.0, "bias": -3.0, "rule_floor": 0.95}
    )
    assert floor_only.score(ResponseSignals(scores["max"][0], 1, number_conflicts=2)) == 0.95


@needs_weights
def test_bundled_detector_uses_its_calibration() -> None:
    assert load_detector().config.aggregation == "calibrated"
    assert load_detector(aggregation="max").config.aggregation == "max"


@needs_weights
def test_bundled_long_restatement_scores_lower_than_its_largest_token() -> None:
    # A faithful paragraph restating its context: the largest token probability climbs
    # with length, the calibrated score reads the length too.
    context = [
        "The Harbor Bridge spans the Selva river in the city of Norden. It was opened to "
        "traffic in 1932 after four years of work. The bridge is 640 meters long and carries "
        "two lanes and a footpath. It was renovated in 1988 and again in 2015. About 18,000 "
        "vehicles cross it every day. A toll was charged until 1961."
    ]
    answer = (
        "The Harbor Bridge crosses the Selva river in Norden. It opened to traffic in 1932, "
        "after four years of construction. It is 640 meters long, with two lanes and a "
        "footpath. It was renovated in 1988 and in 2015. Around 18,000 vehicles use it each "
        "day. Drivers paid a toll until 1961."
    )
    kwargs = {"context": context, "question": "Tell me about the Harbor Bridge.", "answer": answer}
    largest = load_detector(aggregation="max").detect(**kwargs)
    calibrated = load_detector().detect(**kwargs)
    assert calibrated.score < largest.score
    assert calibrated.spans == largest.spans


@needs_weights
def test_bundled_eiffel_answer_is_still_detected() -> None:
    result = load_detector().detect(
        context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
    )
    assert result.detected


def test_the_map_reads_words_not_word_pieces() -> None:
    # "Eiffel" came back as "E" "iff" "el": one piece at 0.51 no longer sets the answer's
    # largest probability, the word's mean (0.483) does; a whole-word token reads as it is.
    from truthlens_integrations.core._calibration._signals import response_signals, sentence_signals

    answer = "The Eiffel Tower. Built in 1950."
    pieces = [("E", 0.45), ("iff", 0.51), ("el", 0.49), ("Tower", 0.2), ("1950", 0.3)]
    tokens, pos = [], 0
    for text, p in pieces:
        start = answer.index(text, pos)
        tokens.append(TokenScore(start=start, end=start + len(text), text=text, probability=p))
        pos = start + len(text)
    word = (0.45 + 0.51 + 0.49) / 3
    signals = response_signals(answer, tokens, [])
    assert signals.max_probability == pytest.approx(word)
    assert signals.flagged_tokens == 0
    (_, first), (_, second) = sentence_signals(answer, tokens, [])
    assert first.max_probability == pytest.approx(word)
    assert second.max_probability == pytest.approx(0.3)
    # a piece above the cut inside a word that is, on the mean, above it still counts
    tokens[0] = tokens[0].model_copy(update={"probability": 0.9})
    assert response_signals(answer, tokens, []).flagged_tokens == 3
