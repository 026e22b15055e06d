"""Tests of ``core/models/detection/_lexical.py``: the lexical reference detector and its NLI."""

from __future__ import annotations

from tests._paths import BENCHDATA
from truthlens_integrations.core import DetectionConfig, DetectionStatus
from truthlens_integrations.core.models import Detector
from truthlens_integrations.core.models.detection import LexicalDetector
from truthlens_integrations.core.models.detection._lexical import lexical_nli, normalize_word
from truthlens_integrations.evaluation._readers import read_snli

DATA = BENCHDATA


# ----------------------------------------------------------------------------- lexical


def test_normalize_word() -> None:
    assert normalize_word("2,400") == normalize_word("2400") == normalize_word("2400.0")
    assert normalize_word("Meters") == normalize_word("meter")
    assert normalize_word("two") == normalize_word("2")
    assert normalize_word("Paris's") == "paris"


def test_lexical_detector_flags_unsupported_numbers() -> None:
    detector = LexicalDetector()
    assert isinstance(detector, Detector)
    context = "The Eiffel Tower in Paris was built in 1889 and is roughly 330 meters tall."
    answer = "The Eiffel Tower was built in 1950 and is 500 meters tall."
    result = detector.detect(context=context, question="When was it built?", answer=answer)
    assert [s.text for s in result.spans] == ["1950", "500"]
    assert result.detected and result.score >= 0.9
    clean = detector.detect(
        context="About 2,400 people live in the village.",
        question=None,
        answer="Roughly 2400 people live in the village.",
    )
    assert [s.text for s in clean.spans] == ["Roughly"]  # a plain word, not the number
    supported = detector.detect(
        context=context, question=None, answer="The Eiffel Tower is 330 meters tall."
    )
    assert supported.spans == [] and not supported.detected
    missing = detector.detect(context=None, question=None, answer="It is 330 meters tall.")
    assert missing.status is DetectionStatus.UNVERIFIABLE


def test_lexical_threshold_counts_words() -> None:
    detector = LexicalDetector(config=DetectionConfig(threshold=0.7))
    one = detector.detect(context="a red car", question=None, answer="a blue car")
    two = detector.detect(context="a red car", question=None, answer="a blue fast car")
    assert not one.detected and two.detected  # 0.6 < 0.7 <= 1 - 0.4**2


def test_lexical_nli() -> None:
    pairs = [(p.premise, p.hypothesis) for p in read_snli(DATA / "esnli")]
    assert lexical_nli(pairs) == ["entailment", "neutral", "contradiction"]
