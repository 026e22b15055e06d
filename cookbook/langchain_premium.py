"""Premium mode: two verification models and a judge cross-check a flagged answer.

With an OpenAI-compatible endpoint you would pass real providers, e.g.::

    TruthLensRunnable(engine=..., llm=ChatOpenAI(model="gpt-4o-mini"),
                      verification_llms=[ChatOpenAI(model="gpt-4o"), ChatAnthropic(...)],
                      judge_llm=ChatOpenAI(model="gpt-4o"))

Offline, both verifiers are the local SmolLM2 at two temperatures (a stand-in for
two providers); with ``--fake-llm`` they are scripted fake chat models (CI).

Run:
    python cookbook/langchain_premium.py
    python cookbook/langchain_premium.py --fake-llm
"""

from __future__ import annotations

import sys

import _langchain_setup as shared
from langchain_core.messages import AIMessage

from truthlens_integrations.core.engine import Verdict
from truthlens_integrations.langchain_adapter import TruthLensRunnable

SECOND_OPINION = "It was built between 1887 and 1889; it is 330 meters tall."


def main(argv: list[str] | None = None) -> int:
    shared.setup_logging()
    fake = shared.use_fake(argv)
    guard = TruthLensRunnable(
        engine=shared.engine("premium"),
        llm=shared.chat_model([shared.CORRECT] * 4, fake=fake),
        verification_llms=[
            shared.chat_model([shared.CORRECT] * 4, fake=fake, temperature=0.0),
            shared.chat_model([SECOND_OPINION] * 4, fake=fake, temperature=0.7),
        ],
        judge_llm=shared.chat_model([shared.CORRECT] * 4, fake=fake),
    )
    out = guard.invoke(
        {
            "question": shared.EIFFEL_QUESTION,
            "context": [shared.EIFFEL_RECORD],
            "answer": AIMessage(shared.HALLUCINATED),
        }
    )
    verdict = Verdict.model_validate(out["truthlens"])  # the verdict's to_dict()
    print(f"Q: {shared.EIFFEL_QUESTION}")
    print(f"A: {out['answer'].content}")
    shared.show_verdict(verdict)
    print(f"  strategy: {verdict.strategy}  rounds: {verdict.iterations}")
    print(f"  cost: {verdict.cost.llm_calls} LLM calls, {verdict.cost.total_tokens} tokens")
    for use in verdict.cost.models:
        print(f"    {use.role}: {use.model} x{use.calls}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
