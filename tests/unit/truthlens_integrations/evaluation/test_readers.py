"""Tests of ``truthlens_integrations/evaluation/_readers.py``: the benchmark readers on hand-
written fixtures.
"""

from __future__ import annotations

import pytest

from tests._paths import BENCHDATA as DATA
from tests._paths import RAGTRUTH
from truthlens_integrations.evaluation import halueval_split, load_detection_dataset
from truthlens_integrations.evaluation._readers import (
    read_faithbench,
    read_halueval,
    read_ragtruth,
    read_snli,
    subsample,
)

# ----------------------------------------------------------------------------- readers


def test_read_ragtruth_rebuilds_context_per_task() -> None:
    examples = {e.task_type: e for e in read_ragtruth(RAGTRUTH)}
    qa, summary, d2t = examples["QA"], examples["Summary"], examples["Data2txt"]
    assert qa.question == "How tall is the Eiffel Tower?"
    assert qa.context == (
        "The Eiffel Tower is 330 meters tall.",
        "It was completed in 1889 in Paris.",
    )
    assert qa.prompt is not None and "following two passages" in qa.prompt
    assert qa.hallucinated
    span = qa.gold_spans[0]
    assert qa.answer[span.start : span.end] == "500 meters"
    assert span.label == "Evident Conflict"
    assert summary.question is None and not summary.hallucinated and summary.gold_spans == ()
    assert summary.context[0].startswith("The city council")
    assert d2t.question is not None and "objective overview" in d2t.question
    assert "'WiFi': 'no'" in d2t.context[0]  # the record as RAGTruth printed it
    assert d2t.answer[d2t.gold_spans[0].start : d2t.gold_spans[0].end] == "free WiFi"
    assert qa.to_input().context == qa.context


def test_halueval_split_is_last_ten_percent() -> None:
    items = list(range(10))
    assert halueval_split(items, "heldout") == [9]
    assert halueval_split(items, "train") == list(range(9))
    assert halueval_split(list(range(10_000)), "heldout")[0] == 9_000
    assert halueval_split(items, "all") == items


def test_halueval_split_matches_training() -> None:
    data = pytest.importorskip("lab.training.data")
    for total in (7, 10, 33, 10_000):
        heldout = set(halueval_split(list(range(total)), "heldout"))
        assert heldout == {i for i in range(total) if data.split_of(i, total) == "heldout"}


def test_read_halueval_pairs_right_and_hallucinated() -> None:
    qa = read_halueval(DATA / "halueval" / "dataset_halueval_qa.jsonl", "qa")
    assert [e.id for e in qa] == ["qa-9-right", "qa-9-hallucinated"]
    assert [e.hallucinated for e in qa] == [False, True]
    assert qa[0].context == ("Town 9 has 11 bridges over the river.",)
    assert qa[1].answer == "Town 9 has 21 bridges."
    assert not qa[0].has_span_labels
    train = read_halueval(DATA / "halueval" / "dataset_halueval_qa.jsonl", "qa", part="train")
    assert len(train) == 18
    summ = read_halueval(
        DATA / "halueval" / "dataset_halueval_summarization.jsonl", "summarization"
    )
    assert summ[0].question is None
    dia = read_halueval(DATA / "halueval" / "dataset_halueval_dialogue.jsonl", "dialogue")
    assert dia[0].question is not None and dia[0].question.startswith("[Human]")


def test_read_faithbench_labels_spans_and_baselines() -> None:
    examples = read_faithbench(DATA / "faithbench")
    assert [e.id for e in examples] == ["b1-0", "b1-1", "b1-2"]
    assert [e.hallucinated for e in examples] == [True, False, False]  # Benign is not
    # "pies" (28-32); "opens at 6 am" (38-51) merged with the overlapping "at 6" (44-48)
    assert [(s.start, s.end) for s in examples[0].gold_spans] == [(28, 32), (38, 51)]
    assert examples[1].gold_spans == ()
    assert examples[0].baselines["HHEM-2.1"] is True  # consistency 0.2 < 0.5
    assert examples[2].baselines["HHEM-2.1"] is True  # 0.3: a false alarm
    assert examples[2].baselines["GPT-4o"] is False  # vote 1 = consistent


def test_read_snli_skips_unlabelled() -> None:
    pairs = read_snli(DATA / "esnli")
    assert [p.label for p in pairs] == ["entailment", "neutral", "contradiction"]
    assert pairs[0].premise == "A dog runs in the park ."


def test_load_by_name_and_subsample() -> None:
    assert len(load_detection_dataset("halueval", DATA)) == 2 + 2 + 2
    assert len(load_detection_dataset("ragtruth", DATA, limit=2)) == 2
    assert subsample(list(range(10)), 3) == [0, 3, 6]
    with pytest.raises(Exception, match="unknown dataset"):
        load_detection_dataset("nope", DATA)


def test_wice_token_spans_merge_adjacent_flags() -> None:
    from truthlens_integrations.evaluation._readers import wice_token_spans

    claim = "Irene Hervey (born 1909) was an actress."
    tokens = ["Irene", "Hervey", "(", "born", "1909", ")", "was", "an", "actress", "."]
    flags = [False, False, False, True, True, False, False, False, False, False]
    spans = wice_token_spans(claim, tokens, flags)
    assert [claim[s.start : s.end] for s in spans] == ["born 1909"]
