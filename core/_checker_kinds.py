"""The kinds of claim checker a name can say, and the options each takes (one owner).

The policy's ``claim_check`` block refuses an option that does not apply when the policy
loads; ``load_checker`` builds each kind (``models/claims/_registry.py``). Both read this.
"""

from __future__ import annotations

__all__ = ["CHECKER_OPTIONS", "checker_kind"]

#: Each kind of checker and the options that apply to it.
CHECKER_OPTIONS: dict[str, frozenset[str]] = {
    "bundled": frozenset(),
    "endpoint": frozenset({"protocol", "model", "timeout_s"}),
    "gguf": frozenset({"protocol"}),
    "sequence": frozenset({"supported_label", "trust_remote_code"}),
}


def checker_kind(checker: str) -> str:
    """``bundled``, ``endpoint`` (an http(s) URL), ``gguf`` (a ``.gguf`` file) or ``sequence``.

    ``sequence`` is any other name: a model folder or a hub id.
    """
    if checker == "bundled":
        return "bundled"
    if checker.startswith(("http://", "https://")):
        return "endpoint"
    return "gguf" if checker.lower().endswith(".gguf") else "sequence"
