"""more_cases: more healthy runs and more trend failures, each a real (small, CPU) training.

Nothing in a log is written by hand: the log is the process's own stdout+stderr.

    python corpus/generate/more_cases.py --variant healthy_cnn_logging_steplr
    python corpus/generate/more_cases.py --record healthy_cnn_logging_steplr   # -> corpus/<case>/

Variants (--variant):
  healthy_cnn_logging_steplr   small CNN classifier, Python `logging` with timestamps, StepLR
                               decays, a DeprecationWarning-style UserWarning at start, val every
                               25 steps; 150 logged steps.
  healthy_hf_dicts_grad_accum  tiny TransformerEncoder LM, gradient accumulation 4, HF-Trainer
                               style dict lines ({'loss': .., 'grad_norm': .., 'learning_rate': ..,
                               'epoch': ..}) and {'eval_loss': ..} dicts; linear warm-up + decay.
  healthy_tqdm_fp16_autocast   MLP classifier under CPU autocast(float16) with a tqdm bar (\\r
                               updates, loss postfix, it/s), a per-epoch summary line.
  healthy_lstm_spike_recovers  LSTM sequence regression, plain print lines; at step ~40 a batch of
                               outliers makes the loss spike 10x, clip_grad_norm_ keeps it sane
                               and the loss recovers.
  healthy_rss_warmup_flat      MLP with `rss: N MB` per logged step: RSS rises during the first
                               steps (optimizer state, allocator caches), then stays flat.
  healthy_cosine_restarts_samples  conv1d model, CosineAnnealingWarmRestarts(T_0=60): the loss
                               bumps up at every restart; lines carry `samples/s`.
  healthy_slow_start_then_learns  deep tanh MLP from a poor init: loss sits near its start for
                               ~30 steps, then falls sharply (escapes the plateau).
  autograd_gan_step_before_backward  GAN loop: the discriminator's optimizer.step() runs before
                               the generator loss (built on the same D forward) is backpropagated:
                               `modified by an inplace operation` after 30 healthy log lines.
  healthy_bf16_grad_accum_jsonl  bf16 autocast, grad accumulation 8, json lines with loss,
                               lr, tokens/s and eval_loss.
  plateau_zero_lr_lambda       LambdaLR whose warm-up factor uses integer division
                               (step // warmup_steps with warmup_steps=10000): lr is 0 for the
                               whole run; HF-dict lines show learning_rate 0.0, loss flat.
  plateau_optimizer_stale_model  the optimizer is built over a deepcopy of the model made
                               "for EMA" before training; the trained model never changes; logging
                               module lines with timestamps; loss flat.
  leak_total_loss_graph        `total_loss += loss` (tensor, graph kept) plus the batch outputs
                               stored in a list for an epoch metric: `memory_usage: N MB` grows
                               every step.
  leak_eval_cache_tqdm         tqdm training bar whose postfix carries `rss=N MB`; a per-step
                               "prediction cache" keeps (logits, features) with their graph.
  slow_checkpoint_every_step   after "resume", save_steps is read as 1: a torch.save of the model
                               and optimizer every step; lines carry `samples/s` which falls.
  slow_quadratic_metric_tqdm   tqdm bar (it/s); each step recomputes a metric over torch.cat of
                               all previous predictions, so every step gets slower.
  overfit_mlp_val_loss_plain   wide MLP on 256 noisy samples, `epoch N train_loss X val_loss Y`.
  overfit_transformer_logging  tiny transformer classifier memorising 128 sequences with random
                               labels mixed in; logging lines `val_loss=..` per epoch.
  diverge_lr_scaled_world_size full-batch GD whose lr was multiplied by world_size=8 ("linear
                               scaling rule"): stable for most directions, just past the limit for
                               one; the loss falls, then grows ~18% a step; logging lines.
  dataloader_timeout_stalled_read  DataLoader(num_workers=2, timeout=5); samples past index 1500
                               sit on a "stalled mount" (the worker sleeps): `DataLoader timed out`.
  data_error_jsonl_truncated_record  jsonl dataset with one record cut in half; json.loads in
                               __getitem__ (num_workers=0) raises JSONDecodeError mid-epoch.
  ddp_conditional_adapter      torchrun --nproc_per_node=2, gloo (TORCH_DISTRIBUTED_DEBUG=DETAIL
                               is not used: with it this gloo/CPU run segfaults on torch 2.13):
                               an "image adapter" branch runs only on batches that carry images
                               (none after step 3 on this shard), find_unused_parameters=False:
                               DDP reports the unused parameters on both ranks.
  preemption_sigterm_handler_checkpoint  a SIGTERM handler (the process gets a real SIGTERM 6 s
                               in) logs the notice, saves a checkpoint, exits 143 for requeue.
  diverge_unscaled_feature_sgd one input column skipped by the normaliser (std 10): plain SGD
                               at an lr stable for the other columns is just past the limit for
                               that one; its error grows ~2% a step until the loss explodes.
"""
import argparse
import copy
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "corpus")

# variant -> (case name, category, rule, framework, difficulty)
CASES = {
    "healthy_cnn_logging_steplr": ("healthy_cnn_logging_steplr", "none", None, "pytorch", "medium"),
    "healthy_hf_dicts_grad_accum": ("healthy_hf_dicts_grad_accum", "none", None, "pytorch", "medium"),
    "healthy_tqdm_fp16_autocast": ("healthy_tqdm_fp16_autocast", "none", None, "pytorch", "medium"),
    "healthy_lstm_spike_recovers": ("healthy_lstm_spike_recovers", "none", None, "pytorch", "hard"),
    "healthy_rss_warmup_flat": ("healthy_rss_warmup_flat", "none", None, "pytorch", "hard"),
    "healthy_cosine_restarts_samples": ("healthy_cosine_restarts_samples", "none", None, "pytorch", "hard"),
    "healthy_slow_start_then_learns": ("healthy_slow_start_then_learns", "none", None, "pytorch", "hard"),
    "healthy_bf16_grad_accum_jsonl": ("healthy_bf16_grad_accum_jsonl", "none", None, "pytorch", "medium"),
    "plateau_zero_lr_lambda": ("trend_plateau_zero_lr_lambda", "loss_plateau", "loss_plateau.no_progress", "pytorch", "medium"),
    "plateau_optimizer_stale_model": ("trend_plateau_optimizer_stale_model", "loss_plateau", "loss_plateau.no_progress", "pytorch", "medium"),
    "leak_total_loss_graph": ("trend_leak_total_loss_graph", "memory_leak", "memory_leak.growth", "pytorch", "medium"),
    "leak_eval_cache_tqdm": ("trend_leak_eval_cache_tqdm", "memory_leak", "memory_leak.growth", "pytorch", "medium"),
    "slow_checkpoint_every_step": ("trend_slow_checkpoint_every_step", "slow_training", "slow_training.throughput_drop", "pytorch", "medium"),
    "slow_quadratic_metric_tqdm": ("trend_slow_quadratic_metric_tqdm", "slow_training", "slow_training.throughput_drop", "pytorch", "medium"),
    "overfit_mlp_val_loss_plain": ("trend_overfit_mlp_val_loss_plain", "overfitting", "overfitting.validation_rising", "pytorch", "medium"),
    "overfit_transformer_logging": ("trend_overfit_transformer_logging", "overfitting", "overfitting.validation_rising", "pytorch", "medium"),
    "diverge_lr_scaled_world_size": ("trend_diverge_lr_scaled_world_size", "gradient_explosion", "gradient_explosion.diverging", "pytorch", "medium"),
    "dataloader_timeout_stalled_read": ("dataloader_worker_timeout_stalled_read", "dataloader_worker", None, "pytorch", "medium"),
    "data_error_jsonl_truncated_record": ("data_error_jsonl_truncated_record", "data_error", None, "pytorch", "medium"),
    "autograd_gan_step_before_backward": ("autograd_gan_step_before_backward", "autograd_graph", None, "pytorch", "hard"),
    "ddp_conditional_adapter": ("ddp_unused_conditional_adapter", "ddp_unused_parameters", None, "pytorch", "hard"),
    "preemption_sigterm_handler_checkpoint": ("preemption_sigterm_handler_checkpoint", "preemption", None, "pytorch", "medium"),
    "diverge_unscaled_feature_sgd": ("trend_diverge_unscaled_feature_sgd", "gradient_explosion", "gradient_explosion.diverging", "pytorch", "medium"),
}

p = argparse.ArgumentParser()
p.add_argument("--variant")
p.add_argument("--record")
args = p.parse_args()


def record(variant):
    import torch

    name, category, rule, framework, difficulty = CASES[variant]
    script = os.path.relpath(os.path.abspath(__file__), ROOT)
    argv = [script, "--variant", variant]
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="100")
    t0 = time.time()
    real, shown = [sys.executable] + argv, ["python"] + argv
    if variant.startswith("ddp_"):
        real = [os.path.join(os.path.dirname(sys.executable), "torchrun"), "--nproc_per_node=2"] + argv
        shown = ["torchrun", "--nproc_per_node=2"] + argv
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
    lines = [f"category: {category}", "alternatives: []"]
    if rule:
        lines.append(f"rule: {rule}")
    lines += [f"source: generated-by {script}", f"framework: {framework}", f"torch: {tv}",
              "device: cpu", f"difficulty: {difficulty}"]
    with open(os.path.join(out_dir, "expected.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{name:45s} rc={r.returncode} {time.time() - t0:6.1f}s {len(r.stdout):8d} bytes")


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


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _cls_data(n=4096, dim=32, n_cls=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, dim, generator=g)
    W = torch.randn(dim, n_cls, generator=g)
    Y = (X @ W + 0.5 * torch.randn(n, n_cls, generator=g)).argmax(1)
    return X, Y


# ------------------------------------------------------------------------------------- healthy
def healthy_cnn_logging_steplr():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    X = torch.randn(2048, 1, 16, 16)
    Y = (X[:, 0, 4:12, 4:12].mean((1, 2)) > 0).long()
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(32, 2))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=50, gamma=0.5)
    warnings.warn("`torch.backends.cudnn.benchmark` has no effect on CPU-only builds", UserWarning)
    log.info("train samples=%d batch_size=32 steps=150", len(X))
    for step in range(1, 151):
        idx = torch.randint(0, 1800, (32,))
        loss = F.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        log.info("step %d loss %.4f lr %.5f", step, loss.item(), sched.get_last_lr()[0])
        if step % 25 == 0:
            with torch.no_grad():
                vl = F.cross_entropy(model(X[1800:]), Y[1800:]).item()
                acc = (model(X[1800:]).argmax(1) == Y[1800:]).float().mean().item()
            log.info("validation step %d val_loss %.4f val_acc %.3f", step, vl, acc)
    log.info("done")


class TinyLM(nn.Module):
    def __init__(self, vocab=64, d=64, n_cls=None):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, 32, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, 4, 128, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(d, n_cls or vocab)
        self.cls = n_cls is not None

    def forward(self, x):
        h = self.emb(x) + self.pos[:, : x.shape[1]]
        mask = None if self.cls else nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        h = self.enc(h, mask=mask)
        return self.out(h.mean(1) if self.cls else h)


def _markov(n, L, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    T = torch.softmax(torch.randn(vocab, vocab, generator=g) * 3, 1)
    s = torch.zeros(n, L, dtype=torch.long)
    s[:, 0] = torch.randint(0, vocab, (n,), generator=g)
    for t in range(1, L):
        s[:, t] = torch.multinomial(T[s[:, t - 1]], 1, generator=g).squeeze(1)
    return s


def healthy_hf_dicts_grad_accum():
    data = _markov(2048, 32, 64, 0)
    model = TinyLM()
    accum, total, bs = 4, 120, 16
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 12) * max(0.05, 1 - s / total))
    print(f"***** Running training *****\n  Num examples = {len(data)}\n  Gradient Accumulation steps = {accum}\n  Total optimization steps = {total}")
    for step in range(1, total + 1):
        tot = 0.0
        for _ in range(accum):
            idx = torch.randint(0, 1800, (bs,))
            x = data[idx]
            loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, 64), x[:, 1:].reshape(-1)) / accum
            loss.backward()
            tot += loss.item()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        print({"loss": round(tot, 4), "grad_norm": round(gn.item(), 4),
               "learning_rate": sched.get_last_lr()[0], "epoch": round(step * accum * bs / 1800, 2)})
        if step % 20 == 0:
            model.eval()
            with torch.no_grad():
                x = data[1800:]
                el = F.cross_entropy(model(x[:, :-1]).reshape(-1, 64), x[:, 1:].reshape(-1)).item()
            model.train()
            print({"eval_loss": round(el, 4), "eval_runtime": 0.21, "epoch": round(step * accum * bs / 1800, 2)})
    print({"train_runtime": 0.0, "train_loss": round(tot, 4), "epoch": 1.07})


def healthy_tqdm_fp16_autocast():
    from tqdm import tqdm

    X, Y = _cls_data(8192, 32, 4)
    model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(3):
        bar = tqdm(range(60), desc=f"epoch {epoch}", file=sys.stdout, mininterval=0, ncols=100)
        for i in bar:
            idx = torch.randint(0, 7000, (128,))
            with torch.autocast("cpu", dtype=torch.float16):
                logits = model(X[idx])
            loss = F.cross_entropy(logits.float(), Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.4f}")
        bar.close()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
            vl = F.cross_entropy(model(X[7000:]).float(), Y[7000:]).item()
        print(f"epoch {epoch} done: train_loss {loss.item():.4f} val_loss {vl:.4f}")


def healthy_lstm_spike_recovers():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(8, 64, batch_first=True)
            self.head = nn.Linear(64, 1)

        def forward(self, x):
            return self.head(self.rnn(x)[0][:, -1])

    X = torch.randn(4096, 20, 8)
    Y = X[:, :, 0].cumsum(1)[:, -1:] / 4
    model = M()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    print("config: lstm hidden=64 seq_len=20 batch=64 clip_grad_norm=1.0")
    for step in range(1, 161):
        idx = torch.randint(0, 4096, (64,))
        xb, yb = X[idx], Y[idx]
        if step in (40, 41):
            yb = yb * 12  # a shard with unnormalised targets
        loss = F.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print(f"step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f}")
    print("training complete")


def healthy_rss_warmup_flat():
    X = torch.randn(8192, 256)
    Y = X[:, :10].sum(1, keepdim=True)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 141):
        idx = torch.randint(0, 8192, (128,))
        loss = F.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f} rss: {_rss_mb():.1f} MB")
    print("done")


def healthy_cosine_restarts_samples():
    X = torch.randn(4096, 4, 64)
    Y = (X[:, 0].roll(3, 1) * X[:, 1]).mean(1, keepdim=True) * 5
    model = nn.Sequential(nn.Conv1d(4, 32, 5, padding=2), nn.GELU(), nn.Conv1d(32, 32, 5, padding=2), nn.GELU(),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=60)
    t = time.time()
    for step in range(1, 181):
        idx = torch.randint(0, 4096, (64,))
        loss = F.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        now = time.time()
        print(f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e} {64 / max(now - t, 1e-6):.1f} samples/s")
        t = now
    print("finished")


def healthy_slow_start_then_learns():
    torch.manual_seed(3)
    X, Y = _cls_data(4096, 16, 2, seed=1)
    layers = []
    for i in range(8):
        lin = nn.Linear(16 if i == 0 else 64, 64)
        nn.init.normal_(lin.weight, std=0.02)
        layers += [lin, nn.Tanh()]
    model = nn.Sequential(*layers, nn.Linear(64, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 201):
        idx = torch.randint(0, 4096, (256,))
        loss = F.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"iter {step} loss {loss.item():.4f}")
    print("done")


def healthy_bf16_grad_accum_jsonl():
    data = _markov(2048, 32, 64, 1)
    model = TinyLM()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    accum = 8
    t = time.time()
    for step in range(1, 111):
        for _ in range(accum):
            x = data[torch.randint(0, 1800, (8,))]
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(x[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, 64), x[:, 1:].reshape(-1)) / accum
            loss.backward()
        opt.step()
        opt.zero_grad()
        now = time.time()
        rec = {"step": step, "loss": round(loss.item() * accum, 4), "lr": 2e-3,
               "tokens_per_sec": round(accum * 8 * 31 / max(now - t, 1e-6), 1)}
        t = now
        if step % 10 == 0:
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                x = data[1800:]
                rec["eval_loss"] = round(F.cross_entropy(model(x[:, :-1]).float().reshape(-1, 64), x[:, 1:].reshape(-1)).item(), 4)
        print(json.dumps(rec))


# --------------------------------------------------------------------------------- loss plateau
def plateau_zero_lr_lambda():
    X, Y = _cls_data(20000, 32, 8, seed=2)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 8))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    warmup_steps = 10000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: s // warmup_steps)  # integer division
    for step in range(1, 201):
        idx = torch.randint(0, 20000, (1024,))
        loss = F.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 2 == 0:
            print({"loss": round(loss.item(), 4), "grad_norm": round(gn.item(), 4),
                   "learning_rate": sched.get_last_lr()[0], "epoch": round(step * 1024 / 20000, 2)})
    print({"train_runtime": 0.0, "train_loss": round(loss.item(), 4)})


def plateau_optimizer_stale_model():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(message)s")
    log = logging.getLogger()
    X = torch.randn(16384, 24)
    Y = torch.sin(X[:, :4]).sum(1, keepdim=True)
    model = nn.Sequential(nn.Linear(24, 128), nn.SiLU(), nn.Linear(128, 1))
    ema_model = copy.deepcopy(model)
    opt = torch.optim.Adam(ema_model.parameters(), lr=1e-3)  # should be model.parameters()
    log.info("model params: %d, ema enabled", sum(q.numel() for q in model.parameters()))
    for step in range(1, 181):
        idx = torch.randint(0, 16384, (1024,))
        loss = F.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.info("step %d loss %.4f", step, loss.item())
    log.info("training finished")


# --------------------------------------------------------------------------------- memory leak
def leak_total_loss_graph():
    model = nn.Sequential(nn.Linear(64, 4096), nn.ReLU(), nn.Dropout(0.1), nn.GELU(), nn.Linear(4096, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    total_loss, outputs = 0, []
    print(f"start memory_usage: {_rss_mb():.1f} MB")
    for step in range(1, 31):
        x = torch.randn(1024, 64)
        y = torch.randint(0, 10, (1024,))
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward(retain_graph=True)
        opt.step()
        total_loss += loss  # keeps every step's graph alive
        outputs.append(out)
        print(f"step {step} loss {loss.item():.4f} avg_loss {(total_loss / step).item():.4f} memory_usage: {_rss_mb():.1f} MB")
    print("epoch done")


def leak_eval_cache_tqdm():
    from tqdm import tqdm

    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    cache = {}
    bar = tqdm(range(1, 31), desc="train", file=sys.stdout, mininterval=0, ncols=110)
    for step in bar:
        x = torch.randn(48, 3, 48, 48)
        feats = model[:4](x)
        logits = model[4:](feats)
        loss = F.cross_entropy(logits, torch.randint(0, 10, (48,)))
        opt.zero_grad()
        loss.backward(retain_graph=True)
        opt.step()
        cache[step] = (logits, feats)  # "for the visualisation callback"
        bar.set_postfix(loss=f"{loss.item():.3f}", rss=f"{_rss_mb():.0f}MB")
        print(f" step {step} rss={_rss_mb():.0f}MB", flush=True)
    bar.close()


# ------------------------------------------------------------------------------ slow training
def slow_checkpoint_every_step():
    model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
    model.register_buffer("label_prior_table", torch.randn(4000, 4096))  # saved with the weights
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tmp = tempfile.mkdtemp()
    save_steps = 1000
    t = time.time()
    for step in range(1, 81):
        if step == 55:
            save_steps = int(os.environ.get("SAVE_STEPS", "1"))  # re-read from the resumed config
            print(f"resumed config: save_steps={save_steps}")
        x = torch.randn(64, 512)
        loss = F.cross_entropy(model(x), torch.randint(0, 10, (64,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % save_steps == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, os.path.join(tmp, "ckpt.pt"))
            os.sync()
        now = time.time()
        print(f"step {step} loss {loss.item():.4f} {64 / (now - t):.1f} samples/s")
        t = now
    shutil.rmtree(tmp)


def slow_quadratic_metric_tqdm():
    from tqdm import tqdm

    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    preds, labels = [], []
    metrics_from_step = 120  # "metrics callback enabled after warm-up"
    bar = tqdm(range(200), desc="train", file=sys.stdout, mininterval=0, ncols=100)
    for step in bar:
        x = torch.randn(64, 64)
        y = (x[:, 0] > 0).long()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        preds.append(logits.detach().softmax(1)[:, 1])
        labels.append(y)
        if step < metrics_from_step:
            bar.set_postfix(loss=f"{loss.item():.3f}")
            continue
        # running AUC over everything seen so far (pairwise, O(n^2) per step)
        p_all, y_all = torch.cat(preds), torch.cat(labels)
        pos, neg = p_all[y_all == 1], p_all[y_all == 0]
        auc = (pos[:, None] > neg[None, :]).float().mean().item()
        bar.set_postfix(loss=f"{loss.item():.3f}", auc=f"{auc:.3f}")
    bar.close()
    print("done")


# -------------------------------------------------------------------------------- overfitting
def overfit_mlp_val_loss_plain():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(1280, 64, generator=g)
    Y = (X[:, 0] + 0.8 * torch.randn(1280, generator=g) > 0).long()
    Xtr, Ytr, Xva, Yva = X[:256], Y[:256], X[256:], Y[256:]
    model = nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1, 41):
        perm = torch.randperm(256)
        tl = 0.0
        for i in range(0, 256, 32):
            idx = perm[i:i + 32]
            loss = F.cross_entropy(model(Xtr[idx]), Ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tl += loss.item() / 8
        with torch.no_grad():
            vl = F.cross_entropy(model(Xva), Yva).item()
        print(f"epoch {epoch} train_loss {tl:.4f} val_loss {vl:.4f}")


def overfit_transformer_logging():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")
    log = logging.getLogger("trainer")
    g = torch.Generator().manual_seed(0)
    X = torch.randint(0, 64, (1152, 24), generator=g)
    Y = ((X[:, :4] < 32).sum(1) >= 2).long()
    flip = torch.rand(1152, generator=g) < 0.3
    Y = torch.where(flip, 1 - Y, Y)
    model = TinyLM(n_cls=2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    for epoch in range(1, 31):
        model.train()
        perm = torch.randperm(128)
        tl = 0.0
        for i in range(0, 128, 32):
            idx = perm[i:i + 32]
            loss = F.cross_entropy(model(X[idx]), Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tl += loss.item() / 4
        model.eval()
        with torch.no_grad():
            vl = F.cross_entropy(model(X[128:]), Y[128:]).item()
        log.info("epoch %d train_loss=%.4f val_loss=%.4f", epoch, tl, vl)


# ------------------------------------------------------------------------- gradient explosion
def diverge_lr_scaled_world_size():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    log = logging.getLogger()
    g = torch.Generator().manual_seed(0)
    X = torch.randn(4096, 8, generator=g)
    X[:, 0] *= 3
    Y = X @ torch.tensor([[0.01], [1.0], [-0.5], [0.3], [0.0], [0.2], [0.7], [-0.4]]) + 0.05 * torch.randn(4096, 1, generator=g)
    model = nn.Linear(8, 1, bias=False)
    nn.init.zeros_(model.weight)
    base_lr, world_size = 0.0145, 8
    lr = base_lr * world_size  # "linear scaling rule" applied to a full-batch run
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    log.info("full-batch GD: base_lr=%g world_size=%d -> lr=%g", base_lr, world_size, lr)
    for step in range(1, 111):
        loss = F.mse_loss(model(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 2 == 0:
            log.info("step %d loss %.6f", step, loss.item())
    log.info("reached max_steps")


def dataloader_timeout_stalled_read():
    from torch.utils.data import DataLoader, Dataset

    class Shards(Dataset):
        def __len__(self):
            return 4096

        def __getitem__(self, i):
            if i >= 1500:
                time.sleep(60)  # the shard on the stalled network mount never answers
            return torch.randn(32), i % 4

    dl = DataLoader(Shards(), batch_size=32, num_workers=2, timeout=5)
    model = nn.Linear(32, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(dl, 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")


def data_error_jsonl_truncated_record():
    from torch.utils.data import DataLoader, Dataset

    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "train.jsonl")
    with open(path, "w") as f:
        for i in range(2000):
            rec = json.dumps({"id": i, "text": "sample %d" % i, "label": i % 3})
            f.write((rec[: len(rec) // 2] if i == 1337 else rec) + "\n")  # a record cut by an interrupted export

    class Jsonl(Dataset):
        def __init__(self, p):
            with open(p) as f:
                self.lines = f.readlines()

        def __len__(self):
            return len(self.lines)

        def __getitem__(self, i):
            rec = json.loads(self.lines[i])
            return torch.tensor([len(rec["text"]), rec["id"] % 7], dtype=torch.float), rec["label"]

    dl = DataLoader(Jsonl(path), batch_size=16, shuffle=False)
    model = nn.Linear(2, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    print(f"loaded {len(dl.dataset)} records from {path}")
    for step, (x, y) in enumerate(dl, 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")


def autograd_gan_step_before_backward():
    G = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 2))
    D = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    warmup_d_steps = 30  # "train D alone first", then the combined update below
    for step in range(1, 61):
        real = torch.randn(64, 2) * 0.5 + torch.tensor([2.0, -1.0])
        fake = G(torch.randn(64, 8))
        d_fake = D(fake)
        d_loss = F.binary_cross_entropy_with_logits(D(real), torch.ones(64, 1)) + \
            F.binary_cross_entropy_with_logits(d_fake.detach() if step <= warmup_d_steps else d_fake, torch.zeros(64, 1))
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)
        opt_d.step()
        if step > warmup_d_steps:
            g_loss = F.binary_cross_entropy_with_logits(d_fake, torch.ones(64, 1))
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
        print(f"[{step}/60] d_loss {d_loss.item():.4f}")


def ddp_conditional_adapter():
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    rank = dist.get_rank()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.text = nn.Linear(16, 32)
            self.image_adapter = nn.Linear(8, 32)
            self.head = nn.Linear(32, 2)

        def forward(self, x, img=None):
            h = self.text(x)
            if img is not None:
                h = h + self.image_adapter(img)
            return self.head(torch.relu(h))

    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(1, 21):
        x = torch.randn(16, 16)
        img = torch.randn(16, 8) if step <= 3 else None  # later batches of this shard are text-only
        loss = F.cross_entropy(model(x, img), torch.randint(0, 2, (16,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"[rank{rank}] step {step} loss {loss.item():.4f} has_images={img is not None}", flush=True)
    dist.destroy_process_group()


def preemption_sigterm_handler_checkpoint():
    import signal
    import threading

    tmp = tempfile.mkdtemp()
    stop = {"flag": False}

    def on_sigterm(signum, frame):
        print(f"Received SIGTERM (signal {signum}): preemption notice, will checkpoint and exit", flush=True)
        stop["flag"] = True

    signal.signal(signal.SIGTERM, on_sigterm)
    # stands in for the cluster scheduler preempting the job 6 s in
    threading.Timer(6.0, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X = torch.randn(4096, 32)
    Y = X[:, :3].sum(1, keepdim=True)
    for step in range(1, 100000):
        idx = torch.randint(0, 4096, (64,))
        loss = F.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.01)
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}")
        if stop["flag"]:
            torch.save({"model": model.state_dict(), "step": step}, os.path.join(tmp, "preempt.pt"))
            print(f"saved checkpoint at step {step} to {tmp}/preempt.pt; exiting with code 143 for requeue")
            sys.exit(143)


def diverge_unscaled_feature_sgd():
    torch.manual_seed(1)
    X = torch.randn(8192, 16)
    X[:, 0] *= 10  # the "age_days" column skipped by the normaliser (std 10, the others 1)
    Y = X[:, 1:5].sum(1, keepdim=True) * 0.5
    model = nn.Linear(16, 1)
    nn.init.zeros_(model.weight)
    nn.init.zeros_(model.bias)
    opt = torch.optim.SGD(model.parameters(), lr=0.0101)
    print("features: 16 (normalised: 15, skipped: ['age_days']) lr=0.0101 batch_size=256")
    run = 0.0
    for step in range(1, 321):
        idx = torch.randint(0, 8192, (256,))
        loss = F.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        run += loss.item()
        if step % 20 == 0:
            print(f"step {step} loss {run / 20:.4f}")
            run = 0.0
    print("reached max_steps")


if __name__ == "__main__":
    if V not in CASES:
        sys.exit(f"unknown variant {V!r}; one of: {', '.join(CASES)}")
    globals()[V]()
