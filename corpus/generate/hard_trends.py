"""hard_trends: hard hangs, trend failures and scary-but-healthy runs, each a real (small, CPU) run.

Nothing in a log is written by hand: the log is the process's own stdout+stderr (torchrun cases
also keep one log per rank, from torchrun's --log-dir, as generate.py's run_case does). Sleeps
only stand in for a slow or stalled resource (a network mount, a remote shard).

    python corpus/generate/hard_trends.py --variant hang_faulthandler_dump
    python corpus/generate/hard_trends.py --record hang_faulthandler_dump   # -> corpus/<case>/

Variants (--variant):
  hang_faulthandler_dump       logging lines every ~0.2 s; a prefetch thread feeds batches through
                               a bounded queue; at shard 2 its read on a "stalled NFS mount" never
                               returns, the main thread waits in queue.get(); the run's own
                               faulthandler.dump_traceback_later(25, exit=True), re-armed every
                               step, dumps all thread stacks 25 s later and exits.
  hang_mp_queue_join_sigterm   run under `timeout -s TERM 38`: every 25 steps an eval subprocess
                               puts its predictions on a multiprocessing.Queue; the "full eval" at
                               step 50 puts more than a pipe buffer and the parent join()s the
                               child before get() (the documented Queue/join deadlock); `timeout`
                               sends SIGTERM ~27 s later, the run's SIGTERM handler logs, saves an
                               emergency checkpoint and exits 143.
  hang_collate_lock_watchdog   DataLoader(num_workers=0) whose collate_fn encodes texts through a
                               token cache guarded by a threading.Lock; when the cache is full,
                               encode() calls _evict(), which takes the same (non-reentrant) lock:
                               the main thread deadlocks on itself. A watchdog thread logs "no
                               progress for N s", dumps the stacks with faulthandler, os._exit(2).
  hang_worker_queue_sigint     HF-example-style logging (mm/dd/YYYY timestamps); an
                               IterableDataset in 2 DataLoader workers pulls records from a feeder
                               process through a multiprocessing.Queue; the feeder's read of shard
                               3 stalls, the workers block in q.get(), the main process waits on
                               the DataLoader forever (timeout=0); a timer sends SIGINT (the
                               operator's Ctrl-C) ~30 s later: KeyboardInterrupt traceback.
  ddp_hang_rank1_stall_faulthandler  torchrun, 2 ranks, gloo (timeout 1800 s): rank 1's read
                               stalls at step 40, rank 0 waits in the DDP all-reduce; both ranks'
                               faulthandler.dump_traceback_later(25, exit=True) dump the stacks
                               and exit 1; torchrun reports ChildFailedError.
  ddp_diverge_lr_world_size    torchrun, 2 ranks: full-shard GD on a linear model whose lr was
                               scaled by world_size; one input direction is just past the
                               stability limit: loss and grad_norm fall, then grow ~18% a step.
                               Rank 1 warns about its shard; the run ends with "checkpoint saved"
                               and "training complete".
  diverge_warmup_never_ends_hf_dicts  HF-Trainer-style dict lines plus a tqdm bar: the linear
                               warm-up is computed over all epochs' steps (warmup == total), so the
                               SGD lr keeps rising past the stable limit: the loss falls, then
                               grows; the run ends with {'train_runtime': ...} and a clean exit.
  plateau_collate_shuffles_labels  HF-style dicts + tqdm + eval dicts: a collate_fn "augmentation"
                               shuffles the labels within each batch, so labels are independent of
                               inputs: loss stays at ln(10) for 120 steps.
  ddp_plateau_zero_grad_before_step  torchrun, 2 ranks: grad accumulation refactor calls
                               zero_grad() between backward() and step(), so Adam never sees a
                               gradient; rank 0 logs a flat loss, rank 1 a warning.
  ddp_leak_epoch_outputs_graph torchrun, 2 ranks: after each step every rank re-runs the batch
                               outside torch.no_grad() and keeps the logits for an epoch-end AUROC:
                               each keeps its graph and the input batch; rss (rank 0) grows by
                               ~0.6 GB; the run then logs the metric, "checkpoint saved", exits 0.
  leak_tqdm_logits_history     single process, tqdm bar whose postfix carries rss=NMB; post-step
                               logits for a confusion matrix are computed with grad and kept, each
                               holding its graph; the log ends with a harmless UserWarning.
  overfit_hf_dicts_noisy_eval  HF-Trainer-style dicts: wide MLP on 192 noisy samples, eval every
                               20 steps on 512 samples; eval_loss bottoms out then rises while
                               train loss falls; ends with "Training completed".
  ddp_overfit_best_checkpoint  torchrun, 2 ranks: all-reduced train/val loss per epoch, logging
                               with asctime, "saved best checkpoint" lines, ends with "training
                               complete (best val_loss ...)" after val loss rose for many epochs.
  ddp_slow_rank1_straggler_tqdm  torchrun, 2 ranks: rank 0 shows a tqdm bar; after step 70
                               rank 1's reads fall back to a slow network filesystem (sleep), so
                               rank 0 waits in the all-reduce: it/s drops to ~1/6 and stays.
  slow_remote_shard_samples_s  DataLoader(num_workers=2): the first 2240 samples come from a local
                               cache, the rest from a "remote shard" (sleep per sample): samples/s
                               in the logging lines falls to a fraction of its history.
  ddp_dataloader_segfault_rank1  torchrun, 2 ranks: on rank 1 a DataLoader worker's "native decoder"
                               (ctypes.string_at(0)) segfaults; rank 1 gets "DataLoader worker
                               (pid N) is killed by signal: Segmentation fault", rank 0's all-reduce
                               loses its peer; torchrun's ChildFailedError closes the log.
  dataloader_libc_exit_emergency_ckpt  tqdm + HF dicts; a worker's "native tokenizer" calls libc
                               exit(3) on a bad record: "DataLoader worker (pid(s) N) exited
                               unexpectedly"; the loop logs the exception, saves an emergency
                               checkpoint and logs that as its last line.
  healthy_logged_corrupt_records  jsonl dataset with two corrupt records: the dataset logs each
                               with logging.exception (JSONDecodeError traceback) and skips it;
                               training continues and finishes normally.
  healthy_fp16_scaler_overflow_early  CPU fp16 autocast + torch.amp.GradScaler(init_scale=2**24):
                               the first steps overflow; each is logged ("gradient overflow ...
                               loss scale reduced to N"), the scale settles and training is stable.
  ddp_healthy_spike_recovers_warnings  torchrun, 2 ranks: rank 1 warns about a batch with
                               unnormalised targets; loss and grad_norm spike at that step, clipping
                               holds, the loss recovers; clean finish.
  healthy_eval_ckpt_throughput_dips  tqdm bars with it/s: every 40 steps an eval bar runs and a
                               checkpoint is saved; the training bar's it/s dips and recovers.
  healthy_noisy_eval_many_warnings  HF-style dicts, many real library warnings (nested tensor,
                               DataLoader worker count, tensor copy-construct), eval on a small set:
                               eval_loss noisy but not rising.
  healthy_rss_cache_warm_then_flat  a dataset that caches decoded samples: rss rises ~0.7 GB
                               through the first epoch, then stays flat for two more.
"""

import argparse
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "corpus")

H, M = "hard", "medium"
# variant -> (case name, category, rule, framework, difficulty)
CASES = {
    "hang_faulthandler_dump": ("hard_hang_faulthandler_dump", "hang", "hang.stall_reported", "pytorch", H),
    "hang_mp_queue_join_sigterm": (
        "hard_hang_mp_queue_join_timeout_sigterm",
        "hang",
        "hang.silence",
        "pytorch",
        H,
    ),
    "hang_collate_lock_watchdog": (
        "hard_hang_collate_lock_deadlock_watchdog",
        "hang",
        "hang.stall_reported",
        "pytorch",
        H,
    ),
    "hang_worker_queue_sigint": (
        "hard_hang_dataloader_worker_queue_sigint",
        "hang",
        "hang.silence",
        "pytorch",
        H,
    ),
    "ddp_hang_rank1_stall_faulthandler": (
        "hard_hang_ddp_rank1_stall_faulthandler",
        "hang",
        "hang.stall_reported",
        "pytorch",
        H,
    ),
    "ddp_diverge_lr_world_size": (
        "hard_diverge_ddp_lr_world_size",
        "gradient_explosion",
        "gradient_explosion.diverging",
        "pytorch",
        H,
    ),
    "diverge_warmup_never_ends_hf_dicts": (
        "hard_diverge_warmup_never_ends_hf_dicts",
        "gradient_explosion",
        "gradient_explosion.diverging",
        "pytorch",
        H,
    ),
    "plateau_collate_shuffles_labels": (
        "hard_plateau_collate_shuffles_labels",
        "loss_plateau",
        "loss_plateau.no_progress",
        "pytorch",
        H,
    ),
    "ddp_plateau_zero_grad_before_step": (
        "hard_plateau_ddp_zero_grad_before_step",
        "loss_plateau",
        "loss_plateau.no_progress",
        "pytorch",
        H,
    ),
    "ddp_leak_epoch_outputs_graph": (
        "hard_leak_ddp_epoch_outputs_graph",
        "memory_leak",
        "memory_leak.growth",
        "pytorch",
        H,
    ),
    "leak_tqdm_logits_history": (
        "hard_leak_tqdm_logits_history",
        "memory_leak",
        "memory_leak.growth",
        "pytorch",
        H,
    ),
    "overfit_hf_dicts_noisy_eval": (
        "hard_overfit_hf_dicts_noisy_eval",
        "overfitting",
        "overfitting.validation_rising",
        "pytorch",
        H,
    ),
    "ddp_overfit_best_checkpoint": (
        "hard_overfit_ddp_best_checkpoint",
        "overfitting",
        "overfitting.validation_rising",
        "pytorch",
        H,
    ),
    "ddp_slow_rank1_straggler_tqdm": (
        "hard_slow_ddp_rank1_straggler_tqdm",
        "slow_training",
        "slow_training.throughput_drop",
        "pytorch",
        H,
    ),
    "slow_remote_shard_samples_s": (
        "hard_slow_remote_shard_samples_s",
        "slow_training",
        "slow_training.throughput_drop",
        "pytorch",
        H,
    ),
    "ddp_dataloader_segfault_rank1": (
        "hard_dataloader_worker_segfault_ddp_rank1",
        "dataloader_worker",
        "dataloader_worker.crashed",
        "pytorch",
        H,
    ),
    "dataloader_libc_exit_emergency_ckpt": (
        "hard_dataloader_worker_libc_exit_emergency_ckpt",
        "dataloader_worker",
        "dataloader_worker.crashed",
        "pytorch",
        H,
    ),
    "healthy_logged_corrupt_records": (
        "hard_healthy_logged_corrupt_records",
        "none",
        None,
        "pytorch",
        H,
    ),
    "healthy_fp16_scaler_overflow_early": (
        "hard_healthy_fp16_scaler_overflow_early",
        "none",
        None,
        "pytorch",
        H,
    ),
    "ddp_healthy_spike_recovers_warnings": (
        "hard_healthy_ddp_spike_recovers_warnings",
        "none",
        None,
        "pytorch",
        H,
    ),
    "healthy_eval_ckpt_throughput_dips": (
        "hard_healthy_eval_ckpt_throughput_dips",
        "none",
        None,
        "pytorch",
        H,
    ),
    "healthy_noisy_eval_many_warnings": (
        "hard_healthy_noisy_eval_many_warnings",
        "none",
        None,
        "pytorch",
        H,
    ),
    "healthy_rss_cache_warm_then_flat": (
        "hard_healthy_rss_cache_warm_then_flat",
        "none",
        None,
        "pytorch",
        H,
    ),
}
# where a second category is a fair top answer
ALTERNATIVES = {
    "ddp_hang_rank1_stall_faulthandler": ["distributed_timeout"],
}
# variants run under a wall-clock limit: `timeout -s TERM <seconds>`
TIMEOUT_TERM = {"hang_mp_queue_join_sigterm": 38}

p = argparse.ArgumentParser()
p.add_argument("--variant")
p.add_argument("--record")
args = p.parse_args()


def record(variant):
    import glob

    import torch

    name, category, rule, framework, difficulty = CASES[variant]
    script = os.path.relpath(os.path.abspath(__file__), ROOT)
    argv = [script, "--variant", variant]
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="100")
    t0 = time.time()
    real, shown = [sys.executable, *argv], ["python", *argv]
    logdir = None
    if variant.startswith("ddp_"):
        logdir = tempfile.mkdtemp(prefix="torchrun_logs_")
        tr = [os.path.join(os.path.dirname(sys.executable), "torchrun"), "--nproc_per_node=2"]
        real = [*tr, "--log-dir", logdir, "--redirects", "3", "--tee", "3", *argv]
        shown = [
            "torchrun",
            "--nproc_per_node=2",
            "--log-dir",
            "LOGDIR",
            "--redirects",
            "3",
            "--tee",
            "3",
            *argv,
        ]
    if variant in TIMEOUT_TERM:
        wrap = ["timeout", "-s", "TERM", str(TIMEOUT_TERM[variant])]
        real, shown = wrap + real, wrap + shown
    r = subprocess.run(real, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out_dir = os.path.join(CORPUS, name)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    tv = torch.__version__.split("+")[0]
    head = (
        f"# crashcart-corpus: command={' '.join(shown)}\n"
        f"# torch={tv} device=cpu python={platform.python_version()}\n"
    )
    with open(os.path.join(out_dir, "train.log"), "wb") as f:
        f.write(head.encode())
        f.write(r.stdout)
    if logdir:
        for rank_dir in sorted(glob.glob(os.path.join(logdir, "*", "attempt_0", "*"))):
            rank = os.path.basename(rank_dir)
            with open(os.path.join(out_dir, f"rank{rank}.log"), "wb") as f:
                f.write(head.encode())
                f.write(
                    f"# per-rank log: local_rank={rank} (torchrun --log-dir stderr.log)\n".encode()
                )
                for part in ("stdout.log", "stderr.log"):
                    with open(os.path.join(rank_dir, part), "rb") as src:
                        f.write(src.read())
        shutil.rmtree(logdir, ignore_errors=True)
    alts = ALTERNATIVES.get(variant, [])
    lines = [f"category: {category}", f"alternatives: [{', '.join(alts)}]"]
    if rule:
        lines.append(f"rule: {rule}")
    lines += [
        f"source: generated-by {script}",
        f"framework: {framework}",
        f"torch: {tv}",
        "device: cpu",
        f"difficulty: {difficulty}",
    ]
    with open(os.path.join(out_dir, "expected.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{name:50s} rc={r.returncode} {time.time() - t0:6.1f}s {len(r.stdout):8d} bytes")


if args.record:
    record(args.record)
    sys.exit(0)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.manual_seed(0)
torch.set_num_threads(1)
warnings.simplefilter("default")
V = args.variant
LOGFMT = "%(asctime)s %(levelname)s [%(name)s] %(message)s"


def _log(name="train", fmt=LOGFMT, **kw):
    logging.basicConfig(level=logging.INFO, format=fmt, **kw)
    return logging.getLogger(name)


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _cls_data(n=4096, dim=32, n_cls=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, dim, generator=g)
    W = torch.randn(dim, n_cls, generator=g)
    Y = (X @ W + 0.5 * torch.randn(n, n_cls, generator=g)).argmax(1)
    return X, Y


def _ddp_init(timeout_s=60):
    """torchrun rank setup; stdout goes into stderr so the per-rank stderr log holds it all."""
    from datetime import timedelta

    import torch.distributed as dist

    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout_s))
    return dist, dist.get_rank(), dist.get_world_size()


def _mlp(i, h, o):
    return nn.Sequential(nn.Linear(i, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, o))


# ---------------------------------------------------------------------------------------- hangs
def hang_faulthandler_dump():
    import faulthandler
    import queue
    import threading

    log = _log()
    X, Y = _cls_data(8192, 32, 4)
    q = queue.Queue(maxsize=4)

    def read_shard(shard, b):
        if shard == 2 and b == 7:
            time.sleep(3600)  # this read on the stalled NFS mount never returns
        time.sleep(0.15)  # a normal read from the mount
        idx = torch.randint(0, 8192, (64,))
        return X[idx], Y[idx]

    def prefetch():
        for shard in range(50):
            for b in range(20):
                q.put(read_shard(shard, b))

    threading.Thread(target=prefetch, name="shard-prefetch", daemon=True).start()
    model = _mlp(32, 128, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    log.info("data: /mnt/nfs/shards/train-{00000..00049}.pt, prefetch depth 4, batch 64")
    log.info("stall watchdog: faulthandler.dump_traceback_later(25, exit=True)")
    for step in range(1, 1001):
        faulthandler.dump_traceback_later(25, exit=True)
        x, y = q.get()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.info("step %d loss %.4f lr %.2e", step, loss.item(), 1e-3)


def hang_mp_queue_join_sigterm():
    import multiprocessing as mp
    import signal

    log = _log()
    tmp = tempfile.mkdtemp()
    model = _mlp(32, 128, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    X, Y = _cls_data(8192, 32, 4)
    state = {"step": 0, "last": time.time()}

    def on_sigterm(signum, frame):
        log.warning(
            "received signal %d at step %d (last step finished %.1f s ago); saving "
            "emergency checkpoint",
            signum,
            state["step"],
            time.time() - state["last"],
        )
        torch.save({"model": model.state_dict(), "step": state["step"]}, os.path.join(tmp, "em.pt"))
        log.warning("emergency checkpoint saved to %s/em.pt; exiting with code 143", tmp)
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)
    ctx = mp.get_context("fork")

    def evaluate(weights, n, q):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        m = _mlp(32, 128, 4)
        m.load_state_dict(weights)
        with torch.no_grad():
            logits = m(X[-n:])
        q.put({"loss": F.cross_entropy(logits, Y[-n:]).item(), "logits": logits.numpy()})

    for step in range(1, 10001):
        time.sleep(0.12)  # data loading from the shared filesystem
        idx = torch.randint(0, 6000, (64,))
        loss = F.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        state["step"], state["last"] = step, time.time()
        log.info("step %d loss %.4f", step, loss.item())
        if step % 25 == 0:
            n = 16 if step % 50 else 8192  # quick eval, or the full eval every 50 steps
            q = ctx.Queue()
            proc = ctx.Process(target=evaluate, args=(model.state_dict(), n, q), daemon=True)
            proc.start()
            proc.join()  # waits for the child, which waits for q to be drained
            res = q.get()
            log.info("eval step %d eval_samples %d eval_loss %.4f", step, n, res["loss"])


def hang_collate_lock_watchdog():
    import faulthandler
    import threading

    from torch.utils.data import DataLoader, Dataset

    log = _log()

    class TokenCache:
        def __init__(self, capacity=6000):
            self.lock = threading.Lock()
            self.cache, self.capacity = {}, capacity

        def encode(self, text):
            with self.lock:
                if text not in self.cache:
                    if len(self.cache) >= self.capacity:
                        self._evict()
                    self.cache[text] = hash(text) % 1000
                return self.cache[text]

        def _evict(self):
            with self.lock:  # already held by encode(): threading.Lock is not reentrant
                for k in list(self.cache)[: self.capacity // 4]:
                    del self.cache[k]

    tok = TokenCache()

    class Texts(Dataset):
        def __len__(self):
            return 100000

        def __getitem__(self, i):
            g = torch.Generator().manual_seed(i)
            time.sleep(0.012)  # read from the document store
            ids = torch.randint(0, 200000, (8,), generator=g).tolist()
            return [f"w{j}" for j in ids], i % 2

    def collate(batch):
        ids = torch.tensor([[tok.encode(w) for w in ws] for ws, _ in batch])
        return ids, torch.tensor([lab for _, lab in batch])

    progress = {"step": 0, "t": time.time()}

    def watchdog(limit=25.0):
        while True:
            time.sleep(1.0)
            idle = time.time() - progress["t"]
            if idle > limit:
                log.error(
                    "watchdog: no training progress for %.1f s (last step %d); dumping "
                    "stacks and aborting",
                    idle,
                    progress["step"],
                )
                faulthandler.dump_traceback(all_threads=True)
                os._exit(2)

    threading.Thread(target=watchdog, name="watchdog", daemon=True).start()
    emb = nn.EmbeddingBag(1000, 64)
    head = nn.Linear(64, 2)
    opt = torch.optim.Adam([*emb.parameters(), *head.parameters()], lr=1e-3)
    dl = DataLoader(Texts(), batch_size=16, shuffle=True, collate_fn=collate)
    log.info("token cache capacity %d, batch 16, watchdog limit 25 s", tok.capacity)
    for step, (ids, y) in enumerate(dl, 1):
        loss = F.cross_entropy(head(emb(ids)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        progress["step"], progress["t"] = step, time.time()
        log.info("step %d loss %.4f cache_size %d", step, loss.item(), len(tok.cache))


def hang_worker_queue_sigint():
    import multiprocessing as mp
    import signal
    import threading

    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    log = _log(
        "__main__",
        "%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%m/%d/%Y %H:%M:%S",
    )
    ctx = mp.get_context("fork")
    q = ctx.Queue(maxsize=256)

    def feeder(q):
        g = torch.Generator().manual_seed(0)
        for shard in range(100):
            for rec in range(400):
                if shard == 3:
                    time.sleep(3600)  # shard 3's object-store read never completes
                time.sleep(0.004)
                q.put((torch.randn(32, generator=g), rec % 4))

    class Stream(IterableDataset):
        def __iter__(self):
            get_worker_info()
            while True:
                yield q.get()  # no timeout: waits as long as the feeder does

    ctx.Process(target=feeder, args=(q,), daemon=True).start()
    threading.Timer(40.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()  # Ctrl-C
    dl = DataLoader(Stream(), batch_size=32, num_workers=2)
    model = _mlp(32, 64, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    log.info("***** Running training *****")
    log.info("  Streaming dataset from feeder process, num_workers = 2, batch size = 32")
    step = 0
    try:
        for step, (x, y) in enumerate(dl, 1):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 2 == 0:
                log.info({"loss": round(loss.item(), 4), "learning_rate": 0.05, "step": step})
    except KeyboardInterrupt:
        log.warning("KeyboardInterrupt received after step %d; shutting down", step)
        raise


def ddp_hang_rank1_stall_faulthandler():
    import faulthandler

    from torch.nn.parallel import DistributedDataParallel as DDP

    _dist, rank, world = _ddp_init(timeout_s=1800)
    log = _log(f"rank{rank}")
    model = DDP(_mlp(32, 128, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    X, Y = _cls_data(8192, 32, 4, seed=rank)
    log.info("process group ready: backend=gloo world_size=%d timeout=1800s", world)
    for step in range(1, 1001):
        faulthandler.dump_traceback_later(25, exit=True)
        time.sleep(0.15)  # read the next batch from the shared filesystem
        if rank == 1 and step == 40:
            time.sleep(3600)  # rank 1's read of a file on a hung mount never returns
        idx = torch.randint(0, 8192, (64,))
        loss = F.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.info("step %d loss %.4f", step, loss.item())


# --------------------------------------------------------------------------- gradient explosion
def ddp_diverge_lr_world_size():
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist, rank, world = _ddp_init()
    log = _log(f"rank{rank}")
    g = torch.Generator().manual_seed(rank)
    X = torch.randn(2048, 8, generator=g)
    X[:, 0] *= 3
    w_true = torch.tensor([[0.01], [1.0], [-0.5], [0.3], [0.0], [0.2], [0.7], [-0.4]])
    Y = X @ w_true + 0.05 * torch.randn(2048, 1, generator=g)
    lin = nn.Linear(8, 1, bias=False)
    nn.init.zeros_(lin.weight)
    model = DDP(lin)
    base_lr = 0.058
    lr = base_lr * world  # "linear scaling rule", on full-shard gradient descent
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    if rank == 0:
        log.info("base_lr=%g world_size=%d -> lr=%g, full-shard GD, 120 steps", base_lr, world, lr)
    if rank == 1:
        warnings.warn(
            "shard 1: 37 rows with missing 'age' filled with 0.0", UserWarning, stacklevel=1
        )
    for step in range(1, 121):
        loss = F.mse_loss(model(X), Y)
        opt.zero_grad()
        loss.backward()
        gn = torch.linalg.vector_norm(lin.weight.grad)
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        if rank == 0 and step % 2 == 0:
            log.info(
                "step %d loss %.6f grad_norm %.4f lr %.4f", step, avg.item() / world, gn.item(), lr
            )
    if rank == 0:
        tmp = tempfile.mkdtemp()
        torch.save(lin.state_dict(), os.path.join(tmp, "final.pt"))
        log.info("checkpoint saved to %s/final.pt", tmp)
        log.info("training complete")
    dist.destroy_process_group()


def diverge_warmup_never_ends_hf_dicts():
    from tqdm import tqdm

    g = torch.Generator().manual_seed(0)
    X = torch.randn(4096, 16, generator=g)
    X[:, :4] *= 2.5
    Y = X[:, :6].sum(1, keepdim=True) * 0.3 + 0.1 * torch.randn(4096, 1, generator=g)
    model = nn.Linear(16, 1)
    epochs, steps_per_epoch = 4, 40
    total = epochs * steps_per_epoch
    warmup = steps_per_epoch * epochs  # meant: warmup_ratio * total; gives warm-up == whole run
    peak = 0.22
    opt = torch.optim.SGD(model.parameters(), lr=peak)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    warnings.warn(
        "`resume_download` is deprecated and will be removed in version 1.0.0.",
        FutureWarning,
        stacklevel=1,
    )
    print(
        f"***** Running training *****\n  Num examples = 4096\n  Num Epochs = {epochs}\n"
        f"  Total optimization steps = {total}\n  Warmup steps = {warmup}"
    )
    bar = tqdm(total=total, file=sys.stdout, mininterval=0, ncols=100)
    gen = torch.Generator().manual_seed(1)
    for step in range(1, total + 1):
        idx = torch.randint(0, 4096, (512,), generator=gen)
        loss = F.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
        opt.step()
        sched.step()
        bar.update(1)
        if step % 4 == 0:
            bar.write(
                str(
                    {
                        "loss": round(loss.item(), 4),
                        "grad_norm": round(gn.item(), 4),
                        "learning_rate": sched.get_last_lr()[0],
                        "epoch": round(step / steps_per_epoch, 2),
                    }
                )
            )
    bar.close()
    print(
        str(
            {
                "train_runtime": round(bar.format_dict["elapsed"], 4),
                "train_steps_per_second": round(total / bar.format_dict["elapsed"], 3),
                "train_loss": round(loss.item(), 4),
                "epoch": float(epochs),
            }
        )
    )
    print("Training completed.")


# -------------------------------------------------------------------------------- loss plateau
def plateau_collate_shuffles_labels():
    import random

    from torch.utils.data import DataLoader, TensorDataset
    from tqdm import tqdm

    X, Y = _cls_data(16384, 32, 10, seed=3)
    rnd = random.Random(0)

    def collate(batch):
        xs = torch.stack([b[0] for b in batch])
        labels = [b[1] for b in batch]
        rnd.shuffle(labels)  # meant to shuffle the (x, y) pairs; shuffles the labels alone
        return xs, torch.stack(labels)

    dl = DataLoader(
        TensorDataset(X[:15000], Y[:15000]),
        batch_size=256,
        shuffle=True,
        collate_fn=collate,
        drop_last=True,
    )
    model = _mlp(32, 256, 10)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    warnings.warn(
        "torch.utils._pytree._register_pytree_node is deprecated. Please use "
        "torch.utils._pytree.register_pytree_node instead.",
        FutureWarning,
        stacklevel=1,
    )
    total = 174
    print(
        f"***** Running training *****\n  Num examples = 15000\n  Total optimization "
        f"steps = {total}"
    )
    bar = tqdm(total=total, file=sys.stdout, mininterval=0, ncols=100)
    step = 0
    for _epoch in range(3):
        for x, y in dl:
            step += 1
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            bar.update(1)
            if step % 2 == 0:
                bar.write(
                    str(
                        {
                            "loss": round(loss.item(), 4),
                            "grad_norm": round(gn.item(), 4),
                            "learning_rate": 1e-3,
                            "epoch": round(step / 58, 2),
                        }
                    )
                )
            if step % 58 == 0:
                with torch.no_grad():
                    el = F.cross_entropy(model(X[15000:]), Y[15000:]).item()
                bar.write(
                    str(
                        {
                            "eval_loss": round(el, 4),
                            "eval_runtime": 0.05,
                            "epoch": round(step / 58, 2),
                        }
                    )
                )
    bar.close()
    print("Training completed. Do not forget to share your model on huggingface.co/models =)")


def ddp_plateau_zero_grad_before_step():
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist, rank, world = _ddp_init()
    log = _log(f"rank{rank}")
    g = torch.Generator().manual_seed(rank)
    X = torch.randn(8192, 24, generator=g)
    Y = torch.sin(X[:, :4]).sum(1, keepdim=True)
    model = DDP(nn.Sequential(nn.Linear(24, 128), nn.SiLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    accum = 2
    if rank == 1:
        warnings.warn(
            "Detected call of `lr_scheduler.step()` before `optimizer.step()`.",
            UserWarning,
            stacklevel=1,
        )
    if rank == 0:
        log.info("grad accumulation %d, world_size %d, lr 1e-3", accum, world)
    for step in range(1, 241):
        idx = torch.randint(0, 8192, (512,), generator=g)
        loss = F.mse_loss(model(X[idx]), Y[idx])
        loss.backward()
        if step % accum == 0:
            opt.zero_grad()  # belongs after step(): the gradients are gone before Adam sees them
            opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        if rank == 0 and step % 2 == 0:
            log.info("step %d loss %.4f", step, avg.item() / world)
    if rank == 0:
        log.info("training finished")
    dist.destroy_process_group()


# --------------------------------------------------------------------------------- memory leak
def ddp_leak_epoch_outputs_graph():
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist, rank, _world = _ddp_init()
    log = _log(f"rank{rank}")
    model = DDP(
        nn.Sequential(nn.Flatten(), nn.Linear(3 * 48 * 48, 256), nn.ReLU(), nn.Linear(256, 2))
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    outputs, labels = [], []
    if rank == 1:
        warnings.warn(
            "find_unused_parameters=True was specified in DDP constructor, but did not "
            "find any unused parameters",
            UserWarning,
            stacklevel=1,
        )
    for step in range(1, 61):
        x = torch.randn(384, 3, 48, 48)
        y = (x[:, 0, 8:24, 8:24].mean((1, 2)) > 0).long()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        # post-step predictions for the epoch-end AUROC, computed outside torch.no_grad():
        # each one keeps its autograd graph, and with it the whole input batch
        outputs.append(model.module(x))
        labels.append(y)
        if rank == 0:
            log.info("step %d loss %.4f rss %.1f MB", step, loss.item(), _rss_mb())
    with torch.no_grad():
        p_all = torch.cat(outputs).softmax(1)[:, 1]
        y_all = torch.cat(labels)
        pos, neg = p_all[y_all == 1][:2000], p_all[y_all == 0][:2000]
        auc = (pos[:, None] > neg[None, :]).float().mean().item()
    if rank == 0:
        log.info("epoch 0 auroc %.4f", auc)
        tmp = tempfile.mkdtemp()
        torch.save(model.module.state_dict(), os.path.join(tmp, "epoch0.pt"))
        log.info("checkpoint saved to %s/epoch0.pt", tmp)
    dist.destroy_process_group()


def leak_tqdm_logits_history():
    from tqdm import tqdm

    model = nn.Sequential(
        nn.Flatten(), nn.Linear(3 * 40 * 40, 1024), nn.GELU(), nn.Linear(1024, 10)
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    W = torch.randn(3 * 40 * 40, 10, generator=torch.Generator().manual_seed(0)) * 0.05
    history = []
    warnings.warn(
        "Using a target size (torch.Size([256])) that is different to the input size",
        UserWarning,
        stacklevel=1,
    )
    bar = tqdm(range(1, 97), desc="Epoch 0", file=sys.stdout, mininterval=0, ncols=120)
    for step in bar:
        x = torch.randn(256, 3, 40, 40)
        y = (x.flatten(1) @ W).argmax(1)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        # post-step logits "for the epoch-end confusion matrix", outside torch.no_grad():
        # every entry keeps its graph (and the input batch it saved)
        history.append({"step": step, "loss": loss.item(), "logits": model(x)})
        bar.set_postfix(loss=f"{loss.item():.3f}", rss=f"{_rss_mb():.0f}MB")
    bar.close()
    tmp = tempfile.mkdtemp()
    torch.save(model.state_dict(), os.path.join(tmp, "model.pt"))
    warnings.warn(
        "Positional args are being deprecated, use kwargs instead.", UserWarning, stacklevel=1
    )


# -------------------------------------------------------------------------------- overfitting
def overfit_hf_dicts_noisy_eval():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(704, 48, generator=g)
    Y = (X[:, 0] + X[:, 1] + 1.2 * torch.randn(704, generator=g) > 0).long()
    Xtr, Ytr, Xva, Yva = X[:192], Y[:192], X[192:], Y[192:]
    model = _mlp(48, 768, 2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    warnings.warn(
        "`evaluation_strategy` is deprecated and will be removed in version 4.46. "
        "Use `eval_strategy` instead",
        FutureWarning,
        stacklevel=1,
    )
    print("***** Running training *****\n  Num examples = 192\n  Total optimization steps = 360")
    gen = torch.Generator().manual_seed(1)
    for step in range(1, 361):
        idx = torch.randint(0, 192, (32,), generator=gen)
        loss = F.cross_entropy(model(Xtr[idx]), Ytr[idx])
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        if step % 10 == 0:
            print(
                {
                    "loss": round(loss.item(), 4),
                    "grad_norm": round(gn.item(), 4),
                    "learning_rate": 1e-3,
                    "epoch": round(step * 32 / 192, 2),
                }
            )
        if step % 20 == 0:
            with torch.no_grad():
                vi = torch.randint(0, 512, (256,), generator=gen)
                el = F.cross_entropy(model(Xva[vi]), Yva[vi]).item()
            print(
                {
                    "eval_loss": round(el, 4),
                    "eval_runtime": 0.012,
                    "epoch": round(step * 32 / 192, 2),
                }
            )
    print({"train_runtime": 4.2, "train_loss": round(loss.item(), 4), "epoch": 60.0})
    print("Training completed. Do not forget to share your model on huggingface.co/models =)")


def ddp_overfit_best_checkpoint():
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist, rank, world = _ddp_init()
    log = _log(f"rank{rank}")
    g = torch.Generator().manual_seed(0)
    X = torch.randn(1280, 64, generator=g)
    Y = (X[:, 0] + 0.8 * torch.randn(1280, generator=g) > 0).long()
    Xtr, Ytr = X[rank * 128 : (rank + 1) * 128], Y[rank * 128 : (rank + 1) * 128]
    Xva, Yva = (
        X[256 + rank * 512 : 256 + (rank + 1) * 512],
        Y[256 + rank * 512 : 256 + (rank + 1) * 512],
    )
    model = DDP(_mlp(64, 1024, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tmp = tempfile.mkdtemp()
    best = float("inf")
    if rank == 1:
        warnings.warn(
            "The epoch parameter in `scheduler.step()` was not necessary", UserWarning, stacklevel=1
        )
    for epoch in range(1, 36):
        model.train()
        perm = torch.randperm(128, generator=g)
        tl = torch.zeros(())
        for i in range(0, 128, 32):
            idx = perm[i : i + 32]
            loss = F.cross_entropy(model(Xtr[idx]), Ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tl += loss.detach() / 4
        model.eval()
        with torch.no_grad():
            vl = F.cross_entropy(model(Xva), Yva)
        stats = torch.stack([tl, vl])
        dist.all_reduce(stats)
        tl, vl = (stats / world).tolist()
        if rank == 0:
            log.info("epoch %d train_loss %.4f val_loss %.4f", epoch, tl, vl)
            if vl < best:
                best = vl
                torch.save(model.module.state_dict(), os.path.join(tmp, "best.pt"))
                log.info("saved best checkpoint (val_loss %.4f) to %s/best.pt", vl, tmp)
    if rank == 0:
        log.info("training complete; best checkpoint kept at %s/best.pt", tmp)
    dist.destroy_process_group()


# ------------------------------------------------------------------------------ slow training
def ddp_slow_rank1_straggler_tqdm():
    from torch.nn.parallel import DistributedDataParallel as DDP
    from tqdm import tqdm

    dist, rank, _world = _ddp_init()
    log = _log(f"rank{rank}")
    model = DDP(_mlp(64, 256, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    X, Y = _cls_data(8192, 64, 10, seed=rank)
    steps = 120
    bar = tqdm(range(1, steps + 1), desc="train", mininterval=0, ncols=100, disable=rank != 0)
    for step in bar:
        time.sleep(0.03)  # read from local page cache
        if rank == 1 and step > 70:
            time.sleep(0.2)  # cache evicted: rank 1 now reads over the network filesystem
        idx = torch.randint(0, 8192, (128,))
        loss = F.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
    bar.close()
    if rank == 0:
        log.info("training complete: %d steps", steps)
    dist.destroy_process_group()


def slow_remote_shard_samples_s():
    from torch.utils.data import DataLoader, Dataset

    log = _log()
    X, Y = _cls_data(8192, 32, 4)

    class Shards(Dataset):
        def __len__(self):
            return 8192

        def __getitem__(self, i):
            if i >= 2240:
                time.sleep(0.008)  # not in the local cache: fetched from the remote shard
            return X[i], Y[i]

    dl = DataLoader(Shards(), batch_size=32, num_workers=2)
    model = _mlp(32, 128, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    log.info("local cache: 2240 samples warm; remaining samples streamed from s3://bucket/train")
    t = time.time()
    for step, (x, y) in enumerate(dl, 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        now = time.time()
        if step % 2 == 0:
            log.info("step %d | loss %.4f | %.1f samples/s", step, loss.item(), 64 / (now - t))
            t = now
        if step == 110:
            break
    log.info("reached max_steps=110")


# ---------------------------------------------------------------------------- dataloader worker
def ddp_dataloader_segfault_rank1():
    import ctypes

    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, Dataset

    dist, rank, world = _ddp_init(timeout_s=60)
    log = _log(f"rank{rank}")

    class Images(Dataset):
        def __len__(self):
            return 4096

        def __getitem__(self, i):
            if rank == 1 and i == 1700:
                ctypes.string_at(0)  # the "native decoder" dereferences a NULL buffer
            time.sleep(0.002)
            return torch.randn(3, 16, 16), i % 10

    dl = DataLoader(Images(), batch_size=32, num_workers=2)
    model = DDP(
        nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(16, 10),
        )
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    log.info("world_size=%d, DataLoader num_workers=2", world)
    for step, (x, y) in enumerate(dl, 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            log.info("step %d loss %.4f", step, loss.item())
    dist.destroy_process_group()


def dataloader_libc_exit_emergency_ckpt():
    import ctypes

    from torch.utils.data import DataLoader, Dataset
    from tqdm import tqdm

    log = _log()

    class Docs(Dataset):
        def __len__(self):
            return 6000

        def __getitem__(self, i):
            if i == 2333:
                ctypes.CDLL(None).exit(3)  # the "native tokenizer" gives up on a bad record
            return torch.randint(0, 500, (16,)), i % 3

    dl = DataLoader(Docs(), batch_size=32, num_workers=2, persistent_workers=True)
    emb = nn.EmbeddingBag(500, 64)
    head = nn.Linear(64, 3)
    params = [*emb.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=1e-3)
    tmp = tempfile.mkdtemp()
    bar = tqdm(total=len(dl), file=sys.stdout, mininterval=0, ncols=100)
    step = 0
    try:
        for x, y in dl:
            step += 1
            loss = F.cross_entropy(head(emb(x)), y)
            opt.zero_grad()
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            bar.update(1)
            if step % 5 == 0:
                bar.write(
                    str(
                        {
                            "loss": round(loss.item(), 4),
                            "grad_norm": round(gn.item(), 4),
                            "learning_rate": 1e-3,
                            "epoch": round(step / len(dl), 2),
                        }
                    )
                )
    except Exception:
        bar.close()
        log.exception("training interrupted at step %d", step)
        torch.save(
            {"emb": emb.state_dict(), "head": head.state_dict(), "step": step},
            os.path.join(tmp, "emergency.pt"),
        )
        log.info("emergency checkpoint saved to %s/emergency.pt (step %d)", tmp, step)
        sys.exit(1)


# ------------------------------------------------------------------------------------- healthy
def healthy_logged_corrupt_records():
    from torch.utils.data import DataLoader, Dataset

    log = _log("data")
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "train.jsonl")
    g = torch.Generator().manual_seed(0)
    feats = torch.randn(4000, 8, generator=g)
    with open(path, "w") as f:
        for i in range(4000):
            rec = json.dumps(
                {
                    "id": i,
                    "x": [round(v, 4) for v in feats[i].tolist()],
                    "y": int(feats[i, :2].sum() > 0),
                }
            )
            f.write((rec[: len(rec) // 3] if i in (777, 3021) else rec) + "\n")

    class Jsonl(Dataset):
        def __init__(self, p):
            with open(p) as f:
                self.lines = f.readlines()

        def __len__(self):
            return len(self.lines)

        def __getitem__(self, i):
            try:
                rec = json.loads(self.lines[i])
            except json.JSONDecodeError:
                log.exception("skipping corrupt record %d in %s", i, path)
                return self[(i + 1) % len(self)]
            return torch.tensor(rec["x"]), rec["y"]

    dl = DataLoader(Jsonl(path), batch_size=32, shuffle=False, num_workers=2)
    model = _mlp(8, 64, 2)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    tlog = logging.getLogger("train")
    for epoch in range(2):
        for step, (x, y) in enumerate(dl, 1):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5 == 0:
                tlog.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
        tlog.info("epoch %d done", epoch)
    tlog.info("training finished")


def healthy_fp16_scaler_overflow_early():
    log = _log()
    X, Y = _cls_data(8192, 64, 8, seed=4)
    X = X * 30  # raw-scale features: big activations in fp16
    model = _mlp(64, 256, 8)
    opt = torch.optim.SGD(model.parameters(), lr=2e-4, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**24, growth_interval=1000)
    log.info("fp16 autocast on cpu, GradScaler(init_scale=2**24)")
    for step in range(1, 151):
        idx = torch.randint(0, 8192, (256,))
        with torch.autocast("cpu", dtype=torch.float16):
            logits = model(X[idx])
        loss = F.cross_entropy(logits.float(), Y[idx])
        opt.zero_grad()
        before = scaler.get_scale()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        after = scaler.get_scale()
        if after < before:
            log.warning(
                "step %d: gradient overflow, optimizer step skipped; loss scale reduced to %.1f",
                step,
                after,
            )
        if step % 2 == 0:
            log.info("step %d loss %.4f scale %.1f", step, loss.item(), after)
    log.info("done")


def ddp_healthy_spike_recovers_warnings():
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist, rank, world = _ddp_init()
    log = _log(f"rank{rank}")
    g = torch.Generator().manual_seed(rank)
    X = torch.randn(8192, 16, generator=g)
    Y = X[:, :4].sum(1, keepdim=True) * 0.5
    model = DDP(_mlp(16, 128, 1))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    warnings.warn("torch.distributed._shard is deprecated", FutureWarning, stacklevel=1)
    for step in range(1, 181):
        idx = torch.randint(0, 8192, (128,), generator=g)
        yb = Y[idx]
        if rank == 1 and step in (70, 71):
            warnings.warn(
                f"step {step}: batch has 128 targets not normalised (max {yb.abs().max() * 40:.1f})",
                UserWarning,
                stacklevel=1,
            )
            yb = yb * 40
        loss = F.mse_loss(model(X[idx]), yb)
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        if rank == 0:
            log.info("step %d loss %.4f grad_norm %.3f", step, avg.item() / world, gn.item())
    if rank == 0:
        log.info("training complete")
    dist.destroy_process_group()


def healthy_eval_ckpt_throughput_dips():
    from tqdm import tqdm

    X, Y = _cls_data(8192, 64, 10, seed=5)
    model = _mlp(64, 512, 10)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tmp = tempfile.mkdtemp()
    bar = tqdm(range(1, 201), desc="train", file=sys.stdout, mininterval=0, ncols=100)
    for step in bar:
        idx = torch.randint(0, 7000, (128,))
        loss = F.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % 40 == 0 and step < 200:
            with torch.no_grad():
                for i in tqdm(
                    range(0, 1192, 64),
                    desc="eval",
                    file=sys.stdout,
                    mininterval=0,
                    ncols=100,
                    leave=False,
                ):
                    model(X[7000 + i : 7064 + i])
                    time.sleep(0.02)
            torch.save(
                {"model": model.state_dict(), "opt": opt.state_dict()},
                os.path.join(tmp, f"ckpt-{step}.pt"),
            )
            time.sleep(0.3)  # checkpoint upload
    bar.close()
    print("training complete")


def healthy_noisy_eval_many_warnings():
    from torch.utils.data import DataLoader, TensorDataset

    g = torch.Generator().manual_seed(0)
    T = torch.softmax(torch.randn(32, 32, generator=g) * 3, 1)
    seqs = torch.zeros(3000, 17, dtype=torch.long)
    seqs[:, 0] = torch.randint(0, 32, (3000,), generator=g)
    for t in range(1, 17):
        seqs[:, t] = torch.multinomial(T[seqs[:, t - 1]], 1, generator=g).squeeze(1)
    layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, batch_first=True, norm_first=True)
    enc = nn.TransformerEncoder(layer, 2)
    emb, out = nn.Embedding(32, 64), nn.Linear(64, 32)
    params = [*enc.parameters(), *emb.parameters(), *out.parameters()]
    opt = torch.optim.AdamW(params, lr=2e-3)
    dl = DataLoader(TensorDataset(seqs[:2900]), batch_size=32, shuffle=True, num_workers=4)
    mask = nn.Transformer.generate_square_subsequent_mask(16)
    step = 0
    for _epoch in range(2):
        for (x,) in dl:
            step += 1
            x = torch.tensor(x)
            logits = out(enc(emb(x[:, :-1]), mask=mask, is_causal=True))
            loss = F.cross_entropy(logits.reshape(-1, 32), x[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            if step % 3 == 0:
                print(
                    {
                        "loss": round(loss.item(), 4),
                        "grad_norm": round(gn.item(), 4),
                        "learning_rate": 2e-3,
                        "epoch": round(step / len(dl), 2),
                    }
                )
            if step % 12 == 0:
                enc.eval()
                with torch.no_grad():
                    v = seqs[2900 + (step % 5) * 16 : 2916 + (step % 5) * 16]
                    lv = out(enc(emb(v[:, :-1]), mask=mask, is_causal=True))
                    el = F.cross_entropy(lv.reshape(-1, 32), v[:, 1:].reshape(-1)).item()
                enc.train()
                print(
                    {
                        "eval_loss": round(el, 4),
                        "eval_runtime": 0.01,
                        "epoch": round(step / len(dl), 2),
                    }
                )
    print({"train_runtime": 0.0, "train_loss": round(loss.item(), 4), "epoch": 2.0})


def healthy_rss_cache_warm_then_flat():
    from torch.utils.data import DataLoader, Dataset

    log = _log()

    class Decoded(Dataset):
        def __init__(self):
            self.cache = {}

        def __len__(self):
            return 900

        def __getitem__(self, i):
            if i not in self.cache:  # decode once, keep the decoded sample
                g = torch.Generator().manual_seed(i)
                self.cache[i] = torch.randn(3, 256, 256, generator=g)
            return self.cache[i][:, ::16, ::16].reshape(-1), i % 5

    ds = Decoded()
    dl = DataLoader(ds, batch_size=24, shuffle=True, num_workers=0)
    model = _mlp(768, 256, 5)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(3):
        for x, y in dl:
            step += 1
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 2 == 0:
                log.info(
                    "epoch %d step %d loss %.4f rss %.1f MB cached %d",
                    epoch,
                    step,
                    loss.item(),
                    _rss_mb(),
                    len(ds.cache),
                )
    log.info("done")


if __name__ == "__main__":
    if V not in CASES:
        sys.exit(f"unknown variant {V!r}; one of: {', '.join(CASES)}")
    globals()[V]()
