"""Two-process CPU DDP (gloo) training, launched with torchrun, that fails in
distributed-specific ways (or finishes healthily).

Launch: torchrun --nproc_per_node 2 corpus/generate/distributed.py --variant <v>

Variants (--variant):
  healthy        trains --steps steps and exits cleanly (destroy_process_group)
  hang_rank1     rank 1 stalls (sleep, e.g. a stuck data read) at --fail-step; rank 0 waits in
                 the DDP gradient all-reduce until the process-group timeout (--timeout s)
  badbatch_rank1 rank 1 gets a malformed batch (31 features instead of 32) at --fail-step and
                 dies with a real shape error; rank 0 is inside the DDP all-reduce and fails with
                 a gloo "Connection closed by peer" (the cause is on rank 1, rank 0 shows a symptom)
  alloc_rank1    rank 1 tries to allocate a huge buffer -> DefaultCPUAllocator error (host RAM);
                 rank 0 again only sees the peer disappear
  sigkill_rank1  rank 1 is SIGKILLed (OOM-killer style)            -> exitcode -9
  sigbus_rank1   rank 1 receives SIGBUS                             -> exitcode -7
  sigsegv_rank1  rank 1 receives SIGSEGV                            -> exitcode -11
  barrier_rank1_exits  rank 1 finishes early and exits cleanly while rank 0 enters a final
                 barrier() waiting for it

Standalone (no torchrun): --variant store_timeout runs only "rank 0" of a world of 2 with
init_method=tcp://, so the store never sees rank 1 -> DistStoreError / timeout.

Run: torchrun --nproc_per_node 2 corpus/generate/distributed.py --variant hang_rank1
"""
import argparse
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--variant", required=True)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--fail-step", type=int, default=25)
p.add_argument("--timeout", type=float, default=5.0)
p.add_argument("--log-every", type=int, default=5)
p.add_argument("--port", type=int, default=29533)
args = p.parse_args()

# send this process's stdout into its stderr stream, so that torchrun's per-rank stderr log
# (--redirects) holds the rank's whole output in order
os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

if args.variant == "store_timeout":
    print(f"[rank 0] init_process_group(gloo, tcp://127.0.0.1:{args.port}, world_size=2, timeout={args.timeout}s)",
          flush=True)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=0, world_size=2,
                            timeout=timedelta(seconds=args.timeout))
    print("[rank 0] joined", flush=True)
    sys.exit(0)

dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
print(f"[rank {rank}] initialized process group: backend=gloo world_size={world}", flush=True)

model = DDP(nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1)))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
w = torch.randn(32, 1, generator=torch.Generator().manual_seed(0))

for step in range(1, args.steps + 1):
    if rank == 1 and step == args.fail_step:
        if args.variant == "hang_rank1":
            print(f"[rank 1] step {step}: waiting for next shard ...", flush=True)
            time.sleep(args.timeout * 6)
        elif args.variant == "alloc_rank1":
            print(f"[rank 1] step {step}: building feature cache", flush=True)
            cache = torch.empty(2**22, 2**22)  # 64 TiB
        elif args.variant == "sigkill_rank1":
            os.kill(os.getpid(), signal.SIGKILL)
        elif args.variant == "sigbus_rank1":
            os.kill(os.getpid(), signal.SIGBUS)
        elif args.variant == "sigsegv_rank1":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif args.variant == "barrier_rank1_exits":
            print(f"[rank 1] shard exhausted at step {step}, leaving training loop", flush=True)
            break
    x = torch.randn(64, 31 if (args.variant == "badbatch_rank1" and rank == 1 and step == args.fail_step) else 32)
    y = x @ w + 0.1 * torch.randn(64, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % args.log_every == 0:
        print(f"[rank {rank}] step {step}/{args.steps} loss {loss.item():.4f}", flush=True)

if args.variant == "barrier_rank1_exits" and rank == 0:
    print("[rank 0] epoch done, waiting at barrier before checkpointing", flush=True)
if args.variant != "barrier_rank1_exits" or rank == 0:
    dist.barrier()
if rank == 0:
    print("[rank 0] training complete", flush=True)
dist.destroy_process_group()
