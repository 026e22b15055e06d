"""Words about the sources and discourse connectives are not absent words.

Issue 27, RULE_candidate28.md, RULE_candidate29.md and RULE_candidate34.md.
"""

from __future__ import annotations

import pytest

from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models.detection._adjust import connectives, source_framing
from truthlens_integrations.core.models.detection._calibration_file import answer_evidence


@pytest.mark.parametrize(
    ("text", "framing"),
    [
        (
            "Based on the provided passages, Oracle has two CEOs.",
            ["Based on the provided passages"],
        ),
        (
            "Here is a concise summary of the passage: the city closed schools.",
            ["Here is a concise summary of the passage"],
        ),
        ("The passage discusses the closure of the college.", ["The passage discusses"]),
        ("According to the context, it opened in 1990.", ["According to the context"]),
        ("Craters form by impacts (as noted in one passage).", ["as noted in one passage"]),
        (
            "Here's my answer based on the given passages: no.",
            ["Here's my answer", "based on the given passages"],
        ),
        ("The documents say that the bridge is closed.", ["The documents say that"]),
        # candidate 34: headers, "this / these", articles and data
        (
            "**Summary:**  This passage describes the city's growth.",
            ["**Summary:**  ", "This passage describes"],
        ),
        ("Answer: the bridge is closed.", ["Answer: "]),
        ("Intro.\n## Key points:\n- It rained.", ["## Key points:"]),
        ("Based on the data provided, the cafe opens at 7.", ["Based on the data provided"]),
        ("The article discusses the war.", ["The article discusses"]),
        ("These passages focus on tax law.", ["These passages focus on"]),
        ("According to the news article, it rained.", ["According to the news article"]),
    ],
)
def test_source_framing_is_found(text: str, framing: list[str]) -> None:
    assert [text[a:b] for a, b in source_framing(text)] == framing


@pytest.mark.parametrize(
    "text",
    [
        "The report states that sales rose.",  # a report in the world, not the sources
        "Based on his record, he won twice.",
        "The summary of the case was filed in 2019.",
        "Passages of the novel describe the war.",
        "The data shows that revenue rose.",  # a finding, not where the answer comes from
        "Summary statistics: the mean is 5.",
        "This story is about a dog.",
    ],
)
def test_claims_are_not_read_as_framing(text: str) -> None:
    assert source_framing(text) == []


def test_the_framing_is_not_counted_and_the_claim_after_it_is() -> None:
    context = ["Oracle is led by Safra Catz and Clay Magouyrk."]
    framed = DetectionInput(
        answer="Based on the provided passages, Oracle is led by Larry Ellison.",
        context=context,
    )
    plain = DetectionInput(answer="Oracle is led by Larry Ellison.", context=context)
    absent_framed, _ = answer_evidence(framed)
    absent_plain, _ = answer_evidence(plain)
    assert [key for _, key in absent_framed] == [key for _, key in absent_plain]
    assert {key for _, key in absent_plain} >= {"larry", "ellison"}


def test_connectives_are_found_and_left_out_of_the_count() -> None:
    context = ["The museum opens at nine. Entry is free."]
    answer = "However, the museum opens at nine. In summary, entry is free for example."
    assert [answer[a:b] for a, b in connectives(answer)] == ["However", "In summary", "for example"]
    absent, _ = answer_evidence(DetectionInput(answer=answer, context=context))
    assert absent == []
    wrong = "Overall, the museum opens at ten and charges a fee."
    absent, _ = answer_evidence(DetectionInput(answer=wrong, context=context))
    assert {key for _, key in absent} >= {"charge", "fee"}
    assert "overall" not in {key for _, key in absent}
