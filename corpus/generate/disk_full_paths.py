"""disk_full with a telling path: real ENOSPC failures in a library cache and in $TMPDIR.

Variants (--variant):
  hf_cache  an HF-example-style data preparation (datasets logging at INFO, as the
            transformers example scripts set it): JSONL corpus -> datasets.load_dataset("json")
            -> tokenize with .map() (cached) -> a few training steps. HF_HOME points at
            --hf-home (a `.cache/huggingface` directory on a tiny filesystem). Where the
            filesystem runs out of blocks, datasets' Arrow writer fails with a bare
            "OSError: [Errno 28] No space left on device" (the cache path only shows in the
            INFO lines before it); where it runs out of inodes, the open() of a cache/lock
            file fails and the path is in the error message itself.
  tmpdir    a training loop that saves checkpoints atomically: torch.save into a
            tempfile.NamedTemporaryFile() in the default temp dir, then shutil.move() into
            the output directory. --tmpdir is exported as TMPDIR (a small tmpfs under /tmp,
            as on shared cluster nodes), so the temporary write fails.

The filesystems are made by the caller (root): e.g.
  mount -t tmpfs -o size=96k tmpfs /tmp/X && mkdir -p /tmp/X/home/.cache/huggingface
  python corpus/generate/disk_full_paths.py --variant hf_cache --hf-home /tmp/X/home/.cache/huggingface
  mount -t tmpfs -o size=64k tmpfs /tmp/Y
  python corpus/generate/disk_full_paths.py --variant tmpdir --tmpdir /tmp/Y
Nothing is downloaded: the corpus is built in memory.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

p = argparse.ArgumentParser()
p.add_argument("--variant", required=True, choices=["hf_cache", "tmpdir"])
p.add_argument("--hf-home", default=None)
p.add_argument("--tmpdir", default=None)
p.add_argument("--rows", type=int, default=20000)
p.add_argument("--steps", type=int, default=300)
p.add_argument("--save-every", type=int, default=100)
args = p.parse_args()

if args.variant == "hf_cache" and args.hf_home:
    os.environ["HF_HOME"] = args.hf_home
if args.variant == "tmpdir" and args.tmpdir:
    os.environ["TMPDIR"] = args.tmpdir
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import logging  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S", handlers=[logging.StreamHandler(sys.stdout)])
logger = logging.getLogger("prepare_and_train")
logger.setLevel(logging.INFO)
torch.manual_seed(0)

WORDS = ("the model learns a small language of tokens and numbers while the loss goes down "
         "slowly over many steps of stochastic gradient descent on a toy corpus").split()


def build_corpus(path, rows):
    g = torch.Generator().manual_seed(0)
    with open(path, "w") as f:
        for i in range(rows):
            n = int(torch.randint(8, 40, (1,), generator=g))
            idx = torch.randint(0, len(WORDS), (n,), generator=g).tolist()
            f.write(json.dumps({"id": i, "text": " ".join(WORDS[j] for j in idx)}) + "\n")


if args.variant == "hf_cache":
    import datasets

    datasets.utils.logging.set_verbosity(logging.INFO)
    vocab = {w: i + 2 for i, w in enumerate(sorted(set(WORDS)))}
    data_dir = tempfile.mkdtemp(prefix="corpus_")
    train_file = os.path.join(data_dir, "train.jsonl")
    build_corpus(train_file, args.rows)
    logger.info(f"datasets {datasets.__version__}, cache dir {datasets.config.HF_DATASETS_CACHE}")
    raw = datasets.load_dataset("json", data_files={"train": train_file})
    logger.info(f"raw dataset: {raw}")

    def tokenize(batch):
        ids = [[vocab.get(w, 1) for w in t.split()][:32] for t in batch["text"]]
        return {"input_ids": [x + [0] * (32 - len(x)) for x in ids], "length": [len(x) for x in ids]}

    tokenized = raw.map(tokenize, batched=True, num_proc=None, remove_columns=["text"],
                        desc="Running tokenizer on dataset")
    logger.info(f"tokenized: {tokenized}")
    tokenized.set_format("torch")
    emb = nn.EmbeddingBag(len(vocab) + 2, 64)
    head = nn.Linear(64, 2)
    opt = torch.optim.AdamW(list(emb.parameters()) + list(head.parameters()), lr=1e-3)
    train = tokenized["train"]
    for step in range(args.steps):
        b = train[step * 32:(step + 1) * 32]
        y = (b["length"] > 20).long()
        loss = nn.functional.cross_entropy(head(emb(b["input_ids"])), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            logger.info(f"step {step} loss {loss.item():.4f}")

elif args.variant == "tmpdir":
    out_dir = tempfile.mkdtemp(prefix="run_", dir="/var/tmp")  # the output disk has room
    X = torch.randn(4096, 64)
    Y = X[:, :8].sum(1, keepdim=True).tanh()
    model = nn.Sequential(nn.Linear(64, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def atomic_save(state, path):
        """Write to a temp file first, then rename, so a crash never leaves a half checkpoint."""
        with tempfile.NamedTemporaryFile(dir=None, suffix=".pt", delete=False) as tmp:
            logger.info(f"writing checkpoint to temporary file {tmp.name}")
            torch.save(state, tmp)
            tmp.flush()
            os.fsync(tmp.fileno())
        shutil.move(tmp.name, path)  # TMPDIR may be on another filesystem

    logger.info(f"output dir {out_dir}, temp dir {tempfile.gettempdir()}")
    try:
        for step in range(1, args.steps + 1):
            idx = torch.randint(0, len(X), (128,))
            loss = nn.functional.mse_loss(model(X[idx]), Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                logger.info(f"step {step}/{args.steps} loss={loss.item():.5f}")
            if step % args.save_every == 0:
                atomic_save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict()},
                            os.path.join(out_dir, f"checkpoint-{step}.pt"))
                logger.info(f"saved checkpoint-{step}.pt")
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
logger.info("done")
