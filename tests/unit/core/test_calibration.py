"""A policy route that points to a calibration file (``truthlens calibrate``)."""

from __future__ import annotations

import json
import math
from itertools import pairwise
from pathlib import Path

import pytest

from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from tests.test_engine import make
from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.models.detection import Detector
from truthlens_integrations.core.policy import load_policy


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
    low = make(detector, _policy(_calibration(tmp_path, -30.0, model=model)))
    verdict = low.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert verdict.route == "calibrated" and verdict.threshold == 0.7
    assert verdict.score == pytest.approx(_expected(detector, -30.0), rel=1e-4)
    assert not verdict.detected  # below 0.7, although the keyword model marks 1950
    high = make(detector, _policy(_calibration(tmp_path, 3.0, model=model)))
    flagged = high.guard(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert flagged.detected
    assert flagged.score == pytest.approx(_expected(detector, 3.0), rel=1e-4)
    # the route's own threshold wins over the file's
    own = make(detector, _policy(_calibration(tmp_path, 3.0, model=model), threshold=0.99))
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


# -- the bundled calibration ``rag`` (candidate 4a of issue 27, opt-in) -------------------

SELECTION = Path(__file__).resolve().parents[1] / "lab" / "records" / "rag_selection"
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


def test_rag_is_a_bundled_name_for_the_selection_runs_map() -> None:
    from truthlens_integrations.core._calibration import (
        bundled_calibration_names,
        read_calibration_file,
    )
    from truthlens_integrations.core.models.detection._response import ResponseCalibration

    assert "rag" in bundled_calibration_names()
    rag = read_calibration_file("rag")
    # the lab's map refitted for the bundled detector now in place (its coefficients; the
    # shipped file's fitted_on says it in words, without the lab's paths)
    figures = json.loads((SELECTION / "stage6" / "crossfit_detector.json").read_text())
    recorded = {k: v for k, v in figures["maps"]["rules"].items() if k != "fitted_on"}
    shipped = {k: v for k, v in rag.response_calibration.items() if k != "fitted_on"}
    assert shipped == recorded
    assert rag.model == "bundled" and rag.threshold == 0.5 and rag.target == {}
    assert rag.metrics["this_map"]["select_split_crossfitted"] == {
        k: figures["select_crossfitted"]["rules"][k]
        for k in ("auroc", "ap", "ece", "clean_flagged")
    }
    response = ResponseCalibration.from_entry(rag.response_calibration)
    assert response.length_safe and response.reads_rules
    # the policy reads the same file by name
    route = load_policy(_policy("rag")).decisions[0].plugins[0].configuration
    assert route.calibration_file == rag


def test_an_unknown_calibration_name_lists_the_bundled_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'rga' is neither a bundled calibration \(rag\)"):
        load_policy(_policy("rga"))
    # a path is still a path, and a file beats nothing but a bundled name
    path = _calibration(tmp_path, 1.0)
    route = load_policy(_policy(path)).decisions[0].plugins[0].configuration
    assert route.calibration_file is not None and route.calibration_file.threshold == 0.7


def test_a_map_fitted_for_the_bundled_detector_is_refused_with_another_one() -> None:
    # `rag` was fitted on the bundled detector's outputs: on another model it would
    # score silently wrong, so the policy refuses the pair and says how to fit one.
    policy = {**_policy("rag"), "hallucination": {"model_id": "/models/my-detector"}}
    with pytest.raises(
        ConfigError, match=r"fitted for the bundled detector.*--model /models/my-detector"
    ):
        load_policy(policy)
    assert load_policy(_policy("rag")).hallucination.model_id is None


@pytest.fixture(scope="module")
def rag_guard() -> TruthLens:
    from tests.conftest import BUNDLED
    from truthlens_integrations.core.models.detection import load_detector

    if BUNDLED is None:
        pytest.skip("bundled weights are not here")
    return make(load_detector(), _policy("rag"))


def test_the_bundled_detector_scores_through_the_rag_map(rag_guard: TruthLens) -> None:
    def guard(answer: str) -> Verdict:
        return rag_guard.guard(context=TOWER, question=TOWER_QUESTION, answer=answer)

    wrong = guard("The Eiffel Tower was built in 1950 and is 500 meters tall.")
    clean = guard("Built between 1887 and 1889, the tower in Paris is 330 meters tall.")
    assert wrong.route == clean.route == "calibrated"
    assert wrong.threshold == 0.5  # the file's threshold
    assert wrong.detected and not clean.detected
    assert wrong.score > clean.score


def test_padding_never_lowers_the_rag_maps_score(rag_guard: TruthLens) -> None:
    wrong = "The Eiffel Tower was built in 1950 and is 500 meters tall."
    scores = [
        rag_guard.guard(
            context=TOWER, question=TOWER_QUESTION, answer=" ".join([wrong, *PADDING[:n]])
        ).score
        for n in (0, 5, len(PADDING))
    ]
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
    wrong = "The Eiffel Tower was built in 1950 and is 500 meters tall."
    scores = [
        detector.detect(
            context=TOWER, question=TOWER_QUESTION, answer=" ".join([wrong, *PADDING[:n]])
        ).score
        for n in (0, 5, len(PADDING))
    ]
    assert scores[0] >= 0.5
    assert all(score >= scores[0] for score in scores), scores
