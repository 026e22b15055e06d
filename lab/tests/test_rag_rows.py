"""RAG training rows (``lab.training.rag_rows``): labels line up with the text they mark.

A tiny ``ragtruth_dev``-format fixture (one source per task type, a split of its own) is
read the way training reads it; nothing from ``../shared/benchdata`` is needed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # lab/training/ is a repo folder, not an installed package
    sys.path.insert(0, str(ROOT))

from lab.training import rag_rows, rag_select  # noqa: E402
from lab.training.train_evidence import Example, encode  # noqa: E402

BUNDLED = ROOT / "core" / "_bundled" / "detector"

QA_ANSWER = (
    "The Eiffel Tower was built between 1887 and 1889. It is 500 meters tall and was "
    "designed by Gustave Eiffel's company."
)
QA_CLEAN = "The Eiffel Tower was built from 1887 to 1889. It attracts nearly seven million visitors every year."
DATA_CLEAN = (
    "Cafe Luna is an Italian restaurant in Boston. It offers free WiFi and outdoor seating."
)
SUMMARY_ANSWER = "Paris opened a new library. The library cost 40 million euros."
DATA_ANSWER = (
    "Cafe Luna is an Italian restaurant in Boston. It has a rating of 4.5 stars. "
    "Reviewers praise its quiet garden terrace."
)


def _label(answer: str, text: str) -> dict[str, Any]:
    start = answer.index(text)
    return {"start": start, "end": start + len(text), "text": text, "label_type": "x"}


def _fixture(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "ragtruth_dev"
    data.mkdir()
    qa = {
        "source_id": 1,
        "source": {
            "question": "when was the eiffel tower built",
            "passages": "passage 1:The Eiffel Tower was built from 1887 to 1889 by Gustave "
            "Eiffel's company.\n\npassage 2:The tower is 330 meters tall. It stands in Paris."
            "\n\npassage 3:The tower attracts nearly seven million visitors every year. "
            "Visitors climb stairs or ride elevators.\n\n",
        },
        "responses": [
            # a label that starts with a space: the span is trimmed to the words
            {"response": QA_ANSWER, "model": "m1", "labels": [_label(QA_ANSWER, " 500 meters")]},
            {"response": "It was built from 1887 to 1889.", "model": "m2", "labels": []},
            {"response": QA_CLEAN, "model": "m3", "labels": []},
        ],
    }
    summary = {
        "source_id": 2,
        "source": "The city of Paris opened a new public library on Monday. Officials said "
        "the building holds two million books. The mayor cut the ribbon.",
        "responses": [
            {
                "response": SUMMARY_ANSWER,
                "model": "m1",
                "labels": [_label(SUMMARY_ANSWER, "The library cost 40 million euros")],
            }
        ],
    }
    record = {
        "name": "Cafe Luna",
        "city": "Boston",
        "address": "12 Harbor Street",
        "state": "MA",
        "categories": "Italian, Restaurants",
        "stars": 4.5,
        "review_count": 120,
        "attributes": {"OutdoorSeating": True, "WiFi": "free", "Parking": None},
        "hours": {"Monday": "9:00-17:00"},
    }
    data2txt = {
        "source_id": 3,
        "source": record,
        "responses": [
            {
                "response": DATA_ANSWER,
                "model": "m1",
                # two overlapping labels become one span
                "labels": [
                    _label(DATA_ANSWER, "quiet garden"),
                    _label(DATA_ANSWER, "garden terrace"),
                ],
            },
            {"response": DATA_CLEAN, "model": "m2", "labels": []},
        ],
    }
    for stem, row in (("qa", qa), ("summary", summary), ("data2txt", data2txt)):
        (data / f"ragtruth_dev_{stem}.jsonl").write_text(json.dumps(row) + "\n")
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": [1, 3], "select": [2]}))
    return data, split


def test_spans_are_the_labelled_text_and_parts_do_not_mix(tmp_path: Path) -> None:
    data, split = _fixture(tmp_path)
    train = list(rag_rows.rag_answers("train", data, split))
    select = list(rag_rows.rag_answers("select", data, split))
    assert {a.source_id for a in train} == {1, 3}
    assert [a.source_id for a in select] == [2]
    by_answer = {a.answer: a for a in train + select}
    qa = by_answer[QA_ANSWER]
    assert [qa.answer[a:b] for a, b in qa.spans] == ["500 meters"]
    assert qa.context[:2] == (
        "The Eiffel Tower was built from 1887 to 1889 by Gustave Eiffel's company.",
        "The tower is 330 meters tall. It stands in Paris.",
    )
    assert len(qa.context) == 3
    assert qa.question == "when was the eiffel tower built"
    assert by_answer["It was built from 1887 to 1889."].spans == ()
    assert by_answer["It was built from 1887 to 1889."].label == 0
    summary = by_answer[SUMMARY_ANSWER]
    assert summary.question is None and len(summary.context) == 1
    assert [summary.answer[a:b] for a, b in summary.spans] == ["The library cost 40 million euros"]
    data_row = by_answer[DATA_ANSWER]
    assert [data_row.answer[a:b] for a, b in data_row.spans] == ["quiet garden terrace"]
    # the record as the runtime reads it: RAGTruth's printed form, with the instruction
    assert data_row.context[0].startswith("{'name': 'Cafe Luna'")
    assert data_row.question


def test_a_span_outside_its_response_is_refused(tmp_path: Path) -> None:
    data, split = _fixture(tmp_path)
    path = data / "ragtruth_dev_summary.jsonl"
    row = json.loads(path.read_text())
    row["responses"][0]["labels"][0]["end"] = 10_000
    path.write_text(json.dumps(row) + "\n")
    split.write_text(json.dumps({"train": [2], "select": []}))
    with pytest.raises(ValueError, match="outside"):
        list(rag_rows.rag_answers("train", data, split))


@pytest.mark.skipif(not (BUNDLED / "tokenizer.json").is_file(), reason="bundled tokenizer absent")
def test_token_labels_mark_exactly_the_span_words(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    data, split = _fixture(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(str(BUNDLED))
    for claim in rag_rows.rag_claims("train", data, split):
        context = [p for p in claim.context.split("\n") if p.strip()]
        ex = Example(
            claim.source, context, claim.question or None, claim.answer, claim.label, claim.spans
        )
        encoded = encode(tokenizer, ex, unit_tokens=96, evidence_tokens=192)
        assert encoded is not None
        marked = []
        for row in encoded.rows:
            ids = row["input_ids"]
            answer_ids = [i for i, label in zip(ids, row["labels"], strict=True) if label != -100]
            positive = [i for i, label in zip(ids, row["labels"], strict=True) if label == 1]
            assert answer_ids  # every row reads part of the answer
            marked.append(tokenizer.decode(positive))
        wanted = " ".join(claim.answer[a:b] for a, b in claim.spans or ()).lower()
        assert " ".join(m for m in marked if m) == wanted


def test_removal_variants_keep_the_runtime_context_format(tmp_path: Path) -> None:
    data, split = _fixture(tmp_path)
    split.write_text(json.dumps({"train": [1, 2, 3], "select": []}))
    clean = [a for a in rag_rows.rag_answers("train", data, split) if not a.spans]
    variants = {v.answer: v for v in rag_rows.removal_claims("train", data=data, split=split)}
    assert set(variants) == {QA_CLEAN, DATA_CLEAN}
    qa = variants[QA_CLEAN]
    ((a, b),) = qa.spans or ()
    # the sentence whose backing passage sentence went is the span, without its full stop
    assert (qa.label, qa.answer[a:b]) == (1, "It attracts nearly seven million visitors every year")
    assert "seven million" not in qa.context and "330 meters" in qa.context
    assert qa.context.count("\n") == 2  # still three passages, one per line
    record = variants[DATA_CLEAN]
    ((a, b),) = record.spans or ()
    assert record.answer[a:b] in DATA_CLEAN.split(".")
    # back in RAGTruth's printed form (Python literals), as the runtime reads the record
    assert record.context.startswith("{'") and "None" in record.context
    assert len(record.context) < len(repr(next(c for c in clean if c.answer == DATA_CLEAN).record))


def test_folds_keep_each_source_together() -> None:
    import numpy as np

    groups = np.array(["a", "a", "b", "c", "c", "c", "d", "e", "f", "g"])
    fold = rag_select.folds_by_group(groups)
    for g in set(groups.tolist()):
        assert len(set(fold[groups == g].tolist())) == 1
    assert set(fold.tolist()) == set(range(5))


def test_bootstrap_of_a_detector_against_itself_is_zero_and_a_better_one_is_above() -> None:
    import numpy as np

    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(40).astype(str), 6)
    y = rng.integers(0, 2, len(groups)).astype(float)
    noise = rng.normal(0, 1, len(y))
    weak = y + 2.0 * noise
    strong = y + 0.3 * noise
    assert rag_select.bootstrap_difference(weak, weak, y, groups, draws=50) == (0.0, 0.0, 0.0)
    point, low, high = rag_select.bootstrap_difference(strong, weak, y, groups, draws=200)
    assert 0 < low <= point <= high


def test_the_answer_level_term_ranks_whole_answers() -> None:
    import torch

    from lab.training.train_evidence import label_loss

    # two exactly labelled answers: a clean one whose peak token is high, a wrong one whose
    # unsupported token is high; token BCE is the same whichever answer holds the peak
    labels = torch.tensor([[0, 0, -100], [0, 1, -100]])
    margin = torch.tensor([[3.0, -3.0, 9.0], [-3.0, 3.0, 9.0]])
    owner = [0, 1]
    plain = label_loss(margin, labels, [True, True], owner)
    assert label_loss(margin, labels, [True, True], owner, response_weight=0.0) == plain
    ranked = label_loss(margin, labels, [True, True], owner, response_weight=1.0)
    # the clean answer's peak (3.0) is punished by the answer-level term; padding (-100) is
    # never read, or its 9.0 would dominate both peaks
    peak_terms = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor([3.0, 3.0]), torch.tensor([0.0, 1.0])
    )
    assert ranked == pytest.approx(float((plain + peak_terms) / 2), rel=1e-5)
