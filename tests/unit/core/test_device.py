"""Tests of ``core/_device.py``: device and dtype selection."""

from __future__ import annotations

import pytest
import torch

from truthlens_integrations.core import InvalidInputError
from truthlens_integrations.core._device import resolve_device, resolve_dtype


def test_device_selection() -> None:
    assert resolve_device(None).type == (
        "cuda"
        if torch.cuda.is_available()
        else "mps"
        if torch.backends.mps.is_available()
        else "cpu"
    )
    assert resolve_device("cpu").type == "cpu"
    assert resolve_dtype(torch.device("cpu")) is torch.float32
    assert resolve_dtype(torch.device("cpu"), "bfloat16") is torch.bfloat16
    if not torch.cuda.is_available():
        with pytest.raises(InvalidInputError, match="CUDA is not available"):
            resolve_device("cuda")
    with pytest.raises(InvalidInputError):
        resolve_device("not-a-device")
