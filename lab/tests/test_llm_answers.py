"""The labels of LLM-written answers line up with the planted change (``lab.training.llm_answers``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab.training.llm_answers import DATA_DIR, Task, changed_pair, label_answer, load_llm_answers
from lab.training.realdata import split_of_context

CONTEXT = (
    "The bridge opened in 1932 and carries 4,200 cars a day. It was designed by Ada Moreno.\n"
    "A second bridge opened downstream in 1961."
)


def _task(old: str = "1932", new: str = "1934") -> Task:
    changed = changed_pair(CONTEXT, old, new)
    assert changed is not None
    return Task("t-1", "summary", "test", CONTEXT, changed, "Summarize.", old, new)


def test_the_change_replaces_every_occurrence_and_only_whole_words() -> None:
    text = "In 1932 it opened; 19320 is a code; 1932 again."
    assert changed_pair(text, "1932", "1934") == "In 1934 it opened; 19320 is a code; 1934 again."


def test_a_number_matches_with_or_without_thousands_separators() -> None:
    assert changed_pair(CONTEXT, "4200", "5100") == CONTEXT.replace("4,200", "5100")


def test_no_change_when_the_new_value_is_already_in_the_context() -> None:
    # the changed context would then state the new value twice for different facts
    assert changed_pair(CONTEXT, "1932", "1961") is None
    assert changed_pair(CONTEXT, "1999", "2001") is None  # nothing to change


def test_an_answer_stating_the_new_value_is_clean_beside_the_changed_context_only() -> None:
    task = _task()
    answer = "The bridge, designed by Ada Moreno, opened in 1934 and carries 4,200 cars daily."
    clean, wrong = label_answer(task, answer)
    assert (clean["label"], clean["context"], clean["spans"]) == (0, task.changed, [])
    assert (wrong["label"], wrong["context"]) == (1, CONTEXT)
    assert [answer[s:e] for s, e in wrong["spans"]] == ["1934"]


def test_an_answer_stating_the_original_value_is_wrong_beside_the_changed_context() -> None:
    task = _task()
    answer = "Opened in 1932, the bridge by Ada Moreno carries about 4,200 cars each day."
    clean, wrong = label_answer(task, answer)
    assert clean["context"] == CONTEXT
    assert wrong["context"] == task.changed
    assert [answer[s:e] for s, e in wrong["spans"]] == ["1932"]


def test_an_answer_stating_neither_value_is_one_clean_record() -> None:
    task = _task()
    rows = label_answer(task, "Ada Moreno designed a bridge that carries thousands of cars a day.")
    assert [(r["label"], r["context"]) for r in rows] == [(0, task.changed)]


@pytest.mark.parametrize(
    "answer",
    [
        "The bridge opened in 1934 and carries 6,000 cars a day, designed by Ada Moreno.",
        "The bridge opened in 1934, not in 1932 as first planned, and Ada Moreno designed it.",
        "Short answer 1934.",
    ],
    ids=["invented number", "states both values", "too short"],
)
def test_answers_that_cannot_be_labelled_are_dropped(answer: str) -> None:
    assert label_answer(_task(), answer) == []


COMMITTED = [DATA_DIR / f"llm_answers_{part}.jsonl" for part in ("train", "test")]


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("path", COMMITTED, ids=["train", "test"])
def test_committed_spans_mark_the_value_their_context_does_not_state(path: Path) -> None:
    rows = [r for r in _rows(path) if r["label"] != -1]
    assert len(rows) >= 20
    for row in rows:
        meta = row["meta"]
        assert isinstance(meta, dict)
        stated = meta[meta["states"]] if meta["states"] in ("old", "new") else None
        answer, context = str(row["answer"]), str(row["context"])
        marked = {answer[s:e].replace(",", "") for s, e in row["spans"]}  # type: ignore[attr-defined]
        if row["label"] == 1:
            assert marked == {str(stated).replace(",", "")}
            assert not re.search(rf"(?<!\w){re.escape(str(stated))}(?!\w)", context)
        else:
            assert marked == set()
            if stated is not None:
                assert str(stated) in context


def _original(row: dict[str, object]) -> str:
    """The context before the change, whichever of the two the record carries."""
    meta = row["meta"]
    assert isinstance(meta, dict)
    context = str(row["context"])
    carries_changed = meta["states"] == "neither" or (meta["states"] == "new") == (
        row["label"] == 0
    )
    if not carries_changed:
        return context
    original = changed_pair(context, str(meta["new"]), str(meta["old"]))
    assert original is not None
    return original


@pytest.mark.parametrize(("path", "want"), list(zip(COMMITTED, ("train", "heldout"), strict=True)))
def test_committed_contexts_come_from_their_own_part(path: Path, want: str) -> None:
    # realdata holds out the same contexts, so the held-out benchmarks stay unseen
    for row in _rows(path):
        if row["label"] == -1 or row["source"] == "llm_answers/data2txt":
            continue
        passages = _original(row).split("\n")
        assert all(split_of_context(p) == want for p in passages), passages[0][:60]


def test_committed_train_and_test_answers_share_no_context() -> None:
    train, test = (load_llm_answers(part) for part in ("train", "test"))  # type: ignore[arg-type]
    assert train and test
    assert not {c.context for c in train} & {c.context for c in test}
