"""Command-line set-up shared by the scripts that work on a trained model folder."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["emit_json", "folder_args", "parse_logged", "selection_parser", "stats_args"]

BUNDLED_DETECTOR = Path(__file__).resolve().parents[2] / "core" / "_bundled" / "detector"


def folder_args(doc: str | None, argv: Sequence[str] | None, **options: int) -> argparse.Namespace:
    """Parse ``folder [--seed N]`` and the integer ``options``; start INFO logging.

    Args:
        doc: The script's docstring; its first line describes the command.
        argv: The arguments (``None``: the command line).
        **options: Integer options and their defaults (``per_source=60`` is
            ``--per-source``).
    """
    ap = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--seed", type=int, default=13)
    for name, default in options.items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=int, default=default)
    return parse_logged(ap, argv)


def selection_parser(doc: str | None, out_help: str) -> argparse.ArgumentParser:
    """The command line of a selection script: ``--folder`` (the bundled detector) and ``--out``.

    Args:
        doc: The script's docstring; its first paragraph describes the command.
        out_help: What ``--out`` names.
    """
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=BUNDLED_DETECTOR)
    parser.add_argument("--out", type=Path, help=out_help)
    return parser


def parse_logged(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse ``argv`` and start INFO logging with time stamps."""
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    return args


def emit_json(result: dict[str, Any], out: Path | None) -> None:
    """Print ``result`` as indented JSON and, given ``out``, write it there too."""
    text = json.dumps(result, indent=1)
    print(text)
    if out is not None:
        out.write_text(text + "\n")


def stats_args(
    doc: str | None, argv: Sequence[str] | None, stats_help: str, show_help: str
) -> argparse.Namespace:
    """Parse ``[--stats] [--show N]``: a data script's two looks at what it builds."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    parser.add_argument("--stats", action="store_true", help=stats_help)
    parser.add_argument("--show", type=int, default=0, help=show_help)
    return parser.parse_args(argv)
