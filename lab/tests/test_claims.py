"""The claim check's training pairs (lab.training.claims) never read a held-out file."""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path

import pytest

from lab.training import claims


def _task_zip(folder: Path, task: str) -> None:
    train = [
        {"premise": "The shop opens at nine.", "hypothesis": f"It opens at {h}.", "gold_label": g}
        for h, g in (("nine", "entailment"), ("ten", "contradiction"), ("noon", "not-entailed"))
    ]
    with zipfile.ZipFile(folder / f"{task}.zip", "w") as archive:
        archive.writestr(f"{task}/train.jsonl", "".join(json.dumps(r) + "\n" for r in train))
        archive.writestr(f"{task}/val.jsonl", "this file must never be read\n")
        archive.writestr(f"__MACOSX/{task}/._train.jsonl", "junk")


def test_curriculum_pairs_come_from_train_files_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for task in claims.CURRICULUM_TASKS:
        _task_zip(tmp_path, task)
    monkeypatch.setattr(claims, "CURRICULUM", tmp_path)
    read: list[str] = []
    original = zipfile.ZipFile.read

    def recording(self: zipfile.ZipFile, name: str, *args: object) -> bytes:
        read.append(name)
        return original(self, name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(zipfile.ZipFile, "read", recording)
    pairs = claims.curriculum_examples(random.Random(0), per_task=3)
    assert read and all(name.endswith("/train.jsonl") for name in read)
    assert len(pairs) == 3 * len(claims.CURRICULUM_TASKS)
    labels = {p.hypothesis: p.label for p in pairs}
    # entailment 0, contradiction 2, a two-class task's not-entailed is neutral (1)
    assert labels == {"It opens at nine.": 0, "It opens at ten.": 2, "It opens at noon.": 1}


def test_a_long_premise_is_cut_to_the_sentences_the_claim_shares_words_with() -> None:
    filler = " ".join(f"Filler sentence number {i} says nothing." for i in range(40))
    premise = f"{filler} The bridge opened in 1932 after six years of work."
    cut = claims._premise(premise, "The bridge opened in 1932.")
    assert "bridge opened in 1932" in cut
    assert len(cut) < len(premise) / 4
    assert claims._premise("Short premise.", "x") == "Short premise."


def test_the_quoted_claim_is_found_in_the_answer() -> None:
    answer = "The hotel has a pool. It also offers free parking for all guests."
    reasoning = 'The answer claims "offers free parking for all guests", which the source lacks.'
    assert claims._quoted_sentence(answer, reasoning) == (
        "It also offers free parking for all guests."
    )
    assert claims._quoted_sentence(answer, "No quote here.") is None
