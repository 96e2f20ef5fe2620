"""The failure categories a diagnosis may carry (../shared/CATEGORIES.md, plus our additions)."""

from __future__ import annotations

CATEGORIES: dict[str, str] = {
    "cuda_oom": "GPU memory exhausted",
    "host_oom": "host RAM exhausted",
    "shared_memory": "/dev/shm exhausted (DataLoader workers)",
    "disk_full": "a filesystem is full",
    "nccl": "NCCL / collective communication error (not a timeout)",
    "distributed_timeout": "collective or rendezvous timeout / hang in distributed setup",
    "device_mismatch": "tensors on different devices",
    "dtype_mismatch": "tensors of incompatible dtypes",
    "shape_mismatch": "incompatible tensor shapes",
    "cudnn": "cuDNN failure",
    "requires_grad": "autograd: tensor without grad / leaf in-place",
    "autograd_graph": "autograd graph misuse",
    "ddp_unused_parameters": "DDP reduction errors from unused params",
    "nan_loss": "NaN / Inf in loss or gradients",
    "gradient_explosion": "loss/grad-norm blow-up without NaN",
    "cuda_device_assert": "device-side assertion (bad index/label)",
    "cuda_illegal_access": "illegal memory access / launch failure",
    "cuda_setup": "CUDA install / driver / arch problems",
    "gpu_hardware": "GPU hardware fault",
    "checkpoint_load": "loading a checkpoint/state_dict fails",
    "dataloader_worker": "DataLoader worker crash with no more specific cause",
    "import_error": "missing/incompatible package or extension",
    "config_error": "invalid training configuration",
    "loss_plateau": "loss not decreasing",
    "slow_training": "throughput degradation",
    "hang": "no progress",
    "unrecognised": "a failure no rule knows (reported with its fingerprint)",
}
