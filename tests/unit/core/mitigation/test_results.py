"""Tests of ``core/mitigation/_results.py``: mitigation results: the answer diff."""

from __future__ import annotations

from truthlens_integrations.core.mitigation._results import diff_answers


def test_diff_answers() -> None:
    same = diff_answers("a b", "a b")
    assert not same.changed and same.unified == ""
    d = diff_answers("built in 1950 in Paris", "built in 1889 in Paris")
    assert d.removed == ["1950"] and d.added == ["1889"]
