"""requires_grad failures outside loss.backward(): tensor hooks and torch.autograd.grad inputs.

Variants (--variant):
  hook        a debug helper registers a gradient hook on intermediate activations to log
              their gradient norms; the activations it hooks come from a frozen feature
              extractor, so they do not require grad -> "cannot register a hook on a tensor
              that doesn't require gradient".
  grad_input  a WGAN-GP style critic: the gradient penalty calls
              torch.autograd.grad(critic(interp), interp) on interpolated samples that were
              built without requires_grad_() -> "One of the differentiated Tensors does not
              require grad".

Run: python corpus/generate/requires_grad_hooks.py --variant hook
"""
import argparse

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--variant", required=True, choices=["hook", "grad_input"])
p.add_argument("--steps", type=int, default=40)
p.add_argument("--debug-grads-from", type=int, default=25)
args = p.parse_args()
torch.manual_seed(0)

if args.variant == "hook":
    X = torch.randn(1024, 32)
    Y = (X[:, :4].sum(1) > 0).long()
    backbone = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU())
    head = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 2))
    backbone.requires_grad_(False)  # linear probe: backbone frozen
    opt = torch.optim.Adam(head.parameters(), lr=1e-3)
    grad_norms = {}

    def track(name):
        def hook(g):
            grad_norms[name] = g.norm().item()
        return hook

    print(f"trainable params: {sum(q.numel() for q in head.parameters())} "
          f"|| frozen: {sum(q.numel() for q in backbone.parameters())}")
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, len(X), (64,))
        feats = backbone(X[idx])
        hidden = head[1](head[0](feats))
        if step >= args.debug_grads_from:  # turned on to chase a loss plateau
            hidden.register_hook(track("head.hidden"))
            feats.register_hook(track("backbone.out"))
        loss = nn.functional.cross_entropy(head[2](hidden), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            extra = " ".join(f"|g|{k}={v:.3e}" for k, v in grad_norms.items())
            print(f"step {step:3d} loss {loss.item():.4f} {extra}".rstrip(), flush=True)

elif args.variant == "grad_input":
    real = torch.randn(2048, 2) * 0.5 + torch.tensor([2.0, -1.0])
    G = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 2))
    D = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.5, 0.9))
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-4, betas=(0.5, 0.9))
    lambda_gp, n_critic = 10.0, 5

    def gradient_penalty(critic, real_b, fake_b):
        alpha = torch.rand(real_b.size(0), 1)
        interp = alpha * real_b + (1 - alpha) * fake_b.detach()
        out = critic(interp)
        grads = torch.autograd.grad(outputs=out, inputs=interp, grad_outputs=torch.ones_like(out),
                                    create_graph=True, retain_graph=True)[0]
        return ((grads.norm(2, dim=1) - 1) ** 2).mean()

    print(f"WGAN-GP: lambda_gp={lambda_gp} n_critic={n_critic}")
    for it in range(1, args.steps + 1):
        for _ in range(n_critic):
            rb = real[torch.randint(0, len(real), (64,))]
            fb = G(torch.randn(64, 8))
            w_dist = D(rb).mean() - D(fb.detach()).mean()
            d_loss = -w_dist
            if it >= 2:  # penalty enabled after the first (warm-up) iteration
                d_loss = d_loss + lambda_gp * gradient_penalty(D, rb, fb)
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
        g_loss = -D(G(torch.randn(64, 8))).mean()
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        print(f"iter {it} d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f} W {w_dist.item():.4f}", flush=True)
