"""The held-out train-role answers ``benchmarks/bench_heldout.py`` reports on, built in one place.

Each source's held-out split, the half the calibrations did not see (at most ``per_source``
answers per source, positives and negatives evened out), the hard-case test set, optionally
the LLM-written answers over held-out contexts and their evidence-removal pairs, and the
multi-part answers joined from the held-out answers. The selection scripts that read the
benchmark (``lab.training.rule_change``) and ``benchmarks/bench_floor_conflicts.py`` take the
same draws from here.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["claim_input", "heldout_claims"]


def heldout_claims(
    per_source: int = 30,
    multi_per_family: int = 30,
    *,
    llm_answers: bool = False,
    removal: bool = False,
) -> list[Any]:
    """The benchmark's claims, in its order (``source`` names each one's group)."""
    from . import llm_answers as llm
    from . import realdata
    from . import removal as removals
    from .calibrate_evidence import _half
    from .calibrate_response import multi_part_answers
    from .train_evidence import _hard_cases, balanced

    held = [c for c in realdata.load_real(part="heldout") if _half(c) == 1]
    claims = balanced(held, per_source, random.Random(13)) + _hard_cases("test")
    if llm_answers:
        claims += llm.load_llm_answers("test")
    if removal:
        clean, unsupported = removals.load_removals("test")
        claims += clean + unsupported
    return claims + multi_part_answers(held, multi_per_family, random.Random(17))


def claim_input(claim: Any) -> Any:
    """A claim as the detector reads it: its context split into passages at line breaks."""
    from truthlens_integrations.core import DetectionInput

    context = claim.context
    return DetectionInput.create(
        context=context
        if isinstance(context, list)
        else [p for p in context.split("\n") if p.strip()],
        question=claim.question or None,
        answer=claim.answer,
    )
