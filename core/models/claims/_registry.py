"""``load_checker``: a claim checker from the name a policy gives it, through one table.

Each kind of checker is one row: how it is built, whether it runs a model here, and the
options that apply to it. A new backend is one module and one row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..._checker_kinds import CHECKER_OPTIONS, checker_kind
from ..._errors import InvalidArgumentError
from ._contract import ClaimChecker

__all__ = ["CHECKER_KINDS", "CheckerKind", "load_checker"]


def _bundled(name: str, options: Mapping[str, Any]) -> ClaimChecker:
    from ._nli_checker import NLIChecker

    del name, options  # the bundled branch takes none
    return NLIChecker()


def _endpoint(name: str, options: Mapping[str, Any]) -> ClaimChecker:
    from ._endpoint import EndpointChecker

    return EndpointChecker(
        name,
        model=options.get("model"),
        protocol=options.get("protocol") or "minicheck",
        timeout=options.get("timeout_s"),
    )


def _gguf(name: str, options: Mapping[str, Any]) -> ClaimChecker:
    from ...llm import LlamaCppLLM
    from ._endpoint import EndpointChecker

    # The whole context as one document (up to 40 sentences): every claim of an answer
    # then shares its evaluated prefix in llama.cpp.
    return EndpointChecker(
        llm=LlamaCppLLM(name),
        protocol=options.get("protocol") or "minicheck",
        name=f"gguf:{Path(name).name}",
        evidence_sentences=40,
    )


def _sequence(name: str, options: Mapping[str, Any]) -> ClaimChecker:
    from ._sequence_checker import SequenceClassifierChecker

    return SequenceClassifierChecker(
        name,
        supported_label=options.get("supported_label"),
        trust_remote_code=bool(options.get("trust_remote_code", False)),
    )


@dataclass(frozen=True)
class CheckerKind:
    """One kind of claim checker.

    Attributes:
        build: Builds it from its name and options.
        runs_model: Whether it runs a model in this process (else it calls a server).
        options: The options that apply to it; any other given is refused.
    """

    build: Callable[[str, Mapping[str, Any]], ClaimChecker]
    runs_model: bool
    options: frozenset[str]


#: Every kind of claim checker, by the kind :func:`checker_kind` reads from its name.
CHECKER_KINDS: dict[str, CheckerKind] = {
    "bundled": CheckerKind(_bundled, runs_model=True, options=CHECKER_OPTIONS["bundled"]),
    "endpoint": CheckerKind(_endpoint, runs_model=False, options=CHECKER_OPTIONS["endpoint"]),
    "gguf": CheckerKind(_gguf, runs_model=True, options=CHECKER_OPTIONS["gguf"]),
    "sequence": CheckerKind(_sequence, runs_model=True, options=CHECKER_OPTIONS["sequence"]),
}


def load_checker(
    checker: str,
    *,
    protocol: Literal["minicheck", "json"] | None = None,
    model: str | None = None,
    supported_label: int | str | None = None,
    trust_remote_code: bool = False,
    timeout_s: float | None = None,
) -> ClaimChecker:
    """The claim checker ``checker`` names.

    Args:
        checker: ``"bundled"`` (the bundled entailment branch), the URL of an
            OpenAI-compatible server (``http://...``), or a model folder or hub id (a
            sequence classifier).
        protocol: A server's protocol (``minicheck`` or ``json``; default ``minicheck``).
        model: The model a server is asked for.
        supported_label: The supported class of a sequence classifier whose labels do
            not name it.
        trust_remote_code: Run a sequence classifier's own code.
        timeout_s: Seconds one server call may take (default 30).

    Returns:
        The checker.

    Raises:
        InvalidArgumentError: For an option that does not apply to this kind of checker.
        ModelNotAvailableError: If a folder or hub model cannot be found.
        ModelLoadError: If a model's labels cannot be read as supported / not.
    """
    given = {
        "protocol": protocol,
        "model": model,
        "supported_label": supported_label,
        "trust_remote_code": trust_remote_code or None,
        "timeout_s": timeout_s,
    }
    given = {name: value for name, value in given.items() if value is not None}
    kind = CHECKER_KINDS[checker_kind(checker)]
    misplaced = sorted(set(given) - kind.options)
    if misplaced:
        raise InvalidArgumentError(
            f"load_checker: {', '.join(misplaced)} does not apply to checker {checker!r}"
        )
    return kind.build(checker, given)
