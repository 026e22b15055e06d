"""Tests of ``core/_calibration/_file.py``: calibration files and the routes that point to them."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from tests._fakes import make_engine
from tests._samples import rag_map_file, valid_calibration_file
from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core._calibration import _file as core_calibration
from truthlens_integrations.core._calibration._file import (
    MAX_CALIBRATION_BYTES,
    read_calibration_file,
)
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.models.detection import Detector, LexicalDetector
from truthlens_integrations.core.policy import load_policy

# -- A policy route that points to a calibration file (``truthlens calibrate``). -----------


def make(detector: Detector, config: object = None, **kwargs: object) -> TruthLens:
    # the engine tests' stand-ins, without the quantity alignment (test_alignment.py has it)
    return make_engine(detector, config, align_quantities=False, **kwargs)


def _calibration(
    tmp_path: Path, bias: float, threshold: float = 0.7, *, model: str = "bundled"
) -> Path:
    # A map that reads only the detector's largest token logit (a weight of 1) and its bias.
    path = tmp_path / f"calib{bias}.json"
    content = {
        "format": "truthlens-response-calibration/1",
        "model": model,
        "response_calibration": {"max_logit": 1.0, "log_sentences": 0.0, "bias": bias},
        "threshold": threshold,
    }
    path.write_text(json.dumps(content))
    return path


def _expected(detector: Detector, bias: float) -> float:
    """sigmoid(logit(the answer's largest token probability) + bias), as the map reads it."""
    tokens = detector.detect(
        context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
    ).tokens
    p = min(max(*(t.probability for t in tokens), 1e-6), 1 - 1e-6)
    return 1 / (1 + math.exp(-(math.log(p / (1 - p)) + bias)))


def _policy(calibration: Path | str, **plugin: object) -> dict[str, object]:
    configuration = {"enabled": True, "calibration": str(calibration), **plugin}
    return {
        "decisions": [
            {
                "name": "calibrated",
                "rules": {"conditions": [{"type": "fact_check", "name": "needs_fact_check"}]},
                "plugins": [{"type": "hallucination", "configuration": configuration}],
            }
        ]
    }


def test_the_route_scores_with_its_file_and_threshold(detector: Detector, tmp_path: Path) -> None:
    model = detector.model_id  # the file names the detector it was fitted for
    # a map that would pass the wrong answer (-30) is refused when the policy loads
    with pytest.raises(ConfigError, match="lets a plainly wrong answer pass"):
        make(detector, _policy(_calibration(tmp_path, -30.0, model=model)))
    low = make(detector, _policy(_calibration(tmp_path, 0.0, model=model)))
    verdict = low.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert verdict.route == "calibrated" and verdict.threshold == 0.7
    assert verdict.score == pytest.approx(_expected(detector, 0.0), rel=1e-4)
    high = make(detector, _policy(_calibration(tmp_path, 3.0, model=model)))
    flagged = high.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert flagged.detected
    assert flagged.score == pytest.approx(_expected(detector, 3.0), rel=1e-4)
    # the route's own threshold wins over the file's
    own = make(detector, _policy(_calibration(tmp_path, 3.0, model=model), response_threshold=0.99))
    assert (
        own.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER).threshold
        == 0.99
    )


def test_a_bad_calibration_path_or_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="calibration"):
        load_policy(_policy(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "truthlens-response-calibration/1", "threshold": 0.5}))
    with pytest.raises(ConfigError, match="calibration"):
        load_policy(_policy(bad))
    typed = _policy("x")
    typed["decisions"][0]["plugins"][0]["configuration"]["calibration"] = True  # type: ignore[index]
    with pytest.raises(ConfigError, match="calibration"):
        load_policy(typed)  # a boolean is not a path


# -- a length-safe map fitted on RAG answers, with the rules' conflict counts ------------

TOWER = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
    "It was built from 1887 to 1889 as the centrepiece of the 1889 World's Fair.",
    "The tower is 330 meters tall.",
    "It is named after the engineer Gustave Eiffel, whose company designed and built it.",
    "The tower has three levels for visitors, with restaurants on the first and second levels.",
    "Its base is a square of 125 meters on each side.",
    "The structure weighs about 10,100 tonnes.",
    "The tower is repainted every seven years to protect it from rust.",
    "About 60 tonnes of paint are used for each repainting.",
    "The tower received nearly 7 million visitors in 2015.",
    "Radio transmitters were installed at the top of the tower in the early twentieth century.",
    "Gustave Eiffel kept a private apartment near the top of the tower.",
    "It stands near the Seine river, opposite the Trocadero.",
    "It is the most visited monument with an entrance fee in the world.",
]
TOWER_QUESTION = "When was the Eiffel Tower built, and how tall is it?"
# The facts that neither give nor contradict the date and the height: padding.
PADDING = [f for f in TOWER if "1887" not in f and "330" not in f]


def test_a_missing_calibration_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"calibration file rga: no such file"):
        load_policy(_policy("rga"))  # no bundled names: a calibration is a file
    route = load_policy(_policy(_calibration(tmp_path, 1.0))).decisions[0].plugins[0]
    assert route.configuration.calibration_file is not None
    assert route.configuration.calibration_file.threshold == 0.7


def test_a_map_fitted_for_the_bundled_detector_is_refused_with_another_one(
    tmp_path: Path,
) -> None:
    # A map fitted on the bundled detector's outputs would score another model silently
    # wrong, so the policy refuses the pair and says how to fit one.
    rag = rag_map_file(tmp_path)
    policy = {**_policy(rag), "hallucination": {"model_id": "/models/my-detector"}}
    with pytest.raises(
        ConfigError, match=r"fitted for the bundled detector.*--model /models/my-detector"
    ):
        load_policy(policy)
    assert load_policy(_policy(rag)).hallucination.model_id is None


@pytest.fixture(scope="module")
def rag_guard(tmp_path_factory: pytest.TempPathFactory) -> TruthLens:
    from tests.conftest import BUNDLED
    from truthlens_integrations.core.models.detection import load_detector

    if BUNDLED is None:
        pytest.skip("bundled weights are not here")
    return make(load_detector(), _policy(rag_map_file(tmp_path_factory.mktemp("rag"))))


def test_the_bundled_detector_scores_through_the_rag_map(rag_guard: TruthLens) -> None:
    def guard(answer: str) -> Verdict:
        return rag_guard.guard(context=TOWER, question=TOWER_QUESTION, answer=answer)

    wrong = guard("The Eiffel Tower was built in 1950 and is 500 meters tall.")
    clean = guard("Built between 1887 and 1889, the tower in Paris is 330 meters tall.")
    assert wrong.route == clean.route == "calibrated"
    assert wrong.threshold == 0.5  # the file's threshold
    assert wrong.detected and not clean.detected
    assert wrong.score > clean.score


def _padded_scores(score: Callable[..., float]) -> list[float]:
    """The wrong Eiffel answer's score alone, then followed by 5, then by all, true sentences."""
    wrong = "The Eiffel Tower was built in 1950 and is 500 meters tall."
    return [
        score(context=TOWER, question=TOWER_QUESTION, answer=" ".join([wrong, *PADDING[:n]]))
        for n in (0, 5, len(PADDING))
    ]


def test_padding_never_lowers_the_rag_maps_score(rag_guard: TruthLens) -> None:
    scores = _padded_scores(lambda **text: rag_guard.guard(**text).score)
    assert scores[0] >= 0.5
    # Each padded answer scores at least as high: the map is monotone in its signals. The
    # token model reads a sentence together with the next ones of its unit, so a token of
    # the wrong sentence can move a little when sentences follow it (the flagged-token
    # count here: 12 alone, 9 padded); that moves the score by well under 0.005, where the
    # default map's length term took 0.29 off it.
    assert all(b >= a - 0.005 for a, b in pairwise(scores)), scores


def test_padding_never_lowers_the_default_maps_score_of_a_contradicted_number() -> None:
    # Issue 27: the default map's length term took the wrong Eiffel answer from 0.80 to
    # 0.66 with 20 supported sentences after it. Its numbers contradict the context, so
    # the rule sentence floor keeps the sentence at what it scores alone.
    from tests.conftest import BUNDLED
    from truthlens_integrations.core.models.detection import load_detector

    if BUNDLED is None:
        pytest.skip("bundled weights are not here")
    detector = load_detector()
    scores = _padded_scores(lambda **text: detector.detect(**text).score)
    assert scores[0] >= 0.5
    assert all(score >= scores[0] for score in scores), scores


# -- one owner: the map read once, one rescoring, its detected used, one set of rules ------


def test_a_routes_map_is_read_once_and_its_detected_decides(
    detector: Detector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from truthlens_integrations.core._calibration import _map as _response
    from truthlens_integrations.core.models.detection import _rescore

    reads = []
    original = _response.ResponseCalibration.from_entry.__func__  # type: ignore[attr-defined]

    def counting(cls: type, entry: object, **kwargs: object) -> object:
        reads.append(entry)
        return original(cls, entry, **kwargs)

    monkeypatch.setattr(_response.ResponseCalibration, "from_entry", classmethod(counting))
    model = detector.model_id
    engine = make(detector, _policy(_calibration(tmp_path, 30.0, threshold=0.5, model=model)))
    # read when the policy loaded (the file's own checks) and into the route's map
    built = len(reads)
    assert 1 <= built <= 2
    for _ in range(3):
        verdict = engine.guard(
            context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
        )
        assert verdict.route == "calibrated" and verdict.detected
    assert len(reads) == built  # never again per request
    assert verdict.detection is not None and verdict.detection.detected

    # The rescoring's ``detected`` is the one the guard uses: said otherwise, it stands.
    rescore = _rescore.RouteCalibration.rescore

    def said_clean(self: object, item: object, result: object, threshold: float) -> object:
        out = rescore(self, item, result, threshold)  # type: ignore[arg-type]
        return out.model_copy(update={"detected": False})

    monkeypatch.setattr(_rescore.RouteCalibration, "rescore", said_clean)
    cleared = engine.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert cleared.score == verdict.score and not cleared.detected and cleared.passed


def test_every_map_is_read_by_one_set_of_rules(tmp_path: Path) -> None:
    from truthlens_integrations.core import ModelLoadError
    from truthlens_integrations.core._calibration._file import read_calibration_file
    from truthlens_integrations.core._calibration._map import ResponseCalibration
    from truthlens_integrations.core.models._checks import check_config_numbers

    bad = {"max_logit": "high", "log_sentences": 0.0, "bias": 0.0}
    said = "response_calibration: 'max_logit' must be a number, got 'high'"
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps(
            {
                "format": "truthlens-response-calibration/1",
                "model": "bundled",
                "response_calibration": bad,
                "threshold": 0.5,
            }
        )
    )
    with pytest.raises(ConfigError) as in_file:
        read_calibration_file(path)  # a route's file, when its policy loads
    with pytest.raises(ConfigError) as in_entry:
        ResponseCalibration.from_entry(bad, where="response_calibration")  # a folder's map
    with pytest.raises(ModelLoadError) as in_folder:
        check_config_numbers(str(tmp_path), {"truthlens": {"response_calibration": bad}})
    for caught in (in_file, in_entry, in_folder):
        assert said in str(caught.value)
    # A file must also be length-safe; a shipped folder's map may lower long answers.
    shaped = {"max_logit": 1.0, "log_sentences": -0.5, "bias": 0.0}
    assert ResponseCalibration.from_entry(shaped)["log_sentences"] == -0.5
    path.write_text(
        path.read_text()
        .replace('"high"', "1.0")
        .replace('"log_sentences": 0.0', '"log_sentences": -0.5')
    )
    with pytest.raises(ConfigError, match="every coefficient but 'bias' must be >= 0"):
        read_calibration_file(path)


# -- ``truthlens calibrate`` end to end with the bundled detector on a small labelled file,


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"extra": 1}, "extra"),
        ({"threshold": True}, "threshold"),
        ({"threshold": "0.4"}, "threshold"),
        ({"threshold": 1.5}, "threshold"),
        ({"format": "v0"}, "format"),
        ({"response_calibration": {"max_logit": 0.5, "bias": 0.0}}, "log_sentences"),
        ({"response_calibration": {"max_logit": True, "log_sentences": 0, "bias": 0}}, "number"),
        (
            {"response_calibration": {"max_logit": 1, "log_sentences": 0, "bias": 0, "x": 1}},
            "unknown",
        ),
        ({"target": {"recall": 0.5}}, "target"),
        (
            {
                "response_calibration": {
                    "max_logit": 1,
                    "log_sentences": 0,
                    "bias": 0,
                    "long_answers": {"max_logit": 1, "log_sentences": 0, "bias": 0},
                }
            },
            "from_sentences",
        ),
        (
            {
                "response_calibration": {
                    "max_logit": 1,
                    "log_sentences": 0,
                    "bias": 0,
                    "long_answers": {
                        "from_sentences": 4,
                        "max_logit": 1,
                        "log_sentences": 0,
                        "bias": 0,
                        "rule_floor": 0.5,
                    },
                }
            },
            "unknown",
        ),
    ],
)
def test_calibration_files_are_read_strictly(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**valid_calibration_file(), **change}))
    with pytest.raises(ConfigError, match=message):
        read_calibration_file(path)


def test_nan_and_missing_files_are_config_errors(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(valid_calibration_file()).replace("0.4", "NaN"))
    with pytest.raises(ConfigError, match="NaN"):
        read_calibration_file(path)
    with pytest.raises(ConfigError, match="no such file"):
        read_calibration_file(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="is not a regular file"):
        read_calibration_file(tmp_path)  # a folder exists but is no file
    path.write_text(json.dumps(valid_calibration_file()))
    assert read_calibration_file(path).threshold == 0.4


# -- Calibration files and the routes that read them, as an attacker would feed them. ------


FORMAT = "truthlens-response-calibration/1"


def _content(response: dict[str, Any], model: str = "bundled") -> dict[str, Any]:
    return {"format": FORMAT, "model": model, "response_calibration": response, "threshold": 0.5}


def _write(path: Path, content: dict[str, Any] | str) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _routed_policy(calibration: Path | str) -> dict[str, object]:
    configuration = {"calibration": str(calibration)}
    return {
        "decisions": [
            {
                "name": "calibrated",
                "rules": {"conditions": [{"type": "fact_check", "name": "needs_fact_check"}]},
                "plugins": [{"type": "hallucination", "configuration": configuration}],
            }
        ]
    }


# -- a map's direction and range ------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "field"),
    [
        # all negative: a wrong answer scored 0.0 and the right one 0.98
        ({"max_logit": -1.5, "log_sentences": -0.2, "absent_words": -2.0, "bias": 1.0}, "max_logit"),
        ({"max_logit": 1.0, "log_sentences": 0.0, "number_conflicts": -3.0, "bias": 0.0},
         "number_conflicts"),
        # finite extremes decided by overflow
        ({"max_logit": 1e308, "log_sentences": 0.0, "bias": -1e308}, "max_logit"),
        ({"max_logit": 1.0, "log_sentences": 0.0, "bias": -1e308}, "bias"),
        # a map that does not read the detector at all
        ({"max_logit": 0.0, "log_sentences": 0.3, "absent_words": 1.0, "bias": -1.0},
         "'max_logit' or 'sentence_peak'"),
        ({"max_logit": 1.0, "log_sentences": 0.0, "bias": 0.0,
          "long_answers": {"from_sentences": 3, "max_logit": -1.0, "log_sentences": 0.0,
                           "bias": 0.0}}, "long_answers"),
    ],
)  # fmt: skip
def test_a_map_must_rise_with_the_evidence_and_stay_in_range(
    tmp_path: Path, response: dict[str, Any], field: str
) -> None:
    path = _write(tmp_path / "calib.json", _content(response))
    with pytest.raises(ConfigError) as caught:
        read_calibration_file(path)
    message = str(caught.value)
    assert field in message
    assert message.count(str(path)) == 1  # the file, named once
    with pytest.raises(ConfigError) as in_policy:
        load_policy(_routed_policy(path))
    assert field in str(in_policy.value) and str(in_policy.value).count(str(path)) == 1


def test_a_sane_map_loads(tmp_path: Path) -> None:
    response = {"max_logit": 0.0, "sentence_peak": 0.4, "log_sentences": 0.0, "bias": -1.0}
    assert read_calibration_file(_write(tmp_path / "ok.json", _content(response))).model == (
        "bundled"
    )


@pytest.mark.parametrize(
    ("response", "threshold"),
    [
        ({"max_logit": 1.0, "log_sentences": 0.0, "bias": -100.0}, 0.5),  # every score ~4e-18
        ({"max_logit": 1.0, "log_sentences": 0.0, "bias": 0.0}, 1.0),  # never reached
        (  # a long-answer map that padding with true sentences defeats
            {
                "max_logit": 1.0,
                "log_sentences": 0.0,
                "bias": 0.0,
                "long_answers": {
                    "from_sentences": 2,
                    "max_logit": 0.1,
                    "log_sentences": 0.0,
                    "bias": -20.0,
                },
            },
            0.5,
        ),
    ],
    ids=["bias", "threshold", "long_answers"],
)
@pytest.mark.parametrize("model", ["bundled", "someorg/other-detector"])
def test_a_file_that_switches_the_guard_off_is_refused(
    tmp_path: Path, response: dict[str, Any], threshold: float, model: str
) -> None:
    # Each obeyed every rule of the map; each passed the planted wrong answers.
    from truthlens_integrations.core._calibration._planted import load_calibration_file

    content = {**_content(response, model=model), "threshold": threshold}
    path = _write(tmp_path / "off.json", content)
    read_calibration_file(path)  # well formed: every rule of the map holds
    with pytest.raises(ConfigError, match="lets a plainly wrong answer pass") as raised:
        load_calibration_file(path)
    assert "off.json" in str(raised.value) and "truthlens calibrate" in str(raised.value)


# -- the file itself ------------------------------------------------------------------------


def test_only_a_regular_file_of_bounded_size_is_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        read_calibration_file("/dev/zero")  # was read until memory ran out
    fifo = tmp_path / "calib.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        read_calibration_file(fifo)  # was a hang: nobody writes to it
    with pytest.raises(ConfigError, match="not a regular file"):
        load_policy(_routed_policy(tmp_path))  # a folder
    big = _content({"max_logit": 1.0, "log_sentences": 0.0, "bias": 0.0})
    big["metrics"] = {"note": "x" * MAX_CALIBRATION_BYTES}
    with pytest.raises(ConfigError, match="larger than"):
        read_calibration_file(_write(tmp_path / "big.json", big))


def test_a_key_given_twice_is_refused_and_bad_bytes_are_clean_errors(tmp_path: Path) -> None:
    twice = (
        '{"format": "' + FORMAT + '", "model": "bundled", "threshold": 0.5, '
        '"response_calibration": {"max_logit": 1.0, "log_sentences": 0.0, "bias": -4.0, '
        '"bias": 4.0}}'
    )
    path = _write(tmp_path / "twice.json", twice)
    with pytest.raises(ConfigError, match="'bias' appears twice") as caught:
        read_calibration_file(path)
    assert str(caught.value).count(str(path)) == 1
    latin = tmp_path / "latin.json"
    latin.write_bytes(json.dumps(_content({"max_logit": 1.0})).encode() + b"\xe9")
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_calibration_file(latin)


# -- one policy, one reading ----------------------------------------------------------------


def test_derive_keeps_the_map_the_policy_read(detector: Detector, tmp_path: Path) -> None:
    response = {"max_logit": 1.0, "log_sentences": 0.0, "bias": 0.0}
    path = _write(tmp_path / "calib.json", _content(response, model=detector.model_id))
    engine = make(detector, _routed_policy(path))
    kwargs = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION}
    answer = "The Eiffel Tower was built in 1950."
    before = engine.guard(answer=answer, **kwargs)  # type: ignore[arg-type]
    # the file changes after the policy loaded: to another map, then to garbage
    _write(path, _content({**response, "bias": 30.0}, model=detector.model_id))
    derived = engine.derive(action="block")
    after = derived.guard(answer=answer, **kwargs)  # type: ignore[arg-type]
    assert after.score == pytest.approx(before.score)
    _write(path, "not json")
    again = derived.derive(threshold=0.6, on_block="message")
    route = again.policy.decision("calibrated").plugin
    assert route.calibration_file == engine.policy.decision("calibrated").plugin.calibration_file
    # a policy that loads the file afresh reads what is there now
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_policy(_routed_policy(path))


# -- the detector a map was fitted for ------------------------------------------------------


def test_a_map_is_refused_on_a_detector_it_was_not_fitted_for(
    detector: Detector, tmp_path: Path
) -> None:
    response = {"max_logit": 1.0, "log_sentences": 0.0, "bias": -1.0}
    hub = _write(tmp_path / "hub.json", _content(response, model="someorg/other-detector"))
    # the default engine uses the bundled detector (checked without loading it)
    with pytest.raises(ConfigError, match="fitted for the detector 'someorg/other-detector'"):
        TruthLens.from_config(_routed_policy(hub))
    with pytest.raises(ConfigError, match="cannot score the bundled detector"):
        TruthLens.from_config(_routed_policy(hub))
    # a map fitted for the bundled detector on another one, given to the engine or named
    rag = rag_map_file(tmp_path)
    with pytest.raises(ConfigError, match=r"fitted for the bundled detector.*'lexical'"):
        TruthLens.from_config(_routed_policy(rag), detector=LexicalDetector())
    with pytest.raises(ConfigError, match="fitted for the bundled detector"):
        make(detector, _routed_policy(rag))
    with pytest.raises(ConfigError, match="fitted for the detector 'someorg/other-detector'"):
        load_policy({**_routed_policy(hub), "hallucination": {"model_id": "another/model"}})
    # a derived engine with another detector is checked as well
    own = _write(tmp_path / "own.json", _content(response, model=detector.model_id))
    engine = make(detector, _routed_policy(own))
    with pytest.raises(ConfigError, match="cannot score the detector 'lexical'"):
        engine.derive(detector=LexicalDetector())
    # a map for "bundled" matches the bundled detector, however it is named
    assert TruthLens.from_config(_routed_policy(rag)).policy.decision("calibrated")
    parsed = read_calibration_file(rag)
    folder = Path(core_calibration.__file__).parents[1] / "_bundled" / "detector"
    for name in ("truthlens-bundled-detector", str(folder), "truthlens-bundled-detector@x"):
        core_calibration.check_calibration_detector(parsed, name)
