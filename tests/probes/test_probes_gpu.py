"""Every GPU probe for real on a CUDA machine; skipped with the reason where there is none."""

from __future__ import annotations

import pytest

from crashcart.probes import run_probe

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def cuda_gpu():
    """Skip the module unless torch sees a CUDA GPU."""
    try:
        import torch
    except ImportError:
        pytest.skip("no CUDA GPU: torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU: torch.cuda.is_available() is False")
    return torch


def _ran(result):
    assert result.status != "unavailable", result.summary
    return result


def test_cuda_memory_measures_the_gpu():
    result = _ran(
        run_probe("cuda_memory", {"gpu": 0, "requested_gib": 0.5, "rule": "cuda_oom.other_process"})
    )
    gpu = result.details["gpus"][0]
    assert gpu["index"] == 0 and gpu["total_gib"] > 0
    assert 0 <= gpu["free_gib"] <= gpu["total_gib"]
    assert result.status == ("confirmed" if gpu["other_processes_gib"] > 1.0 else "refuted")
    assert result.details["fits_now"] is (gpu["free_gib"] >= 0.5)


def test_cuda_memory_confirms_a_request_larger_than_the_gpu():
    result = _ran(
        run_probe("cuda_memory", {"gpu": 0, "requested_gib": 1e5, "rule": "cuda_oom.first_step"})
    )
    assert result.status == "confirmed"
    assert result.details["fits_now"] is False


def test_cuda_setup_finds_kernels_for_every_gpu():
    result = _ran(run_probe("cuda_setup", {"rule": "cuda_setup.no_kernel_image"}))
    assert result.status == "refuted", result.summary
    assert result.details["torch_cuda"]
    for device in result.details["devices"]:
        assert device["kernel_runs"] is True
        assert device["kernel_from"] is not None


def test_device_placement_reproduces_a_cuda_cpu_mismatch():
    context = {"devices": ["cuda:0", "cpu"], "category": "device_mismatch"}
    result = _ran(run_probe("device_placement", context))
    assert result.status == "confirmed", result.summary
    assert "same device" in result.details["mixed"][0]["error"]


def test_device_placement_notices_a_missing_ordinal():
    result = _ran(
        run_probe("device_placement", {"devices": ["cuda:99"], "category": "device_mismatch"})
    )
    assert result.status == "inconclusive"
    assert result.details["missing"] == ["cuda:99"]


def test_precision_backs_fp16_to_bf16(cuda_gpu):
    context = {"magnitude": 1e5, "dtype": "float16", "rule": "nan_loss.fp16_overflow"}
    result = _ran(run_probe("precision", context))
    assert result.details["fp16_overflows"] is True and result.details["bf16_overflows"] is False
    assert result.details["bf16_supported"] is cuda_gpu.cuda.is_bf16_supported()
    assert result.status == "confirmed"
    small = _ran(run_probe("precision", {**context, "magnitude": 100.0}))
    assert small.status == "refuted"


def test_cudnn_convolution_with_and_without_cudnn():
    context = {"dtype": "float16", "layout": "channels_last", "rule": "cudnn.not_supported"}
    result = _ran(run_probe("cudnn", context))
    assert result.details["cudnn_available"] is True
    assert isinstance(result.details["cudnn_version"], int)
    assert result.details["with_cudnn"]["ok"] and result.details["without_cudnn"]["ok"]
    assert result.details["max_difference"] < 0.05
    assert result.status == "refuted"


def test_gpu_health_burn_matches_the_cpu():
    result = _ran(run_probe("gpu_health", {"gpu": 0, "category": "gpu_hardware"}))
    burn = result.details["burn"][0]
    assert burn["matches_cpu"] is True
    assert burn["repeat_runs"] > 1 and burn["repeat_mismatches"] == 0
    assert result.status in ("refuted", "confirmed")  # ECC/Xid history may confirm a fault


def test_nccl_all_reduce(cuda_gpu):
    result = _ran(run_probe("nccl", {"rule": "nccl.generic"}))
    assert result.details["nccl_version"]
    rounds = result.details["rounds"]
    assert rounds[0]["world_size"] == 1 and rounds[0]["ok"], rounds[0]
    if cuda_gpu.cuda.device_count() > 1:
        assert rounds[-1]["world_size"] == min(cuda_gpu.cuda.device_count(), 8)
    assert result.status in ("refuted", "inconclusive")
