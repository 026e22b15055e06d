"""The switches that measure runtime-rule candidates (``lab.training.rule_change``, issue 27)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.training import rag_features
from lab.training.rule_change import CANDIDATES, rule_change
from truthlens_integrations._lab_api import extract_quantities, number_verdicts

CONTEXT = [
    "It was built from 1887 to 1889 as the centrepiece of the 1889 World's Fair.",
    "Radio transmitters were installed at the top of the tower in the early twentieth century.",
]
WRONG = "The Eiffel Tower was built in 1950."


def _decades_read() -> bool:
    return any(q.years == 10 for q in extract_quantities("in the 1950s"))


def test_a_candidate_switched_off_is_restored_after() -> None:
    assert _decades_read()
    with rule_change("off!37"):
        assert not _decades_read()
    assert _decades_read()


def test_39_is_39b_with_37s_judge() -> None:
    assert CANDIDATES["39b"] == ("39", "39b")
    seen = {}
    for variant in ("39", "39b", "off!39b"):
        with rule_change(variant):
            seen[variant] = [v for *_, v in number_verdicts(WRONG, CONTEXT)]
    assert seen == {"39": ["unseen"], "39b": ["conflict"], "off!39b": ["conflict"]}


def test_the_cache_holds_the_rules_before_the_candidate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    during: list[bool] = []

    def record(_folder: Path, _dataset: str, **_kwargs: Any) -> Path:
        during.append(_decades_read())
        return Path()

    monkeypatch.setattr(rag_features, "cache_dataset", record)
    rag_features.main(["--dataset", "attributionbench", "--rules-before", "37"])
    rag_features.main(["--dataset", "attributionbench"])
    assert during == [False, True]
