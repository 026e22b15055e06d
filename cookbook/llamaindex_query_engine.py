"""A guarded LlamaIndex query engine: spans, refinement and a rewritten query, offline.

Run:
    python cookbook/llamaindex_query_engine.py             # bundled models + local SmolLM2
    python cookbook/llamaindex_query_engine.py --fake-llm  # scripted MockLLM, seconds (CI)

The detector, NLI explainer and prompt classifier are always the bundled offline models.
The LLM that answers (and refines, and rewrites queries) is, in order:

- ``--fake-llm`` or ``TRUTHLENS_COOKBOOK_LLM=fake``: a LlamaIndex ``MockLLM`` with
  scripted answers (it answers 1950 unless its context has the construction dates).
  Nothing to download; CI's smoke test runs this (tests/project/test_cookbook.py).
- an OpenAI-compatible endpoint when ``$OPENAI_API_KEY`` / ``$OPENAI_BASE_URL`` is set
  (model from ``$TRUTHLENS_LLM_MODEL``);
- else the offline SmolLM2-135M model (about 30 s to load; small, so rough answers).

Two runs over the same four documents:

1. Standard mode: the inner engine's answer is checked against its source nodes, the
   flagged spans are printed, and the answer is re-synthesized with the refine prompt.
2. Retrieval feedback: the first retrieval misses the document with the dates; the
   query is rewritten, the inner engine is queried again, and the sources accumulate.

The embedding is a tiny hashed bag of words defined below, so retrieval needs no model
download; swap in any LlamaIndex embedding for real use.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
import zlib
from collections.abc import Sequence
from typing import Any

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import CompletionResponse
from llama_index.core.llms import LLM, MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback

from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.llamaindex_adapter import (
    CoreLLMAsLlamaIndex,
    TruthLensNodePostprocessor,
    TruthLensQueryEngine,
    get_verdict,
)

ENV_LLM = "TRUTHLENS_COOKBOOK_LLM"

QUESTION = "When was the Eiffel Tower built?"
DOCUMENTS = [
    Document(
        text="When visitors ask about the Eiffel Tower, guides say the tower was built as "
        "the entrance arch of a world fair in Paris and still welcomes millions of visitors.",
        metadata={"source": "guide.txt", "authority": 0.6},
    ),
    Document(
        text="Construction history: work on the Eiffel Tower started in 1887 and the "
        "construction finished in 1889, in time for the Exposition Universelle.",
        metadata={"source": "history.txt", "authority": 0.9},
    ),
    Document(
        text="The Louvre museum in Paris opened to the public in 1793 and holds the Mona Lisa.",
        metadata={"source": "museums.txt"},
    ),
    Document(
        text="The river Seine flows through Paris, under thirty-seven bridges.",
        metadata={"source": "rivers.txt"},
    ),
]

# The policy: standard mode (refinement), the answer shown with a warning if it stays
# flagged, span texts in the headers so this demo can print them.
POLICY = {
    "hallucination": {
        "default_mode": "standard",
        "standard": {"max_iterations": 2},
        "hallucination_action": "body",
        "include_hallucination_details": True,
    }
}

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the of in on at to is was be by and or for it as when what how".split())


class HashedBagOfWords(BaseEmbedding):
    """Deterministic offline embedding: hashed word counts, L2-normalised.

    ``stop_words`` are left out of the counts (the test suite brings its own list).
    """

    stop_words: frozenset[str] = _STOP

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * 512
        for word in _WORD.findall(text.lower()):
            if word not in self.stop_words:
                vec[zlib.crc32(word.encode()) % 512] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._embed(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed(text)


class ScriptedLLM(MockLLM):
    """A MockLLM with scripted replies (``--fake-llm``): a model that guesses 1950.

    It answers from the dates in its prompt when there are any, except in
    ``hallucinate`` mode, where the first answer is always the wrong year. It
    rewrites search queries as the engine's query refiner asks (JSON).
    """

    hallucinate: bool = False

    def __init__(self, *, hallucinate: bool = False) -> None:
        super().__init__()
        self.hallucinate = hallucinate

    def _reply(self, prompt: str) -> str:
        lowered = prompt.lower()
        if "search quer" in lowered:
            return json.dumps({"query": "Eiffel Tower construction history started finished"})
        has_dates = "1887" in prompt
        if "corrected answer" in lowered:
            if has_dates:
                return "The Eiffel Tower was built from 1887 to 1889."
            return "The documents do not say when the tower was built."
        if has_dates and not self.hallucinate:
            return "The Eiffel Tower was built from 1887 to 1889."
        return "The Eiffel Tower was built in 1950."

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        del formatted, kwargs  # a scripted reply depends on the prompt only
        return CompletionResponse(text=self._reply(prompt))


def use_fake(argv: Sequence[str]) -> bool:
    return "--fake-llm" in argv or os.environ.get(ENV_LLM, "auto").lower() == "fake"


def make_llm(*, fake: bool, hallucinate: bool = False) -> LLM:
    if fake:
        return ScriptedLLM(hallucinate=hallucinate)
    from truthlens_integrations.core.llm import default_llm

    return CoreLLMAsLlamaIndex(default_llm(), context_window=2048, num_output=128)


def show(title: str, response: Any) -> None:
    verdict = get_verdict(response)
    assert verdict is not None
    print(f"\n=== {title} ===")
    print(f"original answer : {verdict.original_answer!r}")
    spans = verdict.history[0].spans if verdict.history else verdict.spans
    print("flagged spans   : " + (", ".join(f"{s.text!r} ({s.nli_label})" for s in spans) or "-"))
    for step in verdict.history[1:]:
        query = f" query={step.query!r}" if step.query else ""
        print(
            f"  round {step.index}: {step.kind}{query} score={step.score} "
            f"accepted={step.accepted} {step.error or ''}".rstrip()
        )
    print(f"status          : {verdict.status} ({verdict.strategy or 'no loop'})")
    print(f"shown answer    : {response.response!r}")
    sources = [f"{n.node.metadata['source']} ({n.score:.2f})" for n in response.source_nodes]
    print("sources (score) : " + ", ".join(sources))
    headers = response.metadata["truthlens"]["metadata"]  # the verdict's x-* headers
    for key in ("x-truthlens-detected", "x-truthlens-iterations", "x-vsr-hallucination-spans"):
        print(f"{key}: {headers[key]}")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    fake = use_fake(argv)
    index = VectorStoreIndex.from_documents(DOCUMENTS, embed_model=HashedBagOfWords())
    engine = TruthLens.from_config(POLICY)  # bundled detector, NLI and classifier
    quality = TruthLensNodePostprocessor(min_length=40)

    # 1. Both Eiffel documents are retrieved, but the model still gets the year wrong:
    #    the guard flags the span and the refine prompt fixes it from the sources.
    inner = index.as_query_engine(llm=make_llm(fake=fake, hallucinate=True), similarity_top_k=2)
    guarded = TruthLensQueryEngine(inner, engine=engine, node_postprocessor=quality)
    show("standard mode: refinement", guarded.query(QUESTION))

    # 2. Only the best match is retrieved, and it has no dates: the query is rewritten
    #    and the inner engine asked again; the new source node grounds the answer.
    inner = index.as_query_engine(llm=make_llm(fake=fake), similarity_top_k=1)
    feedback = TruthLensQueryEngine(
        inner, engine=engine, retrieval_feedback=True, node_postprocessor=quality
    )
    show("retrieval feedback: rewritten query", feedback.query(QUESTION))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
