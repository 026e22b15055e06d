"""Tests of ``core/models/classifier/_hf.py``: Hugging Face prompt classifiers named by the
policy's fact_check_model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._tiny_models import build_nli_model
from truthlens_integrations.core import InvalidInputError, ModelLoadError, ModelNotAvailableError
from truthlens_integrations.core.models.classifier._hf import (
    TransformersFactCheckClassifier,
    positive_class,
)


@pytest.mark.parametrize(
    ("id2label", "expected"),
    [
        ({0: "NO_FACT_CHECK_NEEDED", 1: "FACT_CHECK_NEEDED"}, 1),
        ({0: "needs_fact_check", 1: "no_fact_check"}, 0),
        ({0: "LABEL_0", 1: "LABEL_1"}, 1),
        ({0: "no", 1: "yes"}, 1),
    ],
)
def test_positive_class_from_names(id2label: dict[int, str], expected: int) -> None:
    assert positive_class(id2label) == expected


@pytest.mark.parametrize(
    "id2label", [{0: "a", 1: "b"}, {0: "x", 1: "y", 2: "z"}, {0: "fact", 1: "check"}]
)
def test_unusable_label_names_are_refused(id2label: dict[int, str]) -> None:
    with pytest.raises(ModelLoadError):
        positive_class(id2label)


def test_a_local_classifier_decides_with_its_positive_class(tmp_path: Path) -> None:
    # Class names put the positive class first; the bias makes it win for every prompt.
    labels = {0: "FACT_CHECK_NEEDED", 1: "NO_FACT_CHECK_NEEDED"}
    folder = build_nli_model(tmp_path / "sentinel", labels, [2.0, 0.0])
    classifier = TransformersFactCheckClassifier(folder, device="cpu", batch_size=2)
    results = classifier.classify(["When was it built?", "Write a poem.", "Who is it?"])
    assert [needs for needs, _ in results] == [True, True, True]
    assert all(conf == pytest.approx(0.8808, abs=1e-3) for _, conf in results)  # sigmoid(2)
    with pytest.raises(InvalidInputError):
        classifier.classify(["ok", ""])


@pytest.mark.usefixtures("hub_offline")
def test_an_unreachable_hub_id_says_how_to_pass_a_folder() -> None:
    with pytest.raises(ModelNotAvailableError, match="local-dir"):
        TransformersFactCheckClassifier("nobody/not-a-real-sentinel-model")


def test_the_policy_fact_check_model_gates_the_engine(tmp_path: Path) -> None:
    from tests._tiny_models import build_keyword_model
    from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT
    from truthlens_integrations.core.engine import TruthLens
    from truthlens_integrations.core.models.detection import load_detector

    labels = {0: "NO_FACT_CHECK_NEEDED", 1: "FACT_CHECK_NEEDED"}
    # This sentinel finds every prompt creative. A grounded answer is still checked by
    # default; with skip_non_factual_grounded the classifier gates detection.
    folder = build_nli_model(tmp_path / "sentinel", labels, [3.0, 0.0])
    detector = load_detector(str(build_keyword_model(tmp_path / "kw", ["1950"])), device="cpu")
    policy: dict[str, object] = {
        "hallucination_mitigation": {"fact_check_model": {"model_id": str(folder)}}
    }
    engine = TruthLens.from_config(policy, detector=detector)
    verdict = engine.guard(
        context=[EIFFEL_CONTEXT], question="When was it built?", answer=EIFFEL_ANSWER
    )
    assert isinstance(engine.fact_checker, TransformersFactCheckClassifier)
    assert not verdict.fact_check_needed and verdict.detection is not None
    assert verdict.detected

    gated = {**policy, "hallucination": {"skip_non_factual_grounded": True}}
    verdict = TruthLens.from_config(gated, detector=detector).guard(
        context=[EIFFEL_CONTEXT], question="When was it built?", answer=EIFFEL_ANSWER
    )
    assert not verdict.fact_check_needed and verdict.detection is None
    assert not verdict.checked and verdict.not_checked_reason == "non_factual"

    missing = {"hallucination_mitigation": {"fact_check_model": {"model_id": str(tmp_path / "x")}}}
    with pytest.raises(ModelNotAvailableError):
        TruthLens.from_config(missing, detector=detector).guard(
            context=[EIFFEL_CONTEXT], question="When?", answer=EIFFEL_ANSWER
        )
