"""The phenomena suite's builder and summary (lab.training.phenomena) on small made-up data."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from lab.training import phenomena


def _task_zip(folder: Path, task: str, labels: list[str]) -> None:
    rows = [
        {"premise": f"p{i}", "hypothesis": f"h{i}", "gold_label": label, "idx": i}
        for i, label in enumerate(labels)
    ]
    with zipfile.ZipFile(folder / f"{task}.zip", "w") as archive:
        archive.writestr(f"{task}/train.jsonl", "")
        archive.writestr(f"{task}/val.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
        archive.writestr(f"__MACOSX/{task}/._val.jsonl", "junk")


def test_a_task_is_sampled_evenly_across_labels_and_the_same_every_time(tmp_path: Path) -> None:
    _task_zip(tmp_path, "negation", ["entailment"] * 30 + ["contradiction"] * 30 + ["neutral"] * 5)
    rows = phenomena._val_rows("negation", tmp_path)
    first = phenomena.sample_task("negation", rows, 30, seed=41)
    again = phenomena.sample_task("negation", rows, 30, seed=41)
    assert first == again
    counts = {
        label: sum(it["label"] == label for it in first) for label in phenomena.LABELS.values()
    }
    assert counts == {"supported": 10, "contradicted": 10, "unsupported": 5}  # as many as there are
    assert len({it["id"] for it in first}) == len(first)
    assert phenomena.sample_task("negation", rows, 30, seed=7) != first


def test_the_summary_counts_caught_wrong_items_and_flagged_supported_ones() -> None:
    items = [
        {"group": "negation", "label": "contradicted"},
        {"group": "negation", "label": "unsupported"},
        {"group": "negation", "label": "supported"},
        {"group": "temporal", "label": "supported"},
    ]
    report = phenomena.summarise(items, [0.9, 0.2, 0.6, 0.1], threshold=0.5)
    assert report["groups"]["negation"] == {
        "wrong": 2,
        "caught": 0.5,
        "supported": 1,
        "flagged": 1.0,
    }
    assert report["groups"]["temporal"]["caught"] is None
    assert report["groups"]["all"]["flagged"] == 0.5


def test_the_hand_cases_are_well_formed() -> None:
    lines = (phenomena.RECORDS / "hand_cases.jsonl").read_text(encoding="utf-8").splitlines()
    cases = [json.loads(line) for line in lines]
    assert len({c["id"] for c in cases}) == len(cases)
    for case in cases:
        assert case["label"] in {"supported", "contradicted", "unsupported"}
        assert case["context"] and case["answer"]
