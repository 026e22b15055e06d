"""Tests of ``lab/training/train_nli.py``: the packed pairs a lent GPU trains from."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.training import train_nli


def test_packed_pairs_come_back_as_written(tmp_path: Path) -> None:
    # token ids above 32767 survive the uint16 packing; empty sets stay empty
    sets = (
        [{"input_ids": [101, 30521, 102], "label": 2}, {"input_ids": [101, 7, 102], "label": 0}],
        [{"input_ids": [101, 40000 - 9479, 102, 5], "label": 1}],
        [],
        [{"input_ids": [101], "label": 0}],
    )
    file = tmp_path / "pairs.pt.gz"
    train_nli._write_pack(file, sets)
    assert train_nli._read_pack(file) == sets


def test_an_encoder_whose_ids_do_not_fit_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="uint16"):
        train_nli._write_pack(
            tmp_path / "x.pt.gz", ([{"input_ids": [70000], "label": 0}], [], [], [])
        )
