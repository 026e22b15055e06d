"""One detector pass for a batch of guard inputs, each failing alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig

from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.engine import Verdict

from ._inputs import ParsedInput

__all__ = ["finish_batch", "prepare_batch"]


def prepare_batch(
    values: list[Any], parse: Callable[[object], ParsedInput]
) -> tuple[list[ParsedInput | Exception], list[DetectionInput]]:
    """Each value parsed (or its error, in place), and the detector inputs of those that parsed.

    Args:
        values: The batch's inputs.
        parse: Reads one input.

    Returns:
        The parsed inputs or their errors, in order, and one detector input per parsed one.
    """
    parsed: list[ParsedInput | Exception] = []
    items: list[DetectionInput] = []
    for value in values:
        try:
            p = parse(value)
            items.append(
                DetectionInput.create(context=p.context, question=p.question, answer=p.answer)
            )
        except Exception as exc:  # noqa: BLE001 - one bad input fails alone
            parsed.append(exc)
        else:
            parsed.append(p)
    return parsed, items


def finish_batch(
    parsed: list[ParsedInput | Exception],
    verdicts: list[Verdict],
    config: list[RunnableConfig],
    render: Callable[[ParsedInput, Verdict], Any],
) -> tuple[list[Any], list[tuple[RunnableConfig, Verdict]]]:
    """The batch's outputs (errors in place), and the events to dispatch after it.

    Args:
        parsed: What :func:`prepare_batch` returned first.
        verdicts: One verdict per parsed input, in order.
        config: One run config per input.
        render: Builds one output from its input and verdict.

    Returns:
        The outputs, and each verdict with the config of the run it belongs to.
    """
    results = iter(verdicts)
    outputs: list[Any] = []
    events: list[tuple[RunnableConfig, Verdict]] = []
    for p, cfg in zip(parsed, config, strict=True):
        if isinstance(p, Exception):
            outputs.append(p)
            continue
        verdict = next(results)
        events.append((cfg, verdict))
        try:
            outputs.append(render(p, verdict))
        except Exception as exc:  # noqa: BLE001 - a blocked answer fails alone
            outputs.append(exc)
    return outputs, events
