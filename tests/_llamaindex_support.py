"""Shared pieces of the LlamaIndex adapter tests.

- :func:`bag_of_words_embedding`: the cookbook's deterministic local embedding (hashed
  word counts, L2-normalised), so a real ``VectorStoreIndex`` retrieves predictably.
- :class:`ScriptedLLM`: a ``MockLLM`` whose replies follow fixed rules on the prompt
  (a STAND-IN for an LLM: the only faked component). It answers from whatever
  context the prompt contains, so what it says depends on what was retrieved.
- :class:`RuleNLI`: the number-judging NLI STAND-IN of ``tests/_fakes.py``, for which
  two texts without numbers are neutral.

The detector is the real keyword model of ``tests/conftest.py``: it flags exactly
the tokens "1950", "500" and "meters" in an answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import CompletionResponse
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.llms import MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback

from tests import _fakes as fakes
from tests._fakes import AlwaysFactual
from tests._scripts import load_example
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import Detector

_COOKBOOK = load_example("llamaindex_query_engine.py")

_STOP = frozenset(
    "a an the of in on at to is was were be by and or for from it its this that what "
    "when how who which with as are did does do".split()
)

# Two documents about the same tower: the first matches the user's question word
# for word but holds no dates; the second holds the dates but shares few words
# with the question. A good rewritten query ("construction years") finds it.
VISITOR_DOC = (
    "When visitors ask about the Eiffel Tower, guides say the tower was built as the "
    "entrance arch of a world fair in Paris and still welcomes millions of visitors."
)
HISTORY_DOC = (
    "Construction history: work on the Eiffel Tower started in 1887 and the "
    "construction finished in 1889, in time for the Exposition Universelle."
)
OTHER_DOCS = (
    "The Louvre museum in Paris holds the Mona Lisa and many other paintings.",
    "The river Seine flows through Paris and under many old bridges.",
)
QUESTION = "When was the Eiffel Tower built?"
WRONG_ANSWER = "The Eiffel Tower was built in 1950."
RIGHT_ANSWER = "The Eiffel Tower was built from 1887 to 1889."
NO_DATES_ANSWER = "The context does not say when the tower was built."
REWRITTEN_QUERY = "Eiffel Tower construction history started finished"


def bag_of_words_embedding() -> BaseEmbedding:
    """The cookbook's hashed bag-of-words embedding, with this module's stop words."""
    return _COOKBOOK.HashedBagOfWords(stop_words=_STOP)


def build_index(texts: Sequence[str] = (VISITOR_DOC, HISTORY_DOC, *OTHER_DOCS)) -> VectorStoreIndex:
    docs = [Document(text=t, doc_id=f"doc-{i}") for i, t in enumerate(texts)]
    return VectorStoreIndex.from_documents(docs, embed_model=bag_of_words_embedding())


class ScriptedLLM(MockLLM):
    """STAND-IN LLM with fixed rules; records every prompt it receives.

    - a refine prompt (has "Corrected answer" / the adapter's refine wording):
      answers from the context in the prompt;
    - the engine's query-refiner prompt (about search queries): ``REWRITTEN_QUERY``
      as the JSON the refiner asks for;
    - ``always_wrong``: ``WRONG_ANSWER`` to everything else;
    - anything else (LlamaIndex's QA prompt): ``answer_without_dates`` unless the
      prompt's context contains "1887", then ``RIGHT_ANSWER``.
    """

    answer_without_dates: str = WRONG_ANSWER
    prompts: list[str] = []  # noqa: RUF012 - a pydantic field, copied per instance

    always_wrong: bool = False

    def __init__(
        self, answer_without_dates: str = WRONG_ANSWER, *, always_wrong: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.answer_without_dates = answer_without_dates
        self.always_wrong = always_wrong
        self.prompts = []

    @classmethod
    def class_name(cls) -> str:
        return "ScriptedLLM"

    def reply(self, prompt: str) -> str:
        self.prompts.append(prompt)
        lowered = prompt.lower()
        if "search quer" in lowered:  # the engine's query refiner asks for JSON
            return json.dumps({"query": REWRITTEN_QUERY, "missing_facts": ["construction year"]})
        if self.always_wrong:
            return WRONG_ANSWER
        if "corrected answer" in lowered or "rewrite the answer" in lowered:
            return RIGHT_ANSWER if "1887" in prompt else NO_DATES_ANSWER
        return RIGHT_ANSWER if "1887" in prompt else self.answer_without_dates

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.reply(prompt))

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        return CompletionResponse(text=self.reply(prompt))

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):  # type: ignore[no-untyped-def]
        text = self.reply(prompt)

        def gen():  # type: ignore[no-untyped-def]
            acc = ""
            for piece in re.findall(r"\S+\s*", text):
                acc += piece
                yield CompletionResponse(text=acc, delta=piece)

        return gen()


class RuleNLI(fakes.RuleNLI):
    """The number-judging NLI STAND-IN; two texts without numbers are neutral."""

    numberless = ("neutral", 0.8)


def make_engine(detector: Detector, **hallucination: Any) -> TruthLens:
    """The guard of the LlamaIndex tests: the keyword detector, no NLI, every prompt factual."""
    # Header unless a test says otherwise: the tests read the answer as given.
    policy = {
        "hallucination": {"use_nli": False, "hallucination_action": "header", **hallucination}
    }
    return TruthLens.from_config(policy, detector=detector, fact_checker=AlwaysFactual())


class Collect(BaseEventHandler):
    """Keeps every LlamaIndex instrumentation event it is handed."""

    events: list[BaseEvent] = []  # noqa: RUF012 - a pydantic field

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.events.append(event)


@contextmanager
def collect_events() -> Iterator[list[BaseEvent]]:
    """The events dispatched while the block runs (a :class:`Collect` on the root dispatcher)."""
    root = get_dispatcher()
    handler = Collect(events=[])
    root.add_event_handler(handler)
    try:
        yield handler.events
    finally:
        root.event_handlers.remove(handler)
