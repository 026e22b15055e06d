"""Detector settings given on a benchmark's command line (``--config KEY=VALUE,...``)."""

from __future__ import annotations

import argparse


def parse_settings(text: str) -> dict[str, int | float | str]:
    """``"unit_tokens=96,evidence_tokens=160"`` -> ``{"unit_tokens": 96, ...}``.

    Values are read as int, then float, else kept as text; ``load_detector`` rejects an
    unknown key, so a typo fails loudly instead of timing the default.
    """
    out: dict[str, int | float | str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--config wants KEY=VALUE pairs, got {pair!r}")
        value: int | float | str
        try:
            value = int(raw)
        except ValueError:
            try:
                value = float(raw)
            except ValueError:
                value = raw
        out[key.strip()] = value
    return out


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """``--config KEY=VALUE[,KEY=VALUE]``, repeatable: one more detector per use."""
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE[,KEY=VALUE]",
        help="also run the bundled detector with these settings, e.g. "
        "unit_tokens=96,evidence_tokens=160 (repeatable)",
    )
