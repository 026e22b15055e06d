"""The one place that decides where models run and in which precision."""

from __future__ import annotations

import functools
import platform
from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import InvalidInputError

if TYPE_CHECKING:
    import torch

__all__ = ["cpu_has_int8_dot_product", "has_vnni_flags", "resolve_device", "resolve_dtype"]

# x86 instructions that multiply int8 vectors without saturating 16-bit sums.
_VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni"})


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """Pick the device: the one asked for, else CUDA, then Apple MPS, then the CPU.

    Args:
        device: ``None`` or ``"auto"`` to choose, or an explicit device such as
            ``"cpu"``, ``"cuda:1"`` or ``"mps"``.

    Returns:
        The device to place models on.

    Raises:
        InvalidInputError: If an explicit device is malformed or not available here.
    """
    import torch

    if device is None or device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        chosen = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InvalidInputError(f"unknown device {device!r}: {exc}") from exc
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise InvalidInputError(f"device {device!r} was requested but CUDA is not available")
    if chosen.type == "mps" and not torch.backends.mps.is_available():
        raise InvalidInputError(f"device {device!r} was requested but MPS is not available")
    return chosen


def resolve_dtype(device: torch.device, dtype: str | torch.dtype | None = None) -> torch.dtype:
    """Pick the inference precision: half precision on accelerators, fp32 on the CPU.

    bf16 is preferred on CUDA devices that support it, since it keeps fp32's range
    and encoder logits do not overflow; fp16 elsewhere on GPUs.
    """
    import torch

    if dtype is not None and dtype != "auto":
        if isinstance(dtype, torch.dtype):
            return dtype
        resolved = getattr(torch, dtype, None)
        if not isinstance(resolved, torch.dtype):
            raise InvalidInputError(f"unknown dtype {dtype!r}")
        return resolved
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


@functools.cache
def cpu_has_int8_dot_product() -> bool:
    """Whether this CPU multiplies int8 vectors with VNNI (x86 AVX-512 VNNI or AVX-VNNI).

    ONNX Runtime's dynamic int8 kernels can saturate intermediate sums on x86 CPUs
    without VNNI, so int8 figures measured on a VNNI CPU do not carry over to them. Read
    from ``/proc/cpuinfo`` (Linux); ``False`` where it cannot be read (other systems,
    other architectures), which keeps the fp32 graph there.
    """
    if platform.machine().lower() not in {"x86_64", "amd64"}:
        return False
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return has_vnni_flags(text)


def has_vnni_flags(cpuinfo: str) -> bool:
    """Whether a ``/proc/cpuinfo`` text lists a VNNI flag on its first processor."""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return bool(_VNNI_FLAGS & set(line.partition(":")[2].split()))
    return False
