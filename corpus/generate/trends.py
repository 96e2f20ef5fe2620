"""trends: real trainings whose failure (or health) shows only in a metric series over time.

Each variant is real training code on synthetic data; nothing in the log is written by hand.
Run one variant directly (its stdout+stderr is the log), or record it as a corpus case:

    python corpus/generate/trends.py --variant diverging_no_nan
    python corpus/generate/trends.py --record diverging_no_nan      # -> corpus/trend_diverging_no_nan/

Variants (--variant):
  diverging_no_nan        MLP regression with SGD(momentum) and an lr schedule whose "warm-up"
                          never stops (a linear ramp with the peak set 100x too high): the loss
                          falls while the lr is small, then climbs steadily as the lr keeps
                          growing; the run reaches max_steps and stops before any NaN/inf.
                          Prints `step N loss X grad_norm Y lr Z`.
  loss_plateau            classifier whose backbone is frozen by a "freeze the pretrained
                          encoder" line that also catches the head (only the head bias stays
                          trainable), on labels independent of the inputs: the loss is noisy
                          but flat for the whole run.
  throughput_drop         MLP training loop with a tqdm bar written to stdout (mininterval=0) and
                          a status line every few steps; at 60% of the steps the data pipeline
                          switches to "augment=heavy" (per-sample Python-loop augmentation on a
                          4x larger batch), so it/s falls far below the run's median.
  memory_growth           conv net training loop that keeps `history.append(loss)` and
                          `activations.append(feats)` (tensors with their autograd graphs) for
                          "later logging": the process RSS, printed as `rss: N MB` each step,
                          grows by tens of MB per step.
  overfitting             transformers Trainer on a GPT-2 built from a config (much too large for
                          its 32 training sequences), eval_strategy=steps: eval_loss reaches a
                          minimum and then rises for many evaluations while the training loss
                          keeps falling.
  silence_then_timeout    2-process gloo run (torchrun): both ranks log a timestamped `logging`
                          line per step; at step 20 rank 1 stalls "fetching the next shard"
                          (sleeps) and rank 0 blocks in all_reduce until the process group's
                          330 s timeout expires; rank 0 logs the error and raises.
  healthy_noisy_warmup_restarts  noisy regression, linear warm-up then cosine schedule with
                          warm restarts: the loss bumps up at each restart, then falls again.
  healthy_converged_flat_tail    easy task: loss falls fast and sits flat (converged) for the
                          second half of a long run.
  healthy_eval_progress_bars     HF-style loop: a training tqdm bar interleaved with a shorter
                          evaluation bar (different total and speed) at every evaluation, HF
                          dict lines for loss/eval_loss, and process memory that rises during
                          warm-up (caches, optimizer state) then stays flat.
"""
import argparse
import math
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "corpus")
BIN = os.path.dirname(sys.executable)

# variant -> (case name, category, rule, alternatives, framework, difficulty, launcher)
CASES = {
    "diverging_no_nan": ("trend_diverging_no_nan", "gradient_explosion", "gradient_explosion.diverging", [], "pytorch", "medium", "python"),
    "loss_plateau": ("trend_loss_plateau", "loss_plateau", "loss_plateau.no_progress", [], "pytorch", "medium", "python"),
    "throughput_drop": ("trend_throughput_drop", "slow_training", "slow_training.throughput_drop", [], "pytorch", "medium", "python"),
    "memory_growth": ("trend_memory_growth", "memory_leak", "memory_leak.growth", [], "pytorch", "medium", "python"),
    "overfitting": ("trend_overfitting", "overfitting", "overfitting.validation_rising", [], "hf", "medium", "python"),
    "silence_then_timeout": ("trend_silence_then_timeout", "hang", "hang.silence", ["distributed_timeout"], "pytorch", "hard", "torchrun"),
    "healthy_noisy_warmup_restarts": ("healthy_noisy_warmup_restarts", "none", None, [], "pytorch", "hard", "python"),
    "healthy_converged_flat_tail": ("healthy_converged_flat_tail", "none", None, [], "pytorch", "hard", "python"),
    "healthy_eval_progress_bars": ("healthy_eval_progress_bars", "none", None, [], "pytorch", "hard", "python"),
}

p = argparse.ArgumentParser()
p.add_argument("--variant")
p.add_argument("--record", help="run VARIANT and write corpus/<case>/train.log + expected.yaml")
p.add_argument("--steps", type=int, default=None)
p.add_argument("--pg-timeout", type=int, default=330)
args = p.parse_args()


# ----------------------------------------------------------------------------------- recording
def record(variant):
    import torch

    name, category, rule, alternatives, framework, difficulty, launcher = CASES[variant]
    script = os.path.relpath(os.path.abspath(__file__), ROOT)
    argv = [script, "--variant", variant] + (["--steps", str(args.steps)] if args.steps else [])
    if launcher == "torchrun":
        real = [os.path.join(BIN, "torchrun"), "--nproc_per_node=2"] + argv
        shown = ["torchrun", "--nproc_per_node=2"] + argv
    else:
        real = [sys.executable] + argv
        shown = ["python"] + argv
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="100")
    t0 = time.time()
    r = subprocess.run(real, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out_dir = os.path.join(CORPUS, name)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    tv = torch.__version__.split("+")[0]
    with open(os.path.join(out_dir, "train.log"), "wb") as f:
        f.write(f"# crashcart-corpus: command={' '.join(shown)}\n".encode())
        f.write(f"# torch={tv} device=cpu python={platform.python_version()}\n".encode())
        f.write(r.stdout)
    lines = [f"category: {category}", f"alternatives: [{', '.join(alternatives)}]"]
    if rule:
        lines.append(f"rule: {rule}")
    lines += [f"source: generated-by {script}", f"framework: {framework}", f"torch: {tv}",
              "device: cpu", f"difficulty: {difficulty}"]
    with open(os.path.join(out_dir, "expected.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{name:40s} rc={r.returncode} {time.time() - t0:6.1f}s {len(r.stdout):8d} bytes")


if args.record:
    record(args.record)
    sys.exit(0)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

torch.manual_seed(0)
V = args.variant


def steps(default):
    return args.steps or default


# --------------------------------------------------------------------------- silence_then_timeout
def silence_then_timeout():
    import logging
    from datetime import timedelta

    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(format=f"%(asctime)s - rank{rank} - %(levelname)s - %(message)s",
                        level=logging.INFO, stream=sys.stdout)
    log = logging.getLogger("train")
    log.info("process group ready: backend=gloo world_size=%d timeout=%ds", world, args.pg_timeout)
    torch.manual_seed(rank)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    for prm in model.parameters():  # same initial weights on every rank
        dist.broadcast(prm.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    total = steps(60)
    for step in range(1, total + 1):
        if rank == 1 and step == 21:
            log.info("step %d: fetching next shard from remote storage ...", step)
            time.sleep(3600)  # the fetch never returns
        t0 = time.time()
        # one "step" = a few micro-batches (gradient accumulation), about a second of CPU work
        opt.zero_grad()
        for _ in range(4):
            x = torch.randn(2048, 256)
            y = x[:, :1] * 2.0 + 0.1 * torch.randn(2048, 1)
            loss = nn.functional.mse_loss(model(x), y)
            (loss / 4).backward()
        try:
            for prm in model.parameters():
                dist.all_reduce(prm.grad)
                prm.grad /= world
        except RuntimeError as e:
            log.error("step %d: gradient all_reduce failed after %.1fs: %s", step, time.time() - t0, e)
            raise
        opt.step()
        elapsed = time.time() - t0
        if elapsed < 1.0:
            time.sleep(1.0 - elapsed)  # data loader is throttled to ~1 step/s
        log.info("step %d/%d loss %.4f step_time %.2fs", step, total, loss.item(), time.time() - t0)
    log.info("training finished")
    dist.destroy_process_group()



# ------------------------------------------------------------------------------ diverging_no_nan
def diverging_no_nan():
    # linear regression head trained with SGD; the schedule is meant as "linear warm-up to peak_lr
    # over warmup_steps", but warmup_steps was set to max_steps and peak_lr to 1.1 (100x the
    # intended 1.1e-2): the lr ramps up for the whole run and passes the stability limit.
    total, log_every, peak_lr = steps(400), 5, 1.1
    X = torch.randn(8192, 32)
    W = torch.randn(32, 1)
    Y = torch.tanh(X @ W / 4) * 3 + 0.05 * torch.randn(8192, 1)
    model = nn.Linear(32, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    print(f"config: max_steps={total} warmup_steps={total} peak_lr={peak_lr} optimizer=SGD batch_size=256")
    run_loss, run_gn, best = 0.0, 0.0, float("inf")
    for step in range(1, total + 1):
        lr = peak_lr * step / total
        for g in opt.param_groups:
            g["lr"] = lr
        idx = torch.randint(0, len(X), (256,))
        loss = nn.functional.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        opt.step()
        run_loss += loss.item()
        run_gn += gn.item()
        if step % log_every == 0:  # mean over the logging interval
            avg = run_loss / log_every
            print(f"step {step} loss {avg:.4f} grad_norm {run_gn / log_every:.3f} lr {lr:.4g}")
            run_loss, run_gn = 0.0, 0.0
            best = min(best, avg)
            if avg > 10000 * best:  # early-stopping guard
                print(f"early stopping at step {step}: loss {avg:.4f} is more than 10000x the best ({best:.4f})")
                return
    print(f"reached max_steps={total}, saving final checkpoint")


# ---------------------------------------------------------------------------------- loss_plateau
def loss_plateau():
    total, log_every = steps(400), 2
    n_cls = 10
    X = torch.randn(20000, 64)
    Y = torch.randint(0, n_cls, (20000,))  # labels read from the wrong column: independent of X
    model = nn.Sequential()
    model.add_module("encoder", nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU()))
    model.add_module("head", nn.Linear(256, n_cls))
    with torch.no_grad():
        model.head.weight.mul_(4.0)  # "temperature" folded into the pretrained head
    # "freeze the pretrained encoder" -- but the filter matches every weight, the head's too
    for name, prm in model.named_parameters():
        if "weight" in name or name.startswith("encoder"):
            prm.requires_grad_(False)
    trainable = [n for n, q in model.named_parameters() if q.requires_grad]
    n_train = sum(q.numel() for q in model.parameters() if q.requires_grad)
    print(f"trainable parameters: {n_train} ({', '.join(trainable)})")
    opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=3e-4)
    for step in range(1, total + 1):
        idx = torch.randint(0, len(X), (128,))
        loss = nn.functional.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % log_every == 0:
            print(f"step {step} loss {loss.item():.4f} lr 3e-04")
    print("training finished")


# ------------------------------------------------------------------------------- throughput_drop
def _decode_raw(blob):
    """Slow path: decode one raw sample (bytes -> floats) and augment it in Python."""
    import numpy as np

    x = np.frombuffer(blob, dtype=np.float32).copy()
    for _ in range(24):  # per-sample jitter + FFT low-pass, as the "raw" loader does
        x = np.fft.irfft(np.fft.rfft(x) * np.exp(-np.arange(len(x) // 2 + 1) / 64.0), n=len(x)).astype(np.float32)
    return torch.from_numpy(x)


def throughput_drop():
    import numpy as np
    from tqdm import tqdm

    total, status_every = steps(600), 10
    dim, bs = 1024, 128
    n_cached = int(total * 0.6)  # shards 0-5 are pre-decoded .pt tensors, shards 6-9 raw bytes
    rng = np.random.default_rng(0)
    cached = torch.randn(n_cached, bs, dim)
    raw = [[rng.standard_normal(dim).astype(np.float32).tobytes() for _ in range(bs)] for _ in range(total - n_cached)]
    wt = torch.randn(dim, 1) / dim ** 0.5
    model = nn.Sequential(nn.Linear(dim, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    print(f"dataset: {total} batches, {n_cached} pre-decoded, {total - n_cached} raw (decoded on the fly)")
    bar = tqdm(range(total), desc="train", file=sys.stdout, mininterval=0, ascii=True, ncols=100)
    for step in bar:
        if step < n_cached:
            xb = cached[step]
        else:
            xb = torch.stack([_decode_raw(b) for b in raw[step - n_cached]])
        yb = xb @ wt
        loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % status_every == 0:
            bar.set_postfix(loss=f"{loss.item():.4f}")
            print(f" step {step + 1} loss {loss.item():.4f}", flush=True)
    bar.close()
    print("training finished")


# --------------------------------------------------------------------------------- memory_growth
def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def memory_growth():
    total = steps(30)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    history, features = [], []  # kept "for the end-of-epoch summary"
    print(f"start rss: {_rss_mb():.0f}MB")
    for step in range(1, total + 1):
        x = torch.randn(32, 3, 64, 64)
        y = torch.randint(0, 10, (32,))
        feats = model[:4](x)
        logits = model[4:](feats)
        loss = nn.functional.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward(retain_graph=True)
        opt.step()
        history.append(loss)     # the tensor, not loss.item(): keeps the whole graph alive
        features.append(feats)   # activations with grad_fn, never freed
        print(f"step {step} loss {loss.item():.4f} rss: {_rss_mb():.0f}MB", flush=True)
    print(f"epoch done, mean loss {torch.stack(history).mean().item():.4f}")


# ----------------------------------------------------------------------------------- overfitting
def _markov_sequences(n, length, vocab, seed):
    """Token sequences from a fixed sparse Markov chain (the "language" both splits share)."""
    g = torch.Generator().manual_seed(1234)
    logits = torch.randn(vocab, vocab, generator=g) * 2.5
    probs = torch.softmax(logits, -1)
    g = torch.Generator().manual_seed(seed)
    seqs = torch.empty(n, length, dtype=torch.long)
    seqs[:, 0] = torch.randint(0, vocab, (n,), generator=g)
    for t in range(1, length):
        seqs[:, t] = torch.multinomial(probs[seqs[:, t - 1]], 1, generator=g).squeeze(1)
    return seqs


class _LMData(torch.utils.data.Dataset):
    def __init__(self, seqs):
        self.seqs = seqs

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return {"input_ids": self.seqs[i], "labels": self.seqs[i]}


def overfitting():
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    transformers.logging.set_verbosity_warning()
    vocab = 64
    train = _LMData(_markov_sequences(32, 64, vocab, seed=1))   # 32 sequences: far too few
    evals = _LMData(_markov_sequences(64, 64, vocab, seed=2))
    cfg = GPT2Config(vocab_size=vocab, n_positions=64, n_embd=256, n_layer=4, n_head=4,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(cfg)
    print(f"model parameters: {sum(q.numel() for q in model.parameters()) / 1e6:.2f}M, train sequences: {len(train)}")
    targs = TrainingArguments(
        output_dir="/tmp/crashcart-trends-overfit", max_steps=steps(200), per_device_train_batch_size=8,
        per_device_eval_batch_size=32, learning_rate=3e-4, warmup_steps=10, weight_decay=0.0,
        logging_steps=5, eval_strategy="steps", eval_steps=10, save_strategy="no", report_to=[],
        use_cpu=True, seed=0, dataloader_num_workers=0)
    trainer = Trainer(model=model, args=targs, train_dataset=train, eval_dataset=evals)
    trainer.train()


# ------------------------------------------------------------------------------- healthy variants
def _noisy_classification(n, dim, n_cls, label_noise, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, dim, generator=g)
    proj = torch.randn(dim, n_cls, generator=torch.Generator().manual_seed(99))
    Y = (X @ proj + 0.5 * torch.randn(n, n_cls, generator=g)).argmax(1)
    flip = torch.rand(n, generator=g) < label_noise
    Y[flip] = torch.randint(0, n_cls, (int(flip.sum()),), generator=g)
    return X, Y


def healthy_noisy_warmup_restarts():
    # small batches + 15% label noise -> a noisy loss; linear warm-up, then cosine annealing with
    # warm restarts (SGDR): every restart jumps the lr back up and the loss bumps before falling.
    warmup, cycle, n_cycles, log_every = 20, 200, 3, 2
    total = steps(warmup + cycle * n_cycles)
    X, Y = _noisy_classification(20000, 32, 8, 0.15, seed=0)
    model = nn.Sequential(nn.Linear(32, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 8))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.01, total_iters=warmup)
    sgdr = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=cycle, eta_min=1e-5)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, sgdr], milestones=[warmup])
    print(f"config: steps={total} warmup={warmup} cosine restarts every {cycle} steps, batch_size=32, label_noise=0.15")
    for step in range(1, total + 1):
        idx = torch.randint(0, len(X), (32,))
        loss = nn.functional.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        lr = opt.param_groups[0]["lr"]
        opt.step()
        sched.step()
        if step % log_every == 0:
            print(f"step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr {lr:.4g}")
        if step > warmup and (step - warmup) % cycle == 0:
            print(f"cycle {(step - warmup) // cycle} done at step {step}; lr restarts")
    print("training finished")


def healthy_converged_flat_tail():
    # an easy regression the MLP solves within the first ~60 steps; the loss then sits at the
    # noise floor (converged) for the rest of the run.
    total, log_every = steps(500), 2
    X = torch.randn(16384, 16)
    W = torch.randn(16, 1)
    Y = X @ W + 0.3 * torch.randn(16384, 1)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    print(f"config: steps={total} optimizer=Adam lr=1e-2 batch_size=128")
    for step in range(1, total + 1):
        idx = torch.randint(0, len(X), (128,))
        loss = nn.functional.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        opt.step()
        if step % log_every == 0:
            print(f"step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr 0.01")
    print("training finished")


class _CachedDecodeDataset(torch.utils.data.Dataset):
    """Samples are "decoded" on first access and kept in a cache (the whole train set fits)."""

    def __init__(self, n, seq, dim, seed):
        self.n, self.seq, self.dim, self.seed = n, seq, dim, seed
        self.cache = {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i not in self.cache:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
            x = torch.randn(self.seq * 6, self.dim * 4, generator=g)  # full-resolution decode
            y = int(x[:, :16].sum() > 0)
            self.cache[i] = (x, y)
        x, y = self.cache[i]
        return nn.functional.avg_pool2d(x[None], (6, 4))[0], y  # model input: pooled to seq x dim


def healthy_eval_progress_bars():
    # HF-style loop: training bar, `{'loss': ...}` dicts, an evaluation bar every eval_steps
    # (its own total and speed), memory logged with every dict. RSS rises during the first epoch
    # while the decode cache fills (and Adam allocates its state), then stays flat.
    from tqdm import tqdm

    total, log_steps, eval_steps, bs = steps(400), 2, 40, 32
    train = _CachedDecodeDataset(3200, 32, 48, seed=1)   # 3200 x 192 x 192 floats = 470 MB cached
    evals = _CachedDecodeDataset(320, 32, 48, seed=2)
    tl = torch.utils.data.DataLoader(train, batch_size=bs, shuffle=True)
    el = torch.utils.data.DataLoader(evals, batch_size=64)
    layer = nn.TransformerEncoderLayer(48, 4, 96, dropout=0.1, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 1), nn.Flatten(1), nn.LazyLinear(2))
    model(torch.zeros(1, 32, 48))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 40))
    steps_per_epoch = len(tl)
    print(f"***** Running training *****\n  Num examples = {len(train)}\n  Num Epochs = {math.ceil(total / steps_per_epoch)}\n"
          f"  Total optimization steps = {total}\n  Evaluation every {eval_steps} steps on {len(evals)} examples")
    bar = tqdm(total=total, file=sys.stdout, mininterval=0, ncols=100)
    step, running = 0, 0.0
    while step < total:
        for xb, yb in tl:
            model.train()
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            running += loss.item()
            bar.update(1)
            if step % log_steps == 0:
                logs = {"loss": round(running / log_steps, 4), "grad_norm": round(gn.item(), 4),
                        "learning_rate": opt.param_groups[0]["lr"], "epoch": round(step / steps_per_epoch, 2)}
                running = 0.0
                print(f" {logs}", flush=True)
                print(f"step {step} rss: {_rss_mb():.0f}MB", flush=True)
            if step % eval_steps == 0:
                model.eval()
                tot, count = 0.0, 0
                with torch.no_grad():
                    for xe, ye in tqdm(el, desc="Evaluating", file=sys.stdout, mininterval=0, ncols=100):
                        tot += nn.functional.cross_entropy(model(xe), ye, reduction="sum").item()
                        count += len(ye)
                print({"eval_loss": round(tot / count, 4), "epoch": round(step / steps_per_epoch, 2)}, flush=True)
            if step >= total:
                break
    bar.close()
    print("training finished")


if __name__ == "__main__" and V in globals() and callable(globals()[V]):
    globals()[V]()
