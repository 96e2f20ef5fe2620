"""GPU probes: cuda_memory, cuda_setup, device_placement, precision and gpu_health.

Each imports torch lazily (we are in the probe's child process), reports ``unavailable`` when
torch or a CUDA device is missing, allocates at most a few hundred MiB on the GPU and frees it
before returning. GPU ordinals from the log are read as this process sees them: under the
same CUDA_VISIBLE_DEVICES as the run, they name the same GPUs.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from crashcart.probes.base import (
    Unavailable,
    category_of,
    devices_to_check,
    gib,
    integer,
    number,
    outcome,
    require_cuda,
    require_torch,
    rule_of,
    strings,
)
from crashcart.probes.cudainfo import (
    OWN_CONTEXT_GIB,
    alloc_conf,
    driver_cuda_version,
    kernel_source,
    normalise_uuid,
    parse_gpu_processes,
    parse_version,
)
from crashcart.probes.system import kernel_log, nvidia_smi_csv, run_tool, tail

#: Other processes holding more than this on the GPU explain an OOM (the rule's threshold).
OTHERS_GIB = 1.0


# -- cuda_memory -------------------------------------------------------------------------------


def _processes(torch: Any, index: int, uuid: str | None) -> tuple[list[dict[str, Any]], str]:
    """Processes holding memory on device ``index`` and where the list came from."""
    rows = nvidia_smi_csv("query-compute-apps", ["pid", "used_memory", "gpu_uuid"])
    if rows is not None and uuid is not None:
        found = []
        for row in rows:
            if normalise_uuid(row["gpu_uuid"]) == uuid and row["pid"].isdigit():
                used = float(row["used_memory"]) if row["used_memory"].isdigit() else 0.0
                found.append({"pid": int(row["pid"]), "used_mib": used})
        return found, "nvidia-smi"
    try:
        return parse_gpu_processes(torch.cuda.list_gpu_processes(index)), "torch (pynvml)"
    except Exception:  # needs pynvml; any failure just means "cannot list"
        return [], "unavailable"


def _memory_of(torch: Any, index: int) -> dict[str, Any]:
    """Free/total memory of one device now, and how much other processes hold on it."""
    free, total = torch.cuda.mem_get_info(index)  # creates our (small) context on the device
    props = torch.cuda.get_device_properties(index)
    uuid = getattr(props, "uuid", None)
    processes, source = _processes(torch, index, normalise_uuid(uuid) if uuid else None)
    own_pid = os.getpid()
    mine = [p for p in processes if p["pid"] == own_pid]
    others = [p for p in processes if p["pid"] != own_pid]
    listed_others = sum(p["used_mib"] for p in others) / 1024
    used = (total - free) / 2**30
    own = mine[0]["used_mib"] / 1024 if mine else OWN_CONTEXT_GIB
    # In containers nvidia-smi often lists no foreign pids although their memory is in use:
    # memory used on the device beyond our own context belongs to someone else either way.
    others_gib = max(listed_others, used - own)
    return {
        "index": index,
        "name": props.name,
        "total_gib": gib(total),
        "free_gib": gib(free),
        "used_gib": round(used, 2),
        "own_context_gib": round(own, 2),
        "other_processes": others,
        "other_processes_gib": round(max(others_gib, 0.0), 2),
        "process_list_source": source,
    }


def cuda_memory(context: dict[str, Any]) -> dict[str, Any]:
    """Free/total memory per GPU, other processes' share, and whether the failed request fits."""
    torch = require_cuda()
    gpus = [_memory_of(torch, i) for i in devices_to_check(torch, context)]
    requested = number(context, "requested_gib")
    target = gpus[0] if len(gpus) == 1 else max(gpus, key=lambda g: g["other_processes_gib"])
    fits = None if requested is None else requested <= target["free_gib"]
    details = {
        "gpus": gpus,
        "requested_gib": requested,
        "fits_now": fits,
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
        **alloc_conf(),
    }
    others = target["other_processes_gib"]
    where = f"GPU {target['index']} ({target['name']}) has {target['free_gib']} GiB free of {target['total_gib']} GiB"
    ask = (
        ""
        if requested is None
        else f"; the failed {requested} GiB {'fits' if fits else 'does not fit'} now"
    )
    summary = f"{where}, other processes hold {others} GiB{ask}"
    if details["expandable_segments"]:
        summary += "; expandable_segments is already set"
    rule = rule_of(context)
    if category_of(context) != "cuda_oom":
        return outcome("inconclusive", summary, **details)
    if rule == "cuda_oom.other_process":
        return outcome("confirmed" if others > OTHERS_GIB else "refuted", summary, **details)
    if rule == "cuda_oom.fragmentation":
        # Fragmentation means the room exists but not in one piece: an outside holder or a
        # request bigger than the idle GPU's free memory is a different cause.
        if others > OTHERS_GIB or fits is False:
            return outcome("refuted", summary, **details)
        return outcome("confirmed" if fits else "inconclusive", summary, **details)
    if requested is not None and requested > target["total_gib"]:
        return outcome("confirmed", summary + ", larger than the whole GPU", **details)
    if rule == "cuda_oom.first_step":
        if others > OTHERS_GIB:
            return outcome(
                "refuted", summary + "; another process is the likelier cause", **details
            )
        return outcome("confirmed" if fits is False else "inconclusive", summary, **details)
    return outcome("inconclusive", summary, **details)


# -- cuda_setup --------------------------------------------------------------------------------


def _setup_facts(torch: Any) -> dict[str, Any]:
    """Versions and visibility that need no working GPU."""
    driver = driver_cuda_version()
    smi = nvidia_smi_csv("query-gpu", ["index", "name", "uuid", "driver_version", "compute_cap"])
    return {
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "driver_cuda": None if driver is None else f"{driver[0]}.{driver[1]}",
        "nvidia_smi_gpus": smi,
        "arch_list": torch.cuda.get_arch_list() if torch.version.cuda else [],
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def _setup_problem(torch: Any, facts: dict[str, Any]) -> str | None:
    """Why torch sees no GPU, when the facts say so; None when they do not explain it."""
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU-only build: torch.version.cuda is None"
    visible = facts["CUDA_VISIBLE_DEVICES"]
    if visible is not None and visible.strip() in ("", "-1", "none", "NoDevFiles"):
        return f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU"
    driver, runtime = parse_version(facts["driver_cuda"]), parse_version(torch.version.cuda)
    if driver is None:
        return "no NVIDIA driver: libcuda.so.1 cannot be loaded"
    if runtime is not None and driver[0] < runtime[0]:
        return f"the driver supports CUDA {facts['driver_cuda']}, torch needs CUDA {torch.version.cuda}"
    return None


def _kernel_check(torch: Any, index: int, arch_list: list[str]) -> dict[str, Any]:
    """Whether torch has a kernel image for device ``index``, by arch list and by launching one."""
    major, minor = torch.cuda.get_device_capability(index)
    device = {
        "index": index,
        "name": torch.cuda.get_device_name(index),
        "capability": f"{major}.{minor}",
        "kernel_from": kernel_source((major, minor), arch_list),
    }
    try:
        device["kernel_runs"] = float((torch.ones(4, device=f"cuda:{index}") * 2).sum()) == 8.0
    except RuntimeError as exc:
        device["kernel_runs"] = False
        device["error"] = str(exc).splitlines()[0][:300]
    return device


def cuda_setup(context: dict[str, Any]) -> dict[str, Any]:
    """Driver/runtime versions, torch's arch list against each GPU, and what is visible."""
    torch = require_torch()
    facts = _setup_facts(torch)
    rule = rule_of(context)
    checking = category_of(context) == "cuda_setup"
    if not torch.cuda.is_available():
        problem = _setup_problem(torch, facts)
        if checking and problem and rule != "cuda_setup.no_kernel_image":
            return outcome("confirmed", f"torch sees no GPU: {problem}", **facts)
        reason = "no CUDA device: torch.cuda.is_available() is False"
        raise Unavailable(f"{reason} ({problem})" if problem else reason, facts)
    devices = [
        _kernel_check(torch, i, facts["arch_list"]) for i in range(torch.cuda.device_count())
    ]
    facts["devices"] = devices
    broken = [d for d in devices if not d["kernel_runs"] or d["kernel_from"] is None]
    names = ", ".join(f"cuda:{d['index']} sm_{d['capability'].replace('.', '')}" for d in devices)
    if broken:
        first = broken[0]
        summary = (
            f"torch {facts['torch']} (CUDA {facts['torch_cuda']}, archs {' '.join(facts['arch_list'])}) "
            f"has no kernel for cuda:{first['index']} ({first['name']}, sm_{first['capability'].replace('.', '')})"
        )
        return outcome("confirmed" if checking else "inconclusive", summary, **facts)
    summary = (
        f"torch {facts['torch']} (CUDA {facts['torch_cuda']}, driver CUDA {facts['driver_cuda']}) "
        f"runs kernels on {len(devices)} GPU(s): {names}"
    )
    return outcome("refuted" if checking else "inconclusive", summary, **facts)


# -- device_placement ----------------------------------------------------------------------------


def device_placement(context: dict[str, Any]) -> dict[str, Any]:
    """The log's devices exist here, and mixing them in one op reproduces the mismatch."""
    named = strings(context, "devices") or ["cuda:0", "cpu"]
    gpu = integer(context, "gpu")
    if gpu is not None:
        named.append(f"cuda:{gpu}")
    named = list(dict.fromkeys(named))
    # cpu and meta need no GPU: a meta-vs-cpu mismatch can be reproduced anywhere.
    torch = require_cuda() if any(d.startswith("cuda") for d in named) else require_torch()
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    existing, missing = [], []
    for name in named:
        try:
            device = torch.device(name)
        except RuntimeError:
            missing.append(name)
            continue
        if device.type == "cuda" and (device.index or 0) >= count:
            missing.append(name)
        else:
            existing.append(str(device) if device.type != "cuda" else f"cuda:{device.index or 0}")
    existing = list(dict.fromkeys(existing))
    default = torch.get_default_device() if hasattr(torch, "get_default_device") else None
    details: dict[str, Any] = {
        "device_count": count,
        "current_device": torch.cuda.current_device() if count else None,
        "default_device": str(default) if default is not None else str(torch.empty(0).device),
        "devices_named": named,
        "missing": missing,
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    details["same_device_ok"] = {d: _op_error(torch, d, d) is None for d in existing}
    pairs = [(a, b) for i, a in enumerate(existing) for b in existing[i + 1 :]]
    details["mixed"] = [{"devices": [a, b], "error": _op_error(torch, a, b)} for a, b in pairs]
    if category_of(context) != "device_mismatch":
        return outcome(
            "inconclusive", f"{count} CUDA device(s) here; named {', '.join(named)}", **details
        )
    if missing:
        summary = (
            f"{', '.join(missing)} named by the log does not exist here ({count} CUDA device(s))"
        )
        return outcome("inconclusive", summary, **details)
    if not pairs:
        return outcome("inconclusive", f"only {existing[0]} is named: nothing to mix", **details)
    raised = [m for m in details["mixed"] if m["error"]]
    if len(raised) == len(pairs) and all(details["same_device_ok"].values()):
        first = raised[0]
        summary = (
            f"mixing {' and '.join(first['devices'])} in one op fails ({first['error'][:120]}) "
            "while each device alone works"
        )
        return outcome("confirmed", summary, **details)
    ok = [m["devices"] for m in details["mixed"] if not m["error"]]
    return outcome(
        "refuted", f"mixing {' and '.join(ok[0]) if ok else 'them'} works here", **details
    )


def _op_error(torch: Any, a: str, b: str) -> str | None:
    """The error (first line) of a small matmul of a tensor on ``a`` with one on ``b``, if any."""
    try:
        x = torch.ones(2, 2, device=a)
        y = torch.ones(2, 2, device=b)
        z = x @ y
        if a != b:
            # Materialise on the CPU: a meta result only fails once its data is needed.
            z.cpu()
        return None
    except (RuntimeError, NotImplementedError) as exc:
        return str(exc).splitlines()[0][:300]


# -- precision ------------------------------------------------------------------------------------


def _range_facts(torch: Any, magnitude: float | None, device: str) -> dict[str, Any]:
    """Whether ``magnitude`` overflows fp16 and bf16 when cast on ``device``."""
    facts: dict[str, Any] = {
        "fp16_max": float(torch.finfo(torch.float16).max),
        "bf16_max": float(torch.finfo(torch.bfloat16).max),
        "magnitude": magnitude,
    }
    if magnitude is not None:
        value = torch.tensor([magnitude], dtype=torch.float32, device=device)
        facts["fp16_overflows"] = bool(torch.isinf(value.to(torch.float16)).item())
        facts["bf16_overflows"] = bool(torch.isinf(value.to(torch.bfloat16)).item())
    return facts


def precision(context: dict[str, Any]) -> dict[str, Any]:
    """bf16 support, TF32 state, and whether the log's magnitudes overflow fp16 (backs fp16->bf16)."""
    torch = require_torch()
    magnitude = number(context, "magnitude")
    # The range check needs no GPU; it rides along in the details of an unavailable result.
    cpu_facts = _range_facts(torch, magnitude, "cpu")
    torch = require_cuda(cpu_facts)
    index = devices_to_check(torch, context)[0]
    facts = _range_facts(torch, magnitude, f"cuda:{index}")
    major, minor = torch.cuda.get_device_capability(index)
    facts.update(
        device=f"cuda:{index}",
        name=torch.cuda.get_device_name(index),
        capability=f"{major}.{minor}",
        bf16_supported=bool(torch.cuda.is_bf16_supported()),
        tf32_matmul=bool(torch.backends.cuda.matmul.allow_tf32),
        tf32_cudnn=bool(torch.backends.cudnn.allow_tf32),
        float32_matmul_precision=torch.get_float32_matmul_precision(),
        dtype=context.get("dtype"),
    )
    if facts["bf16_supported"]:
        # is_bf16_supported can answer True through emulation on old GPUs: run a real bf16 op.
        x = torch.ones(64, 64, device=f"cuda:{index}", dtype=torch.bfloat16)
        facts["bf16_matmul_ok"] = bool((x @ x)[0, 0].item() == 64)
        del x
    bf16 = "supports bf16" if facts["bf16_supported"] else "has no native bf16"
    where = f"cuda:{index} ({facts['name']}, sm_{major}{minor}) {bf16}"
    dtype = str(context.get("dtype") or "").replace("torch.", "")
    rule = rule_of(context)
    if magnitude is None:
        return outcome("inconclusive", f"{where}; the log gave no magnitude to check", **facts)
    if dtype in ("bfloat16", "bf16", "float32", "fp32"):
        status = "refuted" if rule == "nan_loss.fp16_overflow" else "inconclusive"
        return outcome(status, f"{where}; the run used {dtype}, not fp16", **facts)
    if facts["fp16_overflows"]:
        fix = (
            "switching to bf16 keeps it finite"
            if facts["bf16_supported"]
            else "use fp32 or a smaller loss scale"
        )
        summary = f"{magnitude:g} overflows fp16 (max 65504); {where}: {fix}"
        return outcome("confirmed", summary, **facts)
    status = "refuted" if rule == "nan_loss.fp16_overflow" else "inconclusive"
    return outcome(status, f"{magnitude:g} fits in fp16 (max 65504); {where}", **facts)


# -- gpu_health -----------------------------------------------------------------------------------

_XID = re.compile(r"NVRM: Xid")
#: Relative error between the GPU's fp32 matmul (TF32 off) and the CPU's fp64 one that is still
#: rounding; silent corruption (flipped bits) is orders of magnitude larger.
TOLERANCE = 1e-4


def _burn(torch: Any, index: int, seconds: float) -> dict[str, Any]:
    """Deterministic matmuls on one GPU: against the CPU, and bit for bit across repeats."""
    gen = torch.Generator().manual_seed(20240601)
    a = torch.randn(1024, 1024, generator=gen, dtype=torch.float32)
    b = torch.randn(1024, 1024, generator=gen, dtype=torch.float32)
    reference = a.double() @ b.double()
    device = f"cuda:{index}"
    ga, gb = a.to(device), b.to(device)
    first = ga @ gb
    error = float((first.double().cpu() - reference).abs().max() / reference.abs().max())
    big_a = torch.randn(4096, 4096, generator=gen).to(device)
    big_b = torch.randn(4096, 4096, generator=gen).to(device)
    expected = big_a @ big_b
    runs = mismatches = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        runs += 1
        if not torch.equal(big_a @ big_b, expected):
            mismatches += 1
        torch.cuda.synchronize(index)
    del ga, gb, first, big_a, big_b, expected
    torch.cuda.empty_cache()
    return {
        "index": index,
        "name": torch.cuda.get_device_name(index),
        "relative_error_vs_cpu": error,
        "matches_cpu": error < TOLERANCE,
        "repeat_runs": runs,
        "repeat_mismatches": mismatches,
    }


def _ecc() -> dict[str, Any]:
    """ECC error counters per GPU from nvidia-smi, when it is there and reports them."""
    fields = [
        "index",
        "uuid",
        "ecc.errors.uncorrected.volatile.total",
        "ecc.errors.corrected.volatile.total",
        "ecc.errors.uncorrected.aggregate.total",
        "retired_pages.pending",
    ]
    rows = nvidia_smi_csv("query-gpu", fields)
    if rows is None:
        rows = nvidia_smi_csv("query-gpu", fields[:5])
    if rows is not None:
        return {"source": "nvidia-smi --query-gpu", "gpus": rows}
    text = run_tool(["nvidia-smi", "-q", "-d", "ECC"])
    return {"source": "nvidia-smi -q -d ECC" if text else None, "text": tail(text or "", 60)}


def _uncorrected(ecc: dict[str, Any]) -> int:
    """Total uncorrected ECC errors across GPUs ([N/A] and unsupported fields count as 0)."""
    total = 0
    for row in ecc.get("gpus", []):
        for key in (
            "ecc.errors.uncorrected.volatile.total",
            "ecc.errors.uncorrected.aggregate.total",
        ):
            value = row.get(key, "")
            total += int(value) if value.isdigit() else 0
    return total


def gpu_health(context: dict[str, Any]) -> dict[str, Any]:
    """A short deterministic matmul burn per GPU, ECC counters and Xid records; confirms faults."""
    # Deterministic cuBLAS workspaces: set before CUDA initialises, so repeats can be compared.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch = require_cuda()
    torch.backends.cuda.matmul.allow_tf32 = False  # compare real fp32 with the CPU
    devices = devices_to_check(torch, context)
    seconds = max(2.0, min(10.0, 40.0 / len(devices)))
    burns = [_burn(torch, i, seconds) for i in devices]
    ecc = _ecc()
    xid = kernel_log(_XID)
    details = {
        "burn": burns,
        "burn_seconds_per_gpu": seconds,
        "ecc": ecc,
        "uncorrected_ecc_errors": _uncorrected(ecc),
        "xid_records": xid["matches"],
        "kernel_log_readable": xid["readable"],
    }
    faults = [
        f"cuda:{b['index']} differs from the CPU ({b['relative_error_vs_cpu']:.1e})"
        for b in burns
        if not b["matches_cpu"]
    ]
    faults += [
        f"cuda:{b['index']} gave {b['repeat_mismatches']} different results in {b['repeat_runs']} identical matmuls"
        for b in burns
        if b["repeat_mismatches"]
    ]
    if details["uncorrected_ecc_errors"]:
        faults.append(f"{details['uncorrected_ecc_errors']} uncorrected ECC errors")
    if xid["matches"]:
        faults.append(f"{len(xid['matches'])} Xid record(s) in the kernel log")
    checked = f"{sum(b['repeat_runs'] for b in burns)} matmuls on {len(burns)} GPU(s)"
    if faults:
        return outcome(
            "confirmed" if _checking(context) else "inconclusive", "; ".join(faults), **details
        )
    seen = "ECC counters clean" if ecc.get("gpus") else "ECC counters unreadable"
    logs = "no Xid records" if xid["readable"] else "kernel log unreadable"
    summary = f"{checked} matched the CPU and each other; {seen}; {logs}"
    return outcome("refuted" if _checking(context) else "inconclusive", summary, **details)


def _checking(context: dict[str, Any]) -> bool:
    """Whether the diagnosis is one a hardware fault would explain."""
    return category_of(context) in ("gpu_hardware", "cuda_illegal_access")
