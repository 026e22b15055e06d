"""How the claim-checker benchmark reads an answer (``benchmarks/bench_claim_checkers.py``)."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from truthlens_integrations.core.models.claims import Claim, ClaimJudgement, judged

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    path = ROOT / "benchmarks" / "bench_claim_checkers.py"
    spec = importlib.util.spec_from_file_location("bench_claim_checkers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Counting:
    """A checker that records the claims of each call."""

    name = "counting"

    def __init__(self, claims_per_call: int) -> None:
        self.claims_per_call = claims_per_call
        self.calls: list[list[str]] = []

    def check(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
        self.calls.append([c.text for c in claims])
        return [judged(c, self.name, 0.9 if "Paris" in c.text else 0.1) for c in claims]


def _claims() -> list[Claim]:
    evidence = "The Eiffel Tower is in Paris."
    texts = ("It is in Paris.", "It is in Rome.")
    return [Claim(text=t, start=0, end=len(t), evidence=evidence) for t in texts]


def test_minicheck_times_each_claim_alone() -> None:
    checker = _Counting(claims_per_call=1)
    rows = _bench()._judged(checker, _claims())
    assert checker.calls == [["It is in Paris."], ["It is in Rome."]]
    assert [r["supported"] for r in rows] == [0.9, 0.1]


def test_a_packing_protocol_reads_the_answer_at_once() -> None:
    checker = _Counting(claims_per_call=8)
    rows = _bench()._judged(checker, _claims())
    assert checker.calls == [["It is in Paris.", "It is in Rome."]]
    assert [r["supported"] for r in rows] == [0.9, 0.1]
    assert rows[0]["ms"] == rows[1]["ms"]  # the call's time, shared evenly
