"""Per-item result rows of a long benchmark: appended as each item finishes, read on resume."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def read_rows(file: Path) -> list[dict[str, Any]]:
    """The rows of ``file`` (none when it does not exist yet).

    A last line cut short by a stopped run is left out, so that item is done again.
    """
    if not file.is_file():
        return []
    rows = []
    for line in file.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def append_row(file: Path, row: dict[str, Any]) -> None:
    """Add one finished item's row.

    One unbuffered append, so a stop cuts at most that line and two shards of a run can
    write to the same file. A line an earlier stop cut short is ended first, so the new row
    is not glued onto it.
    """
    file.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(row) + "\n").encode()
    with file.open("ab", buffering=0) as fh:
        if fh.tell() and not _ends_with_newline(file):
            data = b"\n" + data
        fh.write(data)


def _ends_with_newline(file: Path) -> bool:
    with file.open("rb") as fh:
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


def add_shard_arguments(parser: argparse.ArgumentParser) -> None:
    """``--shard K [--shard L] --shards N``: only items n with n % N in {K, L}, same rows file."""
    parser.add_argument(
        "--shard",
        type=int,
        action="append",
        help="run only items n with n %% SHARDS == SHARD; repeat it to take more than one "
        "(two one-thread shards side by side get more from two cores than one two-thread run)",
    )
    parser.add_argument("--shards", type=int, default=1)


def check_shard(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse a shard outside ``0 .. shards - 1`` (it would run nothing, silently)."""
    if args.shard is None:
        args.shard = list(range(args.shards))
    if args.shards < 1 or not all(0 <= k < args.shards for k in args.shard):
        parser.error("--shard must lie in 0 .. --shards - 1")


def in_shard(n: int, args: argparse.Namespace) -> bool:
    """Whether the item at index ``n`` (from 0) belongs to this run's shards."""
    return n % args.shards in args.shard
