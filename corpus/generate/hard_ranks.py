"""hard_ranks: multi-rank (torchrun, gloo, CPU) failures whose ROOT CAUSE happens on one rank.

The other ranks -- and torchrun's summary, usually the last thing printed -- show only symptoms:
gloo "Connection closed by peer" / "Connection reset by peer" inside a collective, barrier or
collective timeouts, "Signal 15 (SIGTERM) received" from the launcher, a ChildFailedError whose
"Failures:" list names another rank before the "Root Cause" entry. Every failure is real: each
program makes a realistic mistake (a bad shard, a lazy import, a full disk) and the logs are
the processes' own output. Nothing in a log is written by hand.

    torchrun --nproc_per_node 4 corpus/generate/hard_ranks.py --variant shape_partial_batch_view
    python corpus/generate/hard_ranks.py --record shape_partial_batch_view   # -> corpus/<case>/

`--record V` runs torchrun for real (its own master port per variant, --log-dir/--redirects 3/
--tee 3) and writes corpus/<case>/train.log (torchrun's combined, [defaultN]:-prefixed output),
rank0.log .. rankN.log (each rank's whole output: the script dup2s stderr onto stdout) and
expected.yaml. Every case is difficulty: hard.

Variants (--variant), all on backend gloo with 2-4 processes:
  shape_partial_batch_view   4 ranks stream their own files (files[rank::world]); rank 3's last
                             file is a short export, so its DataLoader (drop_last=False) yields a
                             16-row batch at step 161; the model flattens with
                             h.view(self.batch_size, -1), which silently folds the sequence into
                             the batch: `mat1 and mat2 shapes cannot be multiplied (32x256 and
                             512x4)`. Ranks 0-2 die in the DDP all-reduce ("Connection closed by
                             peer") or get SIGTERM from torchrun.
  dtype_float64_shard        2 ranks read .npy shards; rank 1's second shard was re-exported as
                             float64 (pandas .to_numpy()): `mat1 and mat2 must have the same dtype`
                             after 200 healthy steps; rank 0 sees the peer close.
  requires_grad_pseudo_label_no_grad  2 ranks; batches without labels are pseudo-labelled by an
                             EMA teacher inside torch.no_grad(), and the student forward sits in
                             the same block; only rank 1's shard has unlabelled batches (from
                             step 181): `element 0 of tensors does not require grad`.
  autograd_bptt_hidden_carry 3 ranks, LSTM LM with truncated BPTT; the hidden state is carried
                             to the next chunk when a document continues, without .detach();
                             only rank 2's shard has documents longer than one chunk:
                             `Trying to backward through the graph a second time`.
  data_jsonl_truncated_rank1 2 ranks read shard-0000{rank}.jsonl; one record of rank 1's shard
                             was cut by an interrupted export: JSONDecodeError at step ~190;
                             tqdm bar on rank 0.
  data_unicode_shard_rank2   3 ranks; rank 2's text shard has a cp1252 byte; the IterableDataset
                             reads it in a DataLoader worker with encoding="utf-8": `Caught
                             UnicodeDecodeError in DataLoader worker process 0`.
  data_truncated_jpeg_rank1  2 ranks; image folders of real JPEGs written with PIL; one file of
                             rank 1's folder is truncated: `image file is truncated` re-raised
                             from a DataLoader worker.
  ckpt_truncated_resume_rank0  2 ranks resume: rank 0 loads the latest checkpoint (cut short by
                             the previous job's kill) and broadcasts it while rank 1 waits at a
                             barrier: `failed finding central directory` on rank 0, a gloo error
                             on rank 1.
  ckpt_size_mismatch_rank0   3 ranks fine-tune; rank 0 loads the pretrained encoder (hidden 256)
                             into a model configured with hidden 384 while ranks 1-2 wait in
                             broadcast_object_list: `size mismatch for ...` on rank 0 only.
  config_eval_env_unexpanded_rank0  2 ranks; only rank 0 evaluates (step 200); its eval config
                             says batch_size: ${EVAL_BATCH_SIZE} (never expanded): DataLoader's
                             `batch_size should be a positive integer value`; rank 1 waits at the
                             post-eval barrier.
  config_yaml_float_string_rank1  2 ranks ("nodes") each read their node-local copy of
                             train.yaml; node 1's copy was hand-edited to `weight_decay: 1e-2`,
                             which PyYAML reads as the string '1e-2': AdamW raises a TypeError on
                             rank 1 after DDP is built; rank 0 waits in the first all-reduce.
  import_sklearn_eval_rank0  3 ranks; rank 0's compute_metrics lazily imports sklearn (not
                             installed) at the first evaluation (step 200): ModuleNotFoundError;
                             ranks 1-2 are in the post-eval barrier.
  disk_full_ckpt_retry_rank0 3 ranks, process-group timeout 5 s; at step 200 rank 0 saves a
                             checkpoint whose path is a symlink onto /dev/full (a real ENOSPC) and
                             retries every 2 s, logging each failure; ranks 1-2 time out in the
                             barrier after the save, torchrun names rank 1 (or 2) as root cause and
                             SIGTERMs rank 0.
  disk_full_metrics_jsonl_rank0  2 ranks; rank 0 appends metrics to run_dir/metrics.jsonl, a
                             symlink onto /dev/full (a full volume): `[Errno 28] No space left on
                             device` when the 8 KiB buffer is flushed mid-run.
  nan_inf_feature_stop_rank2 4 ranks; rank 2's shard has a zero price whose log() is -inf; a
                             DINO-style check prints `Loss is nan, stopping training` and
                             sys.exit(1) on rank 2 only; the others see the peer close.
  nan_spreads_from_rank1     2 ranks; at step 150 rank 1's batch has an inf feature: rank 1 logs
                             loss nan first; the all-reduced gradients then make every rank's loss
                             nan; the run finishes with exit code 0.
  device_meta_buffer_rank1   2 ranks; ranks > 0 build the model under torch.device("meta") and
                             load rank 0's broadcast state_dict with assign=True; a non-persistent
                             buffer stays on meta on rank 1 only.
  label_out_of_range_rank3   4 ranks, 10 classes; rank 3's shard carries records of a class added
                             later (label 10): `Target 10 is out of bounds` on rank 3.
  embed_special_token_rank1  2 ranks; special tokens were added to the tokenizer but the embedding
                             was not resized; only rank 1's shard (chat data) contains them:
                             `index out of range in self`.
  host_oom_pad_length_rank2  3 ranks; a record of rank 2's shard has a corrupt length field; the
                             collate pads to the batch max: DefaultCPUAllocator can't allocate.
  ddp_unused_branch_ranks23  4 ranks, find_unused_parameters=False; the image adapter runs only
                             on batches that carry images; shards of ranks 2 and 3 are text-only
                             from step 120.
  dataloader_worker_exit_rank1  2 ranks; rank 1's audio decoder extension calls exit() on a
                             malformed header inside a DataLoader worker (os._exit stands in for
                             the C exit()): `DataLoader worker (pid N) exited unexpectedly`.
  hang_rank0_eval_metric_allreduce  3 ranks, timeout 8 s; only rank 0 evaluates and its metric
                             helper all-reduces the eval loss; ranks 1-2 pack the next shard
                             (logging, no collective) and then wait at a barrier: rank 0 blocks
                             in a collective the others never join; all ranks time out.
"""

import argparse
import glob
import json
import logging
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import timedelta

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "corpus")

# variant -> (case name, category, alternatives, nproc)
# framework pytorch, difficulty hard for all; master port = 29600 + position in this dict
CASES = {
    "shape_partial_batch_view": ("ranks_shape_partial_batch_view_rank3", "shape_mismatch", [], 4),
    "dtype_float64_shard": ("ranks_dtype_float64_shard_rank1", "dtype_mismatch", [], 2),
    "requires_grad_pseudo_label_no_grad": (
        "ranks_requires_grad_pseudo_label_no_grad_rank1",
        "requires_grad",
        [],
        2,
    ),
    "autograd_bptt_hidden_carry": (
        "ranks_autograd_bptt_hidden_carry_rank2",
        "autograd_graph",
        [],
        3,
    ),
    "data_jsonl_truncated_rank1": ("ranks_data_jsonl_truncated_rank1_tqdm", "data_error", [], 2),
    "data_unicode_shard_rank2": ("ranks_data_unicode_shard_worker_rank2", "data_error", [], 3),
    "data_truncated_jpeg_rank1": ("ranks_data_truncated_jpeg_worker_rank1", "data_error", [], 2),
    "ckpt_truncated_resume_rank0": (
        "ranks_ckpt_truncated_resume_rank0_barrier",
        "checkpoint_load",
        [],
        2,
    ),
    "ckpt_size_mismatch_rank0": (
        "ranks_ckpt_size_mismatch_rank0_broadcast",
        "checkpoint_load",
        ["shape_mismatch"],
        3,
    ),
    "config_eval_env_unexpanded_rank0": (
        "ranks_config_eval_env_unexpanded_rank0",
        "config_error",
        [],
        2,
    ),
    "import_sklearn_eval_rank0": ("ranks_import_sklearn_eval_rank0", "import_error", [], 3),
    "disk_full_ckpt_retry_rank0": (
        "ranks_disk_full_ckpt_retry_rank0_barrier_timeout",
        "disk_full",
        [],
        3,
    ),
    "disk_full_metrics_jsonl_rank0": ("ranks_disk_full_metrics_jsonl_rank0", "disk_full", [], 2),
    "nan_inf_feature_stop_rank2": ("ranks_nan_inf_feature_stop_rank2", "nan_loss", [], 4),
    "nan_spreads_from_rank1": ("ranks_nan_spreads_from_rank1_exit0", "nan_loss", [], 2),
    "device_meta_buffer_rank1": ("ranks_device_meta_buffer_rank1", "device_mismatch", [], 2),
    "label_out_of_range_rank3": ("ranks_label_out_of_range_rank3", "cuda_device_assert", [], 4),
    "embed_special_token_rank1": ("ranks_embed_special_token_rank1", "cuda_device_assert", [], 2),
    "host_oom_pad_length_rank2": ("ranks_host_oom_pad_length_rank2", "host_oom", [], 3),
    "ddp_unused_branch_ranks23": (
        "ranks_ddp_unused_branch_ranks23",
        "ddp_unused_parameters",
        [],
        4,
    ),
    "dataloader_worker_exit_rank1": (
        "ranks_dataloader_worker_exit_rank1",
        "dataloader_worker",
        [],
        2,
    ),
    "hang_rank0_eval_metric_allreduce": (
        "ranks_hang_rank0_eval_metric_allreduce",
        "distributed_timeout",
        ["hang"],
        3,
    ),
    "config_yaml_float_string_rank1": (
        "ranks_config_yaml_float_string_node_copy_rank1",
        "config_error",
        [],
        2,
    ),
}

p = argparse.ArgumentParser()
p.add_argument("--variant")
p.add_argument("--record")
args = p.parse_args()


def record(variant):
    import torch

    name, category, alternatives, nproc = CASES[variant]
    port = 29600 + list(CASES).index(variant)
    script = os.path.relpath(os.path.abspath(__file__), ROOT)
    argv = [script, "--variant", variant]
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="100")
    logdir = tempfile.mkdtemp(prefix="torchrun_logs_")
    launch = [f"--nproc_per_node={nproc}", f"--master-port={port}"]
    real = [
        os.path.join(os.path.dirname(sys.executable), "torchrun"),
        *launch,
        "--log-dir",
        logdir,
        "--redirects",
        "3",
        "--tee",
        "3",
        *argv,
    ]
    shown = ["torchrun", *launch, "--log-dir", "LOGDIR", "--redirects", "3", "--tee", "3", *argv]
    t0 = time.time()
    try:
        r = subprocess.run(
            real, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120
        )
        output, rc = r.stdout, r.returncode
    except subprocess.TimeoutExpired as e:
        output, rc = e.stdout or b"", "timeout"
    out_dir = os.path.join(CORPUS, name)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    tv = torch.__version__.split("+")[0]
    cmd = " ".join(shown)
    head = f"# crashcart-corpus: command={cmd}\n# torch={tv} device=cpu python={platform.python_version()}\n"
    with open(os.path.join(out_dir, "train.log"), "wb") as f:
        f.write(head.encode())
        f.write(output)
    for rank_dir in sorted(glob.glob(os.path.join(logdir, "*", "attempt_0", "*"))):
        rank = os.path.basename(rank_dir)
        with open(os.path.join(out_dir, f"rank{rank}.log"), "wb") as f:
            f.write(head.encode())
            f.write(f"# per-rank log: local_rank={rank} (torchrun --log-dir stderr.log)\n".encode())
            for n in ("stdout.log", "stderr.log"):
                with open(os.path.join(rank_dir, n), "rb") as src:
                    f.write(src.read())
    shutil.rmtree(logdir, ignore_errors=True)
    lines = [
        f"category: {category}",
        f"alternatives: [{', '.join(alternatives)}]",
        f"source: generated-by {script}",
        "framework: pytorch",
        f"torch: {tv}",
        "device: cpu",
        "difficulty: hard",
    ]
    with open(os.path.join(out_dir, "expected.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{name:55s} rc={rc} {time.time() - t0:6.1f}s {len(output):8d} bytes")


if args.record:
    for v in args.record.split(","):
        record(v)
    sys.exit(0)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.utils.data import DataLoader, Dataset, IterableDataset  # noqa: E402

V = args.variant
warnings.simplefilter("default")
torch.set_num_threads(1)


def setup(timeout=30, fmt=True):
    """init gloo; route stdout into stderr so torchrun's per-rank stderr log holds everything."""
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    rank = int(os.environ["RANK"])
    if fmt:
        logging.basicConfig(
            level=logging.INFO,
            stream=sys.stderr,
            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s",
        )
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    world = dist.get_world_size()
    logging.getLogger("dist").info(
        "initialized process group backend=gloo rank=%d world_size=%d", rank, world
    )
    torch.manual_seed(rank)
    return rank, world, logging.getLogger("train")


def shared_tmp(rank, tag):
    """a directory every rank agrees on (rank 0 creates, then a barrier)."""
    path = os.path.join(
        tempfile.gettempdir(), f"hard_ranks_{tag}_{os.environ.get('TORCHELASTIC_RUN_ID', 'x')}"
    )
    if rank == 0:
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
    dist.barrier()
    return path


def mlp(d_in, d_out, hidden=128):
    torch.manual_seed(0)  # same init everywhere (DDP broadcasts rank 0's anyway)
    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, d_out))


def step_fn(model, opt, loss):
    opt.zero_grad()
    loss.backward()
    opt.step()


# ------------------------------------------------------------------------------ shape_mismatch
def shape_partial_batch_view():
    rank, world, log = setup()
    tmp = shared_tmp(rank, "shape")
    B, SEQ, D = 32, 16, 8
    sizes = [1920] * 11 + [1296]  # file 11: the last, partial export
    if rank == 0:
        g = np.random.default_rng(0)
        for i, n in enumerate(sizes):
            np.save(
                os.path.join(tmp, f"part-{i:05d}.npy"),
                g.standard_normal((n, SEQ, D)).astype(np.float32),
            )
    dist.barrier()
    files = sorted(glob.glob(os.path.join(tmp, "part-*.npy")))[rank::world]
    log.info("rank %d streams %d files: %s", rank, len(files), [os.path.basename(f) for f in files])

    class Stream(IterableDataset):
        def __iter__(self):
            for f in files:
                arr = np.load(f)
                for i in range(len(arr)):
                    x = torch.from_numpy(arr[i])
                    yield x, int(x[:, 0].sum() > 0) + 2 * int(x[:, 1].sum() > 0)

    class SeqClassifier(nn.Module):
        def __init__(self, batch_size):
            super().__init__()
            self.batch_size = batch_size
            self.embed = nn.Linear(D, 32)
            self.head = nn.Linear(SEQ * 32, 4)

        def forward(self, x):
            h = torch.relu(self.embed(x))
            return self.head(h.view(self.batch_size, -1))

    torch.manual_seed(0)
    model = DDP(SeqClassifier(B))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    dl = DataLoader(Stream(), batch_size=B)
    for step, (x, y) in enumerate(dl, 1):
        loss = F.cross_entropy(model(x), y)
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f", step, loss.item())
    dist.barrier()


# ------------------------------------------------------------------------------ dtype_mismatch
def dtype_float64_shard():
    rank, world, log = setup()
    tmp = shared_tmp(rank, "dtype")
    if rank == 0:
        g = np.random.default_rng(1)
        w = g.standard_normal((24, 1))
        for i in range(4):
            X = g.standard_normal((6400, 24))
            Y = X @ w + 0.1 * g.standard_normal((6400, 1))
            arr = np.concatenate([X, Y], 1)
            # shard 3 came from the re-export (DataFrame.to_numpy() -> float64); the others are float32
            np.save(
                os.path.join(tmp, f"train-{i:03d}.npy"), arr if i == 3 else arr.astype(np.float32)
            )
    dist.barrier()
    files = sorted(glob.glob(os.path.join(tmp, "train-*.npy")))[rank::world]
    model = DDP(mlp(24, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = 0
    for f in files:
        arr = np.load(f, mmap_mode="r")
        log.info("opened shard %s rows=%d", os.path.basename(f), len(arr))
        for i in range(0, len(arr), 32):
            batch = torch.from_numpy(np.ascontiguousarray(arr[i : i + 32]))
            x, y = batch[:, :-1], batch[:, -1:]
            loss = F.mse_loss(model(x), y)
            step_fn(model, opt, loss)
            step += 1
            if step % 25 == 0:
                log.info("step %d loss %.4f", step, loss.item())


# ------------------------------------------------------------------------------ requires_grad
def requires_grad_pseudo_label_no_grad():
    import copy

    rank, _world, _log = setup(fmt=False)
    torch.manual_seed(0)
    student = DDP(mlp(32, 5))
    teacher = copy.deepcopy(student.module).eval()
    opt = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        x = torch.randn(64, 32, generator=g)
        # rank 1's shard switches to the unlabelled web crawl after 180 batches
        y = None if (rank == 1 and step > 180) else (x[:, :5].argmax(1))
        if y is None:  # pseudo-label with the EMA teacher
            with torch.no_grad():
                pseudo = teacher(x).argmax(1)
                logits = student(x)
            loss = 0.5 * F.cross_entropy(logits, pseudo)
        else:
            loss = F.cross_entropy(student(x), y)
        step_fn(student, opt, loss)
        with torch.no_grad():
            for pt, ps in zip(teacher.parameters(), student.module.parameters(), strict=True):
                pt.mul_(0.99).add_(ps, alpha=0.01)
        if step % 10 == 0:
            print(
                f"[rank{rank}] step {step}/300 loss {loss.item():.4f} labelled={y is not None}",
                flush=True,
            )


# ------------------------------------------------------------------------------ autograd_graph
def autograd_bptt_hidden_carry():
    rank, _world, log = setup()
    V_, CH = 50, 32

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V_, 32)
            self.rnn = nn.LSTM(32, 64, batch_first=True)
            self.out = nn.Linear(64, V_)

        def forward(self, tok, hidden=None):
            h, hidden = self.rnn(self.emb(tok), hidden)
            return self.out(h), hidden

    torch.manual_seed(0)
    model = DDP(LM())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(rank)

    def chunks():
        # yields (tokens, continues_previous_document); rank 2's shard holds long books from step 221
        step = 0
        while True:
            n_chunks = 4 if (rank == 2 and step >= 220) else 1
            doc = torch.randint(0, V_, (8, CH * n_chunks + 1), generator=g)
            for c in range(n_chunks):
                step += 1
                yield doc[:, c * CH : (c + 1) * CH + 1], c > 0

    hidden = None
    for step, (seq, cont) in enumerate(chunks(), 1):
        if step > 300:
            break
        if not cont:
            hidden = None
        logits, hidden = model(
            seq[:, :-1], hidden
        )  # carried into the next chunk of the same document
        loss = F.cross_entropy(logits.reshape(-1, V_), seq[:, 1:].reshape(-1))
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f ppl %.2f", step, loss.item(), math.exp(loss.item()))


# ------------------------------------------------------------------------------ data_error
def data_jsonl_truncated_rank1():
    from tqdm import tqdm

    rank, world, log = setup()
    tmp = shared_tmp(rank, "jsonl")
    if rank == 0:
        for r in range(world):
            with open(os.path.join(tmp, f"shard-{r:05d}.jsonl"), "w") as f:
                for i in range(8000):
                    rec = json.dumps(
                        {
                            "id": f"{r}-{i}",
                            "text": "lorem ipsum " * (1 + i % 5),
                            "label": i % 3,
                            "feats": [round(math.sin(i * k), 4) for k in range(8)],
                        }
                    )
                    if r == 1 and i == 6100:
                        rec = rec[: len(rec) // 2]  # the export job was killed mid-line
                    f.write(rec + "\n")
    dist.barrier()

    class JsonlShard(Dataset):
        def __init__(self, path):
            with open(path) as f:
                self.lines = f.readlines()

        def __len__(self):
            return len(self.lines)

        def __getitem__(self, i):
            rec = json.loads(self.lines[i])
            return torch.tensor(rec["feats"]), rec["label"]

    ds = JsonlShard(os.path.join(tmp, f"shard-{rank:05d}.jsonl"))
    log.info("loaded %d records from %s", len(ds), os.path.join(tmp, f"shard-{rank:05d}.jsonl"))
    model = DDP(mlp(8, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    dl = DataLoader(ds, batch_size=32)
    it = tqdm(dl, desc="epoch 0", mininterval=0.5) if rank == 0 else dl
    for step, (x, y) in enumerate(it, 1):
        loss = F.cross_entropy(model(x), y)
        step_fn(model, opt, loss)
        if rank == 0:
            it.set_postfix(loss=f"{loss.item():.4f}")
        if step % 50 == 0:
            log.info("step %d loss %.4f", step, loss.item())


def data_unicode_shard_rank2():
    rank, world, log = setup()
    tmp = shared_tmp(rank, "unicode")
    if rank == 0:
        words = [
            "the",
            "model",
            "loss",
            "data",
            "train",
            "ranks",
            "gloo",
            "shard",
            "epoch",
            "token",
        ]
        for r in range(world):
            with open(os.path.join(tmp, f"corpus-{r}.txt"), "wb") as f:
                for i in range(9000):
                    line = " ".join(words[(i * k + r) % 10] for k in range(1, 9))
                    if r == 2 and i == 5300:
                        line += " caf\xe9 r\xe9sum\xe9"  # one document scraped as cp1252
                        f.write(line.encode("cp1252") + b"\n")
                    else:
                        f.write(line.encode("utf-8") + b"\n")
    dist.barrier()
    path = os.path.join(tmp, f"corpus-{rank}.txt")

    class Lines(IterableDataset):
        def __iter__(self):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    b = line.encode("utf-8")[:48].ljust(48, b" ")
                    t = torch.tensor(list(b), dtype=torch.long)
                    yield t[:-1], t[1:]

    class CharLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(256, 32)
            self.mix = nn.Linear(32, 32)
            self.out = nn.Linear(32, 256)

        def forward(self, t):
            return self.out(torch.tanh(self.mix(self.emb(t))))

    torch.manual_seed(0)
    model = DDP(CharLM())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    dl = DataLoader(Lines(), batch_size=32, num_workers=1)
    log.info("reading %s with 1 loader worker", path)
    for step, (x, y) in enumerate(dl, 1):
        loss = F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f", step, loss.item())


def data_truncated_jpeg_rank1():
    from PIL import Image

    rank, world, log = setup()
    tmp = shared_tmp(rank, "jpeg")
    if rank == 0:
        g = np.random.default_rng(0)
        for r in range(world):
            d = os.path.join(tmp, f"node{r}", "images")
            os.makedirs(d)
            for i in range(880):
                arr = (g.random((32, 32, 3)) * 255).astype(np.uint8)
                fn = os.path.join(d, f"img_{i:05d}.jpg")
                Image.fromarray(arr).save(fn, quality=90)
                if r == 1 and i == 821:
                    with open(fn, "rb") as f:
                        data = f.read()
                    with open(fn, "wb") as f:
                        f.write(data[: len(data) // 2])  # rsync interrupted
    dist.barrier()
    folder = os.path.join(tmp, f"node{rank}", "images")

    class Folder(Dataset):
        def __init__(self):
            self.files = sorted(glob.glob(os.path.join(folder, "*.jpg")))

        def __len__(self):
            return len(self.files)

        def __getitem__(self, i):
            img = Image.open(self.files[i]).convert("RGB")
            x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
            return x, i % 4

    torch.manual_seed(0)
    model = DDP(
        nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(4),
            nn.Flatten(),
            nn.Linear(128, 4),
        )
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ds = Folder()
    log.info("found %d images in %s", len(ds), folder)
    dl = DataLoader(ds, batch_size=4, num_workers=2)
    for step, (x, y) in enumerate(dl, 1):
        loss = F.cross_entropy(model(x), y)
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f", step, loss.item())


# ------------------------------------------------------------------------------ checkpoint_load
def ckpt_truncated_resume_rank0():
    rank, _world, log = setup()
    ckdir = shared_tmp(rank, "ckpt_trunc")
    torch.manual_seed(0)
    net = mlp(32, 10, hidden=512)
    if (
        rank == 0
    ):  # what the previous job left: step 400 is fine, step 600 was cut by the kill during save
        opt0 = torch.optim.AdamW(net.parameters())
        net(torch.randn(4, 32)).sum().backward()
        opt0.step()
        for s in (400, 600):
            torch.save(
                {"model": net.state_dict(), "optimizer": opt0.state_dict(), "step": s},
                os.path.join(ckdir, f"step_{s:06d}.pt"),
            )
        fn = os.path.join(ckdir, "step_000600.pt")
        os.truncate(fn, os.path.getsize(fn) * 2 // 3)
    model = DDP(net)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    warnings.warn(
        "torch.distributed: broadcast_object_list uses pickle; only load checkpoints you trust",
        UserWarning,
        stacklevel=1,
    )
    latest = sorted(glob.glob(os.path.join(ckdir, "step_*.pt")))[-1]
    obj = [None]
    if rank == 0:
        log.info("resuming from latest checkpoint %s (%d bytes)", latest, os.path.getsize(latest))
        obj[0] = torch.load(latest, map_location="cpu")
    else:
        log.info("waiting for rank 0 to load %s", latest)
    dist.barrier()
    dist.broadcast_object_list(obj, src=0)
    model.module.load_state_dict(obj[0]["model"])
    opt.load_state_dict(obj[0]["optimizer"])
    log.info("resumed at step %d", obj[0]["step"])


def ckpt_size_mismatch_rank0():
    rank, _world, log = setup()
    tmp = shared_tmp(rank, "ckpt_size")
    cfg = {
        "vocab": 1000,
        "hidden": 384,
        "layers": 2,
        "pretrained": os.path.join(tmp, "encoder-base.pt"),
    }

    class Encoder(nn.Module):
        def __init__(self, vocab, hidden, layers):
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.layers = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
            self.norm = nn.LayerNorm(hidden)

        def forward(self, t):
            h = self.embed(t)
            for lin in self.layers:
                h = h + torch.relu(lin(h))
            return self.norm(h)

    if rank == 0:  # the pretraining run's export (hidden 256)
        torch.save(Encoder(1000, 256, 2).state_dict(), cfg["pretrained"])
    dist.barrier()
    log.info("config: %s", cfg)
    enc = Encoder(cfg["vocab"], cfg["hidden"], cfg["layers"])
    obj = [None]
    if rank == 0:
        log.info("loading pretrained encoder from %s", cfg["pretrained"])
        sd = torch.load(cfg["pretrained"], map_location="cpu")
        enc.load_state_dict(sd)
        obj[0] = enc.state_dict()
    else:
        log.info("waiting for pretrained weights from rank 0")
    dist.broadcast_object_list(obj, src=0)
    enc.load_state_dict(obj[0])
    log.info("encoder ready")


# ------------------------------------------------------------------------------ config_error
def evaluate_then_barrier_loop(rank, log, eval_fn, steps=260, eval_every=200, d=32):
    model = DDP(mlp(d, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, steps + 1):
        x = torch.randn(32, d, generator=g)
        loss = F.cross_entropy(model(x), x[:, :4].argmax(1))
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f lr %.2e", step, loss.item(), opt.param_groups[0]["lr"])
        if step % eval_every == 0:
            if rank == 0:
                eval_fn(model.module, step)
            dist.barrier()


def config_eval_env_unexpanded_rank0():
    import yaml

    rank, _world, log = setup()
    tmp = shared_tmp(rank, "cfg")
    if rank == 0:
        with open(os.path.join(tmp, "eval.yaml"), "w") as f:
            f.write(
                "eval:\n  dataset: val-00000.npy\n  batch_size: ${EVAL_BATCH_SIZE}  # set by the launcher\n"
                "  num_workers: 0\n"
            )
    dist.barrier()

    def evaluate(model, step):
        with open(os.path.join(tmp, "eval.yaml")) as f:
            ecfg = yaml.safe_load(f)["eval"]
        log.info("running evaluation at step %d with %s", step, ecfg)
        X = torch.randn(512, 32)
        dl = DataLoader(
            torch.utils.data.TensorDataset(X, X[:, :4].argmax(1)),
            batch_size=ecfg["batch_size"],
            num_workers=ecfg["num_workers"],
        )
        tot = sum(F.cross_entropy(model(x), y, reduction="sum").item() for x, y in dl)
        log.info("eval_loss %.4f", tot / len(X))

    evaluate_then_barrier_loop(rank, log, evaluate)


def config_yaml_float_string_rank1():
    import yaml

    rank, world, log = setup()
    tmp = shared_tmp(rank, "cfgnode")
    if rank == 0:
        base = (
            "model:\n  hidden: 128\noptim:\n  name: adamw\n  lr: 0.001\n  weight_decay: 0.01\n"
            "  betas: [0.9, 0.95]\ntrain:\n  batch_size: 32\n  max_steps: 300\n"
        )
        for r in range(world):
            os.makedirs(os.path.join(tmp, f"node{r}"))
            with open(os.path.join(tmp, f"node{r}", "train.yaml"), "w") as f:
                f.write(
                    base.replace("weight_decay: 0.01", "weight_decay: 1e-2") if r == 1 else base
                )
    dist.barrier()
    path = os.path.join(tmp, f"node{rank}", "train.yaml")
    with open(path) as f:
        cfg = yaml.safe_load(f)
    log.info("loaded %s: %s", path, cfg)
    model = DDP(mlp(32, 4, hidden=cfg["model"]["hidden"]))
    oc = cfg["optim"]
    opt = torch.optim.AdamW(
        model.parameters(), lr=oc["lr"], weight_decay=oc["weight_decay"], betas=tuple(oc["betas"])
    )
    g = torch.Generator().manual_seed(rank)
    for step in range(1, cfg["train"]["max_steps"] + 1):
        x = torch.randn(cfg["train"]["batch_size"], 32, generator=g)
        loss = F.cross_entropy(model(x), x[:, :4].argmax(1))
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f", step, loss.item())


# ------------------------------------------------------------------------------ import_error
def import_sklearn_eval_rank0():
    rank, _world, log = setup()

    def compute_metrics(preds, labels):
        from sklearn.metrics import f1_score  # optional dependency, only needed for eval

        return {"macro_f1": f1_score(labels, preds, average="macro")}

    def evaluate(model, step):
        log.info("***** Running evaluation at step %d *****", step)
        X = torch.randn(512, 32)
        with torch.no_grad():
            preds = model(X).argmax(1)
        log.info("eval metrics: %s", compute_metrics(preds.numpy(), X[:, :4].argmax(1).numpy()))

    evaluate_then_barrier_loop(rank, log, evaluate)


# ------------------------------------------------------------------------------ disk_full
def disk_full_ckpt_retry_rank0():
    rank, _world, log = setup(timeout=5)
    out = shared_tmp(rank, "diskfull")
    model = DDP(mlp(32, 4, hidden=256))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        x = torch.randn(32, 32, generator=g)
        loss = F.cross_entropy(model(x), x[:, :4].argmax(1))
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f", step, loss.item())
        if step % 200 == 0:
            if rank == 0:
                path = os.path.join(out, f"checkpoint-{step}.pt")
                os.symlink("/dev/full", path)  # stands in for a checkpoint volume that is full
                log.info("saving checkpoint to %s", path)
                for attempt in range(1, 6):
                    try:
                        torch.save(
                            {
                                "model": model.module.state_dict(),
                                "optimizer": opt.state_dict(),
                                "step": step,
                            },
                            path,
                        )
                        break
                    except (OSError, RuntimeError):
                        log.exception(
                            "checkpoint save failed (attempt %d/5), retrying in 2s", attempt
                        )
                        time.sleep(2)
            log.info("waiting for checkpoint to finish")
            dist.barrier()


def disk_full_metrics_jsonl_rank0():
    import contextlib

    rank, _world, log = setup()
    run_dir = shared_tmp(rank, "metrics")
    model = DDP(mlp(32, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    with contextlib.ExitStack() as stack:
        metrics = None
        if rank == 0:  # only rank 0 writes metrics
            path = os.path.join(run_dir, "metrics.jsonl")
            os.symlink("/dev/full", path)  # stands in for a metrics volume that is full
            metrics = stack.enter_context(open(path, "a", buffering=8192))
            log.info("writing metrics to %s", path)
        for step in range(1, 401):
            x = torch.randn(32, 32, generator=g)
            loss = F.cross_entropy(model(x), x[:, :4].argmax(1))
            step_fn(model, opt, loss)
            if step % 20 == 0:
                log.info("step %d loss %.4f", step, loss.item())
            if metrics:
                rec = {"step": step, "loss": round(loss.item(), 5), "time": time.time()}
                metrics.write(json.dumps(rec) + "\n")


# ------------------------------------------------------------------------------ nan_loss
def nan_inf_feature_stop_rank2():
    rank, _world, _log = setup(fmt=False)
    torch.manual_seed(0)
    model = DDP(mlp(8, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        price = torch.rand(64, 1, generator=g) * 100 + 1
        if rank == 2 and step == 212:
            price[17] = 0.0  # a listing with price 0 in rank 2's shard
        feats = torch.cat([torch.log(price), torch.randn(64, 7, generator=g)], 1)
        loss = F.mse_loss(model(feats), feats[:, :1] * 0.5)
        if not math.isfinite(loss.item()):
            print(f"Loss is {loss.item()}, stopping training", flush=True)
            sys.exit(1)
        step_fn(model, opt, loss)
        if step % 10 == 0:
            print(
                f"[rank{rank}] Epoch: [0]  [{step}/300]  loss: {loss.item():.4f}  lr: 0.001000",
                flush=True,
            )


def nan_spreads_from_rank1():
    rank, _world, log = setup()
    torch.manual_seed(0)
    model = DDP(mlp(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 251):
        x = torch.randn(64, 16, generator=g)
        if rank == 1 and step == 150:
            x[3, 5] = float("inf")  # an overflowed feature (float16 export) in rank 1's shard
        loss = F.mse_loss(model(x), x[:, :2].sum(1, keepdim=True))
        step_fn(model, opt, loss)
        if step % 10 == 0 or step in (150, 151):
            log.info("step %d loss %.4f", step, loss.item())
    log.info("training finished")


# ------------------------------------------------------------------------------ device_mismatch
def device_meta_buffer_rank1():
    rank, _world, log = setup()

    class PosEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(16, 32)
            self.head = nn.Linear(32, 4)
            self.register_buffer("pos", torch.linspace(0, 1, 16), persistent=False)

        def forward(self, x):
            return self.head(torch.relu(self.proj(x + self.pos)))

    if rank == 0:
        torch.manual_seed(0)
        net = PosEncoder()
    else:  # save host memory on the other ranks: build on meta, take rank 0's weights
        with torch.device("meta"):
            net = PosEncoder()
    obj = [net.state_dict() if rank == 0 else None]
    dist.broadcast_object_list(obj, src=0)
    net.load_state_dict(obj[0], assign=True)
    log.info("model materialised: %s", {n: str(p.device) for n, p in net.named_parameters()})
    model = DDP(net, broadcast_buffers=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(1, 101):
        x = torch.randn(32, 16)
        loss = F.cross_entropy(model(x), x[:, :4].argmax(1))
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f", step, loss.item())


# ------------------------------------------------------------------------------ cuda_device_assert
def label_out_of_range_rank3():
    rank, _world, log = setup()
    NUM_CLASSES = 10
    model = DDP(mlp(32, NUM_CLASSES))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        x = torch.randn(32, 32, generator=g)
        y = x[:, :NUM_CLASSES].argmax(1)
        if rank == 3 and step >= 233:
            y[5] = 10  # records of the class "other", added in the second annotation round
        loss = F.cross_entropy(model(x), y)
        step_fn(model, opt, loss)
        if step % 25 == 0:
            log.info("step %d loss %.4f", step, loss.item())


def embed_special_token_rank1():
    rank, _world, log = setup()
    vocab = {w: i for i, w in enumerate(["<pad>", "<unk>"] + [f"w{i}" for i in range(198)])}
    embed_rows = len(vocab)
    vocab.update(
        {"<|user|>": 200, "<|assistant|>": 201}
    )  # added for the chat data, embedding not resized
    log.info("tokenizer vocab size %d, model vocab size %d", len(vocab), embed_rows)

    class BagLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(embed_rows, 32)
            self.head = nn.Linear(32, 2)

        def forward(self, ids):
            return self.head(self.emb(ids).mean(1))

    torch.manual_seed(0)
    model = DDP(BagLM())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(rank)
    for step in range(1, 301):
        texts = [" ".join(f"w{t}" for t in rng.integers(0, 198, 12)) for _ in range(16)]
        if rank == 1 and step > 190:  # rank 1's shard reaches the chat-formatted part
            texts = [f"<|user|> {t} <|assistant|>" for t in texts]
        ids = torch.tensor([[vocab.get(w, 1) for w in t.split()][:12] for t in texts])
        loss = F.cross_entropy(model(ids), ids[:, 0] % 2)
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f", step, loss.item())


# ------------------------------------------------------------------------------ host_oom
def host_oom_pad_length_rank2():
    rank, _world, log = setup()
    g = np.random.default_rng(rank)

    def records():
        i = 0
        while True:
            n = int(g.integers(8, 64))
            if rank == 2 and i == 32 * 205 + 7:
                n = 3_000_000_000  # length field of a corrupted record header
            yield {"length": n, "seed": i}
            i += 1

    def collate(batch):
        max_len = max(r["length"] for r in batch)
        out = torch.zeros(len(batch), max_len, 16)  # pad to the longest sequence in the batch
        for j, r in enumerate(batch):
            out[j, : r["length"]] = 1.0 + (r["seed"] % 7) / 7
        return out

    class Pool(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 1)

        def forward(self, x):
            return self.lin(x.mean(1))

    torch.manual_seed(0)
    model = DDP(Pool())
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    it = records()
    for step in range(1, 301):
        x = collate([next(it) for _ in range(32)])
        loss = F.mse_loss(model(x), torch.ones(32, 1))
        step_fn(model, opt, loss)
        if step % 25 == 0:
            log.info("step %d loss %.5f padded_len %d", step, loss.item(), x.shape[1])


# ------------------------------------------------------------------------------ ddp_unused_parameters
def ddp_unused_branch_ranks23():
    rank, _world, log = setup()

    class MultiModal(nn.Module):
        def __init__(self):
            super().__init__()
            self.text = nn.Linear(16, 32)
            self.image_adapter = nn.Linear(8, 32)
            self.head = nn.Linear(32, 3)

        def forward(self, x, img=None):
            h = self.text(x)
            if img is not None:
                h = h + self.image_adapter(img)
            return self.head(torch.relu(h))

    torch.manual_seed(0)
    model = DDP(MultiModal())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 201):
        x = torch.randn(16, 16, generator=g)
        has_img = not (
            rank >= 2 and step >= 120
        )  # ranks 2-3 reach the text-only part of their shard
        img = torch.randn(16, 8, generator=g) if has_img else None
        loss = F.cross_entropy(model(x, img), x[:, :3].argmax(1))
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f has_images=%s", step, loss.item(), has_img)


# ------------------------------------------------------------------------------ dataloader_worker
def dataloader_worker_exit_rank1():
    rank, _world, log = setup()

    class Clips(Dataset):
        def __len__(self):
            return 4000

        def __getitem__(self, i):
            if rank == 1 and i == 3013:
                os._exit(3)  # the native decoder calls exit() on a malformed header
            gen = torch.Generator().manual_seed(i)
            return torch.randn(40, generator=gen), i % 5

    torch.manual_seed(0)
    model = DDP(mlp(40, 5))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    dl = DataLoader(Clips(), batch_size=16, num_workers=2)
    for step, (x, y) in enumerate(dl, 1):
        loss = F.cross_entropy(model(x), y)
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f", step, loss.item())


# ------------------------------------------------------------------------------ hang
def hang_rank0_eval_metric_allreduce():
    rank, _world, log = setup(timeout=8)
    model = DDP(mlp(32, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)

    def reduce_mean(t):  # meant to average a metric over all ranks
        t = t.clone()
        dist.all_reduce(t)
        return t / dist.get_world_size()

    for step in range(1, 301):
        x = torch.randn(32, 32, generator=g)
        loss = F.cross_entropy(model(x), x[:, :4].argmax(1))
        step_fn(model, opt, loss)
        if step % 20 == 0:
            log.info("step %d loss %.4f", step, loss.item())
        if step == 200:
            if rank == 0:
                log.info("evaluating on the validation set")
                with torch.no_grad():
                    tot = torch.zeros(())
                    for b in range(10):
                        xv = torch.randn(256, 32)
                        tot += F.cross_entropy(model.module(xv), xv[:, :4].argmax(1))
                        log.info("eval batch %d/10", b + 1)
                log.info("eval_loss %.4f", reduce_mean(tot / 10).item())
            else:
                for part in range(1, 7):
                    time.sleep(0.5)
                    log.info("packing next shard: part %d/6 done", part)
            dist.barrier()


if __name__ == "__main__":
    if V not in CASES:
        sys.exit(f"unknown variant {V!r}; one of: {', '.join(CASES)}")
    globals()[V]()
