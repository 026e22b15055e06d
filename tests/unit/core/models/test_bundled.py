"""Tests of ``core/models/_bundled.py``: the bundled offline models load from package data and
behave sensibly on plain cases.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from truthlens_integrations.core import models as bm
from truthlens_integrations.core._errors import (
    InvalidInputError,
    ModelLoadError,
    ModelNotAvailableError,
)
from truthlens_integrations.core.models import _bundled, encoder_fingerprint
from truthlens_integrations.core.models.nli._bundled import _NLI_LABELS

try:
    DETECTOR = bm.bundled_detector_path()
except ModelNotAvailableError:
    DETECTOR = None

needs_weights = pytest.mark.skipif(
    DETECTOR is None, reason="bundled weights are not in this checkout (core/_bundled/detector)"
)


def test_missing_weights_raise_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(_bundled, "BUNDLED_DIR", tmp_path)
    with pytest.raises(ModelNotAvailableError, match="bundled detector is missing"):
        bm.bundled_detector_path()


def test_a_folder_without_heads_is_not_a_bundled_model(tmp_path: Path) -> None:
    with pytest.raises(ModelNotAvailableError, match=r"heads\.safetensors"):
        bm.BundledNLI(path=tmp_path, device="cpu")


@needs_weights
def test_detector_folder_is_a_standard_token_classifier() -> None:
    from transformers import AutoConfig

    assert DETECTOR is not None
    assert DETECTOR.is_relative_to(_bundled.BUNDLED_DIR)
    config = AutoConfig.from_pretrained(str(DETECTOR))
    assert config.model_type == "bert"
    assert config.id2label == {0: "supported", 1: "hallucinated"}
    assert config.max_position_embeddings == 512
    total = sum(p.stat().st_size for p in DETECTOR.parent.rglob("*") if p.is_file())
    assert total <= 60_000_000


@pytest.fixture(scope="module")
def nli() -> bm.BundledNLI:
    if DETECTOR is None:
        pytest.skip("bundled weights are not in this checkout (core/_bundled/detector)")
    return bm.BundledNLI(device="cpu")


@pytest.fixture(scope="module")
def classifier() -> bm.BundledPromptClassifier:
    if DETECTOR is None:
        pytest.skip("bundled weights are not in this checkout (core/_bundled/detector)")
    return bm.BundledPromptClassifier(device="cpu")


def test_nli_labels_obvious_pairs(nli: bm.BundledNLI) -> None:
    got = nli.predict(
        [
            # Negations are reliable; changed numbers ("built in 1889" vs "in 1950") are not
            # yet: the shipped short run labels that pair neutral (see the NLI model card).
            ("The tower is in Paris.", "The tower is not in Paris."),
            ("A man is playing a guitar on stage.", "A man is playing a guitar on stage."),
        ]
    )
    assert got[0].label == "contradiction"
    assert got[1].label == "entailment"
    for p in got:
        assert abs(sum(p.probabilities.values()) - 1.0) < 1e-4
        assert p.confidence == max(p.probabilities.values())


def test_nli_keeps_input_order_across_length_sorted_batches(nli: bm.BundledNLI) -> None:
    pairs = [
        ("The tower was built in 1889.", "The tower was built in 1950."),
        ("A man is playing a guitar on stage. " * 5, "A man is playing a guitar on stage."),
    ]
    one_by_one = [nli.predict([p])[0] for p in pairs]
    batched = nli.predict(pairs)
    for a, b in zip(one_by_one, batched, strict=True):
        assert a.label == b.label
        assert abs(a.confidence - b.confidence) < 1e-3


def test_nli_rejects_bad_pairs(nli: bm.BundledNLI) -> None:
    assert nli.predict([]) == []
    with pytest.raises(InvalidInputError):
        nli.predict([("premise", "")])
    with pytest.raises(InvalidInputError):
        nli.predict([("only one",)])  # type: ignore[list-item]


def test_prompt_classifier_separates_facts_from_creative_work(
    classifier: bm.BundledPromptClassifier,
) -> None:
    got = classifier.predict(["Write a poem about autumn", "When was the Eiffel Tower built?"])
    assert got[0].needs_fact_check is False
    assert got[1].needs_fact_check is True
    for p in got:
        assert 0.5 <= p.confidence <= 1.0


def test_prompt_classifier_rejects_bad_input(classifier: bm.BundledPromptClassifier) -> None:
    with pytest.raises(InvalidInputError):
        classifier.predict("When was the Eiffel Tower built?")
    with pytest.raises(InvalidInputError):
        classifier.predict([" "])


def test_loaders_share_one_encoder_and_are_thread_safe(
    nli: bm.BundledNLI, classifier: bm.BundledPromptClassifier
) -> None:
    assert nli._shared is classifier._shared
    results: list[bool] = []

    def work() -> None:
        results.append(classifier.predict(["When was the Eiffel Tower built?"])[0].needs_fact_check)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 4


BRANCH = _bundled.BUNDLED_DIR / "nli" / "model.safetensors"
needs_branch = pytest.mark.skipif(not BRANCH.is_file(), reason="no bundled NLI branch")


@needs_branch
def test_shipped_nli_uses_its_branch_on_the_shipped_encoder(nli: bm.BundledNLI) -> None:
    from safetensors import safe_open

    assert nli.uses_branch
    with safe_open(str(BRANCH), framework="pt") as fh:
        meta = fh.metadata()
        keys = list(fh.keys())
    shared = int(meta["shared_layers"])
    assert DETECTOR is not None
    assert meta["encoder_sha256"] == encoder_fingerprint(DETECTOR, shared)
    # only the upper layers and the head are stored; the lower ones are the detector's
    assert not any(k.startswith(f"encoder.layer.{i}.") for k in keys for i in range(shared))
    assert any(k.startswith("head.") for k in keys)


@needs_branch
def test_fingerprint_ignores_the_token_head_but_not_the_shared_layers(tmp_path: Path) -> None:
    import shutil

    from safetensors.torch import load_file, save_file

    assert DETECTOR is not None
    folder = tmp_path / "enc"
    shutil.copytree(DETECTOR, folder)
    before = encoder_fingerprint(folder, 3)
    weights = load_file(str(folder / "model.safetensors"))
    weights["classifier.bias"] = weights["classifier.bias"] + 0.5
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    assert encoder_fingerprint(folder, 3) == before
    weights["bert.encoder.layer.2.output.dense.bias"] += 0.01
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    assert encoder_fingerprint(folder, 3) != before
    # layer 2 is outside a 2-layer fingerprint
    assert encoder_fingerprint(folder, 2) == encoder_fingerprint(DETECTOR, 2)


@needs_branch
def test_a_branch_for_another_encoder_is_refused_or_skipped(tmp_path: Path) -> None:
    import shutil

    from safetensors.torch import load_file, save_file

    assert DETECTOR is not None
    other = tmp_path / "other"
    shutil.copytree(DETECTOR, other)
    weights = load_file(str(other / "model.safetensors"))
    weights["bert.embeddings.LayerNorm.bias"] += 0.01
    save_file(weights, str(other / "model.safetensors"), metadata={"format": "pt"})
    # the shipped branch does not fit this encoder: the default falls back to its own head
    fallback = bm.BundledNLI(path=other, device="cpu")
    assert not fallback.uses_branch
    assert fallback.predict([("A dog runs.", "A dog runs.")])[0].label in _NLI_LABELS
    # ...and naming the branch explicitly is an error that says what to do
    with pytest.raises(ModelLoadError, match="another encoder"):
        bm.BundledNLI(path=other, branch_path=BRANCH.parent, device="cpu")
    with pytest.raises(ModelNotAvailableError, match="no NLI branch"):
        bm.BundledNLI(branch_path=tmp_path, device="cpu")


@needs_weights
def test_bfloat16_is_a_separate_encoder_with_the_same_verdicts(
    nli: bm.BundledNLI, classifier: bm.BundledPromptClassifier
) -> None:
    import torch

    nli16 = bm.BundledNLI(device="cpu", dtype="bfloat16")
    assert nli16._shared.dtype is torch.bfloat16 and nli._shared.dtype is torch.float32
    assert nli16._shared is not nli._shared
    assert nli16.uses_branch == nli.uses_branch
    pairs = [
        ("The tower is in Paris.", "The tower is not in Paris."),
        ("A man is playing a guitar on stage.", "A man is playing a guitar on stage."),
    ]
    assert [p.label for p in nli16.predict(pairs)] == [p.label for p in nli.predict(pairs)]
    prompts = ["Write a poem about autumn", "When was the Eiffel Tower built?"]
    classifier16 = bm.BundledPromptClassifier(device="cpu", dtype="bfloat16")
    assert [p.needs_fact_check for p in classifier16.predict(prompts)] == [
        p.needs_fact_check for p in classifier.predict(prompts)
    ]


@needs_weights
def test_bundled_detector_on_the_eiffel_record_and_a_paraphrase() -> None:
    from truthlens_integrations.core.models.detection import load_detector

    detector = load_detector(device="cpu")
    record = (
        '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters", '
        '"location": "Paris, France"}'
    )
    answer = "The Eiffel Tower in Paris was built in 1950 and is 500 meters tall."
    result = detector.detect(context=[record], question="When was it built?", answer=answer)
    assert result.detected
    flagged = [(s.start, s.end) for s in result.spans]

    def inside(word: str) -> bool:
        start = answer.index(word)
        return any(a <= start and start + len(word) <= b for a, b in flagged)

    assert inside("1950") and inside("500")
    # The span cut trades precision for recall (RULE_candidate8.md): a supported word may be
    # marked too, but never as confidently as the two contradicted facts.
    confidence = {s.text.strip(): s.confidence for s in result.spans}
    wrong = min(confidence["1950"], confidence["500 meters"])
    assert all(c < wrong for text, c in confidence.items() if text not in ("1950", "500 meters"))
    # a paraphrase of the context is supported
    clean = detector.detect(
        context=["Roughly 2,400 people work at the tower every day."],
        question="How many people work at the tower?",
        answer="About 2,400 people work at the tower.",
    )
    assert not clean.detected and clean.spans == []


@needs_weights
def test_loading_the_bundled_weights_draws_no_progress_bar(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # transformers draws a "Loading weights" bar per from_pretrained; on a local
    # folder it would print into the application's console on its first answer.
    from transformers.utils import logging as transformers_logging

    from truthlens_integrations.core.models._loading import _from_pretrained

    assert transformers_logging.is_progress_bar_enabled()
    _from_pretrained(str(DETECTOR), "token", __import__("torch").float32, None, None)
    captured = capfd.readouterr()
    assert "Loading weights" not in captured.err + captured.out
    # the caller's setting is restored, not switched off for good
    assert transformers_logging.is_progress_bar_enabled()
