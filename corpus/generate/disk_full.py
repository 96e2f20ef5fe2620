"""disk_full: real ENOSPC failures while a training run writes checkpoints / metrics / logs.

--path is where the run writes; pass /dev/full (always "full", works anywhere) or a path
on a small filesystem that is already full (the corpus driver mounts a tiny tmpfs).

Variants (--variant):
  torch_save     trains a few hundred steps, then torch.save(model+optimizer state) fails
  save_every     saves a checkpoint every N steps; the first saves succeed into a
                 temp dir, the later one goes to --path (disk filled up mid-run)
  torch_save_legacy  same, with torch.save(..., _use_new_zipfile_serialization=False)
  json_metrics   trains, then writes metrics.json with json.dump -> OSError Errno 28
  logging_file   a logging.FileHandler on the full disk: every record prints
                 "--- Logging error ---" with the OSError, training itself continues
  numpy_save     np.save of embeddings at the end of training

Run: python corpus/generate/disk_full.py --variant torch_save --path /dev/full
"""
import argparse
import json
import logging
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--variant", required=True)
p.add_argument("--path", default="/dev/full")
p.add_argument("--steps", type=int, default=200)
p.add_argument("--log-every", type=int, default=20)
args = p.parse_args()
torch.manual_seed(0)

X = torch.randn(4096, 64)
Y = X[:, :8].sum(1, keepdim=True).tanh()
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

log = logging.getLogger("trainer")
if args.variant == "logging_file":
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s - %(message)s",
                        handlers=[logging.StreamHandler(sys.stdout)])
    fh = logging.FileHandler(args.path if args.path == "/dev/full" else os.path.join(args.path, "train.log"))
    fh.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    log.addHandler(fh)
    emit = log.info
else:
    def emit(msg):
        print(msg, flush=True)


def ckpt_path(name):
    return args.path if args.path == "/dev/full" else os.path.join(args.path, name)


tmp = tempfile.mkdtemp(prefix="ckpt_ok_")
for step in range(1, args.steps + 1):
    idx = torch.randint(0, len(X), (128,))
    loss = nn.functional.mse_loss(model(X[idx]), Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % args.log_every == 0:
        emit(f"step {step}/{args.steps} loss={loss.item():.5f}")
    if args.variant == "save_every" and step % 50 == 0:
        target = os.path.join(tmp, f"step_{step}.pt") if step < 150 else ckpt_path(f"step_{step}.pt")
        emit(f"saving checkpoint to {target}")
        torch.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict()}, target)

if args.variant == "torch_save":
    target = ckpt_path("final.pt")
    emit(f"training done, saving checkpoint to {target}")
    torch.save({"step": args.steps, "model": model.state_dict(), "optimizer": opt.state_dict()}, target)
elif args.variant == "torch_save_legacy":
    target = ckpt_path("model_legacy.pt")
    emit(f"exporting legacy-format checkpoint to {target}")
    torch.save(model.state_dict(), target, _use_new_zipfile_serialization=False)
elif args.variant == "json_metrics":
    target = ckpt_path("metrics.json")
    emit(f"writing metrics to {target}")
    with open(target, "w") as f:
        json.dump({"final_loss": loss.item(), "steps": args.steps,
                   "history": [float(i) for i in range(2000)]}, f, indent=2)
elif args.variant == "numpy_save":
    target = ckpt_path("embeddings.npy")
    emit(f"exporting hidden features to {target}")
    with torch.no_grad():
        feats = model[:4](X).numpy()
    with open(target, "wb") as f:
        np.save(f, feats)
emit("done")
