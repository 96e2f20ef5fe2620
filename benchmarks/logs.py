"""Generate large, noisy training logs for the benchmarks.

The lines are modelled on the real logs in corpus/: HF Trainer dicts, tqdm bars redrawn with
``\\r``, DeepSpeed and NCCL INFO chatter, Lightning and kohya progress, Python warnings, per-rank
prefixes, and a few real tracebacks copied from the corpus so the analyzer has work to do.
The output is deterministic for a given seed and size.
"""

from __future__ import annotations

import random
from pathlib import Path

_CORPUS = Path(__file__).resolve().parent.parent / "corpus"
_FAILURES = [
    "posted_cuda_oom_msswift_deepspeed_rank11/train.log",
    "posted_nccl_slowfast_system_error/train.log",
    "requires_grad_no_grad_loss/train.log",
    "posted_distributed_timeout_picotron_terminate/train.log",
]


def _noise(rng: random.Random, step: int) -> bytes:
    rank = rng.randrange(8)
    loss = 2.5 * (0.999**step) + rng.random() * 0.2
    kind = rng.random()
    if kind < 0.30:
        bar = "".join(
            f"\r{p:3d}%|{'#' * (p // 10):<10}| {p * 10}/1000 [00:{p:02d}<00:10, {8 + rng.random():.2f}it/s, loss={loss:.4f}]"
            for p in range(0, 100, 25)
        )
        return f"[rank{rank}]:{bar}\n".encode()
    if kind < 0.45:
        return (
            f"{{'loss': {loss:.4f}, 'grad_norm': {1 + rng.random():.3f}, "
            f"'learning_rate': {5e-5 * 0.999**step:.3e}, 'epoch': {step / 5000:.2f}}}\n"
        ).encode()
    if kind < 0.60:
        return (
            f"node{rank // 4}:{1000 + rank}:{2000 + rank} [{rank % 4}] NCCL INFO Channel "
            f"{rng.randrange(32):02d}/32 : {rank}[{rank}] -> {(rank + 1) % 8}[{(rank + 1) % 8}] via P2P/IPC\n"
        ).encode()
    if kind < 0.72:
        return (
            f"[2024-06-01 12:{step % 60:02d}:{rng.randrange(60):02d},{rng.randrange(1000):03d}] [INFO] "
            f"[logging.py:96:log_dist] [Rank {rank}] step={step}, skipped=0, lr=[{5e-5:.6f}], "
            f"mom=[(0.9, 0.999)]\n"
        ).encode()
    if kind < 0.80:
        return (
            f"steps: {step % 100:3d}%|#####     | {step}/100000 [01:00<09:00, 1.{rng.randrange(99):02d}it/s, "
            f"avr_loss={loss:.4f}]\n"
        ).encode()
    if kind < 0.88:
        return (
            b"/usr/lib/python3/site-packages/torch/utils/checkpoint.py:91: UserWarning: "
            b"None of the inputs have requires_grad=True. Gradients will be None\n"
        )
    if kind < 0.95:
        return (
            f"Epoch {step // 1000}: {rng.randrange(100)}%|####| {step % 1000}/1000 "
            f"[00:30<00:30, 30.{rng.randrange(9)}it/s, v_num=0, train_loss={loss:.3f}]\n"
        ).encode()
    return f"2024-06-01 12:00:00 - INFO - __main__ - Saving model checkpoint to out/checkpoint-{step}\n".encode()


def write_log(path: Path, size: int, seed: int = 0, failures: int = 4) -> Path:
    """Write a noisy log of about ``size`` bytes with ``failures`` real tracebacks spread in it."""
    rng = random.Random(seed)
    blocks = [(_CORPUS / name).read_bytes() for name in _FAILURES]
    marks = {int(size * (i + 1) / (failures + 1)) for i in range(failures)}
    path.parent.mkdir(parents=True, exist_ok=True)
    written = step = 0
    with path.open("wb") as handle:
        buffer: list[bytes] = []
        pending = sorted(marks)
        while written < size:
            line = _noise(rng, step)
            step += 1
            buffer.append(line)
            written += len(line)
            if pending and written >= pending[0]:
                block = blocks[len(pending) % len(blocks)]
                buffer.append(block)
                written += len(block)
                pending.pop(0)
            if len(buffer) >= 4096:
                handle.write(b"".join(buffer))
                buffer.clear()
        handle.write(b"".join(buffer))
    return path
