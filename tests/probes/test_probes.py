"""Probes on a CPU-only machine: the unavailable paths, the host probes for real, the runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crashcart import probes
from crashcart.engine.rules import PROBES
from crashcart.probes import TIME_LIMITS, ProbeResult, probe_names, run_probe
from crashcart.probes.child import execute
from crashcart.probes.cudainfo import (
    alloc_conf,
    driver_supports,
    kernel_source,
    parse_gpu_processes,
)
from tests.conftest import run_crashcart

GPU_PROBES = [
    "cuda_memory",
    "nccl",
    "cudnn",
    "cuda_setup",
    "device_placement",
    "precision",
    "gpu_health",
]


def _has_cuda() -> bool:
    """Whether a CUDA GPU is usable here (then the unavailable paths cannot be observed)."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# -- registry and API ----------------------------------------------------------------------------


def test_registry_matches_the_names_rules_may_reference():
    assert set(probe_names()) == set(PROBES)
    assert set(TIME_LIMITS) == set(PROBES)
    assert all(limit > 0 for limit in TIME_LIMITS.values())


def test_unknown_probe_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown probe 'nope'"):
        run_probe("nope")


# -- GPU probes without a GPU --------------------------------------------------------------------


@pytest.mark.skipif(_has_cuda(), reason="a CUDA GPU is present; see test_probes_gpu.py")
@pytest.mark.parametrize("name", GPU_PROBES)
def test_gpu_probe_is_unavailable_without_a_gpu(name):
    result = run_probe(name)
    assert isinstance(result, ProbeResult)
    assert result.name == name
    assert result.status == "unavailable"
    assert "CUDA" in result.summary or "torch" in result.summary
    assert result.details["reason"] == result.summary
    assert 0 < result.seconds < TIME_LIMITS[name]


@pytest.mark.skipif(_has_cuda(), reason="a CUDA GPU is present")
def test_precision_reports_the_fp16_range_check_even_without_a_gpu():
    result = run_probe("precision", {"magnitude": 1e5, "dtype": "float16"})
    assert result.status == "unavailable"
    assert result.details["fp16_overflows"] is True
    assert result.details["bf16_overflows"] is False
    assert result.details["fp16_max"] == 65504.0


@pytest.mark.skipif(_has_cuda(), reason="a CUDA GPU is present")
def test_cuda_setup_confirms_a_cpu_only_torch():
    torch = pytest.importorskip("torch")
    if torch.version.cuda is not None:
        pytest.skip("this torch is a CUDA build")
    result = run_probe("cuda_setup", {"rule": "cuda_setup.cpu_only_torch"})
    assert result.status == "confirmed"
    assert "CPU-only" in result.summary


def test_meta_device_mismatch_reproduces_without_a_gpu():
    pytest.importorskip("torch")
    result = run_probe(
        "device_placement", {"devices": ["meta", "cpu"], "category": "device_mismatch"}
    )
    assert result.status == "confirmed", result
    assert "meta tensor" in result.details["mixed"][0]["error"]


# -- host probes for real ------------------------------------------------------------------------


def _expected_disk_status(path: Path) -> str:
    st = os.statvfs(path)
    free, total = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
    if free / total < 0.05 or free < 2**30:
        return "confirmed"
    if free / total >= 0.10 and free >= 5 * 2**30:
        return "refuted"
    return "inconclusive"


def test_disk_space_on_a_real_directory(tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "step_100.pt").write_bytes(b"x" * 4096)
    result = run_probe("disk_space", {"paths": [str(tmp_path / "ckpt")], "category": "disk_full"})
    fs = result.details["filesystems"][0]
    assert fs["checked"] == str(tmp_path / "ckpt")
    assert fs["total_gib"] > 0 and 0 <= fs["free_fraction"] <= 1
    assert fs["largest_recent_files"][0]["path"].endswith("step_100.pt")
    if "inodes_free_fraction" not in fs or fs["inodes_free_fraction"] >= 0.10:
        assert result.status == _expected_disk_status(tmp_path)
    assert "GiB free" in result.summary


def test_disk_space_looks_at_the_parent_of_a_file_never_written(tmp_path):
    result = run_probe("disk_space", {"paths": [str(tmp_path / "gone" / "model.safetensors")]})
    fs = result.details["filesystems"][0]
    assert fs["exists"] is False and fs["checked"] == str(tmp_path)
    assert result.status == "inconclusive"  # no hypothesis to check


def test_host_memory_reads_meminfo():
    result = run_probe("host_memory", {"category": "host_oom", "rule": "host_oom.cpu_allocator"})
    assert result.status in ("confirmed", "refuted", "inconclusive")
    assert 0 < result.details["available_gib"] <= result.details["total_gib"]
    assert isinstance(result.details["oom_records"], list)
    assert isinstance(result.details["kernel_log_readable"], list)


def test_host_memory_confirms_a_request_larger_than_ram():
    result = run_probe("host_memory", {"category": "host_oom", "requested_gib": 1e6})
    assert result.status == "confirmed"


def test_shared_memory_on_dev_shm():
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm on this system")
    result = run_probe("shared_memory", {"category": "shared_memory"})
    shm = result.details["shm"]
    small = shm["total_gib"] < 1.0 or shm["free_fraction"] < 0.10
    assert result.status == ("confirmed" if small else "refuted")
    assert result.details["nofile_soft"] > 0


def test_shared_memory_missing_directory_is_confirmed(tmp_path):
    result = run_probe(
        "shared_memory", {"category": "shared_memory", "shm_path": str(tmp_path / "no-shm")}
    )
    assert result.status == "confirmed"
    assert "does not exist" in result.summary


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A real 64 KiB tmpfs, filled to the brim; skipped where mounting is not permitted."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        with pytest.raises(OSError), open(mount / "filler", "wb") as handle:
            for _ in range(1024):
                handle.write(b"\0" * 4096)
                handle.flush()
                os.fsync(handle.fileno())
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_disk_space_confirms_a_full_filesystem(tiny_tmpfs):
    context = {"paths": [str(tiny_tmpfs / "ckpt" / "step_9.pt")], "category": "disk_full"}
    result = run_probe("disk_space", context)
    assert result.status == "confirmed", result
    assert result.details["filesystems"][0]["free_gib"] == 0.0
    assert "is full" in result.summary


def test_shared_memory_confirms_a_tiny_full_shm(tiny_tmpfs):
    result = run_probe(
        "shared_memory",
        {
            "category": "shared_memory",
            "rule": "shared_memory.bus_error",
            "shm_path": str(tiny_tmpfs),
        },
    )
    assert result.status == "confirmed"
    assert "smaller than 1 GiB" in result.summary
    assert result.details["shm"]["largest_recent_files"][0]["path"].endswith("filler")


# -- the runner: time limit, crashes, garbage ---------------------------------------------------


def test_a_hanging_child_is_killed_at_the_time_limit():
    start = time.monotonic()
    result = run_probe(
        "disk_space", timeout=2, _argv=[sys.executable, "-c", "import time; time.sleep(60)"]
    )
    assert time.monotonic() - start < 2 + 2
    assert result.status == "unavailable"
    assert "timed out after 2 s" in result.summary


def test_a_timeout_kills_the_childs_own_children_too(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    result = run_probe("host_memory", timeout=3, _argv=[sys.executable, "-c", code])
    assert result.status == "unavailable"
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie awaiting its reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("print('not json at all'); raise SystemExit(3)", "probe crashed (exited with status 3)"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "killed by signal 9"),
        ("print('garbage {')", "probe printed no JSON result"),
        ("pass", "probe printed no result"),
        ('print(\'{"status": "great"}\')', "malformed result"),
        ("raise RuntimeError('boom')", "probe crashed (exited with status 1)"),
    ],
)
def test_a_broken_child_is_unavailable_with_the_reason(code, reason):
    result = run_probe("shared_memory", _argv=[sys.executable, "-c", code])
    assert result.status == "unavailable"
    assert reason in result.summary
    if "boom" in code:
        assert "RuntimeError: boom" in result.details["stderr"]


def test_a_child_that_cannot_start_is_unavailable():
    result = run_probe("shared_memory", _argv=["/nonexistent/python"])
    assert result.status == "unavailable"
    assert "could not start" in result.summary


def test_a_probe_that_raises_is_reported_not_raised(monkeypatch):
    monkeypatch.setitem(probes.REGISTRY, "disk_space", ("json", "loads"))
    result = execute("disk_space", {})
    assert result["status"] == "unavailable"
    assert result["summary"].startswith("probe failed: TypeError")


def test_the_child_rejects_a_bad_context():
    out = subprocess.run(
        [sys.executable, "-m", "crashcart.probes", "disk_space", "--context", "[1"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert '"status": "unavailable"' in out.stdout
    assert "--context is not JSON" in out.stdout


def test_whatever_a_probe_prints_stays_off_the_result_line(monkeypatch, capfd):
    from crashcart.probes.child import main

    monkeypatch.setitem(probes.REGISTRY, "disk_space", ("builtins", "print"))
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # main() rebinds it; restore it afterwards
    # builtins.print(context) prints "{}" and returns None: the noise must go to stderr.
    main(["disk_space"])
    captured = capfd.readouterr()
    assert captured.out.strip().startswith('{"status": "unavailable"')
    assert "{}" in captured.err


# -- pure helpers ----------------------------------------------------------------------------------


def test_kernel_source_follows_cuda_binary_and_ptx_compatibility():
    archs = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    assert kernel_source((8, 9), archs) == "sm_80"  # same major, higher minor: sm_80 cubin runs
    assert kernel_source((9, 0), archs) == "sm_90"
    assert kernel_source((12, 0), archs) is None  # Blackwell on a build without sm_120: no image
    assert kernel_source((12, 0), [*archs, "compute_90"]) == "compute_90"  # PTX JIT
    assert kernel_source((9, 0), ["sm_90a"]) == "sm_90a"
    assert kernel_source((10, 0), ["sm_90a"]) is None
    assert kernel_source((12, 0), ["sm_100", "sm_120"]) == "sm_120"


def test_driver_supports_minor_version_compatibility():
    assert driver_supports((12, 2), (12, 4))
    assert not driver_supports((11, 8), (12, 1))


def test_alloc_conf(monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128,expandable_segments:True")
    assert alloc_conf()["expandable_segments"] is True
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF")
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    assert alloc_conf() == {"PYTORCH_CUDA_ALLOC_CONF": None, "expandable_segments": False}


def test_parse_gpu_processes():
    text = "GPU:0\nprocess       1234 uses     2048.000 MB GPU memory\nprocess 99 uses 10.5 MB GPU memory"
    assert parse_gpu_processes(text) == [
        {"pid": 1234, "used_mib": 2048.0},
        {"pid": 99, "used_mib": 10.5},
    ]
    assert parse_gpu_processes("GPU:0\nno processes are running") == []


def test_analyze_probe_feeds_the_verdict_back_into_the_report(tmp_path) -> None:
    """analyze --probe on a real disk-full log: the disk_space probe runs here, for real."""
    result = run_crashcart(
        "analyze",
        "--json",
        "--probe",
        "rules/examples/disk_full/checkpoint.log",
        text=True,
        expected=[1],
    )
    top = json.loads(result.stdout)["diagnoses"][0]
    assert top["category"] == "disk_full"
    assert top["probe"]["name"] == "disk_space"
    assert top["probe"]["status"] in ("confirmed", "refuted", "inconclusive")
    if top["probe"]["status"] == "refuted":  # this machine's disks are not full
        assert "refuted by the disk_space probe" in top["reason"]


def test_probe_command_by_name_and_for_a_log() -> None:
    by_name = run_crashcart("probe", "cuda_memory", "--json", text=True, expected=[0, 1])
    (result,) = json.loads(by_name.stdout)
    assert result["status"] == "unavailable" or result["name"] == "cuda_memory"
    run_crashcart("probe", text=True, timeout=60, expected=[2])
