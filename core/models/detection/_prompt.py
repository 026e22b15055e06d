"""The LettuceDetect input format.

A detector sees ``[CLS] prompt [SEP] answer [SEP]``, where the prompt holds the
question and the numbered context passages in the wording LettuceDetect was trained
on. Keeping that wording exactly lets LettuceDetect checkpoints reach their published
accuracy here, and the bundled model is trained on the same format.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["format_prompt"]

_QA_TEMPLATE = (
    "Briefly answer the following question:\n"
    "{question}\n"
    "Bear in mind that your response should be strictly based on the following "
    "{num_passages} passages:\n"
    "{passages}\n"
    "In case the passages do not contain the necessary information to answer the question, "
    'please reply with: "Unable to answer based on given passages."\n'
    "output:"
)
_SUMMARY_TEMPLATE = "Summarize the following text:\n{passages}\noutput:"


def format_prompt(passages: Sequence[str], question: str | None) -> str:
    """Build the detector prompt for some context passages and an optional question.

    Args:
        passages: Context passages, numbered from 1 in the prompt.
        question: The question; ``None`` selects the summarisation wording.

    Returns:
        The prompt text that precedes the answer in the detector input.
    """
    block = "\n".join(f"passage {i}: {p}" for i, p in enumerate(passages, start=1))
    if question is None:
        return _SUMMARY_TEMPLATE.format(passages=block)
    return _QA_TEMPLATE.format(question=question, num_passages=len(passages), passages=block)
