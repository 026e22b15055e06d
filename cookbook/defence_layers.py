"""Defence in depth: the design's four layers around one RAG answer.

1. ``filter_passages``: keep retrieved passages good enough to ground an answer (a
   retrieval score floor, a length floor, near-duplicates and low-authority sources out);
2. ``build_constrained_prompt``: ask the model to answer only from the numbered documents,
   cite them, and say when they lack the answer;
3. the guard: check the answer against the kept passages;
4. ``degrade_verdict``: approve, warn or replace the answer by its confidence and the
   scenario (a medical answer needs more confidence than a trivia one).

Layers 1 and 4 also come built in: ``TruthLensQualityFilter`` (LangChain) and
``TruthLensNodePostprocessor`` (LlamaIndex) run layer 1 on a retriever's documents.

Run:
    python cookbook/defence_layers.py             # offline, scripted answers
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from truthlens_integrations import TruthLens
from truthlens_integrations.core.mitigation import (
    Passage,
    build_constrained_prompt,
    degrade_verdict,
    filter_passages,
)
from truthlens_integrations.testing import ScriptedChatModel

QUESTION = "When was the Eiffel Tower built, and how tall is it?"
RETRIEVED = [
    Passage(
        text="The Eiffel Tower in Paris was built from 1887 to 1889 for the World's Fair.",
        score=0.91,
        metadata={"authority": 0.9},
    ),
    Passage(
        text="The Eiffel Tower in Paris was built from 1887 to 1889 for the World's Fair!",
        score=0.90,
        metadata={"authority": 0.9},
    ),  # a near-duplicate
    Passage(
        text="The tower is 330 meters tall, including its antennas, and weighs 10,100 tonnes.",
        score=0.84,
        metadata={"authority": 0.8},
    ),
    Passage(text="Paris is nice.", score=0.80),  # too short to ground anything
    Passage(
        text="A forum post claims the Eiffel Tower was finished in 1950 by a team of robots.",
        score=0.75,
        metadata={"authority": 0.1},
    ),  # an unreliable source
]
ANSWERS = [
    "The Eiffel Tower was built from 1887 to 1889 [1] and is 330 meters tall [2].",
    "The Eiffel Tower was built in 1950 [1] and is 500 meters tall [2].",
]


def layer1() -> list[str]:
    kept = filter_passages(RETRIEVED, min_score=0.5, min_authority=0.5)
    print(f"[1] kept {len(kept)} of {len(RETRIEVED)} retrieved passages:")
    for passage in kept:
        print(f"    {passage.text}")
    return [p.text for p in kept]


def layer2(documents: Sequence[str], model: ScriptedChatModel) -> str:
    messages = build_constrained_prompt(QUESTION, documents)
    print(f"[2] constrained prompt: {len(messages)} messages, the documents numbered 1-2")
    reply = model.invoke([(m.role, m.content) for m in messages])
    answer = str(reply.content)
    print(f"    the model answered: {answer}")
    return answer


def main(argv: Sequence[str] | None = None) -> int:
    del argv  # no options: the answers are scripted
    engine = TruthLens.from_config()
    documents = layer1()
    model = ScriptedChatModel(replies=ANSWERS)
    for _ in ANSWERS:
        answer = layer2(documents, model)
        verdict = engine.guard(context=documents, question=QUESTION, answer=answer)
        print(f"[3] guard: {verdict.decision.value}, score {verdict.score:.2f}")
        for scenario in ("medical", "entertainment"):
            shown = degrade_verdict(verdict, scenario=scenario)
            print(f"[4] {scenario}: {shown.level} -> {shown.text[:70]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
