"""Running the probes that can test a report's top diagnoses, and feeding their verdicts back.

A diagnosis names its probe (the rule's ``probe:``); the probe gets a context built from the
facts the diagnosis matched (the failed allocation's size, the GPU, the paths, the devices, the
magnitudes), runs in its own process under a hard time limit, and its verdict goes back into
the run as a ``probe`` fact and into the ranking (confirmed up, refuted down).
"""

from __future__ import annotations

from typing import Any

from .engine.diagnosis import Diagnosis
from .engine.ranking import apply_probe

#: Fact fields passed to probes unchanged.
_PASSED = (
    "requested_gib",
    "gpu",
    "total_gib",
    "free_gib",
    "other_processes_gib",
    "reserved_gib",
    "reserved_unallocated_gib",
    "status",
    "errno",
    "signal",
    "exitcode",
    "world_size",
)


def probe_context(diagnosis: Diagnosis, config: dict[str, Any]) -> dict[str, Any]:
    """What a probe needs to know about the diagnosis it tests."""
    fields = diagnosis.fields
    context: dict[str, Any] = {"category": diagnosis.category, "rule": diagnosis.rule}
    context |= {key: fields[key] for key in _PASSED if fields.get(key) is not None}
    paths = [fields[key] for key in ("path", "dir") if isinstance(fields.get(key), str)]
    if paths:
        context["paths"] = paths
    devices = [fields[key] for key in ("device_a", "device_b") if isinstance(fields.get(key), str)]
    if devices:
        context["devices"] = devices
    for key in ("last_finite", "value", "best"):
        if isinstance(fields.get(key), (int, float)):
            context["magnitude"] = abs(fields[key])
            break
    precision = config.get("precision") or ("fp16" if config.get("fp16") else None)
    if precision:
        context["dtype"] = {"fp16": "float16", "bf16": "bfloat16"}.get(precision, precision)
    return context


def probe_diagnoses(
    diagnoses: list[Diagnosis], config: dict[str, Any], limit: int = 3
) -> list[dict[str, Any]]:
    """Run the probe of each of the first ``limit`` diagnoses that name one; return the results."""
    from .probes import run_probe  # the probes import nothing heavy; their children import torch

    results = []
    for diagnosis in [d for d in diagnoses if d.probe_name][:limit]:
        result = run_probe(diagnosis.probe_name, probe_context(diagnosis, config)).to_dict()
        result["rule"] = diagnosis.rule
        apply_probe(diagnosis, result)
        results.append(result)
    return results
