"""``guarded_events``: ``astream_events`` with only what the guards let through.

``astream_events`` shows every run of a chain. A pipe-form guard
(``... | TruthLensRunnable(...)``) checks text that runs before it produced: their
events (a model's tokens and ``on_chat_model_end``, the steps passing the answer on)
carry the answer before it is checked, and the guard's own events hold it as their
input. Nothing the guard does can take back an event already sent, so the safe stream
is a filter in front of the caller.

The rule, for any composition: an event of a run that ran before a guard and is not
one of its enclosing runs may carry the text the guard checks, so it is held, and
dropped once that guard starts; it is shown only when the run ends (the stream
ends) without a guard having followed it. A guard is recognised by the tag it puts
on its own run (:data:`~._outputs.GUARD_TAG`), wherever it sits: last step, followed
by more steps and a second guard, inside ``RunnablePassthrough.assign``, a
``RunnableBranch``, a parallel map, ``.with_retry()`` / ``.with_fallbacks()``, or a
function step (``@chain``) that invokes it, sync or async.

The agent middleware and the wrapper form (:func:`guard_chain`) need no filter: they
run the model hidden from the event stream while the policy may change text. The
helper serves all of them, so one call is the safe form everywhere.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

from langchain_core.language_models import BaseLanguageModel
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.prompts import BasePromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import (
    Runnable,
    RunnableBranch,
    RunnableConfig,
    RunnableParallel,
    RunnablePassthrough,
    RunnableSequence,
    RunnableWithFallbacks,
)
from langchain_core.runnables.base import RunnableBindingBase, RunnableEachBase
from langchain_core.runnables.configurable import (
    RunnableConfigurableAlternatives,
    RunnableConfigurableFields,
)
from langchain_core.runnables.passthrough import RunnableAssign, RunnablePick
from langchain_core.runnables.router import RouterRunnable
from langchain_core.runnables.schema import EventData, StreamEvent

from ._outputs import GUARD_TAG
from ._runnable import TruthLensRunnable

__all__ = ["UNCHECKED_TAG", "guarded_events"]

#: Tag of model runs whose output is held back until the answer is checked (the agent
#: middleware's raw model calls, and every run inside them).
UNCHECKED_TAG = "truthlens:unchecked"

#: Steps that run no code of the caller's: they cannot invoke a guard of their own.
_LEAVES = (BaseLanguageModel, BaseRetriever, BasePromptTemplate, BaseOutputParser, RunnablePick)


def _children(runnable: object) -> list[object] | None:
    """The runnables ``runnable`` runs as its own steps.

    ``None`` when it cannot be seen into (a function, a graph, a runnable of unknown
    kind): it may invoke a guard.
    """
    if isinstance(runnable, _LEAVES) or (
        isinstance(runnable, RunnablePassthrough) and runnable.func is None
    ):
        return []
    if isinstance(runnable, RunnableSequence):
        return list(runnable.steps)
    if isinstance(runnable, RunnableParallel):
        return list(runnable.steps__.values())
    if isinstance(runnable, RunnableAssign):
        return [runnable.mapper]
    if isinstance(runnable, RunnableBindingBase | RunnableEachBase):
        return [runnable.bound]
    if isinstance(runnable, RunnableWithFallbacks):
        return [runnable.runnable, *runnable.fallbacks]
    if isinstance(runnable, RunnableBranch):
        return [*(part for pair in runnable.branches for part in pair), runnable.default]
    if isinstance(runnable, RouterRunnable):
        return list(runnable.runnables.values())
    if isinstance(runnable, RunnableConfigurableFields):
        return [runnable.default]
    if isinstance(runnable, RunnableConfigurableAlternatives):
        alternatives = list(runnable.alternatives.values())
        if not all(isinstance(a, Runnable) for a in alternatives):
            return None  # built on demand by a function
        return [runnable.default, *alternatives]
    return None


def _may_hold(runnable: object, seen: set[int] | None = None) -> bool:
    """Whether a guard that may change text can run inside ``runnable``.

    ``True`` for such a guard, and for any step the walk cannot see into (a function
    may invoke a guard); ``False`` only for a composition of known steps whose guards
    all stream as they come (``stream_mode="passthrough"``, or a policy that never
    changes text): then every event may be shown as it comes.
    """
    seen = set() if seen is None else seen
    if id(runnable) in seen:
        return False
    seen.add(id(runnable))
    if isinstance(runnable, TruthLensRunnable):
        # the wrapper form hides its chain only while its policy may change text
        inner = runnable.chain is not None and runnable.stream_mode == "passthrough"
        return runnable.holds or (inner and _may_hold(runnable.chain, seen))
    children = _children(runnable)
    if children is None:
        return True
    return any(_may_hold(child, seen) for child in children)


def _without_input(event: StreamEvent) -> StreamEvent:
    if "input" not in event.get("data", {}):
        return event
    data = dict(event["data"])
    data.pop("input", None)
    shown = event.copy()
    shown["data"] = cast("EventData", data)
    return shown


class _GuardFilter:
    """Shows each event only once no guard can still check the text it carries.

    Runs are numbered as they start. The root's events (the caller's input, the
    composition's output) and the events inside a guard (its checked output, its
    ``truthlens_detection`` event) are shown as they come; a guard and the runs
    enclosing it lose their ``input`` (the unchecked text). Every other event is held:
    when a guard starts, the runs that started before it (but its enclosing runs) fed
    it or ran beside it, so their events are dropped, now and later; what is still held
    when the stream ends was followed by no guard and is shown then, in order. A
    stream that fails shows nothing it held: whether a guard would have followed is
    unknown.
    """

    def __init__(self) -> None:
        self.root: str | None = None
        self.order: dict[str, int] = {}
        self.guards: set[str] = set()
        self.enclosing: set[str] = set()
        self.dropped: set[str] = set()
        self.held: list[StreamEvent] = []

    def _inside_guard(self, event: StreamEvent) -> bool:
        return event["run_id"] in self.guards or bool(self.guards.intersection(event["parent_ids"]))

    def _start_guard(self, event: StreamEvent) -> None:
        run_id, parents = event["run_id"], set(event["parent_ids"])
        self.guards.add(run_id)
        self.enclosing |= parents - {self.root}
        started = self.order[run_id]
        earlier = {
            r for r, n in self.order.items() if n < started and r not in parents and r != self.root
        }
        self.dropped |= earlier - self.guards
        self.held = [e for e in self.held if e["run_id"] not in self.dropped]

    def __call__(self, event: StreamEvent) -> list[StreamEvent]:
        run_id = event["run_id"]
        parents = list(event.get("parent_ids", ()))
        if self.root is None:
            self.root = parents[0] if parents else run_id
        self.order.setdefault(run_id, len(self.order))
        if run_id == self.root:
            return [event]
        inside = self._inside_guard(event)
        if not inside and event["event"] == "on_chain_start" and GUARD_TAG in event["tags"]:
            self._start_guard(event)
            inside = True
        if inside:
            return [_without_input(event) if run_id in self.guards else event]
        if run_id not in self.dropped:
            self.held.append(event)
        return []

    def release(self) -> list[StreamEvent]:
        """What the stream held and no guard followed: shown once it ended."""
        held, self.held = self.held, []
        return [_without_input(e) if e["run_id"] in self.enclosing else e for e in held]


async def guarded_events(
    runnable: Runnable[Any, Any],
    input: Any,  # noqa: A002 - the name astream_events uses
    config: RunnableConfig | None = None,
) -> AsyncIterator[StreamEvent]:
    """``runnable.astream_events(input, version="v2")`` without unchecked text.

    Safe for every guarded shape:

    - an agent with :class:`TruthLensMiddleware`: runs tagged :data:`UNCHECKED_TAG`
      are excluded (the middleware already hides its raw model runs while the policy
      may change text; the tag filter also covers models a custom node calls under
      that tag);
    - a composition holding pipe-form guards (``upstream | TruthLensRunnable(...)``,
      anywhere: followed by more steps and another guard, inside an ``assign``, a
      branch, a parallel map, ``.with_retry()`` / ``.with_fallbacks()``, or a function
      step that invokes it): an event is shown once no guard can still check the
      text it carries. The root's events (the caller's input and the composition's
      output, checked) and each guard's output and ``truthlens_detection`` event come
      as they happen; the runs that fed a guard (tokens, ``on_chat_model_end``,
      intermediate outputs) are dropped when it starts, and a guard and the runs
      enclosing it lose their ``input`` (the unchecked answer); the other runs' events
      come when the stream ends, once no guard followed them. Only a composition of
      steps the helper can see into (no function step, no graph) whose guards never
      change text (``stream_mode="passthrough"``, or a ``header`` / ``none`` policy)
      streams every event as it comes;
    - the wrapper form (:func:`guard_chain`): it hides its inner runs itself.

    A stream that fails shows nothing it held. It takes no ``include_*`` /
    ``exclude_*`` filters: it must see every event to know which runs fed a guard, so
    filter the events it yields instead.

    Args:
        runnable: The guarded chain or agent.
        input: Its input.
        config: Its config.

    Yields:
        The v2 stream events the caller may see.
    """
    keep = _GuardFilter() if _may_hold(runnable) else None
    events = runnable.astream_events(input, config, version="v2", exclude_tags=[UNCHECKED_TAG])
    async for event in events:
        for shown in keep(event) if keep is not None else [event]:
            yield shown
    if keep is not None:
        for shown in keep.release():
            yield shown
