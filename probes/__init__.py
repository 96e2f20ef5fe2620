"""Probes: named live checks that confirm or refute a diagnosis on the machine at hand.

Rules reference probes by name (``probe: cuda_memory``). :func:`run_probe` runs one in a child
process with a hard time limit and returns a :class:`ProbeResult`; it never raises for the
probe's sake (a crash, a hang or garbage output is ``unavailable`` with the reason). Torch is
only ever imported in the child. See README.md in this package for each probe.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from crashcart.probes.base import STATUSES

__all__ = ["REGISTRY", "STATUSES", "TIME_LIMITS", "ProbeResult", "probe_names", "run_probe"]

#: Probe name -> (module, function) that implements it, imported only in the child.
REGISTRY: dict[str, tuple[str, str]] = {
    "cuda_memory": ("crashcart.probes.gpu", "cuda_memory"),
    "nccl": ("crashcart.probes.nccl", "nccl"),
    "cudnn": ("crashcart.probes.cudnn", "cudnn"),
    "cuda_setup": ("crashcart.probes.gpu", "cuda_setup"),
    "device_placement": ("crashcart.probes.gpu", "device_placement"),
    "precision": ("crashcart.probes.gpu", "precision"),
    "gpu_health": ("crashcart.probes.gpu", "gpu_health"),
    "disk_space": ("crashcart.probes.host", "disk_space"),
    "shared_memory": ("crashcart.probes.host", "shared_memory"),
    "host_memory": ("crashcart.probes.host", "host_memory"),
}

#: Hard limit in seconds for each probe, child start and ``import torch`` included (CUDA
#: initialisation alone can take 10 s on an 8-GPU node). The child is killed when it is reached.
TIME_LIMITS: dict[str, float] = {
    "cuda_memory": 45.0,
    "nccl": 150.0,  # two all-reduce rounds with their own 60 s limits, plus NCCL init
    "cudnn": 60.0,
    "cuda_setup": 45.0,
    "device_placement": 45.0,
    "precision": 45.0,
    "gpu_health": 90.0,  # about 10 s of matmul burn per GPU checked
    "disk_space": 30.0,  # statvfs is instant; the scan for large recent files is bounded
    "shared_memory": 15.0,
    "host_memory": 20.0,  # dmesg / journalctl can be slow on a busy host
}


@dataclass
class ProbeResult:
    """What a probe found: a verdict on the diagnosis, one sentence and the measurements."""

    name: str
    status: str  # "confirmed" | "refuted" | "inconclusive" | "unavailable"
    summary: str  # one sentence for people, with numbers
    details: dict[str, Any] = field(default_factory=dict)  # the measurements (JSON-safe)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict (the ``probe`` field of a diagnosis)."""
        return asdict(self)


def probe_names() -> list[str]:
    """Every probe name, in registry order (the names rules may reference)."""
    return list(REGISTRY)


def run_probe(
    name: str,
    context: dict[str, Any] | None = None,
    timeout: float | None = None,
    *,
    _argv: list[str] | None = None,
) -> ProbeResult:
    """Run probe ``name`` in a subprocess against what the diagnosis knows (``context``).

    ``timeout`` overrides ``TIME_LIMITS[name]``. ``_argv`` replaces the child's command line;
    it exists so tests can run a deliberately hanging or crashing child. Raises ValueError for
    an unknown name (a programming error); everything the probe does wrong is a result.
    """
    if name not in REGISTRY:
        raise ValueError(f"unknown probe {name!r}; known: {', '.join(REGISTRY)}")
    limit = TIME_LIMITS[name] if timeout is None else float(timeout)
    # The runner (subprocess, tempfile) only when a probe runs: the command line imports this
    # package for the probe names alone, at every start.
    from crashcart.probes.runner import child_argv, run_child

    argv = _argv if _argv is not None else child_argv(name, dict(context or {}))
    result, seconds = run_child(argv, limit)
    return ProbeResult(name=name, seconds=round(seconds, 3), **result)
