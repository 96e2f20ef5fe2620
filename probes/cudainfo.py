"""Facts about the CUDA stack that need no GPU to compute: pure helpers for the GPU probes.

Driver version through libcuda (no context is created), architecture compatibility of a torch
build with a compute capability, the allocator configuration, and the parsing of process
listings. Kept apart from the probes so they can be tested on any machine.
"""

from __future__ import annotations

import ctypes
import os
import re
from typing import Any

#: Our own CUDA context's footprint when nvidia-smi cannot tell us (about 0.3-0.6 GiB on
#: Ampere/Hopper with lazy module loading); subtracted before blaming other processes.
OWN_CONTEXT_GIB = 0.6


def driver_cuda_version() -> tuple[int, int] | None:
    """The CUDA version the installed driver supports, e.g. (12, 4); None without a driver."""
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            libcuda = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int()
        # cuDriverGetVersion needs no cuInit, so this creates no context and touches no GPU.
        if libcuda.cuDriverGetVersion(ctypes.byref(version)) == 0:
            return version.value // 1000, (version.value % 1000) // 10
    return None


def parse_version(text: str | None) -> tuple[int, int] | None:
    """``"12.4"`` -> (12, 4); None for None or anything else."""
    match = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(match[1]), int(match[2])) if match else None


def driver_supports(driver: tuple[int, int], runtime: tuple[int, int]) -> bool:
    """Whether a driver runs a runtime: same major is enough (CUDA minor-version compatibility)."""
    # A 12.x driver runs any 12.y runtime (its minimum driver is the major's first release).
    return driver[0] >= runtime[0]


def _arch(entry: str) -> tuple[str, int, int, str] | None:
    """``"sm_90a"`` -> ("sm", 9, 0, "a"); ``"compute_120"`` -> ("compute", 12, 0, "")."""
    match = re.fullmatch(r"(sm|compute)_(\d+)(\d)([a-z]?)", entry)
    if not match:
        return None
    return match[1], int(match[2]), int(match[3]), match[4]


def kernel_source(capability: tuple[int, int], arch_list: list[str]) -> str | None:
    """The entry of torch's arch list that can run on ``capability``, or None ("no kernel image").

    A cubin (``sm_XY``) runs on the same major at an equal or higher minor; an arch-specific one
    (``sm_90a``) only on exactly that capability; PTX (``compute_XY``) is JIT-compiled for any
    capability at or above it.
    """
    major, minor = capability
    for entry in arch_list:
        parsed = _arch(entry)
        if parsed is None:
            continue
        kind, a_major, a_minor, suffix = parsed
        if kind == "sm" and suffix and (a_major, a_minor) == capability:
            return entry
        if kind == "sm" and not suffix and a_major == major and a_minor <= minor:
            return entry
    for entry in arch_list:
        parsed = _arch(entry)
        if parsed and parsed[0] == "compute" and (parsed[1], parsed[2]) <= capability:
            return entry
    return None


def alloc_conf() -> dict[str, Any]:
    """The caching allocator's settings from the environment, and whether segments expand."""
    raw = os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or os.environ.get("PYTORCH_ALLOC_CONF") or ""
    options = dict(item.split(":", 1) for item in re.split(r"[,\s]+", raw.strip()) if ":" in item)
    expandable = options.get("expandable_segments", "").strip().lower() == "true"
    return {"PYTORCH_CUDA_ALLOC_CONF": raw or None, "expandable_segments": expandable}


def parse_gpu_processes(text: str) -> list[dict[str, Any]]:
    """``torch.cuda.list_gpu_processes()`` output -> [{"pid": int, "used_mib": float}, ...]."""
    return [
        {"pid": int(pid), "used_mib": float(mib)}
        for pid, mib in re.findall(r"process\s+(\d+)\s+uses\s+([\d.]+)\s*MB", text)
    ]


def normalise_uuid(uuid: Any) -> str:
    """A GPU UUID as nvidia-smi and torch both can be compared: lower case, no ``GPU-``."""
    text = str(uuid).strip().lower()
    return text[4:] if text.startswith("gpu-") else text
