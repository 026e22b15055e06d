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

from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig, RunnableSequence
from langchain_core.runnables.schema import StreamEvent

from ._runnable import TruthLensRunnable, passthrough_problems

__all__ = ["UNCHECKED_TAG", "guarded_events"]

#: Tag of model runs whose output is held back until the answer is checked (the agent
#: middleware's raw model calls, and every run inside them).
UNCHECKED_TAG = "truthlens:unchecked"


def _unbound(runnable: object) -> object:
    while isinstance(runnable, RunnableBinding):
        runnable = runnable.bound
    return runnable


def _holding_guard(runnable: object) -> int | None:
    """The number of steps of a pipe ending in a guard that may change text, if it is one.

    ``None`` when ``runnable`` is not ``upstream | guard`` or its guard streams as it
    comes (``stream_mode="passthrough"`` or a policy that never changes text): then
    the upstream events show nothing the guard would withhold.
    """
    runnable = _unbound(runnable)
    if not isinstance(runnable, RunnableSequence):
        return None
    guard = _unbound(runnable.last)
    if not isinstance(guard, TruthLensRunnable) or guard.chain is not None:
        return None
    if guard.stream_mode == "passthrough" or not passthrough_problems(guard.engine):
        return None
    return len(runnable.steps)


def _step(tags: Sequence[str]) -> int | None:
    """The ``seq:step:N`` a run has in its parent sequence."""
    for tag in tags:
        if tag.startswith("seq:step:"):
            try:
                return int(tag.removeprefix("seq:step:"))
            except ValueError:
                return None
    return None


class _PipeFilter:
    """Drops the upstream steps of ``upstream | guard`` and the guard's own input.

    A run is upstream when it is a direct child of the root with a step number
    before the guard's, or any run below one.
    """

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.root: str | None = None
        self.hidden: set[str] = set()
        self.guard: set[str] = set()

    def __call__(self, event: StreamEvent) -> StreamEvent | None:
        run_id = event["run_id"]
        parents = list(event.get("parent_ids", ()))
        if self.root is None:
            self.root = parents[0] if parents else run_id
        if run_id == self.root:
            return event
        if run_id in self.hidden or self.hidden.intersection(parents):
            return None
        if parents and parents[-1] == self.root and event["event"] != "on_custom_event":
            step = _step(event.get("tags", ()))
            if step is not None and step < self.steps:
                self.hidden.add(run_id)
                return None
            if step == self.steps:
                self.guard.add(run_id)
        if run_id in self.guard and "input" in event.get("data", {}):
            # The guard's input is the answer before the check.
            data = event["data"].copy()
            data.pop("input", None)
            shown = event.copy()
            shown["data"] = data
            return shown
        return event


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
    - a pipe ending in the guard (``upstream | TruthLensRunnable(...)``): while the
      guard's policy may change or withhold text, the upstream steps' events are
      dropped (tokens, ``on_chat_model_end``, intermediate outputs) and the guard's
      ``on_chain_end`` loses its ``input`` (the unchecked answer); the root's events
      and the guard's output and ``truthlens_detection`` event stay. With a policy
      that never changes text (or ``stream_mode="passthrough"``) every event stays;
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
    steps = _holding_guard(runnable)
    keep = _PipeFilter(steps) if steps is not None else None
    events = runnable.astream_events(input, config, version="v2", exclude_tags=[UNCHECKED_TAG])
    async for event in events:
        shown = keep(event) if keep is not None else event
        if shown is not None:
            yield shown
