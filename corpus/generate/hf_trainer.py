"""Real transformers.Trainer runs on a tiny GPT-2 built from a config (no downloads),
trained on synthetic token sequences with a learnable pattern.

Modes (--mode):
  healthy     normal lr, warm-up + cosine schedule, eval every N steps; finishes cleanly
  nan         plain SGD with a huge learning rate and no grad clipping: the Trainer logs
              {'loss': ..., 'grad_norm': ...} dicts that blow up; grad_norm turns nan.
              Note: with the default logging_nan_inf_filter=True the Trainer then logs
              'loss': '0' (nan losses are filtered); --no-nan-filter logs 'loss': 'nan'.
  save_full   healthy training whose checkpoint directory has model.safetensors /
              optimizer.pt pre-linked to /dev/full, so the first checkpoint save fails
              with ENOSPC (a real "disk full" on save)

Run: python corpus/generate/hf_trainer.py --mode healthy --max-steps 60
"""
import argparse
import os
import shutil
import tempfile

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--mode", required=True, choices=["healthy", "nan", "save_full"])
p.add_argument("--max-steps", type=int, default=60)
p.add_argument("--lr", type=float, default=None)
p.add_argument("--grad-accum", type=int, default=1)
p.add_argument("--logging-steps", type=int, default=5)
p.add_argument("--seed", type=int, default=42)
p.add_argument("--output-dir", default=None, help="save_full: a directory on a full filesystem "
               "(default: a temp dir whose checkpoint files are links to /dev/full)")
p.add_argument("--scheduler", default="cosine")
p.add_argument("--no-nan-filter", action="store_true",
               help="logging_nan_inf_filter=False (by default the Trainer hides nan/inf losses)")
args = p.parse_args()


class PatternDataset(Dataset):
    """Sequences of (a, a+1, a+2, ...) mod vocab with some noise: learnable, so loss falls."""

    def __init__(self, n, seq=32, vocab=128, seed=0):
        g = torch.Generator().manual_seed(seed)
        start = torch.randint(0, vocab, (n, 1), generator=g)
        step = torch.randint(1, 4, (n, 1), generator=g)
        self.x = (start + step * torch.arange(seq)) % vocab
        noise = torch.rand(n, seq, generator=g) < 0.05
        self.x[noise] = torch.randint(0, vocab, (int(noise.sum()),), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, n_positions=64, vocab_size=128)
model = GPT2LMHeadModel(cfg)
out_dir = args.output_dir or tempfile.mkdtemp(prefix="hf_run_")
lr = args.lr if args.lr is not None else (5.0 if args.mode == "nan" else 1e-3)
targs = TrainingArguments(
    output_dir=out_dir,
    max_steps=args.max_steps,
    per_device_train_batch_size=16,
    per_device_eval_batch_size=32,
    gradient_accumulation_steps=args.grad_accum,
    learning_rate=lr,
    warmup_steps=max(1, args.max_steps // 10),
    lr_scheduler_type=args.scheduler,
    max_grad_norm=0.0 if args.mode == "nan" else 1.0,
    logging_steps=args.logging_steps,
    eval_strategy="steps" if args.mode == "healthy" else "no",
    eval_steps=max(10, args.max_steps // 3),
    save_strategy="steps" if args.mode == "save_full" else "no",
    save_steps=max(1, args.max_steps // 2),
    report_to="none",
    logging_nan_inf_filter=not args.no_nan_filter,
    seed=args.seed,
    use_cpu=True,
    dataloader_num_workers=0,
    optim="sgd" if args.mode == "nan" else "adamw_torch",
)
if args.mode == "save_full" and not args.output_dir:
    # the checkpoint directory the Trainer will write to; its files point at a full device
    ck = os.path.join(out_dir, f"checkpoint-{targs.save_steps}")
    os.makedirs(ck)
    for name in ("model.safetensors", "optimizer.pt", "scheduler.pt", "trainer_state.json",
                 "training_args.bin", "config.json", "generation_config.json", "rng_state.pth"):
        os.symlink("/dev/full", os.path.join(ck, name))
    print(f"output_dir={out_dir}")

trainer = Trainer(model=model, args=targs, train_dataset=PatternDataset(2048, seed=args.seed),
                  eval_dataset=PatternDataset(128, seed=999))
try:
    result = trainer.train()
    print(result)
finally:
    if not args.output_dir:
        shutil.rmtree(out_dir, ignore_errors=True)
