"""Healthy (category: none) short trainings of small models on synthetic data, with the
usual noise of real logs: warnings, warm-up, lr schedules with restarts, progress bars,
periodic eval and checkpointing. Nothing in these runs fails.

Variants (--variant):
  plain        MLP regression, `step N loss X lr Y` lines
  logging      MLP classifier via the logging module (timestamps, INFO/WARNING), eval +
               checkpoint to a temp dir every N steps
  jsonl        one JSON object per log line (wandb/jsonl style)
  transformer  tiny TransformerEncoder LM with linear warm-up then CosineAnnealingWarmRestarts;
               triggers real torch UserWarning/FutureWarning on the way
  cnn_tqdm     tiny CNN, tqdm bars with \\r updates and a loss postfix, per-epoch val line
  spiky        noisy loss with a transient spike (bad batch) that recovers
  amp_bf16     CPU autocast(bfloat16) mixed-precision training
  accelerate   loop driven by accelerate.Accelerator(cpu=True) with accelerator.print
  resume       trains, saves a checkpoint, "restarts" from it and continues

Run: python corpus/generate/healthy.py --variant plain --steps 300
"""
import argparse
import json
import logging
import math
import os
import sys
import tempfile
import time
import warnings

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--variant", required=True)
p.add_argument("--steps", type=int, default=300)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--lr", type=float, default=3e-3)
args = p.parse_args()
torch.manual_seed(args.seed)
warnings.simplefilter("default")  # show each warning once, as a normal interpreter run would

X = torch.randn(4096, 32)
W = torch.randn(32, 1) / 4
Y = (X @ W).tanh() + 0.05 * torch.randn(4096, 1)
C = (X[:, :3].sum(1) > 0).long() + (X[:, 3] > 1).long()


def mlp(out=1):
    return nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, out))


def batch(bs=64, cls=False):
    idx = torch.randint(0, len(X), (bs,))
    return X[idx], (C[idx] if cls else Y[idx])


v = args.variant
if v in ("plain", "spiky", "amp_bf16"):
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)
    print(f"model: {sum(p.numel() for p in model.parameters())} params, steps={args.steps}")
    t0 = time.time()
    for step in range(1, args.steps + 1):
        xb, yb = batch()
        if v == "spiky" and step in (args.steps // 3, args.steps // 3 + 1):
            yb = yb * 8  # a handful of mislabelled/outlier samples: a transient spike
        if v == "amp_bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = nn.functional.mse_loss(model(xb).float(), yb)
        else:
            loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % args.log_every == 0 or (v == "spiky" and abs(step - args.steps // 3) <= 1):
            print(f"step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr {sched.get_last_lr()[0]:.3e}"
                  f" ({(time.time() - t0) / step * 1000:.1f} ms/step)")
    print(f"done: final loss {loss.item():.4f}")

elif v == "logging":
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
    log = logging.getLogger("train")
    model = mlp(out=3)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=args.steps // 3, gamma=0.3)
    out = tempfile.mkdtemp(prefix="run_")
    log.info("output dir %s", out)
    log.warning("no validation set given, using the last 512 training samples")
    for step in range(1, args.steps + 1):
        xb, yb = batch(cls=True)
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % args.log_every == 0:
            log.info("step %d | loss %.4f | lr %.4f", step, loss.item(), sched.get_last_lr()[0])
        if step % (args.steps // 4) == 0:
            with torch.no_grad():
                acc = (model(X[-512:]).argmax(1) == C[-512:]).float().mean().item()
            log.info("eval step %d | val_acc %.4f", step, acc)
            path = os.path.join(out, f"ckpt_{step}.pt")
            torch.save({"model": model.state_dict(), "step": step}, path)
            log.info("saved checkpoint %s", path)
    log.info("training finished")

elif v == "jsonl":
    model = mlp(out=3)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        xb, yb = batch(cls=True)
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % args.log_every == 0:
            print(json.dumps({"step": step, "loss": round(loss.item(), 5), "lr": args.lr,
                              "samples_per_sec": round(64 * step / (time.time() - t0), 1)}))
    print(json.dumps({"event": "train_end", "step": args.steps}))

elif v == "transformer":
    vocab, seq = 64, 32
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1), num_layers=2)  # warns
    emb, head = nn.Embedding(vocab, 64), nn.Linear(64, vocab)
    params = list(enc.parameters()) + list(emb.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=args.lr)
    warm = args.steps // 10
    restarts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=max(1, (args.steps - warm) // 3))
    print(f"warmup {warm} steps, then cosine with restarts every {(args.steps - warm) // 3} steps")
    for step in range(1, args.steps + 1):
        start = torch.randint(0, vocab, (32, 1))
        ids = (start + torch.arange(seq + 1)) % vocab
        with torch.cpu.amp.autocast(enabled=False):  # deprecated API -> FutureWarning
            h = enc(emb(ids[:, :-1]).transpose(0, 1)).transpose(0, 1)
            loss = nn.functional.cross_entropy(head(h).reshape(-1, vocab), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step <= warm:
            for g in opt.param_groups:
                g["lr"] = args.lr * step / warm
        else:
            restarts.step()
        if step % args.log_every == 0:
            print(f"step {step:5d} | loss {loss.item():.4f} | ppl {math.exp(loss.item()):8.2f} | lr {opt.param_groups[0]['lr']:.2e}")
    print("done")

elif v == "cnn_tqdm":
    from tqdm import tqdm

    imgs = torch.rand(1024, 3, 16, 16)
    labels = (imgs[:, 0].mean((1, 2)) > imgs[:, 1].mean((1, 2))).long()
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 2))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    epochs = max(1, args.steps // 28)
    for ep in range(epochs):
        model.train()
        perm = torch.randperm(896)
        bar = tqdm(range(0, 896, 32), desc=f"Epoch {ep + 1}/{epochs}", file=sys.stdout, mininterval=0, ncols=100)
        for i in bar:
            idx = perm[i:i + 32]
            loss = nn.functional.cross_entropy(model(imgs[idx]), labels[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.4f}")
        model.eval()
        with torch.no_grad():
            acc = (model(imgs[896:]).argmax(1) == labels[896:]).float().mean().item()
        print(f"Epoch {ep + 1}: val_acc={acc:.4f}")

elif v == "accelerate":
    from accelerate import Accelerator

    acc = Accelerator(cpu=True)
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    ds = torch.utils.data.TensorDataset(X, Y)
    dl = torch.utils.data.DataLoader(ds, batch_size=64, shuffle=True)
    model, opt, dl = acc.prepare(model, opt, dl)
    acc.print(f"device={acc.device} num_processes={acc.num_processes} mixed_precision={acc.mixed_precision}")
    step = 0
    while step < args.steps:
        for xb, yb in dl:
            loss = nn.functional.mse_loss(model(xb), yb)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
            step += 1
            if step % args.log_every == 0:
                acc.print(f"step {step}: loss={loss.item():.4f}")
            if step >= args.steps:
                break
    acc.print("training complete")

elif v == "resume":
    d = tempfile.mkdtemp(prefix="resume_")
    for phase in range(2):
        model = mlp()
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
        start = 1
        ck = os.path.join(d, "last.pt")
        if os.path.exists(ck):
            state = torch.load(ck, map_location="cpu")
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            start = state["step"] + 1
            print(f"Resumed from {ck} at step {state['step']}")
        end = start + args.steps // 2 - 1
        for step in range(start, end + 1):
            xb, yb = batch()
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % args.log_every == 0:
                print(f"step {step} loss {loss.item():.4f}")
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": end}, ck)
        print(f"Saved checkpoint {ck} (step {end})")
else:
    raise SystemExit(f"unknown variant {v}")
