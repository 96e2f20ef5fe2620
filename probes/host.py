"""Host probes that need no GPU: disk_space, shared_memory and host_memory.

They only read: ``os.statvfs``, directory listings, ``/proc/meminfo``, cgroup files and the
kernel log where it is readable. Nothing is allocated beyond a few lists.
"""

from __future__ import annotations

import os
import re
import resource
import time
from pathlib import Path
from typing import Any

from crashcart.probes.base import (
    GIB,
    Unavailable,
    category_of,
    gib,
    number,
    outcome,
    rule_of,
    strings,
)
from crashcart.probes.system import kernel_log

#: A filesystem with less than this fraction or this many GiB free is "full" for a training run.
FULL_FRACTION = 0.05
FULL_GIB = 1.0
#: With at least this much free, a full disk at the time of the log is unlikely to recur now.
PLENTY_FRACTION = 0.10
PLENTY_GIB = 5.0
#: /dev/shm smaller than this starves DataLoader workers (Docker's default is 64 MiB).
SHM_MIN_GIB = 1.0
#: The large-file scan stops after this many directory entries, so a huge tree cannot stall it.
SCAN_LIMIT = 20_000
RECENT_SECONDS = 7 * 24 * 3600


def fs_usage(path: str) -> dict[str, Any]:
    """Free space and inodes of the filesystem holding ``path`` (or its nearest existing parent)."""
    target = Path(path).expanduser()
    checked = target
    while not checked.exists() and checked != checked.parent:
        checked = checked.parent  # a checkpoint file that was never written: look at its folder
    st = os.statvfs(checked)
    total = st.f_blocks * st.f_frsize
    free = st.f_bavail * st.f_frsize  # what an unprivileged writer can still use
    usage: dict[str, Any] = {
        "path": str(target),
        "checked": str(checked),
        "exists": checked == target,
        "device": os.stat(checked).st_dev,
        "total_gib": gib(total),
        "free_gib": gib(free),
        "free_fraction": round(free / total, 4) if total else 0.0,
        "free_bytes": free,
    }
    if st.f_files:  # 0 on filesystems without fixed inode tables (btrfs, some network fs)
        usage["inodes_free"] = st.f_favail
        usage["inodes_total"] = st.f_files
        usage["inodes_free_fraction"] = round(st.f_favail / st.f_files, 4)
    return usage


def is_full(usage: dict[str, Any]) -> bool:
    """Whether a filesystem is out of room for a training run: blocks or inodes nearly gone."""
    low_blocks = usage["free_fraction"] < FULL_FRACTION or usage["free_bytes"] < FULL_GIB * GIB
    return low_blocks or usage.get("inodes_free_fraction", 1.0) < FULL_FRACTION


def has_plenty(usage: dict[str, Any]) -> bool:
    """Whether a filesystem has clearly enough room (blocks and inodes)."""
    roomy = usage["free_fraction"] >= PLENTY_FRACTION and usage["free_bytes"] >= PLENTY_GIB * GIB
    return roomy and usage.get("inodes_free_fraction", 1.0) >= PLENTY_FRACTION


def largest_recent_files(directory: str, count: int = 5) -> list[dict[str, Any]]:
    """The ``count`` largest files modified in the last 7 days under ``directory`` (bounded scan)."""
    root = Path(directory)
    if not root.is_dir() or root == Path(root.anchor):
        return []  # never walk a whole filesystem from /
    cutoff = time.time() - RECENT_SECONDS
    found: list[tuple[int, str]] = []
    seen = 0
    for base, dirs, files in os.walk(root, onerror=lambda _err: None):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(base, d))]
        for name in files:
            seen += 1
            if seen > SCAN_LIMIT:
                break
            try:
                st = os.lstat(os.path.join(base, name))
            except OSError:
                continue
            if st.st_mtime >= cutoff:
                found.append((st.st_size, os.path.join(base, name)))
        if seen > SCAN_LIMIT:
            break
    found.sort(reverse=True)
    return [{"path": p, "gib": gib(size), "bytes": size} for size, p in found[:count]]


def _default_paths() -> list[str]:
    """Where training writes when the log names nothing: the temp dir and the usual caches."""
    paths = ["/tmp", str(Path("~/.cache").expanduser())]
    for var in ("HF_HOME", "HF_DATASETS_CACHE", "TRANSFORMERS_CACHE", "TORCH_HOME", "TMPDIR"):
        value = os.environ.get(var)
        # The probe's own TMPDIR is the runner's scratch dir, not the training run's.
        if value and not (var == "TMPDIR" and Path(value).name.startswith("crashcart-probe-")):
            paths.append(value)
    return paths


def disk_space(context: dict[str, Any]) -> dict[str, Any]:
    """Free space and inodes on every path the log names; confirms or refutes ``disk_full``."""
    named = strings(context, "paths")
    paths = named or _default_paths()
    filesystems: list[dict[str, Any]] = []
    unreadable: list[str] = []
    seen_devices: set[int] = set()
    for path in dict.fromkeys(paths):
        try:
            usage = fs_usage(path)
        except OSError as exc:
            unreadable.append(f"{path}: {exc.strerror or exc}")
            continue
        usage["largest_recent_files"] = largest_recent_files(usage["checked"])
        if usage["device"] in seen_devices:
            usage["same_filesystem_as_above"] = True
        seen_devices.add(usage["device"])
        filesystems.append(usage)
    if not filesystems:
        raise Unavailable(f"no named path could be examined: {'; '.join(unreadable)}")
    details = {"filesystems": filesystems, "unreadable": unreadable, "paths_from_log": bool(named)}
    full = [u for u in filesystems if is_full(u)]
    tightest = min(filesystems, key=lambda u: u["free_fraction"])
    if category_of(context) != "disk_full":
        return outcome("inconclusive", _describe(tightest, "has the least room"), **details)
    if full:
        return outcome("confirmed", _describe(full[0], "is full"), **details)
    if all(has_plenty(u) for u in filesystems):
        summary = _describe(tightest, "has plenty of room now (tightest of the paths checked)")
        if rule_of(context) == "disk_full.quota":
            # A quota is per user or project; statvfs shows the whole filesystem.
            return outcome("inconclusive", summary + "; a quota is not visible here", **details)
        return outcome("refuted", summary, **details)
    return outcome("inconclusive", _describe(tightest, "is getting tight"), **details)


def _describe(usage: dict[str, Any], verdict: str) -> str:
    """One sentence about one filesystem, with its numbers."""
    text = (
        f"{usage['checked']} {verdict}: {usage['free_gib']} GiB free of {usage['total_gib']} GiB "
        f"({usage['free_fraction']:.1%})"
    )
    if "inodes_free_fraction" in usage:
        text += f", {usage['inodes_free_fraction']:.1%} of inodes free"
    return text


def shared_memory(context: dict[str, Any]) -> dict[str, Any]:
    """Size and use of /dev/shm and the open-file limit; confirms ``shared_memory`` diagnoses."""
    path = str(context.get("shm_path") or "/dev/shm")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limits = {"nofile_soft": soft, "nofile_hard": hard}
    rule = rule_of(context)
    try:
        usage = fs_usage(path)
    except OSError as exc:
        raise Unavailable(f"{path} cannot be examined: {exc.strerror or exc}", limits) from None
    if not usage["exists"]:
        summary = f"{path} does not exist, so DataLoader workers have no shared memory"
        return outcome("confirmed", summary, shm=usage, **limits)
    usage["largest_recent_files"] = largest_recent_files(path)
    details = {"shm": usage, **limits}
    if rule == "shared_memory.too_many_open_files":
        # Here the limit is on file descriptors, not on /dev/shm's size.
        if soft < 4096:
            summary = f"the open-file limit is {soft} (ulimit -n); each shared tensor holds one"
            return outcome("confirmed", summary, **details)
        return outcome("inconclusive", f"the open-file limit is {soft} (ulimit -n)", **details)
    small = usage["total_gib"] < SHM_MIN_GIB
    nearly_full = usage["free_fraction"] < 0.10
    summary = f"{path} is {usage['total_gib']} GiB with {usage['free_gib']} GiB free ({usage['free_fraction']:.1%})"
    if category_of(context) != "shared_memory":
        return outcome("inconclusive", summary, **details)
    if small or nearly_full:
        why = "smaller than 1 GiB" if small else "nearly full"
        return outcome("confirmed", f"{summary}: {why}", **details)
    return outcome("refuted", f"{summary}: room for DataLoader workers", **details)


# -- host_memory --------------------------------------------------------------------------------

_OOM = re.compile(r"Out of memory: Kill|oom-kill:|invoked oom-killer|Memory cgroup out of memory")


def meminfo(path: str = "/proc/meminfo") -> dict[str, int]:
    """``/proc/meminfo`` as bytes per field (MemTotal, MemAvailable, SwapTotal, ...)."""
    values: dict[str, int] = {}
    with open(path) as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                values[key] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    return values


def cgroup_memory() -> dict[str, Any]:
    """The memory limit, use and OOM-kill count of this process's cgroup (v2, else v1)."""
    found: dict[str, Any] = {}
    v2 = Path("/sys/fs/cgroup")
    for key, name in (("limit", "memory.max"), ("current", "memory.current")):
        text = _read(v2 / name)
        if text is not None and text != "max":
            found[f"{key}_gib"] = gib(int(text))
    events = _read(v2 / "memory.events")
    if events:
        counts = dict(line.split() for line in events.splitlines() if len(line.split()) == 2)
        found["oom_kill_events"] = int(counts.get("oom_kill", 0))
    if not found:
        limit = _read(v2 / "memory" / "memory.limit_in_bytes")
        if limit is not None and int(limit) < (1 << 60):  # v1 writes "no limit" as a huge number
            found["limit_gib"] = gib(int(limit))
    return found


def _read(path: Path) -> str | None:
    """A small file's stripped text, or None when it cannot be read."""
    try:
        return path.read_text().strip()
    except (OSError, ValueError):
        return None


def host_memory(context: dict[str, Any]) -> dict[str, Any]:
    """Available RAM, swap, cgroup limit and OOM-killer records; confirms ``host_oom``."""
    try:
        info = meminfo()
    except OSError as exc:
        raise Unavailable(f"/proc/meminfo cannot be read: {exc}") from None
    available = info.get("MemAvailable", info.get("MemFree", 0))
    details: dict[str, Any] = {
        "total_gib": gib(info.get("MemTotal", 0)),
        "available_gib": gib(available),
        "swap_total_gib": gib(info.get("SwapTotal", 0)),
        "swap_free_gib": gib(info.get("SwapFree", 0)),
        "cgroup": cgroup_memory(),
        "overcommit_memory": _read(Path("/proc/sys/vm/overcommit_memory")),
    }
    oom = kernel_log(_OOM)
    details["oom_records"] = oom["matches"]
    details["kernel_log_readable"] = oom["readable"]
    cgroup_kills = details["cgroup"].get("oom_kill_events", 0)
    summary = (
        f"{details['available_gib']} GiB of {details['total_gib']} GiB RAM available, "
        f"swap {details['swap_free_gib']}/{details['swap_total_gib']} GiB free"
    )
    if "limit_gib" in details["cgroup"]:
        summary += f", cgroup limit {details['cgroup']['limit_gib']} GiB"
    if category_of(context) != "host_oom":
        return outcome("inconclusive", summary, **details)
    if oom["matches"] or cgroup_kills:
        count = len(oom["matches"]) or cgroup_kills
        return outcome("confirmed", f"{summary}; {count} OOM-killer record(s) found", **details)
    rule = rule_of(context)
    requested = number(context, "requested_gib")
    if requested is not None and requested > gib(available):
        return outcome("confirmed", f"{summary}; {requested} GiB requested does not fit", **details)
    if rule == "host_oom.cannot_fork" and details["overcommit_memory"] == "2":
        why = "; vm.overcommit_memory=2 refuses forks of large processes"
        return outcome("confirmed", summary + why, **details)
    if rule == "host_oom.sigkill" and oom["readable"]:
        # The kernel logs every OOM kill; a readable log without one points elsewhere
        # (a scheduler or a person sent the SIGKILL), though old records may have rotated out.
        return outcome("refuted", f"{summary}; no OOM-killer record in the kernel log", **details)
    return outcome(
        "inconclusive", summary + ("" if oom["readable"] else "; kernel log unreadable"), **details
    )
