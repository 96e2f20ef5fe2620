"""autograd_graph failures: misuse of the autograd graph, real errors from backward().

Variants (--variant):
  backward_twice  an RNN-style loop carries the hidden state across batches without detaching
                  it, so the second backward() walks the already-freed graph of batch 1
  inplace         an activation output is modified in place (sigmoid_out.mul_) after being
                  saved for backward: "modified by an inplace operation"
  inplace_anomaly same as inplace, with torch.autograd.set_detect_anomaly(True) (anomaly
                  warning with the forward traceback, then the error with its hint)

Run: python corpus/generate/autograd_graph.py --variant backward_twice
"""
import argparse

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--variant", required=True)
args = p.parse_args()
torch.manual_seed(0)

if args.variant == "backward_twice":
    rnn = nn.GRUCell(16, 32)
    head = nn.Linear(32, 16)
    opt = torch.optim.Adam(list(rnn.parameters()) + list(head.parameters()), lr=1e-3)
    h = torch.zeros(8, 32)
    print("truncated BPTT, chunk=10")
    for chunk in range(5):
        loss = 0.0
        for t in range(10):
            x = torch.randn(8, 16)
            h = rnn(x, h)  # bug: h is never detached between chunks
            loss = loss + nn.functional.mse_loss(head(h), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"chunk {chunk} loss {loss.item() / 10:.4f}")

elif args.variant in ("inplace", "inplace_anomaly"):
    if args.variant == "inplace_anomaly":
        torch.autograd.set_detect_anomaly(True)

    class GatedMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(32, 64)
            self.out = nn.Linear(64, 1)

        def forward(self, x):
            g = torch.sigmoid(self.fc(x))
            g.mul_(2.0)  # rescale gate in place -- sigmoid saved its output for backward
            return self.out(g)

    model = GatedMLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(3):
        x = torch.randn(16, 32)
        loss = model(x).pow(2).mean()
        print(f"step {step} forward ok, loss={loss.item():.4f}")
        opt.zero_grad()
        loss.backward()
        opt.step()
else:
    raise SystemExit(f"unknown variant {args.variant}")
