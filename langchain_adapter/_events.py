"""``guarded_events``: ``astream_events`` with only what the guard let through.

``astream_events`` shows every run of a chain. In the pipe form
(``upstream | TruthLensRunnable(...)``) the upstream steps run before the guard and
outside it: their events (the model's tokens, its ``on_chat_model_end``, the steps
passing the answer on) carry the answer before it is checked, and the guard's own
``on_chain_end`` holds it as its input. Nothing the guard does can take back an event
already sent, so the safe stream is a filter in front of the caller.

The agent middleware and the wrapper form (:func:`guard_chain`) need no filter: they
run the model hidden from the event stream while the policy may change text. The
helper serves all three, so one call is the safe form everywhere.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

from langchain_core.runnables import (
    Runnable,
    RunnableConfig,
    RunnableParallel,
    RunnableSequence,
    RunnableWithFallbacks,
)
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.schema import EventData, StreamEvent

from ._runnable import TruthLensRunnable, passthrough_problems

__all__ = ["UNCHECKED_TAG", "guarded_events"]

#: Tag of model runs whose output is held back until the answer is checked (the agent
#: middleware's raw model calls, and every run inside them).
UNCHECKED_TAG = "truthlens:unchecked"


def _children(runnable: object) -> list[object]:
    """The runnables ``runnable`` runs as its own steps (pipes, bindings, retries, fallbacks)."""
    if isinstance(runnable, RunnableSequence):
        return list(runnable.steps)
    if isinstance(runnable, RunnableBindingBase):
        return [runnable.bound]
    if isinstance(runnable, RunnableWithFallbacks):
        return [runnable.runnable, *runnable.fallbacks]
    if isinstance(runnable, RunnableParallel):
        return list(runnable.steps__.values())
    return []


def _holding_guards(runnable: object, name: str | None = None) -> set[str]:
    """The run names of the pipe-form guards inside ``runnable`` that may change text.

    Empty when there is none, or every guard streams as it comes
    (``stream_mode="passthrough"`` or a policy that never changes text): then the
    events before the guard show nothing it would withhold. The wrapper form
    (``chain=``) hides its inner runs itself.
    """
    if isinstance(runnable, TruthLensRunnable):
        holds = runnable.chain is None and runnable.stream_mode != "passthrough"
        if holds and passthrough_problems(runnable.engine):
            return {name or runnable.get_name()}
        return set()
    if isinstance(runnable, RunnableBindingBase):
        name = (runnable.config or {}).get("run_name") or name
    found: set[str] = set()
    for child in _children(runnable):
        found |= _holding_guards(child, name if isinstance(runnable, RunnableBindingBase) else None)
    return found


def _without_input(event: StreamEvent) -> StreamEvent:
    if "input" not in event.get("data", {}):
        return event
    data = dict(event["data"])
    data.pop("input", None)
    shown = event.copy()
    shown["data"] = cast("EventData", data)
    return shown


class _GuardFilter:
    """Holds every event back until a guard has checked the answer, then sorts them.

    Which runs came before the guard is only known once the guard starts, wherever it
    sits (last step, followed by a parser, inside ``with_retry`` / ``with_fallbacks``),
    so the stream is held until the first guard run ends. Then the root, the guard,
    the runs inside it and its enclosing runs are shown (those without their
    ``input``, the unchecked answer); every other run seen so far ran before the check
    and is dropped. Events after the check pass (the enclosing runs still lose their
    input). The root's events (the caller's input, the final output) pass as they come.
    A stream that ends before any guard finished shows nothing else: an answer never
    checked is never shown.
    """

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.root: str | None = None
        self.guards: set[str] = set()
        self.enclosing: set[str] = set()
        self.held: list[StreamEvent] | None = []

    def _inside_guard(self, event: StreamEvent) -> bool:
        return event["run_id"] in self.guards or bool(self.guards.intersection(event["parent_ids"]))

    def _shown(self, event: StreamEvent, *, checked: bool) -> StreamEvent | None:
        """``event`` as the caller may see it; ``checked``: it came after the check."""
        run_id = event["run_id"]
        if run_id == self.root:
            return event
        if run_id in self.guards or run_id in self.enclosing:
            return _without_input(event)
        if checked or self._inside_guard(event):
            return event
        return None

    def __call__(self, event: StreamEvent) -> list[StreamEvent]:
        parents = list(event.get("parent_ids", ()))
        if self.root is None:
            self.root = parents[0] if parents else event["run_id"]
        if (
            event["event"] == "on_chain_start"
            and event["name"] in self.names
            and not self._inside_guard(event)
        ):
            self.guards.add(event["run_id"])
            self.enclosing.update(p for p in parents if p != self.root)
        if self.held is None or event["run_id"] == self.root:
            now = self._shown(event, checked=True)
            return [now] if now is not None else []
        self.held.append(event)
        if not (event["event"] == "on_chain_end" and event["run_id"] in self.guards):
            return []
        held, self.held = self.held, None  # the answer is checked: sort what was held
        shown = (self._shown(e, checked=False) for e in held)
        return [e for e in shown if e is not None]

    def close(self) -> None:
        """Drop what a stream that never finished a guard held: it was never checked."""
        self.held = None


async def guarded_events(
    runnable: Runnable[Any, Any],
    input: Any,  # noqa: A002 - the name astream_events uses
    config: RunnableConfig | None = None,
) -> AsyncIterator[StreamEvent]:
    """``runnable.astream_events(input, version="v2")`` without unchecked text.

    Safe for the three guarded shapes:

    - an agent with :class:`TruthLensMiddleware`: runs tagged :data:`UNCHECKED_TAG`
      are excluded (the middleware already hides its raw model runs while the policy
      may change text; the tag filter also covers models a custom node calls under
      that tag);
    - a pipe holding the guard (``upstream | TruthLensRunnable(...)``, followed by
      more steps, or wrapped in ``.with_retry()`` / ``.with_fallbacks()``): while the
      guard's policy may change or withhold text, the events are held until the guard
      has checked the answer; then the steps that ran before it are dropped (tokens,
      ``on_chat_model_end``, intermediate outputs), the guard and the runs enclosing
      it lose their ``input`` (the unchecked answer), and the root's events, the
      guard's output, its ``truthlens_detection`` event and every later step stay.
      With a policy that never changes text (or ``stream_mode="passthrough"``) every
      event stays as it comes;
    - the wrapper form (:func:`guard_chain`): it hides its inner runs itself.

    It takes no ``include_*`` / ``exclude_*`` filters: it must see every event to know
    which run is upstream of the guard, so filter the events it yields instead.

    Args:
        runnable: The guarded chain or agent.
        input: Its input.
        config: Its config.

    Yields:
        The v2 stream events the caller may see.
    """
    names = _holding_guards(runnable)
    keep = _GuardFilter(names) if names else None
    events = runnable.astream_events(input, config, version="v2", exclude_tags=[UNCHECKED_TAG])
    async for event in events:
        for shown in keep(event) if keep is not None else [event]:
            yield shown
    if keep is not None:
        keep.close()
