"""Command-line set-up shared by the scripts that work on a trained model folder."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

__all__ = ["folder_args"]


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
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    return args
