"""DataLoader worker processes that die from a signal (or exit) mid-epoch: real errors
raised in the main process by torch.utils.data.

Variants (--variant):
  sigbus    worker 1 gets SIGBUS while filling a batch (what an exhausted /dev/shm looks
            like) -> "DataLoader worker (pid N) is killed by signal: Bus error."   (shared_memory)
  sigkill   worker gets SIGKILL (what the kernel OOM killer does)
            -> "DataLoader worker (pid N) is killed by signal: Killed."           (host_oom)
  exit      worker process calls os._exit(1) (e.g. a native library aborting quietly)
            -> "DataLoader worker (pid(s) N) exited unexpectedly"                  (dataloader_worker)

The training loop logs normal progress with a tqdm bar before the crash.

Run: python corpus/generate/dataloader_crash.py --variant sigbus
"""
import argparse
import os
import signal
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, get_worker_info
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--variant", required=True, choices=["sigbus", "sigkill", "exit"])
p.add_argument("--fail-at", type=int, default=300, help="sample index at which a worker dies")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
args = p.parse_args()
torch.manual_seed(0)


class Images(Dataset):
    def __len__(self):
        return 512

    def __getitem__(self, i):
        epoch_mark = getattr(self, "epoch", 0)
        if epoch_mark == args.epochs - 1 and i == args.fail_at and get_worker_info() is not None:
            if args.variant == "sigbus":
                os.kill(os.getpid(), signal.SIGBUS)
            elif args.variant == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            else:
                os._exit(1)
        g = torch.Generator().manual_seed(i)
        x = torch.rand(3, 32, 32, generator=g)
        return x, int(x.mean() > 0.5)


ds = Images()
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2))
opt = torch.optim.Adam(model.parameters(), 1e-3)
for epoch in range(args.epochs):
    ds.epoch = epoch
    dl = DataLoader(ds, batch_size=16, shuffle=False, num_workers=args.workers)
    bar = tqdm(dl, desc=f"epoch {epoch}", file=sys.stdout, mininterval=0, ncols=90)
    for x, y in bar:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
print("finished")
