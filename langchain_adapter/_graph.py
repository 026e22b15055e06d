"""LangGraph: a guard node and a router that sends an answer where its verdict says.

For graphs users write themselves (self-RAG / CRAG style)::

    guard = TruthLensGraphGuard(engine, max_attempts=3)
    graph.add_node("guard", guard.node)
    guard.add_routes(graph, {            # add_conditional_edges, every route mapped
        "supported": END,            # the answer holds up
        "neutral": "rewrite_query",  # the context lacks the evidence: retrieve again
        "contradiction": "generate", # the context says otherwise: regenerate
        "unverified": "rewrite_query",  # nothing was checked: find grounding (or END)
        "exhausted": END,            # out of attempts: the policy's action applied
    })

:meth:`TruthLensGraphGuard.add_routes` refuses, when the graph is built, a map that
leaves a route out (LangGraph would fail with a ``KeyError`` only when a run takes that
route, e.g. on the first empty retrieval).

The route follows the NLI labels of the flagged spans: a contradiction means the
retrieved context holds the right fact and the generator got it wrong (regenerate,
naming the spans: ``state["truthlens_feedback"]``); a neutral span means the context
does not cover the claim (rewrite the query: :func:`rewrite_query`). An answer that
was not checked at all (no documents, detection disabled on the route, a prompt the
policy skips, input the detector cannot read) goes ``unverified``: never
``supported``, and the policy's action for unverified answers is already applied to
it, so the route may end the graph or look for grounding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Unpack

from langchain_core.callbacks import adispatch_custom_event, dispatch_custom_event
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.config import ensure_config
from typing_extensions import TypedDict  # LangGraph's state classes use this one

from truthlens_integrations.core import ConfigError
from truthlens_integrations.core._adapter_api import (
    EngineBlocking,
    arun_guard,
    engine_from,
    fallback_query,
    run_guard,
    split_options,
)
from truthlens_integrations.core.engine import GuardKwargs, TruthLens, Verdict

from ._arguments import check_int
from ._inputs import ParsedInput, parse_input
from ._outputs import TRUTHLENS_EVENT, with_verdict

__all__ = [
    "GRAPH_ROUTES",
    "GraphRoute",
    "TruthLensGraphGuard",
    "TruthLensGraphState",
    "regeneration_feedback",
    "rewrite_query",
    "route_label",
]

GraphRoute = Literal["supported", "neutral", "contradiction", "unverified", "exhausted"]

#: Every route the guard node can choose, in the order the docs list them.
GRAPH_ROUTES: tuple[GraphRoute, ...] = (
    "supported",
    "neutral",
    "contradiction",
    "unverified",
    "exhausted",
)

#: The routes on which the node applies the policy's action to the answer: the ones a
#: graph may end on. ``unverified`` is one of them, as an unchecked answer may end the
#: graph and must then carry the action for unverified answers (warning or block).
_FINAL_ROUTES = frozenset({"supported", "unverified", "exhausted"})


class TruthLensGraphState(TypedDict, total=False):
    """The keys the guard node writes: subclass it for your graph's state.

    LangGraph keeps only the keys the state schema declares, so the graph's state
    must inherit these (a ``TypedDict`` inherits from another)::

        class State(TruthLensGraphState):
            question: str
            documents: list[str]
            answer: str

        graph = StateGraph(State)

    Attributes:
        truthlens: The verdict of the last check, as :meth:`Verdict.to_dict`
            (``Verdict.model_validate`` reads it back; :func:`route_label`,
            :func:`rewrite_query` and :func:`regeneration_feedback` take it as it
            is). When the route ends the graph (``supported``, ``unverified``,
            ``exhausted``) a blocked answer's text is withheld from it; on the
            ``neutral`` and ``contradiction`` routes, which loop back into the graph,
            it is the full verdict, so that the next node can name the flagged parts.
        truthlens_route: Where the router sends the graph next (one of
            :data:`GRAPH_ROUTES`).
        truthlens_attempts: Checks made so far in this run.
        truthlens_feedback: For regeneration: the flagged spans and the evidence
            (``None`` on other routes).
    """

    truthlens: dict[str, Any]
    truthlens_route: GraphRoute
    truthlens_attempts: int
    truthlens_feedback: str | None


def _verdict(value: Verdict | Mapping[str, Any]) -> Verdict:
    """A verdict, from itself or from its :meth:`Verdict.to_dict` (the graph state's)."""
    return value if isinstance(value, Verdict) else Verdict.model_validate(value)


def route_label(
    verdict: Verdict | Mapping[str, Any],
) -> Literal["supported", "neutral", "contradiction", "unverified"]:
    """The route a verdict asks for, by the NLI labels of its spans.

    Args:
        verdict: A guard verdict (or its ``to_dict()``, as the graph state holds it).

    Returns:
        ``"unverified"`` when the answer was not checked (``verdict.checked`` is
        false: no grounding, detection disabled on the route, a prompt the policy
        skips, unreadable input); ``"supported"`` only when it was checked against
        grounding and nothing was flagged; ``"contradiction"`` when a span
        contradicts the context, or spans carry no NLI label (the context is there,
        the answer disagrees with it); ``"neutral"`` when the flagged spans are only
        claims the context does not cover, or the answer is flagged as a whole with
        no span (the evidence for it may be missing).
    """
    verdict = _verdict(verdict)
    # ``context_missing`` too: an answer with no grounding was never held against any.
    if not verdict.checked or verdict.unverified or verdict.context_missing:
        return "unverified"
    if not verdict.detected:
        return "supported"
    labels = {s.nli_label for s in verdict.spans}
    if "contradiction" in labels or not labels <= {"neutral"}:
        return "contradiction"
    return "neutral"


def regeneration_feedback(
    verdict: Verdict | Mapping[str, Any], context: Sequence[str], *, limit: int = 2000
) -> str:
    """A message for the generator naming the flagged spans and the evidence.

    Args:
        verdict: The verdict of the rejected answer (or its ``to_dict()``).
        context: The passages the answer was checked against.
        limit: Characters of evidence at most.

    Returns:
        Plain text to add to the generation prompt.
    """
    verdict = _verdict(verdict)
    if verdict.spans:
        lines = ["A fact check of your previous answer flagged these parts:"]
    else:  # a calibrated score can flag an answer as a whole
        lines = ["A fact check found your previous answer as a whole likely not supported "
                 "by the sources; no single part stands out."]  # fmt: skip
    for span in verdict.spans:
        label = span.nli_label or "unsupported"
        lines.append(f'- "{span.text}" ({label} by the sources)')
    evidence = "\n".join(f"- {p}" for p in context)
    if len(evidence) > limit:
        evidence = evidence[:limit].rstrip() + " ..."
    lines += ["The sources say:", evidence or "- (no sources)"]
    lines.append("Answer again using only facts stated in the sources.")
    return "\n".join(lines)


def rewrite_query(question: str, verdict: Verdict | Mapping[str, Any]) -> str:
    """A search query for the claims the context did not cover (no model needed).

    Args:
        question: The question or the last query.
        verdict: The verdict whose neutral spans should be looked up (or its
            ``to_dict()``, as ``state["truthlens"]`` holds it).

    Returns:
        The question followed by the unsupported claims.
    """
    neutral = [s for s in _verdict(verdict).spans if s.nli_label != "contradiction"]
    return fallback_query(question, neutral)


#: The guard's own argument names (for did-you-mean suggestions).
_KNOWN = (
    "engine",
    "max_attempts",
    "answer_key",
    "context_key",
    "question_key",
)


class TruthLensGraphGuard(EngineBlocking):
    """A LangGraph guard node and its router (see the module docstring).

    The node reads the answer, the context and the question from the state (keys
    ``answer_key`` / ``context_key`` / ``question_key``; or an agent-style
    ``messages`` list, where tool results are the context), checks the answer and
    writes :class:`TruthLensGraphState`'s keys (subclass it for the graph's state).
    On the routes a graph may end on (``supported``, ``unverified`` and
    ``exhausted``) it also applies the policy's action to the answer: the warning for
    ``body``, ``blocked_message`` for ``block`` (for an unchecked answer: the route's
    ``unverified_factual_action``); an answer message gets the verdict in
    ``response_metadata["truthlens"]``, as everywhere.
    Map every route of :data:`GRAPH_ROUTES`: :meth:`add_routes` adds the conditional
    edges and refuses a map that leaves one out.

    Args:
        engine: The guard engine; ``None`` uses the default policy. With policy knobs
            or engine options it is copied with them applied (loaded models shared).
        max_attempts: Checks per run before the router gives up (``exhausted``).
        answer_key: State key of the answer (a string or an ``AIMessage``).
        context_key: State key of the retrieved documents (``Document``s or strings).
        question_key: State key of the question.
        **options: The policy knobs, on every route: ``mode`` (``lightweight``,
            ``standard`` or ``premium``; the node itself does not refine: the graph
            regenerates), ``threshold`` (response score at or above which an answer
            is flagged), ``action`` (``header``, ``body``, ``block`` or ``none``,
            applied at the end); and engine options (``on_block``: ``"message"``, the
            default, replaces a blocked answer with ``blocked_message``, ``"raise"``
            raises ``BlockedResponseError``; ``detector``, ``redact``, ...). Both are
            defined once, in ``core/engine/_options.py``, and typed by
            :class:`~truthlens_integrations.core.engine.GuardKwargs`; left out, they
            keep the engine's.

    Raises:
        UnknownArgumentError: For an unknown keyword argument (with a suggestion).
        InvalidArgumentError: For an option of the wrong type.
        ConfigError: For ``max_attempts < 1`` or a bad ``on_block``.
    """

    def __init__(
        self,
        engine: TruthLens | None = None,
        *,
        max_attempts: int = 3,
        answer_key: str = "answer",
        context_key: str = "documents",
        question_key: str = "question",
        **options: Unpack[GuardKwargs],
    ) -> None:
        where = "TruthLensGraphGuard"
        split = split_options(options, own=_KNOWN, where=where)
        check_int("max_attempts", max_attempts, where)
        if max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {max_attempts}")
        self.engine = engine_from(engine, None, split, where)
        self.max_attempts = max_attempts
        self.answer_key = answer_key
        self.context_key = context_key
        self.question_key = question_key
        self.node: RunnableLambda[Mapping[str, Any], dict[str, Any]] = RunnableLambda(
            self._check, afunc=self._acheck, name="truthlens_guard"
        )

    def route(self, state: Mapping[str, Any]) -> GraphRoute:
        """The router: the route the guard node chose (for ``add_conditional_edges``).

        Raises:
            ConfigError: If the guard node has not run on this state.
        """
        route = state.get("truthlens_route")
        if route not in GRAPH_ROUTES:
            raise ConfigError(
                "the state holds no truthlens_route: route from the guard node, and add "
                "TruthLensGraphState's keys to the graph's state schema"
            )
        return route  # type: ignore[no-any-return]

    def add_routes(self, graph: Any, path_map: Mapping[str, Any], *, source: str = "guard") -> None:
        """Add the guard's conditional edges to ``graph``, every route mapped.

        ``graph.add_conditional_edges(source, self.route, path_map)``, after checking
        that ``path_map`` maps each of :data:`GRAPH_ROUTES` and nothing else: a route
        left out would fail only when a run takes it (an empty retrieval goes
        ``unverified``), with LangGraph's bare ``KeyError``.

        Args:
            graph: The ``StateGraph`` being built.
            path_map: Where each route goes: a node name or ``END``.
            source: The name the guard node was added under.

        Raises:
            ConfigError: If ``path_map`` leaves a route out or names an unknown one.
        """
        _check_path_map(path_map)
        graph.add_conditional_edges(source, self.route, dict(path_map))

    # -- the node -------------------------------------------------------------------

    def _parse(self, state: Mapping[str, Any]) -> ParsedInput:
        return parse_input(
            state,
            answer_key=self.answer_key,
            context_key=self.context_key,
            question_key=self.question_key,
        )

    def _check(self, state: Mapping[str, Any]) -> dict[str, Any]:
        parsed = self._parse(state)
        verdict = run_guard(self.engine, parsed.call())
        if _in_run():
            dispatch_custom_event(TRUTHLENS_EVENT, verdict.to_dict())
        return self._update(state, parsed, verdict)

    async def _acheck(self, state: Mapping[str, Any]) -> dict[str, Any]:
        parsed = self._parse(state)
        verdict = await arun_guard(self.engine, parsed.call())
        if _in_run():
            await adispatch_custom_event(TRUTHLENS_EVENT, verdict.to_dict())
        return self._update(state, parsed, verdict)

    def _update(
        self, state: Mapping[str, Any], parsed: ParsedInput, verdict: Verdict
    ) -> dict[str, Any]:
        attempts = int(state.get("truthlens_attempts") or 0) + 1
        label = route_label(verdict)
        route: GraphRoute = label
        if label != "supported" and attempts >= self.max_attempts:
            route = "exhausted"
        ends = route in _FINAL_ROUTES
        update: dict[str, Any] = {
            # A looping route feeds the next node (rewrite, regenerate): full verdict.
            "truthlens": (verdict if ends else verdict.full()).to_dict(),
            "truthlens_route": route,
            "truthlens_attempts": attempts,
            "truthlens_feedback": regeneration_feedback(verdict, parsed.context)
            if route == "contradiction"
            else None,
        }
        if ends:
            update.update(self._shown(parsed, verdict))
        return update

    def _shown(self, parsed: ParsedInput, verdict: Verdict) -> dict[str, Any]:
        """The state update carrying the answer as the policy's action leaves it."""
        text = self.engine.shown(verdict)
        if parsed.kind == "state":
            message = parsed.value["messages"][parsed.answer_index]
            assert isinstance(message, BaseMessage)
            return {"messages": [with_verdict(message, text, verdict)]}
        value = parsed.value[self.answer_key]
        if isinstance(value, BaseMessage):
            return {self.answer_key: with_verdict(value, text, verdict)}
        if text == parsed.answer:
            return {}
        return {self.answer_key: text}


def _check_path_map(path_map: Mapping[str, Any]) -> None:
    """Check that a conditional-edge map sends every route of the guard somewhere.

    Raises:
        ConfigError: Naming the routes left out and any key that is not a route.
    """
    if not isinstance(path_map, Mapping):
        raise ConfigError(
            f"the guard's path map is a dict from route to node, got {type(path_map).__name__}"
        )
    missing = [route for route in GRAPH_ROUTES if route not in path_map]
    unknown = sorted(str(key) for key in path_map if key not in GRAPH_ROUTES)
    if missing or unknown:
        problems = []
        if missing:
            problems.append(f"no edge for {', '.join(missing)}")
        if unknown:
            problems.append(f"unknown route(s) {', '.join(unknown)}")
        raise ConfigError(
            f"the guard's path map: {'; '.join(problems)}. Map every route of "
            f"GRAPH_ROUTES ({', '.join(GRAPH_ROUTES)}): an unchecked answer (e.g. an "
            "empty retrieval) routes 'unverified'; END is a valid target"
        )


def _in_run() -> bool:
    """Whether the node runs inside a traced run (custom events need a parent run)."""
    return ensure_config().get("callbacks") is not None
