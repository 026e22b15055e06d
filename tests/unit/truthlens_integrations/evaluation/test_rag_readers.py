"""Tests of ``truthlens_integrations/evaluation/_rag_readers.py``: readers of the RAG answer
sets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._paths import BENCHDATA, REPO
from truthlens_integrations.core import ConfigError, InvalidInputError
from truthlens_integrations.evaluation import load_detection_dataset
from truthlens_integrations.evaluation._rag_readers import (
    align_label,
    ragtruth_dev_split,
    read_attributionbench,
    read_expertqa,
    read_faithjudge,
    read_labelled_answers,
    read_ragtruth_dev,
)

DATA = BENCHDATA
REAL = REPO.parent / "shared" / "benchdata"
needs_real = pytest.mark.skipif(
    not (REAL / "ragtruth_dev").is_dir(), reason="the shared benchmark folder is not here"
)


def test_align_label_keeps_good_offsets_and_repairs_bad_ones() -> None:
    answer = "It was built in 1950 and is 500 meters tall, not 500 meters wide."
    assert align_label(answer, 16, 20, "1950") == (16, 20)
    # wrong offsets: the quoted text is found, the occurrence nearest the stated start wins
    assert align_label(answer, 0, 5, "500 meters") == (28, 38)
    assert align_label(answer, 50, 55, "500 meters") == (49, 59)
    assert align_label(answer, 2, 6, None) == (2, 6)
    with pytest.raises(InvalidInputError, match="does not occur"):
        align_label(answer, 0, 4, "1887")
    with pytest.raises(InvalidInputError, match="outside"):
        align_label(answer, 60, 90, None)


def test_ragtruth_dev_spans_mark_their_text_and_the_split_is_by_source() -> None:
    everything = read_ragtruth_dev(DATA / "ragtruth_dev")
    assert [e.id for e in everything] == ["11356-0", "11356-1", "11323-0", "11428-0", "11332-0"]
    wrong = everything[1]
    assert wrong.hallucinated and wrong.task_type == "QA"
    assert [wrong.answer[s.start : s.end] for s in wrong.gold_spans] == ["1950", "500 meters"]
    assert wrong.gold_spans[0].label == "Evident Conflict"
    assert wrong.context == (
        "The Eiffel Tower was built from 1887 to 1889.",
        "It is 330 metres tall.",
    )
    assert wrong.question == "when was the eiffel tower built"
    assert wrong.source_id == "11356" and wrong.generator == "llama-2-7b-chat"
    summary = everything[3]
    assert summary.question is None and summary.answer[summary.gold_spans[0].start :].startswith(
        "Tuesday"
    )
    assert everything[4].task_type == "Data2txt" and "Cafe Uno" in everything[4].context[0]
    split = ragtruth_dev_split()
    select = load_detection_dataset("ragtruth_dev_select", DATA)
    train = load_detection_dataset("ragtruth_dev_train", DATA)
    assert {e.source_id for e in select} == {"11356", "11428"} <= split["select"]
    assert {e.source_id for e in train} == {"11323", "11332"} <= split["train"]
    assert not split["select"] & split["train"]


def test_faithjudge_joins_the_source_and_keeps_select_sources_only() -> None:
    rows = read_faithjudge(DATA)
    assert [(e.source_id, e.hallucinated) for e in rows] == [
        ("11356", False),
        ("11356", True),
        ("11323", False),
    ]  # the Invalid row is left out
    assert rows[0].answer == "The tower was built from 1887 to 1889."
    assert rows[0].context[0].startswith("The Eiffel Tower") and not rows[0].has_span_labels
    selected = load_detection_dataset("faithjudge_select", DATA)
    assert {e.source_id for e in selected} == {"11356"}
    with pytest.raises(ConfigError):
        read_faithjudge(DATA / "nowhere")


def test_expertqa_dedupes_and_keeps_claims_with_passages() -> None:
    claims = read_expertqa(DATA / "expertqa")
    # the same answer sits in both files; the URL-only and N/A claims are left out
    assert [(c.answer, c.hallucinated) for c in claims] == [
        ("Exposure raises the risk of anxiety [1].", False),
        ("It halves school grades [1].", True),
    ]
    assert claims[0].context == (
        "Exposure to violence raises the risk of anxiety and depression in children.",
    )
    assert claims[0].task_type == "rr_gs_gpt4" and claims[0].source_id == claims[1].source_id


def test_attributionbench_reads_all_files_and_binary_labels() -> None:
    claims = read_attributionbench(DATA / "attributionbench")
    assert [(c.id, c.hallucinated) for c in claims] == [
        ("AttributedQA_1", False),
        ("AttributedQA_2", True),
    ]  # the row with an unknown label is left out
    assert claims[0].question == "who sings go outside in the rain"
    assert claims[0].source_id == claims[1].source_id


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_labelled_answers_are_read_strictly(tmp_path: Path) -> None:
    good = _write(
        tmp_path / "good.jsonl",
        [
            {"context": "A.", "question": "q", "answer": "B is C.", "label": 1, "spans": [[0, 1]]},
            {"context": ["A.", "B."], "answer": "A.", "label": False, "id": "x"},
        ],
    )
    rows = read_labelled_answers(good)
    assert [(r.id, r.hallucinated, r.has_span_labels) for r in rows] == [
        ("1", True, True),
        ("x", False, False),
    ]
    assert rows[0].gold_spans[0].end == 1
    bad = [
        ({"context": "A", "answer": "B", "label": 1, "extra": 1}, "unknown key"),
        ({"context": "A", "answer": "B", "label": 0.5}, "'label'"),
        ({"context": "A", "answer": "B", "label": 2}, "'label'"),
        ({"context": 3, "answer": "B", "label": 1}, "'context'"),
        ({"context": "A", "answer": "", "label": 1}, "answer is empty"),
        ({"context": "A", "answer": "B"}, "no 'label'"),
        ({"context": "A", "answer": "B", "label": 1, "spans": [[0, 9]]}, "span"),
        ({"context": "A", "answer": "B", "label": 0, "spans": [[0, 1]]}, "cannot have spans"),
        ({"context": "A", "answer": "B", "label": 1, "question": 5}, "'question'"),
    ]
    for row, message in bad:
        with pytest.raises(InvalidInputError, match=message):
            read_labelled_answers(_write(tmp_path / "bad.jsonl", [row]))


@needs_real
def test_every_real_ragtruth_dev_label_marks_its_text() -> None:
    # The converter would repair a label whose offsets miss its text; on the real files
    # none needs it: each label's text is exactly response[start:end].
    raw = 0
    for name in ("qa", "summary", "data2txt"):
        for line in (REAL / "ragtruth_dev" / f"ragtruth_dev_{name}.jsonl").open():
            for response in json.loads(line)["responses"]:
                for label in response["labels"]:
                    raw += 1
                    start, end = label["start"], label["end"]
                    assert response["response"][start:end] == label["text"]
    examples = read_ragtruth_dev(REAL / "ragtruth_dev")
    assert len(examples) == 1098 and sum(e.hallucinated for e in examples) == 391
    assert sum(len(e.gold_spans) for e in examples) == raw
    select = load_detection_dataset("ragtruth_dev_select", REAL)
    train = load_detection_dataset("ragtruth_dev_train", REAL)
    assert len({e.source_id for e in select}) == 85 and len({e.source_id for e in train}) == 100
    assert len(select) + len(train) == 1098


@needs_real
def test_real_expertqa_attributionbench_and_faithjudge_counts() -> None:
    claims = read_expertqa(REAL / "expertqa")
    assert len(claims) == 1688 and sum(c.hallucinated for c in claims) == 479
    assert len(read_attributionbench(REAL / "attributionbench")) == 2123
    judged = load_detection_dataset("faithjudge_select", REAL)
    assert len(judged) == 3910 and {e.source_id for e in judged} <= ragtruth_dev_split()["select"]
