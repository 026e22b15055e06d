"""Tests of ``llamaindex_adapter/_postprocessor.py``: TruthLensNodePostprocessor: quality
filters, authority, evidence mode, events.
"""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, TextNode

from tests._llamaindex_support import (
    HISTORY_DOC,
    OTHER_DOCS,
    QUESTION,
    VISITOR_DOC,
    RuleNLI,
    ScriptedLLM,
    build_index,
)
from truthlens_integrations.core import HallucinationSpan
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.llamaindex_adapter import TruthLensNodePostprocessor
from truthlens_integrations.llamaindex_adapter._events import TruthLensNodeFilterEvent

# -- TruthLensNodePostprocessor: quality filters, authority, evidence mode, events. --------


LONG = "The Eiffel Tower in Paris was built from 1887 to 1889 for the world fair."


def nws(
    text: str, score: float | None = None, node_id: str | None = None, **meta: Any
) -> NodeWithScore:
    node = TextNode(text=text, metadata=meta, id_=node_id or text[:24])
    return NodeWithScore(node=node, score=score)


def texts(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.get_content() for n in nodes]


def test_is_a_pydantic_llamaindex_postprocessor() -> None:
    post = TruthLensNodePostprocessor(min_score=0.2, source_key="url")
    assert isinstance(post, BaseNodePostprocessor)
    assert TruthLensNodePostprocessor.class_name() == "TruthLensNodePostprocessor"
    data = post.to_dict()
    assert data["min_score"] == 0.2 and data["class_name"] == "TruthLensNodePostprocessor"
    assert "_engine" not in data and "engine" not in data  # models stay private
    again = TruthLensNodePostprocessor.from_dict(data)
    assert again.min_score == 0.2 and again.source_key == "url"
    with pytest.raises(ValueError):
        TruthLensNodePostprocessor(dedupe_similarity=0.0)


def test_minimum_score_and_length() -> None:
    post = TruthLensNodePostprocessor(min_score=0.5, min_length=30)
    nodes = [nws(LONG, 0.9), nws(LONG.replace("Paris", "France"), 0.4), nws("Too short.", 0.95)]
    assert texts(post.postprocess_nodes(nodes)) == [LONG]
    unscored = nws(OTHER_DOCS[0], None)
    assert texts(post.postprocess_nodes([unscored])) == [OTHER_DOCS[0]]  # unscored stays


def test_near_duplicates_keep_the_first() -> None:
    # 8 of the 9 content words shared: Jaccard 0.89
    near = LONG.replace("for the world fair", "for the great world fair")
    nodes = [nws(LONG, 0.9, "a"), nws(near, 0.8, "b"), nws(HISTORY_DOC, 0.7, "c")]
    strict = TruthLensNodePostprocessor(min_length=0, dedupe_similarity=0.85)
    assert [n.node.node_id for n in strict.postprocess_nodes(nodes)] == ["a", "c"]
    default = TruthLensNodePostprocessor(min_length=0)  # 0.9
    assert [n.node.node_id for n in default.postprocess_nodes(nodes)] == ["a", "b", "c"]
    exact = nws(LONG.replace("Paris", "PARIS"), 0.95, "exact")  # same words
    assert [n.node.node_id for n in default.postprocess_nodes([exact, *nodes])] == [
        "exact",
        "b",
        "c",
    ]


def test_source_authority_from_metadata() -> None:
    post = TruthLensNodePostprocessor(
        min_length=0,
        min_authority=0.5,
        source_key="url",
        source_authority={"wiki.example": 0.9, "blog.example": 0.2},
    )
    nodes = [
        nws(OTHER_DOCS[0], 0.9, "no-authority"),
        nws(OTHER_DOCS[1], 0.8, "blog", url="blog.example"),
        nws(HISTORY_DOC, 0.7, "wiki", url="wiki.example"),
        nws(LONG, 0.6, "explicit", authority=0.7, url="blog.example"),  # the key wins
    ]
    # the blog is dropped, authoritative sources first, unknown authority last
    assert [n.node.node_id for n in post.postprocess_nodes(nodes)] == [
        "wiki",
        "explicit",
        "no-authority",
    ]


async def test_async_postprocess_and_inside_a_real_query_engine() -> None:
    post = TruthLensNodePostprocessor(min_score=0.3, min_length=0)
    index = build_index()
    retrieved = index.as_retriever(similarity_top_k=4).retrieve(QUESTION)
    kept = await post.apostprocess_nodes(retrieved, query_str=QUESTION)
    assert texts(kept) == [VISITOR_DOC]  # the unrelated documents score below 0.3
    assert all(n.score is not None and n.score < 0.3 for n in retrieved if n not in kept)
    engine = index.as_query_engine(
        llm=ScriptedLLM(), similarity_top_k=4, node_postprocessors=[post]
    )
    assert texts(engine.query(QUESTION).source_nodes) == [VISITOR_DOC]


# -- evidence mode --------------------------------------------------------------------------


def test_evidence_demotes_nodes_that_support_nothing() -> None:
    post = TruthLensNodePostprocessor()
    nodes = [nws(VISITOR_DOC, 0.9, "visitor"), nws(HISTORY_DOC, 0.6, "history")]
    answer = "The Eiffel Tower was built from 1887 to 1889."
    out = post.filter_evidence(nodes, answer=answer)
    assert [n.node.node_id for n in out] == ["history", "visitor"]
    assert out[1].score == pytest.approx(0.45) and nodes[0].score == 0.9  # copied, not mutated
    drop = TruthLensNodePostprocessor(evidence_action="drop")
    assert [n.node.node_id for n in drop.filter_evidence(nodes, answer=answer)] == ["history"]


def test_flagged_sentences_support_nothing() -> None:
    post = TruthLensNodePostprocessor(evidence_action="drop")
    nodes = [nws(VISITOR_DOC, 0.9, "visitor"), nws(HISTORY_DOC, 0.6, "history")]
    answer = "The Eiffel Tower was built from 1887 to 1889. It welcomes millions of visitors."
    assert len(post.filter_evidence(nodes, answer=answer)) == 2
    start = answer.index("1887")
    span = HallucinationSpan(start=start, end=start + 4, text="1887", confidence=0.9)
    # with its first sentence flagged, only the visitor sentence can be supported
    kept = post.filter_evidence(nodes, answer=answer, spans=[span])
    assert [n.node.node_id for n in kept] == ["visitor"]
    # nothing left to support: the nodes come back unchanged
    only = HallucinationSpan(start=0, end=4, text="1887", confidence=0.9)
    assert post.filter_evidence(nodes, answer="1887.", spans=[only]) == nodes


def test_evidence_with_the_engines_nli_model() -> None:
    engine = TruthLens.from_config(None, nli=RuleNLI())
    post = TruthLensNodePostprocessor(engine=engine, evidence_method="nli", evidence_action="drop")
    nodes = [nws(VISITOR_DOC, 0.9, "visitor"), nws(HISTORY_DOC, 0.6, "history")]
    out = post.filter_evidence(nodes, answer="Work started in 1887.")
    assert [n.node.node_id for n in out] == ["history"]
    with pytest.raises(ValueError, match="NLI"):
        TruthLensNodePostprocessor(evidence_method="nli").filter_evidence(nodes, answer="Hi there.")


# -- instrumentation ------------------------------------------------------------------------


def test_events_name_what_was_removed(collected: list[BaseEvent]) -> None:
    debug = LlamaDebugHandler()
    post = TruthLensNodePostprocessor(min_length=30, callback_manager=CallbackManager([debug]))
    post.postprocess_nodes([nws(LONG, 0.9, "long"), nws("short", 0.9, "short")])
    events = [e for e in collected if isinstance(e, TruthLensNodeFilterEvent)]
    assert len(events) == 1
    assert events[0].stage == "quality" and events[0].kept == ["long"]
    assert events[0].removed == {"short": "quality"}
    pairs = debug.get_event_pairs(CBEventType.RERANKING)
    assert len(pairs) == 1 and len(pairs[0][1].payload["nodes"]) == 1
