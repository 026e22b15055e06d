"""The per-item rows a long benchmark resumes from (``benchmarks/_rows.py``)."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _rows_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_rows", ROOT / "benchmarks" / "_rows.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_row_after_a_cut_line_is_kept(tmp_path: Path) -> None:
    rows = _rows_module()
    file = tmp_path / "rows.jsonl"
    rows.append_row(file, {"id": 1})
    with file.open("a") as fh:
        fh.write('{"id": 2, "cut')  # a stop in the middle of a write
    rows.append_row(file, {"id": 3})
    assert [r["id"] for r in rows.read_rows(file)] == [1, 3]


def test_rows_read_back_in_order(tmp_path: Path) -> None:
    rows = _rows_module()
    file = tmp_path / "sub" / "rows.jsonl"
    assert rows.read_rows(file) == []
    for i in range(3):
        rows.append_row(file, {"id": i})
    assert [r["id"] for r in rows.read_rows(file)] == [0, 1, 2]


def test_a_shard_outside_the_shards_is_refused() -> None:
    rows = _rows_module()
    parser = argparse.ArgumentParser()
    rows.add_shard_arguments(parser)
    args = parser.parse_args(["--shard", "0", "--shard", "3", "--shards", "4"])
    rows.check_shard(parser, args)
    assert [n for n in range(8) if rows.in_shard(n, args)] == [0, 3, 4, 7]
    every = parser.parse_args([])
    rows.check_shard(parser, every)
    assert all(rows.in_shard(n, every) for n in range(3))
    for bad in (["--shard", "2", "--shards", "2"], ["--shards", "0"], ["--shard", "-1"]):
        with pytest.raises(SystemExit):
            rows.check_shard(parser, parser.parse_args(bad))
