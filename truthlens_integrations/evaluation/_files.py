"""What the benchmark readers share: JSON Lines files, RAGTruth's passages and prompt.

Apart from the readers (``_readers``, ``_rag_readers``) so that each imports it and neither
imports the other's internals.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..core import ConfigError, InvalidInputError

__all__: list[str] = []

_PASSAGE_MARK = re.compile(r"passage \d+:")
_RAGTRUTH_DATA2TXT_INSTRUCTION = (
    "Write an objective overview about the following local business based only on the "
    "provided structured data in the JSON format. You should include details and cover the "
    "information mentioned in the customers' review. The overview should be 100 - 200 words. "
    "Don't make up information."
)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ConfigError(f"data file not found: {path}")
    rows: list[dict[str, Any]] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInputError(
                    f"{path}:{number} is not UTF-8 text (byte {exc.start + 1} of the line); "
                    "save the file as UTF-8"
                ) from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{path}:{number} is not valid JSON: {exc}") from None
            except ValueError:  # Python refuses integers of more than 4,300 digits
                raise InvalidInputError(
                    f"{path}:{number} holds a number too long to read (more than 4,300 "
                    "digits); write long ids as strings"
                ) from None
            if not isinstance(row, dict):
                raise InvalidInputError(f"{path}:{number} is not a JSON object")
            rows.append(row)
    return rows


def _split_passages(passages: str) -> list[str]:
    # RAGTruth QA keeps its passages as one string: "passage 1:...\n\npassage 2:...".
    parts = [p.strip() for p in _PASSAGE_MARK.split(passages)]
    return [p for p in parts if p]
