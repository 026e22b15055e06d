"""Tests of ``core/mitigation/_premium.py``: cross-model verification: the lexical label
fallback.
"""

from __future__ import annotations

from truthlens_integrations.core.mitigation._premium import lexical_label


def test_lexical_label_fallback() -> None:
    assert lexical_label("Built from 1887 to 1889.", "Built in 1950.")[0] == "contradiction"
    assert lexical_label("The tower stands in Paris.", "The tower is in Paris.")[0] == "entailment"
    assert lexical_label("Paris is in France.", "It rains a lot.")[0] == "neutral"
