"""LlamaIndex integration (needs the ``llamaindex`` extra: ``llama-index-core``).

- :class:`TruthLensQueryEngine` wraps any query engine: the answer is checked against
  its own ``source_nodes``, mitigated by the policy, and the verdict is written to
  ``response.metadata["truthlens"]``.
- :class:`TruthLensNodePostprocessor` filters retrieved nodes (score, length,
  near-duplicates, source authority) and, after a detection round, drops or demotes
  nodes that supported nothing in the answer.
- :class:`TruthLensEvaluator` turns the detector into a LlamaIndex evaluator, for
  ``RetryQueryEngine`` and LlamaIndex's evaluation tooling.
- :class:`LlamaIndexLLM` makes a LlamaIndex LLM usable wherever the engine takes an
  LLM (refinement, query rewriting, verification, judging);
  :class:`CoreLLMAsLlamaIndex` goes the other way (the local SmolLM2 or an
  OpenAI-compatible backend inside an index or query engine).
- :class:`TruthLensFunctionAgent`: a ``FunctionAgent`` (alone or in an
  ``AgentWorkflow``) whose final answers are checked against the run's tool outputs,
  acted on by policy and refined through the agent's LLM; :class:`TruthLensAgentEvent`
  is streamed with the workflow's events.

Only ``llama_index.core`` is imported. Importing this package without it raises
:class:`~truthlens_integrations.core.MissingDependencyError`, naming the extra.

Example:
    >>> from truthlens_integrations import TruthLens
    >>> from truthlens_integrations.llamaindex_adapter import TruthLensQueryEngine
    >>> guard = TruthLens.from_config()
    >>> guarded = TruthLensQueryEngine(index.as_query_engine(), engine=guard)  # doctest: +SKIP
    >>> response = guarded.query("When was the Eiffel Tower built?")  # doctest: +SKIP
    >>> response.metadata["truthlens"]["x-vsr-hallucination-spans"]  # doctest: +SKIP
"""

from __future__ import annotations

from truthlens_integrations.core._adapter_api import require

require("llama_index.core", extra="llamaindex", feature="The LlamaIndex adapter")

from ._agent import (  # noqa: E402
    FEEDBACK_KEY,
    TruthLensAgentEvent,
    TruthLensFunctionAgent,
)
from ._evaluator import TruthLensEvaluator  # noqa: E402
from ._events import (  # noqa: E402
    TruthLensDetectionEndEvent,
    TruthLensDetectionStartEvent,
    TruthLensMitigationIterationEvent,
)
from ._llm import CoreLLMAsLlamaIndex, LlamaIndexLLM  # noqa: E402
from ._postprocessor import TruthLensNodePostprocessor  # noqa: E402
from ._query_engine import TruthLensQueryEngine, get_verdict  # noqa: E402

__all__ = [
    "FEEDBACK_KEY",
    "CoreLLMAsLlamaIndex",
    "LlamaIndexLLM",
    "TruthLensAgentEvent",
    "TruthLensDetectionEndEvent",
    "TruthLensDetectionStartEvent",
    "TruthLensEvaluator",
    "TruthLensFunctionAgent",
    "TruthLensMitigationIterationEvent",
    "TruthLensNodePostprocessor",
    "TruthLensQueryEngine",
    "get_verdict",
]
