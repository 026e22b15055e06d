"""The GPU distillation's three steps: rows packed and read back, training, joining."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from lab.training.gpu_student import (
    Schedule,
    Variant,
    _compact,
    _expand,
    leave_family_out,
    train_variant,
    trainable,
    unpack,
)
from lab.training.train_evidence import Encoded, Example, _pad, encode


def _examples() -> list[Example]:
    context = ["alice visited rome in 1920.", "bob stayed home."]
    return [
        Example("test", context, None, "alice visited rome in 1920.", 0, None),
        Example("test", context, None, "alice visited paris in 1920.", 1, ((14, 19),)),
        Example("test", context, "where did bob go?", "bob went to rome.", 1, None),
    ]


def _encoded(tiny_bert_dir: Path, soft: bool) -> list[Encoded]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    out = []
    for ex in _examples():
        teacher = ([0], [len(ex.answer)], [0.8]) if soft else None
        enc = encode(tokenizer, ex, teacher)
        assert enc is not None
        out.append(enc)
    return out


def test_a_variant_reads_name_weight_temperature_and_extra() -> None:
    assert Variant.parse("t2rm:1:2:3") == Variant("t2rm", 1.0, 2.0, 3)
    for bad in ("t2:1:2", "t2:1:2:0:9", "2x:1:2:0", "t2:one:2:0"):
        with pytest.raises((argparse.ArgumentTypeError, ValueError)):
            Variant.parse(bad)


def test_packed_rows_read_back_unchanged(tiny_bert_dir: Path) -> None:
    data = _encoded(tiny_bert_dir, soft=True)
    back = _expand(_compact(data))
    assert [(d.source, d.label, d.exact) for d in back] == [
        (d.source, d.label, d.exact) for d in data
    ]
    for got, want in zip(back, data, strict=True):
        for g, w in zip(got.rows, want.rows, strict=True):
            assert g["input_ids"] == w["input_ids"]
            assert g["labels"] == w["labels"]  # -100 and -2 survive the int8 column
            assert g["token_type_ids"] == w["token_type_ids"]
            assert g["soft"] == pytest.approx(w["soft"], abs=1e-3)  # fp16


def test_rows_without_a_teacher_keep_the_batch_distilled(tiny_bert_dir: Path) -> None:
    import torch

    taught = _encoded(tiny_bert_dir, soft=True)[:1]
    plain = _encoded(tiny_bert_dir, soft=False)[1:]
    mixed = [r for d in taught + plain for r in d.rows]
    assert "soft" not in mixed[1]
    # rows the teacher never saw get -1 (no target); the taught row keeps its targets
    batch = _pad(mixed, torch.device("cpu"))
    assert "soft" in batch
    assert bool((batch["soft"][1:] == -1).all())
    assert bool((batch["soft"][0] > 0.7).any())
    assert "soft" not in _pad([r for d in plain for r in d.rows], torch.device("cpu"))


def test_only_the_layers_above_the_frozen_ones_train() -> None:
    assert not trainable("bert.embeddings.word_embeddings.weight")
    assert not trainable("bert.encoder.layer.2.output.dense.weight")
    assert trainable("bert.encoder.layer.3.output.dense.weight")
    assert trainable("classifier.bias")
    # a base encoder (leave-one-family-out) trains every layer, never the embeddings
    assert trainable("bert.encoder.layer.0.output.dense.weight", frozen_layers=0)
    assert not trainable("bert.embeddings.word_embeddings.weight", frozen_layers=0)


def test_trained_weights_join_the_init_folder(tiny_bert_dir: Path, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    data = _encoded(tiny_bert_dir, soft=True)
    result = train_variant(
        Variant("v", 1.0, 2.0, 0),
        tiny_bert_dir,
        data,
        [],
        _encoded(tiny_bert_dir, soft=False),
        tmp_path / "out",
        Schedule(passes=3, lr=1e-2, batch_rows=2, seed=1),
    )
    assert result["steps"] > 0
    assert result["heldout"]["all"]["n"] == 3
    delta = load_file(str(tmp_path / "out" / "v.safetensors"))
    assert delta
    assert all(trainable(name) for name in delta)
    assert all(t.dtype == torch.float16 for t in delta.values())

    unpack(tmp_path / "out" / "v.safetensors", tiny_bert_dir, tmp_path / "joined")
    init = load_file(str(tiny_bert_dir / "model.safetensors"))
    joined = load_file(str(tmp_path / "joined" / "model.safetensors"))
    assert set(joined) == set(init)
    for name, tensor in joined.items():
        want = delta[name].to(tensor.dtype) if name in delta else init[name]
        assert torch.equal(tensor, want), name
    # the classifier was trained (lr 1e-2, three passes): it moved
    assert not torch.equal(joined["classifier.weight"], init["classifier.weight"])
    assert (tmp_path / "joined" / "tokenizer.json").is_file()


def test_weights_of_another_model_are_refused(tiny_bert_dir: Path, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    save_file({"decoder.weight": torch.zeros(2, 2)}, str(tmp_path / "other.safetensors"))
    with pytest.raises(SystemExit, match="does not have"):
        unpack(tmp_path / "other.safetensors", tiny_bert_dir, tmp_path / "joined")


def test_a_left_out_family_is_scored_and_never_trained_on(
    tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lab.training.gpu_student as gs

    seen: list[list[str]] = []
    real_fit = gs.fit

    def spy(model, data, variant, schedule, device):  # type: ignore[no-untyped-def]
        seen.append(sorted({d.source for d in data}))
        return real_fit(model, data, variant, schedule, device)

    monkeypatch.setattr(gs, "fit", spy)
    data = _encoded(tiny_bert_dir, soft=True)
    data[0].source = data[1].source = "faithdial"  # one clean and one unsupported
    data[2].source = "begin"
    held = _encoded(tiny_bert_dir, soft=False)
    held[0].source = "true/summeval"
    results = leave_family_out(
        "faithdial",
        [Variant("labels", 0.0, 1.0, 0), Variant("t2", 1.0, 2.0, 0)],
        tiny_bert_dir,
        data,
        held,
        Schedule(passes=1, batch_rows=2),
    )
    assert [r["variant"]["name"] for r in results] == ["labels", "t2"]
    assert all("faithdial" not in sources for sources in seen)  # never trained on
    for r in results:
        assert r["family"] == "faithdial"
        assert r["unseen"]["n"] == 2  # its training rows are scored as unseen
        assert r["unseen"]["positives"] == 1
        assert 0.0 <= r["unseen"]["auroc"] <= 1.0


def test_a_soup_is_the_weighted_mean_of_two_folders(tiny_bert_dir: Path, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    from lab.training.gpu_student import soup

    other = tmp_path / "other"
    shutil.copytree(tiny_bert_dir, other)
    state = load_file(str(other / "model.safetensors"))
    state["classifier.bias"] = state["classifier.bias"] + 1.0
    save_file(state, str(other / "model.safetensors"))

    soup(tiny_bert_dir, other, tmp_path / "mixed", weight=0.25)
    base = load_file(str(tiny_bert_dir / "model.safetensors"))
    mixed = load_file(str(tmp_path / "mixed" / "model.safetensors"))
    assert torch.allclose(mixed["classifier.bias"], base["classifier.bias"] + 0.25)
    assert all(torch.equal(mixed[k], base[k]) for k in base if k != "classifier.bias")
    assert (tmp_path / "mixed" / "tokenizer.json").is_file()

    with pytest.raises(SystemExit, match="lie in"):
        soup(tiny_bert_dir, other, tmp_path / "bad", weight=1.5)
    state["classifier.bias"] = torch.zeros(3)
    save_file(state, str(other / "model.safetensors"))
    with pytest.raises(SystemExit, match="same tensors"):
        soup(tiny_bert_dir, other, tmp_path / "bad", weight=0.5)


def test_step_groups_run_pass_after_pass_and_stop_at_the_total(tiny_bert_dir: Path) -> None:
    import random

    from lab.training.train_evidence import step_groups

    data = _encoded(tiny_bert_dir, soft=False)
    got = list(step_groups(data, 1, random.Random(0), 7))
    assert [step for step, _ in got] == list(range(7))
    assert all(len(group) == 1 for _, group in got)
    assert list(step_groups([], 1, random.Random(0), 5)) == []  # no data, no endless loop
