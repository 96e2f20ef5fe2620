"""requires_grad failures: real autograd errors raised by loss.backward().

Variants (--variant):
  no_grad       loss computed inside torch.no_grad() (an "eval" helper reused for training)
  frozen        every parameter frozen for "linear probing" but the head was frozen too
  detach        the model output is .detach()ed before the loss (e.g. for logging) and reused
  leaf_inplace  a custom init does an in-place op on a leaf parameter outside torch.no_grad()
  ckpt_frozen   frozen embedding + frozen head, trainable blocks run under reentrant
                torch.utils.checkpoint: the blocks' outputs do not require grad (warning first).

Run: python corpus/generate/requires_grad.py --variant no_grad
"""
import argparse
import logging
import warnings

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--variant", required=True)
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()
torch.manual_seed(0)

X = torch.randn(512, 32)
Y = (X[:, :4].sum(1) > 0).long()


def mlp():
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))


def compute_loss(model, xb, yb):
    # "shared with the eval loop" -- the bug for --variant no_grad
    with torch.no_grad():
        return nn.functional.cross_entropy(model(xb), yb)


if args.variant in ("no_grad", "frozen", "detach"):
    model = mlp()
    if args.variant == "frozen":
        print("Loading backbone ... done (2 layers)")
        for name, prm in model.named_parameters():
            prm.requires_grad = False  # meant: only model[0]
        print(f"trainable params: {sum(p.numel() for p in model.parameters() if p.requires_grad)}"
              f" || all params: {sum(p.numel() for p in model.parameters())}")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
    print(f"Starting training: {args.steps} steps, batch size 32")
    for step in range(args.steps):
        idx = torch.randint(0, 512, (32,))
        xb, yb = X[idx], Y[idx]
        if args.variant == "no_grad":
            loss = compute_loss(model, xb, yb)
        elif args.variant == "detach":
            logits = model(xb)
            logits = logits.detach()  # keep a copy for the metrics
            loss = nn.functional.cross_entropy(logits, yb)
        else:
            loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}")

elif args.variant == "leaf_inplace":
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = mlp()
            self.scale = nn.Parameter(torch.ones(2))

        def reset_parameters(self):
            for m in self.body:
                if isinstance(m, nn.Linear):
                    m.weight.normal_(0, 0.02)  # bug: not wrapped in torch.no_grad()
            self.scale.mul_(0.5)

        def forward(self, x):
            return self.body(x) * self.scale

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    log.info("building model")
    net = Net()
    log.info("re-initialising parameters")
    net.reset_parameters()
    log.info("done")

elif args.variant == "ckpt_frozen":
    import torch.utils.checkpoint as ckpt

    warnings.simplefilter("default")
    emb = nn.Embedding(256, 64)
    blocks = nn.ModuleList(nn.TransformerEncoderLayer(64, 2, 128, batch_first=True) for _ in range(2))
    head = nn.Linear(64, 256)
    # "adapter" fine-tune: embeddings and head frozen, blocks trainable, reentrant checkpointing
    emb.requires_grad_(False)
    head.requires_grad_(False)
    opt = torch.optim.AdamW(blocks.parameters(), lr=1e-4)
    print(f"trainable params: {sum(p.numel() for p in blocks.parameters()):,}")
    for step in range(args.steps):
        ids = torch.randint(0, 256, (4, 32))
        h = emb(ids)
        for blk in blocks:
            h = ckpt.checkpoint(blk, h, use_reentrant=True)
        loss = nn.functional.cross_entropy(head(h).flatten(0, 1), ids.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"step {step} loss {loss.item():.4f}")
else:
    raise SystemExit(f"unknown variant {args.variant}")
