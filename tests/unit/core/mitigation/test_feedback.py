"""Tests of ``core/mitigation/_feedback.py``: the retrieval feedback loop: refined queries and
the fallback query.
"""

from __future__ import annotations

from truthlens_integrations.core.mitigation._feedback import (
    accumulate_context,
    fallback_query,
    parse_refined_query,
)

# -- helpers -----------------------------------------------------------------------------------


def test_parse_refined_query_is_strict() -> None:
    ok = parse_refined_query('```json\n{"query": "eiffel tower dates", "extra": 1}\n```')
    assert ok is not None and ok.query == "eiffel tower dates"
    for junk in ["", "no json", "{'query': 'x y z'}", '{"query": 42}', '{"query": "  "}', "{"]:
        assert parse_refined_query(junk) is None, junk


def test_fallback_query_and_context_budget() -> None:
    from truthlens_integrations.core import HallucinationSpan

    spans = [HallucinationSpan(start=0, end=4, text="1950", confidence=0.9)] * 2
    assert fallback_query("When?", spans) == "When? 1950"
    ctx = ["a" * 40]
    added = accumulate_context(
        ctx, ["b" * 40, "a" * 40, "c" * 400, "d" * 40], budget=40, max_new=5, similarity=0.9
    )
    assert added == 2 and ctx == ["a" * 40, "b" * 40, "d" * 40]
