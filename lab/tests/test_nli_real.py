"""NLI pairs from real answers (``lab/training/nli_real.py``): each label sits on its own text.

Hand-written fixtures check the label mapping exactly; the real benchmark folder, where it
is here, checks that every RAGTruth-labelled pair holds the text its labels mark, and that
the held-out part and the two ``ragtruth_dev`` parts never share a source.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # lab/training/ is a repo folder, not an installed package
    sys.path.insert(0, str(ROOT))

from lab.training import data, nli_real  # noqa: E402
from truthlens_integrations._lab_api import select_premise  # noqa: E402

FIXTURES = ROOT / "tests" / "data" / "eval" / "benchdata"
REAL = ROOT.parent / "shared" / "benchdata"
needs_real = pytest.mark.skipif(
    not (REAL / "ragtruth_dev").is_dir(), reason="the shared benchmark folder is not here"
)
PASSAGES = (
    "passage 1:The Eiffel Tower was built from 1887 to 1889. It stands in Paris.\n\n"
    "passage 2:It is 330 metres tall.\n\n"
)


def _label(start: int, text: str, kind: str) -> dict[str, object]:
    return {
        "start": start,
        "end": start + len(text),
        "text": text,
        "label_type": kind,
        "meta": "",
        "due_to_null": False,
        "implicit_true": False,
    }


def _ragtruth(folder: Path) -> Path:
    """Source 11356 is in the committed split's select part, 11323 in its train part."""
    folder.mkdir()
    wrong = (
        "The tower was built in 1950 by Gustave Eiffel. It is 330 metres tall. It has a blue roof."
    )
    qa = {
        "source_id": 11356,
        "source": {"question": "when was the eiffel tower built", "passages": PASSAGES},
        "responses": [
            {
                "response": "The Eiffel Tower was built from 1887 to 1889. Sure. It is 330 metres tall.",
                "model": "gpt-4-0613",
                "labels": [],
            },
            {
                "response": wrong,
                "model": "llama-2-7b-chat",
                "labels": [
                    _label(23, "1950", "Evident Conflict"),
                    _label(28, "by Gustave Eiffel", "Evident Baseless Info"),
                    _label(70, "It has a blue roof.", "Subtle Baseless Info"),
                ],
            },
        ],
    }
    summary = {
        "source_id": 11323,
        "source": "The council met on Monday. It approved the new park.",
        "responses": [
            {
                "response": "The council met on Monday and rejected the park.",
                "model": "gpt-3.5-turbo-0613",
                "labels": [_label(30, "rejected", "Subtle Conflict")],
            }
        ],
    }
    for name, rows in (("qa", [qa]), ("summary", [summary]), ("data2txt", [])):
        path = folder / f"ragtruth_dev_{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_ragtruth_pairs_label_the_sentence_holding_each_span(tmp_path: Path) -> None:
    folder = _ragtruth(tmp_path / "ragtruth_dev")
    select = nli_real.ragtruth_pairs(folder, "select")
    assert [(p.hypothesis, p.label, p.marked) for p in select] == [
        # every sentence of the clean answer but "Sure." (too short to be a claim)
        ("The Eiffel Tower was built from 1887 to 1889.", "entailment", ()),
        ("It is 330 metres tall.", "entailment", ()),
        # a Conflict span makes its sentence a contradiction, even beside a Baseless one
        (
            "The tower was built in 1950 by Gustave Eiffel.",
            "contradiction",
            ("1950", "by Gustave Eiffel"),
        ),
        ("It has a blue roof.", "neutral", ("It has a blue roof.",)),
    ]  # the unlabelled sentence of the wrong answer makes no pair
    for pair in select:
        assert all(mark in pair.hypothesis for mark in pair.marked)
        assert pair.group == "ragtruth_dev:11356" and pair.dataset == "ragtruth_dev"
    context = [
        "The Eiffel Tower was built from 1887 to 1889. It stands in Paris.",
        "It is 330 metres tall.",
    ]
    assert select[2].premise == select_premise(context, select[2].hypothesis)
    assert "1887 to 1889" in select[2].premise
    train = nli_real.ragtruth_pairs(folder, "train")
    assert [(p.hypothesis, p.label, p.group) for p in train] == [
        ("The council met on Monday and rejected the park.", "contradiction", "ragtruth_dev:11323")
    ]


def test_expertqa_support_maps_to_entailment_or_neutral(tmp_path: Path) -> None:
    pairs = nli_real.expertqa_pairs(FIXTURES / "expertqa")
    # Complete -> entailment, Partial -> neutral; URL-only and N/A claims make no pair
    assert [(p.hypothesis, p.label) for p in pairs] == [
        ("Exposure raises the risk of anxiety.", "entailment"),
        ("It halves school grades.", "neutral"),
    ]
    assert pairs[0].premise == (
        "Exposure to violence raises the risk of anxiety and depression in children."
    )
    claims = [
        {"claim_string": "Fines rose by 5% [2][3].", "support": "Incomplete",
         "evidence": ["[2] https://c.example/z\n\nFines were unchanged in 2020."]},
        {"claim_string": "Fines fell.", "support": "Missing", "evidence": []},
    ]  # fmt: skip
    row = {"question": "Did fines rise?", "answers": repr({"bing_chat": {"claims": claims}})}
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rand_val.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert [(p.hypothesis, p.label, p.premise) for p in nli_real.expertqa_pairs(tmp_path)] == [
        ("Fines rose by 5%.", "neutral", "Fines were unchanged in 2020.")
    ]


def test_attributionbench_pairs_are_binary_and_cannot_train() -> None:
    pairs = nli_real.attributionbench_pairs(FIXTURES / "attributionbench")
    assert [p.label for p in pairs] == ["entailment", nli_real.NOT_ENTAILED]
    assert [p.entailed for p in pairs] == [True, False]
    with pytest.raises(ValueError, match="cannot train"):
        nli_real.training_examples(pairs)


def test_the_held_out_part_keeps_each_source_whole() -> None:
    pairs = [
        nli_real.RealPair(f"premise {i}", f"claim {i}", "neutral", "expertqa", f"q{i % 50}")
        for i in range(500)
    ]
    train, heldout = nli_real.training_examples(pairs)
    assert len(train) + len(heldout) == 500
    held_groups = {p.group for p in pairs if nli_real.heldout_part(p.group)}
    assert {e.premise for e in heldout} == {p.premise for p in pairs if p.group in held_groups}
    assert all(e.label == data.NLI_LABELS.index("neutral") for e in train + heldout)
    share = sum(nli_real.heldout_part(f"source-{i}") for i in range(2000)) / 2000
    assert abs(share - nli_real.HELDOUT_PERCENT / 100) < 0.03


@needs_real
def test_real_pairs_hold_their_labelled_text_and_parts_share_no_source() -> None:
    train = nli_real.ragtruth_pairs(REAL / "ragtruth_dev", "train")
    select = nli_real.ragtruth_pairs(REAL / "ragtruth_dev", "select")
    for pair in train + select:
        assert pair.hypothesis.strip() and pair.premise.strip()
        # The runtime's sentences leave a closing quote or bracket after the stop out.
        assert all(mark.rstrip("\"'’”)]") in pair.hypothesis for mark in pair.marked)
        assert bool(pair.marked) == (pair.label != "entailment")
    assert not {p.group for p in train} & {p.group for p in select}
    assert {p.label for p in train} == {"entailment", "neutral", "contradiction"}
    expertqa = nli_real.expertqa_pairs(REAL / "expertqa")
    assert len(expertqa) == 1688 and sum(not p.entailed for p in expertqa) == 479
    assert not any("[1]" in p.hypothesis for p in expertqa)
    pooled = nli_real.train_role_pairs(REAL)
    assert {p.dataset for p in pooled} == {"expertqa", "ragtruth_dev"}
    train_ex, held_ex = nli_real.training_examples(pooled)
    assert len(train_ex) + len(held_ex) == len(pooled)
    held = {p.group for p in pooled if nli_real.heldout_part(p.group)}
    assert held and held != {p.group for p in pooled}


def test_a_saved_branch_loads_back_into_a_fresh_one(tiny_bert_dir: Path) -> None:
    import torch
    from transformers import AutoModelForTokenClassification

    from lab.training.train_nli import NLIBranch

    bert = AutoModelForTokenClassification.from_pretrained(str(tiny_bert_dir)).bert
    trained, fresh = NLIBranch(bert, 1), NLIBranch(bert, 1)
    with torch.no_grad():
        for param in trained.parameters():
            if param.requires_grad:
                param.add_(0.5)
    fresh.load_shipped(trained.shipped_state())
    saved, loaded = trained.shipped_state(), fresh.shipped_state()
    assert saved.keys() == loaded.keys() and all(torch.equal(saved[k], loaded[k]) for k in saved)
    # the shared lower layer stays the encoder's own
    assert torch.equal(
        fresh.bert.encoder.layer[0].attention.self.query.weight,
        bert.encoder.layer[0].attention.self.query.weight,
    )
    with pytest.raises(ValueError, match="upper ones"):
        NLIBranch(bert, 0).load_shipped(saved)


def test_balancing_keeps_every_pair_that_is_not_entailed() -> None:
    import random

    from lab.training.train_nli import _balanced

    pairs = [data.NLIExample(f"p{i}", f"h{i}", 0 if i % 5 else 1 + i % 2, "x") for i in range(50)]
    kept = _balanced(pairs, random.Random(0))
    others = [e for e in pairs if e.label != 0]
    assert [e for e in kept if e.label != 0] == others
    assert sum(e.label == 0 for e in kept) == len(others)
    assert [pairs.index(e) for e in kept] == sorted(pairs.index(e) for e in kept)
