from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from lab.training.teacher import fingerprint, load_soft_targets, soft_target

DATA = Path(__file__).resolve().parents[1] / "training" / "data"


@dataclass
class _Ex:
    answer: str


def _write(prefix: Path, examples: list[_Ex], rows: list[tuple[int, int, int, float]]) -> None:
    meta = {"examples": len(examples), "fingerprint": fingerprint(examples)}
    prefix.with_suffix(".json").write_text(json.dumps(meta))
    table = np.array(rows)
    np.savez_compressed(
        prefix.parent / f"{prefix.name}_train_a.npz",
        example=table[:, 0].astype(np.int32),
        start=table[:, 1].astype(np.int32),
        end=table[:, 2].astype(np.int32),
        p=table[:, 3].astype(np.float16),
    )


def test_soft_target_is_the_largest_overlapping_teacher_token() -> None:
    soft = ([0, 4, 9], [3, 8, 12], [0.1, 0.9, 0.3])
    assert soft_target(soft, 0, 3) == pytest.approx(0.1)
    # a student token spanning two teacher tokens takes the larger
    assert soft_target(soft, 2, 6) == pytest.approx(0.9)
    # one starting inside a teacher token that began before it
    assert soft_target(soft, 10, 12) == pytest.approx(0.3)
    # whitespace between teacher tokens: nothing overlaps
    assert soft_target(soft, 8, 9) == -1.0


def test_soft_targets_are_grouped_by_example_and_sorted(tmp_path: Path) -> None:
    examples = [_Ex("alpha beta"), _Ex("no tokens read"), _Ex("gamma")]
    prefix = tmp_path / "teacher"
    _write(prefix, examples, [(2, 0, 5, 0.75), (0, 6, 10, 0.5), (0, 0, 5, 0.25)])
    got = list(load_soft_targets(prefix, examples))
    assert got[0] == ([0, 6], [5, 10], pytest.approx([0.25, 0.5]))
    assert got[1] is None
    assert got[2] == ([0], [5], pytest.approx([0.75]))


def test_targets_written_for_other_examples_are_refused(tmp_path: Path) -> None:
    prefix = tmp_path / "teacher"
    _write(prefix, [_Ex("one"), _Ex("two")], [(0, 0, 3, 0.5)])
    with pytest.raises(SystemExit, match="other training examples"):
        list(load_soft_targets(prefix, [_Ex("one"), _Ex("changed")]))


def test_committed_targets_match_the_stage5_examples_they_name() -> None:
    meta = json.loads((DATA / "teacher_mpnet.json").read_text("utf-8"))
    assert meta["examples"] == 26304
    parts = [np.load(p) for p in sorted(DATA.glob("teacher_mpnet_train_*.npz"))]
    example = np.concatenate([p["example"] for p in parts])
    probs = np.concatenate([p["p"] for p in parts]).astype(float)
    starts = np.concatenate([p["start"] for p in parts])
    ends = np.concatenate([p["end"] for p in parts])
    assert example.min() >= 0
    assert example.max() < meta["examples"]
    assert ((probs >= 0) & (probs <= 1)).all()
    assert (ends > starts).all()


def test_soft_targets_reach_the_training_loss(tiny_bert_dir: Path) -> None:
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from lab.training.train_evidence import Example, encode, loss_of

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModelForTokenClassification.from_pretrained(tiny_bert_dir)
    ex = Example(
        "test", ["alice visited rome in 1920."], None, "alice visited paris in 1920.", 1, None
    )
    answer_len = len(ex.answer)
    soft = ([0], [answer_len], [0.9])  # one teacher token over the whole answer
    plain, taught = encode(tokenizer, ex), encode(tokenizer, ex, soft)
    assert plain is not None
    assert taught is not None
    row = taught.rows[0]
    answer = [s for s, label in zip(row["soft"], row["labels"], strict=True) if label != -100]
    assert answer
    assert all(s == pytest.approx(0.9) for s in answer)
    cpu = torch.device("cpu")
    with torch.no_grad():  # values only: no graph to build (nor to warn about in float())
        without = float(loss_of(model, [taught], [0], cpu, teacher_weight=0.0))
        assert float(loss_of(model, [plain], [0], cpu)) == pytest.approx(without)
        assert float(loss_of(model, [taught], [0], cpu, teacher_weight=1.0)) > without


def test_a_temperature_softens_the_targets_and_keeps_their_order() -> None:
    import torch

    from lab.training.train_evidence import soft_targets

    p = torch.tensor([0.0, 0.02, 0.5, 0.9, 1.0])
    assert torch.equal(soft_targets(p), p)
    softened = soft_targets(p, 2.0)
    assert softened[2] == pytest.approx(0.5)
    assert softened[3] == pytest.approx(0.75, abs=1e-3)  # sigmoid(logit(0.9) / 2) = 0.75
    assert bool((softened[1:] > softened[:-1]).all())
    assert 0.0 < float(softened[0]) < 0.02 and 0.98 < float(softened[-1]) < 1.0
