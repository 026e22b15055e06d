"""Candidate 30's GPU script on the CPU: variants, rows of a pass, seed averages, stage A."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lab.training.gpu_rag import Variant, rows_of, train_all
from lab.training.train_evidence import Encoded, Example, encode


def _parts(tiny_bert_dir: Path) -> dict[str, list[Encoded]]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    context = ["alice visited rome in 1920.", "bob stayed home."]

    def enc(source: str, answer: str, label: int, spans: tuple[tuple[int, int], ...] | None):
        got = encode(tokenizer, Example(source, context, None, answer, label, spans))
        assert got is not None
        return got

    return {
        "rag": [enc("rag", "alice visited paris in 1920.", 1, ((14, 19),))],
        "removal": [enc("removal", "bob stayed home.", 0, None)],
        "mix": [enc("mix", "alice visited rome in 1920.", 0, None)],
        "expertqa": [enc("expertqa", "bob went to rome.", 1, None)],  # a claim label: MIL
        "select": [
            enc("select", "alice visited rome in 1920.", 0, None),
            enc("select", "alice visited paris in 1921.", 1, ((14, 26),)),
        ],
    }


def test_a_variant_reads_its_six_fields() -> None:
    assert Variant.parse("soup:s5:eqa:2:5e-5:21+22") == Variant(
        "soup", "s5", "eqa", 2.0, 5e-5, (21, 22)
    )
    for bad in (
        "soup:s5:eqa:2:5e-5",  # no seeds
        "soup:s7:eqa:2:5e-5:21",  # no such start
        "soup:s5:all:2:5e-5:21",  # no such rows
        "2x:s5:eqa:2:5e-5:21",  # not a name
        "soup:s5:eqa:two:5e-5:21",
    ):
        with pytest.raises(argparse.ArgumentTypeError):
            Variant.parse(bad)


def test_a_pass_reads_stage_6_rows_and_expertqa_only_for_eqa(tiny_bert_dir: Path) -> None:
    parts = _parts(tiny_bert_dir)
    rag = [d.source for d in rows_of(parts, "rag")]
    assert rag == ["rag", "rag", "removal", "mix"]  # the RAG answers twice, as stage 6 read them
    assert [d.source for d in rows_of(parts, "eqa")] == [*rag, "expertqa"]
    assert "select" not in rag  # the select split is scored, never trained on


def test_a_soup_is_the_mean_of_its_seeds(tiny_bert_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    parts = _parts(tiny_bert_dir)
    variants = [
        Variant("one", "s6", "eqa", 1.0, 1e-3, (1,)),
        Variant("two", "s6", "eqa", 1.0, 1e-3, (2,)),
        Variant("soup", "s6", "eqa", 1.0, 1e-3, (1, 2)),
    ]
    results = train_all(variants, {"s6": tiny_bert_dir}, parts, tmp_path)
    one, two, soup = (load_file(str(tmp_path / f"{v.name}.safetensors")) for v in variants)
    assert set(one) == set(soup) and one
    for name, tensor in soup.items():
        mean = (one[name].float() + two[name].float()) / 2
        assert tensor.float().allclose(mean, atol=2e-3), name  # fp16 on the way out
    assert any(not one[n].equal(two[n]) for n in one)  # the seeds trained apart
    # stage A: the start's select AUROC first, then each variant's
    assert [r["name"] for r in results] == ["stage6", "one", "two", "soup"]
    assert all(0.0 <= r["select_raw_auroc"] <= 1.0 for r in results)
    written = json.loads((tmp_path / "results.json").read_text())
    assert [r["name"] for r in written] == ["stage6", "one", "two", "soup"]
