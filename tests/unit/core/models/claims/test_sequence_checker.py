"""Tests of ``core/models/claims/_sequence_checker.py``: a claim checker over a Hugging Face
sequence classifier (MiniCheck, FactCG, NLI cross-encoders, T5 classifiers).

The models are tiny, seeded and built here (``tests/_tiny_models.py``): RoBERTa,
DeBERTa-v2 and T5 sequence classifiers. Where a test needs the output known in advance,
the classifier's last layer reads nothing but its bias, so every pair gets exactly those
logits; elsewhere the untrained model's own (input-dependent) output is compared with
itself, never faked.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests._tiny_models import build_sequence_classifier
from truthlens_integrations.core import (
    InvalidArgumentError,
    ModelLoadError,
    ModelNotAvailableError,
)
from truthlens_integrations.core.models.claims import (
    Claim,
    ClaimChecker,
    SequenceClassifierChecker,
)
from truthlens_integrations.core.models.claims._contract import acheck_claims, check_claims
from truthlens_integrations.core.models.claims._sequence_checker import claim_labels

NLI = {0: "entailment", 1: "neutral", 2: "contradiction"}
UNNAMED = {0: "LABEL_0", 1: "LABEL_1"}
KINDS = ("roberta", "deberta-v2", "t5")
EVIDENCE = "The Eiffel Tower in Paris was built from 1887 to 1889 and is 330 meters tall."


def claim(text: str, evidence: str = EVIDENCE) -> Claim:
    return Claim(text=text, start=0, end=len(text), evidence=evidence)


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Untrained RoBERTa, DeBERTa-v2 and T5 NLI classifiers: output depends on the input."""
    root = tmp_path_factory.mktemp("claim-checkers")
    return {kind: build_sequence_classifier(kind, root / kind, NLI) for kind in KINDS}


# -- what the classes mean --------------------------------------------------------------


@pytest.mark.parametrize(
    ("id2label", "expected"),
    [
        (NLI, {0: "supported", 1: "neutral", 2: "contradiction"}),
        (
            {0: "CONTRADICTION", 1: "ENTAILMENT", 2: "NEUTRAL"},  # cross-encoder/nli-deberta
            {0: "contradiction", 1: "supported", 2: "neutral"},
        ),
        ({0: "entailment", 1: "not_entailment"}, {0: "supported", 1: "neutral"}),
        ({0: "Unsupported", 1: "Supported"}, {0: "neutral", 1: "supported"}),
        ({0: "inconsistent", 1: "consistent"}, {0: "neutral", 1: "supported"}),
        ({0: "no", 1: "yes"}, {0: "neutral", 1: "supported"}),
        ({0: "hallucinated", 1: "not hallucinated"}, {0: "neutral", 1: "supported"}),
        ({0: "non-factual", 1: "factual"}, {0: "neutral", 1: "supported"}),
    ],
)
def test_class_names_are_read(id2label: dict[int, str], expected: dict[int, str]) -> None:
    assert claim_labels(id2label) == expected


@pytest.mark.parametrize(
    "id2label",
    [UNNAMED, {0: "entailment", 1: "other"}, {0: "neutral", 1: "contradiction"}],
)
def test_unreadable_classes_are_refused_naming_the_option(id2label: dict[int, str]) -> None:
    with pytest.raises(ModelLoadError, match="supported_label") as info:
        claim_labels(id2label)
    assert "claim_check.supported_label" in str(info.value)


def test_supported_label_by_index_or_name() -> None:
    assert claim_labels(UNNAMED, 1) == {0: "neutral", 1: "supported"}
    assert claim_labels(UNNAMED, "LABEL_0") == {0: "supported", 1: "neutral"}
    # the other classes keep what their names say
    assert claim_labels(NLI, "entailment") == {0: "supported", 1: "neutral", 2: "contradiction"}


def test_supported_label_that_contradicts_the_names_is_refused() -> None:
    with pytest.raises(ModelLoadError, match="reads as supported"):
        claim_labels({0: "entailment", 1: "not_entailment"}, 1)
    with pytest.raises(InvalidArgumentError, match="not a class"):
        claim_labels(UNNAMED, 2)
    with pytest.raises(InvalidArgumentError, match="names 0 classes"):
        claim_labels(UNNAMED, "supported")


# -- exact outputs: the head reads only its bias ----------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_three_class_nli_model(kind: str, tmp_path: Path) -> None:
    folder = build_sequence_classifier(kind, tmp_path / kind, NLI, bias=[0.0, 0.0, 3.0])
    checker = SequenceClassifierChecker(folder, device="cpu")
    (result,) = checker.check([claim("It was built in 1950.")])
    assert result.checked and result.label == "contradiction"
    assert result.supported == pytest.approx(1.0 / (2.0 + math.exp(3.0)), abs=1e-6)
    assert result.checker == f"sequence:{kind}"


def test_neutral_when_it_is_the_likelier_rejection(tmp_path: Path) -> None:
    folder = build_sequence_classifier("roberta", tmp_path / "m", NLI, bias=[0.0, 2.0, 1.0])
    (result,) = SequenceClassifierChecker(folder, device="cpu").check([claim("It is red.")])
    assert result.label == "neutral" and result.rejected


def test_two_class_minicheck_with_supported_label(tmp_path: Path) -> None:
    folder = build_sequence_classifier("roberta", tmp_path / "mc", UNNAMED, bias=[0.0, 2.0])
    with pytest.raises(ModelLoadError, match="supported_label=1"):
        SequenceClassifierChecker(folder, device="cpu")
    supported = SequenceClassifierChecker(folder, device="cpu", supported_label=1)
    (result,) = supported.check([claim("It was built in 1889.")])
    assert result.label == "supported"
    assert result.supported == pytest.approx(sigmoid(2.0), abs=1e-6)
    # the same head read the other way round rejects the claim
    (flipped,) = SequenceClassifierChecker(folder, device="cpu", supported_label=0).check(
        [claim("It was built in 1889.")]
    )
    assert flipped.label == "neutral"
    assert flipped.supported == pytest.approx(1.0 - sigmoid(2.0), abs=1e-6)


@pytest.mark.parametrize(("bias", "label"), [(1.2, "supported"), (-1.2, "neutral")])
def test_single_logit_is_a_sigmoid(tmp_path: Path, bias: float, label: str) -> None:
    folder = build_sequence_classifier("deberta-v2", tmp_path / "one", {0: "LABEL_0"}, bias=[bias])
    (result,) = SequenceClassifierChecker(folder, device="cpu").check([claim("It is tall.")])
    assert result.label == label
    assert result.supported == pytest.approx(sigmoid(bias), abs=1e-6)


def test_single_logit_named_as_hallucination_reads_the_other_way(tmp_path: Path) -> None:
    folder = build_sequence_classifier("t5", tmp_path / "h", {0: "hallucinated"}, bias=[2.0])
    (result,) = SequenceClassifierChecker(folder, device="cpu").check([claim("It is tall.")])
    assert result.label == "neutral"
    assert result.supported == pytest.approx(1.0 - sigmoid(2.0), abs=1e-6)


# -- trust_remote_code ------------------------------------------------------------------


def _with_config(source: Path, target: Path, **changes: object) -> Path:
    import shutil

    shutil.copytree(source, target)
    path = target / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.update(changes)
    path.write_text(json.dumps(config), encoding="utf-8")
    return target


def test_a_checkpoint_with_its_own_code_is_refused(models: dict[str, Path], tmp_path: Path) -> None:
    folder = _with_config(
        models["roberta"],
        tmp_path / "custom",
        auto_map={"AutoModelForSequenceClassification": "modeling_custom.CustomModel"},
    )
    # the folder's code would leave a mark if it were ever imported
    mark = tmp_path / "code-ran"
    (folder / "modeling_custom.py").write_text(
        f"open({str(mark)!r}, 'w').close()\nraise RuntimeError('remote code ran')\n",
        encoding="utf-8",
    )
    with pytest.raises(ModelLoadError, match="trust_remote_code=True") as info:
        SequenceClassifierChecker(folder, device="cpu")
    assert "auto_map" in str(info.value)
    assert not mark.exists()


def test_an_unknown_model_type_is_refused(models: dict[str, Path], tmp_path: Path) -> None:
    folder = _with_config(models["t5"], tmp_path / "unknown", model_type="hhemv9")
    with pytest.raises(ModelLoadError, match="trust_remote_code=True"):
        SequenceClassifierChecker(folder, device="cpu")


def test_trust_remote_code_must_be_a_bool(models: dict[str, Path]) -> None:
    with pytest.raises(InvalidArgumentError, match="trust_remote_code"):
        SequenceClassifierChecker(models["roberta"], device="cpu", trust_remote_code="yes")  # type: ignore[arg-type]


# -- long inputs: the evidence is cut, the claim never --------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_long_evidence_is_cut_and_the_claim_kept(models: dict[str, Path], kind: str) -> None:
    checker = SequenceClassifierChecker(models[kind], device="cpu")
    long_claim = claim(
        "Alice visited the old castle and the green garden in London in 1920.",
        evidence=" ".join(["The red bridge over the river was painted in 1950."] * 300),
    )
    seen: list[list[int]] = []

    def record(module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        seen.extend(kwargs["input_ids"].tolist())

    hook = checker._loaded.model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        (result,) = checker.check([long_claim])
    finally:
        hook.remove()
    assert result.checked and result.supported is not None
    tokenizer = checker._loaded.tokenizer
    claim_ids = tokenizer(long_claim.text, add_special_tokens=False)["input_ids"]
    (row,) = seen
    assert len(row) == checker.max_length  # the evidence filled the window
    end = len(row) - 1  # the closing special token
    assert row[end - len(claim_ids) : end] == claim_ids


def test_a_claim_longer_than_the_window_is_not_checked(models: dict[str, Path]) -> None:
    checker = SequenceClassifierChecker(models["roberta"], device="cpu", max_length=32)
    words = "the old castle in london was visited by alice and bob in 1920 " * 4
    too_long, fits = claim(words), claim("It is tall.")
    first, second = checker.check([too_long, fits])
    assert not first.checked and first.supported is None
    assert first.reason is not None and "never cut" in first.reason
    assert second.checked


def test_max_length_over_the_window_is_refused(models: dict[str, Path]) -> None:
    with pytest.raises(InvalidArgumentError, match="max_length=4096"):
        SequenceClassifierChecker(models["deberta-v2"], device="cpu", max_length=4096)
    # unset, it is 512 or the model's window where smaller
    assert SequenceClassifierChecker(models["deberta-v2"], device="cpu").max_length == 128


@pytest.mark.parametrize(
    "options",
    [{"batch_size": 0}, {"max_length": 0}, {"supported_label": True}, {"supported_label": 1.0}],
)
def test_bad_options_are_refused(models: dict[str, Path], options: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        SequenceClassifierChecker(models["roberta"], device="cpu", **options)


# -- batching ---------------------------------------------------------------------------

CLAIMS = [
    claim("It is tall."),
    claim("The tower in Paris was built in 1887 by Alice.", evidence="It is new."),
    claim("Bob sold it.", evidence=" ".join([EVIDENCE] * 5)),
    claim("The blue museum was opened when Carol moved to Rome in 1950."),
    claim("It was designed in 1889.", evidence="The green garden in Berlin was opened in 1920."),
    claim("It is 330 meters tall."),
    claim("Dave painted the white castle.", evidence=" ".join([EVIDENCE] * 2)),
    claim("Erin and Frank visited London.", evidence="Frank visited London with Erin in 1950."),
    claim("The river is short."),
    claim("Heidi owned the large old bridge in Paris in 1920 when it was new."),
]


@pytest.mark.parametrize("kind", KINDS)
def test_batches_give_the_same_results_in_order(models: dict[str, Path], kind: str) -> None:
    one = SequenceClassifierChecker(models[kind], device="cpu", batch_size=1).check(CLAIMS)
    eight = SequenceClassifierChecker(models[kind], device="cpu", batch_size=8).check(CLAIMS)
    assert [r.claim for r in one] == [r.claim for r in eight] == CLAIMS
    assert [r.label for r in one] == [r.label for r in eight]
    for a, b in zip(one, eight, strict=True):
        assert a.supported == pytest.approx(b.supported, abs=1e-5)
    # an untrained model still reads its input: the claims do not all score alike
    assert len({round(r.supported or 0.0, 4) for r in one}) > 1


# -- not checked ------------------------------------------------------------------------


def test_empty_evidence_or_unreadable_text_is_not_checked(models: dict[str, Path]) -> None:
    checker = SequenceClassifierChecker(models["roberta"], device="cpu")
    results = checker.check(
        [
            claim("It is tall.", evidence="  \n"),
            claim("It is tall.", evidence="broken \ud800 text"),
            claim("   "),
            claim("It is tall."),
        ]
    )
    assert [r.checked for r in results] == [False, False, False, True]
    assert all(r.supported is None and r.label is None for r in results[:3])
    reasons = [r.reason or "" for r in results[:3]]
    assert "no evidence" in reasons[0]
    assert "tokenizer cannot read" in reasons[1]
    assert "blank" in reasons[2]


def test_a_model_failure_leaves_only_its_claim_not_checked(models: dict[str, Path]) -> None:
    checker = SequenceClassifierChecker(models["deberta-v2"], device="cpu", batch_size=8)
    castle = checker._loaded.tokenizer.convert_tokens_to_ids("castle")

    def fail_on_castle(module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        if (kwargs["input_ids"] == castle).any():
            raise RuntimeError("CUDA error: device-side assert triggered\nmore lines")

    hook = checker._loaded.model.register_forward_pre_hook(fail_on_castle, with_kwargs=True)
    try:
        results = checker.check([claim("It is tall."), claim("The castle is old."), claim("Yes.")])
    finally:
        hook.remove()
    assert [r.checked for r in results] == [True, False, True]
    failed = results[1]
    assert failed.supported is None and failed.label is None
    assert failed.reason == (
        "the model failed on this claim: RuntimeError: CUDA error: device-side assert triggered"
    )


# -- the contract -----------------------------------------------------------------------


def test_results_satisfy_the_contract(models: dict[str, Path]) -> None:
    checker = SequenceClassifierChecker(models["t5"], device="cpu", batch_size=4)
    assert isinstance(checker, ClaimChecker)
    claims = [*CLAIMS[:5], claim("It is tall.", evidence="")]
    found = check_claims(checker, claims)
    assert [r.claim for r in found] == claims
    assert [r.checked for r in found] == [True] * 5 + [False]
    assert asyncio.run(acheck_claims(checker, claims)) == found
    assert check_claims(checker, []) == []


@pytest.mark.usefixtures("hub_offline")
def test_an_unreachable_hub_id_says_how_to_pass_a_folder() -> None:
    with pytest.raises(ModelNotAvailableError, match="local-dir"):
        SequenceClassifierChecker("nobody/not-a-real-minicheck", supported_label=1)
