"""Assorted single-process training failures, each a real exception from a real run.

Variants (--variant):
  dtype_double      float64 numpy features fed to a float32 model  (dtype_mismatch)
  dtype_half        model cast to bfloat16 for "memory savings", float32 batch (dtype_mismatch)
  dtype_index       embedding looked up with float token ids (dtype_mismatch)
  shape_linear      flatten size computed for 28x28 images but fed 32x32 (shape_mismatch)
  shape_broadcast   regression head with 3 outputs, targets with 4 columns (shape_mismatch)
  shape_conv        grayscale images into a 3-channel conv stem (shape_mismatch)
  ckpt_missing      state_dict saved from a DataParallel-wrapped model ("module." prefix) loaded
                    into the bare model: Missing key(s) / Unexpected key(s) (checkpoint_load)
  ckpt_size         checkpoint of a model with a different vocab size: size mismatch (checkpoint_load)
  ckpt_truncated    resume from a checkpoint whose copy was cut short (checkpoint_load)
  ckpt_weights_only torch.load (weights_only default) of a checkpoint holding a custom class
                    (checkpoint_load)
  import_missing    training script imports a package that is not installed (import_error)
  config_json       training config file with a trailing comma (config_error)
  config_divisible  n_embd not divisible by n_head in nn.MultiheadAttention (config_error)
  cuda_on_cpu_build script calls .cuda() on a CPU-only torch build (cuda_setup)
  host_alloc        one giant activation buffer: DefaultCPUAllocator can't allocate (host_oom)
  label_oob         class label >= num_classes in cross_entropy (CPU twin of a device assert)
  embed_oob         token id >= vocab size in nn.Embedding (CPU twin of a device assert)

Run: python corpus/generate/misc_errors.py --variant ckpt_missing
"""
import argparse
import io
import json
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--variant", required=True)
p.add_argument("--warm-steps", type=int, default=0, help="healthy steps logged before the failure")
args = p.parse_args()
torch.manual_seed(0)
v = args.variant
tmp = tempfile.mkdtemp(prefix="misc_")


def warmup_noise():
    """A few real healthy optimisation steps, so the log has a normal preamble."""
    m = nn.Linear(8, 1)
    o = torch.optim.SGD(m.parameters(), lr=0.05)
    x = torch.randn(256, 8)
    y = x.sum(1, keepdim=True)
    for s in range(args.warm_steps):
        loss = nn.functional.mse_loss(m(x), y)
        o.zero_grad()
        loss.backward()
        o.step()
        if s % 10 == 0:
            print(f"[warmup] step {s} loss {loss.item():.4f}")


print(f"run: variant={v} torch={torch.__version__}")
warmup_noise()

if v == "dtype_double":
    feats = np.random.default_rng(0).normal(size=(64, 10))  # float64
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
    x = torch.from_numpy(feats)
    print("features", x.shape, x.dtype)
    out = model(x)
elif v == "dtype_half":
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)).to(torch.bfloat16)
    print("model dtype:", next(model.parameters()).dtype)
    out = model(torch.randn(64, 10))
elif v == "dtype_index":
    emb = nn.Embedding(100, 16)
    ids = torch.tensor(np.random.default_rng(0).integers(0, 100, size=(4, 12)).astype("float32"))
    out = emb(ids)
elif v == "shape_linear":
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 8, 3, padding=1)
            self.fc = nn.Linear(8 * 14 * 14, 10)  # sized for 28x28 inputs

        def forward(self, x):
            x = nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
            return self.fc(x.flatten(1))

    out = Net()(torch.randn(16, 1, 32, 32))
elif v == "shape_broadcast":
    model = nn.Linear(10, 3)
    out = nn.functional.mse_loss(model(torch.randn(16, 10)), torch.randn(16, 4))
elif v == "shape_conv":
    stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
    out = stem(torch.randn(8, 1, 32, 32))
elif v in ("ckpt_missing", "ckpt_size", "ckpt_truncated", "ckpt_weights_only"):
    def make(vocab=1000):
        return nn.Sequential(nn.Embedding(vocab, 32), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, vocab))

    path = os.path.join(tmp, "checkpoint_last.pt")
    if v == "ckpt_missing":
        torch.save(nn.DataParallel(make()).state_dict(), path)
    elif v == "ckpt_size":
        torch.save({"model": make(vocab=1024).state_dict(), "step": 5000}, path)
    elif v == "ckpt_truncated":
        buf = io.BytesIO()
        torch.save({"model": make().state_dict(), "step": 5000}, buf)
        with open(path, "wb") as f:
            f.write(buf.getvalue()[: len(buf.getvalue()) // 2])  # interrupted copy
    else:
        class TrainState:  # noqa: D401 - a custom object pickled into the checkpoint
            def __init__(self):
                self.step, self.best = 5000, 0.123

        torch.save({"model": make().state_dict(), "state": TrainState()}, path)
    print(f"resuming from {path} ({os.path.getsize(path)} bytes)")
    model = make()
    ckpt = torch.load(path, map_location="cpu")
    model.load_state_dict(ckpt["model"] if "model" in ckpt else ckpt)
    print("resumed")
elif v == "import_missing":
    print("importing optional fused kernels ...")
    import flash_attn_cpu_kernels  # noqa: F401  (not installed)
elif v == "config_json":
    cfg_path = os.path.join(tmp, "train_config.json")
    with open(cfg_path, "w") as f:
        f.write('{\n  "lr": 3e-4,\n  "batch_size": 32,\n  "warmup_steps": 100,\n}\n')
    print(f"loading config {cfg_path}")
    with open(cfg_path) as f:
        cfg = json.load(f)
elif v == "config_divisible":
    cfg = {"n_embd": 100, "n_head": 3}
    print("model config:", cfg)
    attn = nn.MultiheadAttention(cfg["n_embd"], cfg["n_head"])
elif v == "cuda_on_cpu_build":
    model = nn.Linear(10, 10)
    print("moving model to GPU")
    model = model.cuda()
elif v == "host_alloc":
    batch, seq, vocab = 4096, 8192, 50257
    print(f"allocating logits buffer [{batch}, {seq}, {vocab}] float32")
    logits = torch.empty(batch, seq, vocab)
elif v == "label_oob":
    model = nn.Linear(16, 10)
    y = torch.randint(0, 10, (32,))
    y[7] = 10  # label file uses 1..10 instead of 0..9
    loss = nn.functional.cross_entropy(model(torch.randn(32, 16)), y)
elif v == "embed_oob":
    emb = nn.Embedding(32000, 64)
    ids = torch.randint(0, 32000, (2, 16))
    ids[1, 3] = 32001  # tokenizer with added special tokens, embedding not resized
    out = emb(ids)
else:
    raise SystemExit(f"unknown variant {v}")
print("ok")
