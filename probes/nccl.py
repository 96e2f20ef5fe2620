"""The nccl probe: NCCL version, peer access, and a real all-reduce over the local GPUs.

The all-reduce runs in worker processes (``python -m crashcart.probes.nccl --worker RANK WORLD
STORE``), one per GPU, rendezvousing through a FileStore in the probe's temp dir, with
NCCL_DEBUG=INFO (unless the environment sets it) and their output captured. Each round has its
own time limit; a hung round is killed and reported, never waited on. Each rank allocates 4 MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from typing import Any

from crashcart.probes.base import category_of, integer, outcome, require_cuda, rule_of
from crashcart.probes.host import SHM_MIN_GIB, fs_usage
from crashcart.probes.system import tail

#: Seconds one all-reduce round (worker start, import torch, NCCL init, the collective) may take.
ROUND_TIMEOUT = 60.0
#: More ranks than this on one node is unusual and only makes the probe slower.
MAX_RANKS = 8
_MARK = "CRASHCART_NCCL_RESULT "
_ENV = (
    "NCCL_SOCKET_IFNAME",
    "NCCL_IB_DISABLE",
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_DEBUG",
    "NCCL_P2P_LEVEL",
    "NCCL_NET",
    "CUDA_VISIBLE_DEVICES",
)


def _nccl_version(torch: Any) -> str | None:
    """NCCL's version as ``2.21.5`` (torch returns a tuple, or an int on old releases)."""
    try:
        version = torch.cuda.nccl.version()
    except Exception:  # torch built without NCCL
        return None
    if isinstance(version, tuple):
        return ".".join(str(v) for v in version)
    return f"{version // 1000}.{version % 1000 // 100}.{version % 100}"


def _round(world: int) -> dict[str, Any]:
    """One all-reduce over ``world`` local ranks: ok, seconds, per-rank results and NCCL output."""
    store = os.path.join(tempfile.mkdtemp(prefix="nccl-"), "store")
    env = dict(os.environ)
    env.setdefault("NCCL_DEBUG", "INFO")
    start = time.monotonic()
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "crashcart.probes.nccl", "--worker", str(r), str(world), store],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        for r in range(world)
    ]
    outputs: list[str] = []
    timed_out = False
    for proc in workers:
        left = max(0.1, ROUND_TIMEOUT - (time.monotonic() - start))
        try:
            out, _ = proc.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.kill()
            out, _ = proc.communicate()
        outputs.append(out.decode("utf-8", "replace"))
    if timed_out:
        for proc in workers:  # a rank that finished cannot help the ones still waiting
            proc.kill()
    ranks = [
        _rank_result(text, proc.returncode) for text, proc in zip(outputs, workers, strict=True)
    ]
    return {
        "world_size": world,
        "ok": not timed_out and all(r.get("ok") for r in ranks),
        "timed_out": timed_out,
        "seconds": round(time.monotonic() - start, 2),
        "ranks": ranks,
        "nccl_debug": tail(
            "\n".join(line for text in outputs for line in text.splitlines() if "NCCL" in line),
            60,
            6000,
        ),
    }


def _rank_result(text: str, returncode: int | None) -> dict[str, Any]:
    """One worker's marked JSON line, or what its exit and last lines say."""
    for line in reversed(text.splitlines()):
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK) :])
    return {"ok": False, "returncode": returncode, "error": tail(text, 5, 800)}


def nccl(context: dict[str, Any]) -> dict[str, Any]:
    """NCCL version, peers, env and /dev/shm, then an all-reduce on 1 and on N local ranks."""
    torch = require_cuda()
    count = torch.cuda.device_count()
    n = min(count, MAX_RANKS)
    peers = {
        f"{i}->{j}": bool(torch.cuda.can_device_access_peer(i, j))
        for i in range(n)
        for j in range(n)
        if i != j
    }
    try:
        shm = fs_usage("/dev/shm")
    except OSError:
        shm = None
    details: dict[str, Any] = {
        "nccl_version": _nccl_version(torch),
        "nccl_available": bool(
            torch.distributed.is_available() and torch.distributed.is_nccl_available()
        ),
        "device_count": count,
        "peer_access": peers,
        "env": {k: os.environ.get(k) for k in _ENV},
        "dev_shm": shm,
        "rounds": [],
    }
    if not details["nccl_available"]:
        return outcome(
            "confirmed" if _checking(context) else "inconclusive",
            "this torch has no NCCL backend",
            **details,
        )
    for world in dict.fromkeys([1, n]):
        result = _round(world)
        details["rounds"].append(result)
        if not result["ok"]:
            break  # more ranks cannot succeed where one failed; save the time
    return _decide(context, details, n)


def _decide(context: dict[str, Any], details: dict[str, Any], n: int) -> dict[str, Any]:
    """The verdict from the rounds, the shm size and the rule's hypothesis."""
    rule, checking = rule_of(context), _checking(context)
    shm = details["dev_shm"]
    shm_note = (
        f"; /dev/shm is only {shm['total_gib']} GiB"
        if shm and shm["total_gib"] < SHM_MIN_GIB
        else ""
    )
    failed = [r for r in details["rounds"] if not r["ok"]]
    ranks = integer(context, "local_world_size")
    if rule == "nccl.duplicate_gpu" and ranks is not None:
        status = "confirmed" if ranks > details["device_count"] else "refuted"
        summary = f"{ranks} ranks per node for {details['device_count']} visible GPU(s)"
        return outcome(status, summary + shm_note, **details)
    if failed:
        bad = failed[0]
        how = "timed out" if bad["timed_out"] else "failed"
        summary = f"a {bad['world_size']}-rank NCCL all-reduce {how} after {bad['seconds']} s (NCCL {details['nccl_version']})"
        return outcome("confirmed" if checking else "inconclusive", summary + shm_note, **details)
    last = details["rounds"][-1]
    summary = f"a {last['world_size']}-rank NCCL all-reduce succeeded in {last['seconds']} s (NCCL {details['nccl_version']})"
    if n < 2:
        return outcome(
            "inconclusive", summary + "; one GPU, so no peer path was tested" + shm_note, **details
        )
    # Working local collectives refute "NCCL is broken here"; they say nothing about other nodes,
    # a misused API or a rank that stalled, so those stay inconclusive.
    refutable = rule in ("nccl.system_error", "nccl.unhandled_cuda_error", "nccl.generic")
    return outcome("refuted" if refutable else "inconclusive", summary + shm_note, **details)


def _checking(context: dict[str, Any]) -> bool:
    """Whether the diagnosis is one broken NCCL communication would explain."""
    return category_of(context) in ("nccl", "distributed_timeout")


def _worker(rank: int, world: int, store: str) -> None:
    """One rank of the all-reduce; prints its marked JSON result line."""
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl",
        init_method=f"file://{store}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=ROUND_TIMEOUT / 2),
    )
    tensor = torch.full((1 << 20,), float(rank + 1), device=f"cuda:{rank}")
    dist.all_reduce(tensor)
    torch.cuda.synchronize(rank)
    expected = world * (world + 1) / 2
    result = {"rank": rank, "ok": bool((tensor == expected).all()), "value": float(tensor[0])}
    dist.destroy_process_group()
    print(_MARK + json.dumps(result), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="one rank of the nccl probe's all-reduce")
    parser.add_argument("--worker", nargs=3, metavar=("RANK", "WORLD", "STORE"), required=True)
    args = parser.parse_args()
    _worker(int(args.worker[0]), int(args.worker[1]), args.worker[2])
