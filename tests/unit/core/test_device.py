"""Tests of ``core/_device.py``: device and dtype selection."""

from __future__ import annotations

import pytest
import torch

from truthlens_integrations.core import InvalidInputError
from truthlens_integrations.core._device import has_vnni_flags, resolve_device, resolve_dtype


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


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ("fpu sse2 avx2 avx512f avx512_vnni", True),  # Ice Lake, Zen 4
        ("fpu sse2 avx2 avx_vnni", True),  # Alder Lake
        ("fpu sse2 avx2 avx512f avx512vl", False),  # Skylake-SP: int8 may saturate
        ("fpu sse2 avx2", False),
    ],
)
def test_int8_runs_by_default_only_on_cpus_with_vnni(flags: str, expected: bool) -> None:
    cpuinfo = f"processor\t: 0\nmodel name\t: x\nflags\t\t: {flags}\n\nprocessor\t: 1\n"
    assert has_vnni_flags(cpuinfo) is expected
    assert has_vnni_flags("processor\t: 0\n") is False  # no flags line: not known, fp32
