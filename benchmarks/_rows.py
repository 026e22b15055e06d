"""Per-item result rows of a long benchmark: appended as each item finishes, read on resume."""

from __future__ import annotations

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
    """Add one finished item's row (one write, so a stop cuts at most that line)."""
    file.parent.mkdir(parents=True, exist_ok=True)
    with file.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")
