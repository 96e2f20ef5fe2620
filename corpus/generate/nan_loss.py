"""nan_loss: real trainings whose loss becomes NaN/Inf.

Variants (--variant):
  diverge        MLP regression, SGD with linear warm-up to a far too high peak lr:
                 loss falls during warm-up, then rises, overflows to inf and nan; the run
                 keeps going and logs `step N loss nan` until the end (no crash)
  first_step     log-likelihood of a softmax written as log(softmax(x)) with logits that
                 underflow to exact zeros -> loss is inf / nan from the first logged step
  anomaly        as first_step, but under torch.autograd.detect_anomaly(): backward raises
                 "Function 'XBackward0' returned nan values in its 0th output."
  raise_check    diverging run whose loop checks math.isfinite(loss) and raises (as many
                 training scripts do) after a long healthy-looking stretch
  tqdm           diverging run printed through a tqdm progress bar with a loss postfix
  amp_scaler     CPU autocast(float16) + torch.amp.GradScaler('cpu') on a diverging model:
                 the scaler keeps skipping steps and halving the scale, loss is inf/nan

Run: python corpus/generate/nan_loss.py --variant diverge
"""
import argparse
import math
import sys

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--variant", required=True)
p.add_argument("--steps", type=int, default=200)
p.add_argument("--peak-lr", type=float, default=0.5)
p.add_argument("--warmup", type=int, default=50)
p.add_argument("--log-every", type=int, default=5)
args = p.parse_args()
torch.manual_seed(0)

X = torch.randn(2048, 16) * 3.0
W = torch.randn(16, 1)
Y = X @ W + 0.1 * torch.randn(2048, 1)


def mlp():
    return nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))


def lr_at(step):
    return args.peak_lr * min(1.0, (step + 1) / args.warmup)


def batches():
    for step in range(args.steps):
        idx = torch.randint(0, len(X), (64,))
        yield step, X[idx], Y[idx]


if args.variant in ("diverge", "raise_check"):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=lr_at(0), momentum=0.9)
    print(f"config: steps={args.steps} peak_lr={args.peak_lr} warmup={args.warmup} optimizer=SGD(momentum=0.9)")
    for step, xb, yb in batches():
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        loss = nn.functional.mse_loss(model(xb), yb)
        if args.variant == "raise_check" and not math.isfinite(loss.item()):
            raise ValueError(f"Loss is {loss.item()} at step {step}, stopping training")
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        opt.step()
        if step % args.log_every == 0:
            print(f"step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr {lr_at(step):.4g}")
    print("training finished")

elif args.variant in ("first_step", "anomaly"):
    print(f"torch {torch.__version__}, anomaly detection: {args.variant == 'anomaly'}")
    clf = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10))
    with torch.no_grad():
        clf[2].bias.copy_(torch.arange(10) * 30.0)  # "prior" init that saturates the softmax
    labels = (X[:, 0] > 0).long()
    opt = torch.optim.Adam(clf.parameters(), lr=1e-3)
    ctx = torch.autograd.detect_anomaly() if args.variant == "anomaly" else None
    if ctx:
        ctx.__enter__()
    for step in range(args.steps):
        idx = torch.randint(0, len(X), (64,))
        probs = torch.softmax(clf(X[idx]), dim=-1)
        loss = -torch.log(probs[torch.arange(64), labels[idx]]).mean()  # log(0) = -inf
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % args.log_every == 0:
            print(f"epoch 0 | step {step:4d} | loss {loss.item():.4f}")

elif args.variant == "tqdm":
    from tqdm import tqdm

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=lr_at(0), momentum=0.9)
    for epoch in range(2):
        bar = tqdm(range(args.steps // 2), desc=f"Epoch {epoch}", file=sys.stdout, mininterval=0, ncols=100)
        for i in bar:
            step = epoch * (args.steps // 2) + i
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            idx = torch.randint(0, len(X), (64,))
            loss = nn.functional.mse_loss(model(X[idx]), Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % args.log_every == 0:
                bar.set_postfix(loss=f"{loss.item():.4f}", lr=f"{lr_at(step):.3g}")
        bar.close()

elif args.variant == "amp_scaler":
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=lr_at(0), momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    print(f"mixed precision: autocast(cpu, float16), GradScaler enabled={scaler.is_enabled()}")
    for step, xb, yb in batches():
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        with torch.autocast("cpu", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if step % args.log_every == 0:
            print(f"step {step} loss {loss.item():.4f} loss_scale {scaler.get_scale():g} lr {lr_at(step):.4g}")
    print("done")
else:
    raise SystemExit(f"unknown variant {args.variant}")
