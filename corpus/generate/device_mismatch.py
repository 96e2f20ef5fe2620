"""device_mismatch on a CPU-only machine: the `meta` device stands in for a second device.

A model materialised on `meta` (e.g. built under a "fast init" / init_empty_weights-style
context and never loaded) receives CPU inputs, or vice versa.

Variants (--variant):
  meta_model     MLP moved to meta, CPU batch -> "Tensor on device meta is not on the expected device cpu!"
  meta_input     CPU model, batch created on meta (wrong `device=` default) -> "... cpu is not on the expected device meta!"
  meta_loss      CPU model output, targets on meta, in the loss
  lstm           nn.LSTM on meta, CPU input -> "Input and parameter tensors are not at the same device"

Run: python corpus/generate/device_mismatch.py --variant meta_model
"""
import argparse

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--variant", required=True)
args = p.parse_args()
torch.manual_seed(0)

device = "meta" if args.variant in ("meta_model", "lstm") else "cpu"
data_device = "meta" if args.variant == "meta_input" else "cpu"
print(f"model device: {device}, data device: {data_device}")

if args.variant == "lstm":
    rnn = nn.LSTM(16, 32, batch_first=True).to(device)
    head = nn.Linear(32, 4).to(device)
    params = list(rnn.parameters()) + list(head.parameters())
    model = lambda x: head(rnn(x)[0][:, -1])  # noqa: E731
else:
    net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    params = list(net.parameters())
    model = net
opt = torch.optim.SGD(params, lr=0.01)
for step in range(5):
    x = torch.randn(8, 10, 16, device=data_device) if args.variant == "lstm" else torch.randn(8, 16, device=data_device)
    y = torch.randint(0, 4, (8,), device="meta" if args.variant == "meta_loss" else data_device)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
