"""Tests of ``core/mitigation/_ops.py``'s ``Ledger``: what a request's LLM calls cost."""

from __future__ import annotations

from truthlens_integrations.core.llm import LLMResponse, TokenUsage
from truthlens_integrations.core.mitigation._ops import Ledger


class Named:
    model = "m"


def _response(usage: TokenUsage | None) -> LLMResponse:
    return LLMResponse(text="ok", model="m", usage=usage, latency_ms=1.0)


def test_a_call_without_usage_is_counted_as_unmetered_not_as_free() -> None:
    ledger = Ledger()
    ledger.record(
        Named(),
        "refiner",
        _response(TokenUsage(prompt_tokens=7, completion_tokens=3, total_tokens=10)),
        0.1,
    )
    ledger.record(Named(), "refiner", _response(None), 0.2)  # a streamed reply, no usage
    ledger.record(Named(), "refiner", None, 0.3)  # failed
    account = ledger.account()
    assert (account.llm_calls, account.failed_calls, account.unmetered_calls) == (3, 1, 1)
    # the tokens are those reported: a lower bound, which unmetered_calls says
    assert (account.prompt_tokens, account.completion_tokens, account.total_tokens) == (7, 3, 10)
