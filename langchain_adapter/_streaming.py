"""Streaming under a guard: when tokens may pass before the check, and hiding inner runs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal, cast

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import patch_config
from langchain_core.runnables.utils import AddableDict

from truthlens_integrations.core import ConfigError
from truthlens_integrations.core.engine import TruthLens

__all__ = [
    "StreamMode",
    "amerged",
    "check_passthrough",
    "hide_streaming",
    "merge",
    "passthrough_problems",
]

StreamMode = Literal["verified", "passthrough"]

_TEXT_CHANGING: frozenset[str] = frozenset({"body", "block"})


def passthrough_problems(engine: TruthLens) -> list[str]:
    """Why the policy cannot stream tokens before detection (empty when it can).

    Pass-through streaming shows the answer before the verdict exists, so nothing may
    change its text afterwards: only ``header`` / ``none`` actions, no disclaimer and
    no refinement mode.
    """
    policy = engine.policy
    scopes: list[tuple[str, str | None]] = [("global settings", None)]
    scopes += [(f"decision {d.name!r}", d.name) for d in policy.decisions]
    problems: list[str] = []
    for label, name in scopes:
        s = policy.settings_for(name)
        if not s.enabled:
            continue
        if s.hallucination_action in _TEXT_CHANGING:
            problems.append(f"{label}: hallucination_action={s.hallucination_action}")
        if s.unverified_factual_action in _TEXT_CHANGING:
            problems.append(f"{label}: unverified_factual_action={s.unverified_factual_action}")
        if s.require_disclaimer:
            problems.append(f"{label}: require_disclaimer")
        if s.mode != "lightweight":
            problems.append(f"{label}: mode={s.mode}")
    return problems


def check_passthrough(problems: list[str]) -> None:
    """Raise :class:`ConfigError` for pass-through streaming under ``problems``.

    Args:
        problems: What :func:`passthrough_problems` found.
    """
    if problems:
        raise ConfigError(
            "stream_mode='passthrough' streams the answer before it is checked, so the "
            "policy must not change or withhold text; found: " + "; ".join(problems)
        )


def _streams_events(handler: object) -> bool:
    """Whether ``handler`` feeds ``astream_events`` / ``astream_log``.

    Those handlers tap the output of every run (``tap_output_iter`` and
    ``tap_output_aiter``); langchain-core names their common base only in a private
    module, so they are recognised by these two public methods instead.
    """
    return callable(getattr(handler, "tap_output_iter", None)) and callable(
        getattr(handler, "tap_output_aiter", None)
    )


def hide_streaming(config: RunnableConfig) -> RunnableConfig:
    """``config`` without the handlers that stream events to the caller.

    ``astream_events`` / ``astream_log`` attach a streaming handler that every child
    run inherits; a chat model that sees one streams its tokens as
    ``on_chat_model_stream`` events. Runs under the returned config stay invisible
    to those streams (tracers and other callbacks still see them).
    """
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        for handler in [*manager.handlers, *manager.inheritable_handlers]:
            if _streams_events(handler):
                manager.remove_handler(handler)
        return patch_config(config, callbacks=manager)
    if isinstance(callbacks, list):
        kept = [h for h in callbacks if not _streams_events(h)]
        return cast("RunnableConfig", {**config, "callbacks": kept})
    return config


def merge(acc: Any, chunk: Any) -> Any:
    """Add a stream chunk to what came before, the way LCEL aggregates streams.

    Strings and message chunks concatenate and dicts merge key by key; message lists
    (agent states) replace each other, as each one is complete.
    """
    if acc is None:
        if isinstance(chunk, Mapping) and not isinstance(chunk, AddableDict):
            return AddableDict(chunk)
        return chunk
    if isinstance(chunk, list):
        return chunk
    try:
        return acc + chunk
    except TypeError:
        return chunk


async def amerged(chunks: AsyncIterator[Any]) -> Any:
    """The chunks of an async stream added up (see :func:`merge`)."""
    value = None
    async for chunk in chunks:
        value = merge(value, chunk)
    return value
