"""Shared set-up of the LangChain cookbook examples: engine, chat models, a small corpus.

Which chat model the examples use (the detector, NLI explainer and prompt classifier
are always the bundled offline models):

- ``TRUTHLENS_COOKBOOK_LLM=fake`` (or ``--fake-llm`` on the command line): LangChain's
  fake chat models with scripted answers. Nothing to download, runs in seconds: this
  is what CI's smoke test uses (tests/project/test_cookbook.py).
- otherwise (``auto``, the default): the package's default backend wrapped as a
  LangChain chat model. That is an OpenAI-compatible endpoint when
  ``$OPENAI_API_KEY`` / ``$OPENAI_BASE_URL`` is set (model from
  ``$TRUTHLENS_LLM_MODEL``), else the offline SmolLM2 model (about 30 s to load the
  first time; small, so its answers are rough).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.vectorstores import InMemoryVectorStore

from truthlens_integrations.core.engine import TruthLens, Verdict
from truthlens_integrations.core.llm import default_llm
from truthlens_integrations.langchain_adapter import LLMChatModel

ENV_LLM = "TRUTHLENS_COOKBOOK_LLM"

EIFFEL_RECORD = (
    '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters", '
    '"location": "Paris, France"}'
)
EIFFEL_QUESTION = "When was the Eiffel Tower built and how tall is it?"
HALLUCINATED = "The Eiffel Tower was built in 1950 and is 500 meters tall."
CORRECT = "The Eiffel Tower was built from 1887 to 1889 and is 330 meters tall."

CORPUS = [
    Document(EIFFEL_RECORD, metadata={"source": "landmarks.json"}),
    Document(
        "The Eiffel Tower in Paris was designed by Gustave Eiffel's engineering company "
        "and opened for the 1889 World's Fair. It is 330 meters tall.",
        metadata={"source": "guide.txt"},
    ),
    Document(
        "The Louvre museum in Paris opened to the public in 1793 and holds the Mona Lisa.",
        metadata={"source": "museums.txt"},
    ),
    Document(
        "The Musée d'Orsay occupies a former railway station on the left bank of the Seine.",
        metadata={"source": "museums.txt"},
    ),
]


def use_fake(argv: Sequence[str] | None = None) -> bool:
    """Whether to use scripted fake chat models (``--fake-llm`` or the env variable)."""
    args = sys.argv[1:] if argv is None else argv
    return "--fake-llm" in args or os.environ.get(ENV_LLM, "auto").lower() == "fake"


def setup_logging() -> None:
    """Show the package's warnings (flagged answers) on stderr."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # No download or weight-loading progress bars: the env variable is read when
    # huggingface_hub is first imported, so switch the bars off explicitly as well.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    except ImportError:  # the models' extra is not installed: nothing to silence
        pass
    for noisy in ("transformers", "httpx"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


def chat_model(
    script: Sequence[str | AIMessage], *, fake: bool, temperature: float | None = None
) -> BaseChatModel:
    """The example's chat model: scripted when ``fake``, else the default backend.

    Args:
        script: Answers the fake model gives, in order.
        fake: Use the fake model.
        temperature: Sampling temperature of the real backend.

    Returns:
        A LangChain chat model.
    """
    if fake:
        return GenericFakeChatModel(messages=iter(list(script)))
    return LLMChatModel(llm=_default_backend(), temperature=temperature, max_tokens=160)


@functools.cache
def _default_backend() -> Any:
    return default_llm()


@functools.cache
def engine(policy: str | None = None) -> TruthLens:
    """The guard engine with the bundled models; cached so examples share one load."""
    return TruthLens.from_config(_POLICIES.get(policy) if policy else None)


_POLICIES: dict[str, dict[str, Any]] = {
    "standard": {"hallucination": {"default_mode": "standard", "hallucination_action": "body"}},
    "premium": {"hallucination": {"default_mode": "premium", "hallucination_action": "body"}},
}


class HashingEmbeddings(Embeddings):
    """Bag-of-words embeddings by feature hashing: lexical similarity, fully offline.

    Good enough to retrieve from a handful of documents in an example; use a real
    embedding model in an application.
    """

    def __init__(self, size: int = 256) -> None:
        self.size = size

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.size
        for word in re.findall(r"\w+", text.lower()):
            vector[sum(map(ord, word)) * 2654435761 % self.size] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def vector_store() -> InMemoryVectorStore:
    """An in-memory vector store holding :data:`CORPUS`."""
    store = InMemoryVectorStore(HashingEmbeddings())
    store.add_documents(CORPUS)
    return store


def show_verdict(verdict: Any) -> None:
    """Print what the guard found and did (a verdict or its ``to_dict()``)."""
    if isinstance(verdict, dict):  # what outputs carry under "truthlens"
        verdict = Verdict.model_validate(verdict)
    score = verdict.original_score if verdict.original_score is not None else verdict.score
    shown = "-" if score is None else f"{score:.3f}"
    # the score means little without the threshold it is compared with
    limit = f"flagged at >= {verdict.threshold:.3f}"
    print(
        f"  decision: {verdict.decision.value}  score: {shown} ({limit})  status: {verdict.status}"
    )
    # after a mitigation loop `spans` describe the final answer; history[0] the original
    spans = verdict.history[0].spans if verdict.history else verdict.spans
    for span in spans:
        print(f"  flagged span: {span.text!r} ({span.nli_label}, severity {span.severity})")
    for step in verdict.history[1:]:
        shown = step.answer if step.answer is not None else f"(failed: {step.error})"
        score = "-" if step.score is None else f"{step.score:.3f}"
        kept = "kept" if step.accepted else "rejected"
        print(f"  round {step.index} ({step.kind}, score {score}, {kept}): {shown}")
    if verdict.unverified:
        print("  no grounding: the answer could not be verified")
    if verdict.final_answer and verdict.final_answer != verdict.original_answer:
        print(f"  original answer: {verdict.original_answer}")
        print(f"  refined answer:  {verdict.final_answer}")
