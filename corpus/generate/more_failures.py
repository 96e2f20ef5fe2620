"""More real training failures (torch 2.13.0 CPU), one per --variant, plus a small driver.

Every variant runs real library code and dies (or is killed) with the real error; nothing in the
output is written by hand.  The driver (--make-cases) runs each case as a subprocess from the
repository root with stdout+stderr merged (PYTHONUNBUFFERED=1), prefixes the same two header
lines that corpus/generate/generate.py writes, and writes corpus/<case>/train.log (+ rankN.log
for torchrun cases) and expected.yaml.

Variants (--variant):
  ckpt_namespace     resume from a checkpoint that also pickled the argparse.Namespace of the
                     run; torch.load's weights_only=True default refuses GLOBAL argparse.Namespace
                     ("Weights only load failed")                     checkpoint_load.weights_only
  config_yaml_tab    YAML training config indented with a tab -> yaml.scanner.ScannerError
                                                                      config_error.unparsable_file
  config_json_empty  JSON config left empty (0 bytes) by an interrupted writer ->
                     json.decoder.JSONDecodeError: Expecting value     config_error.unparsable_file
  argparse_unknown   plain argparse training script started with a misspelt flag
                     (--lr_rate 3e-4): "error: unrecognized arguments" config_error.bad_argument
  hf_argparse_int    HfArgumentParser((ScriptArguments, TrainingArguments)) given
                     --per_device_train_batch_size 8.0: "error: argument ...: invalid int value"
                                                                      config_error.bad_argument
  hf_unused_args     HfArgumentParser.parse_args_into_dataclasses with a misspelt flag
                     (--lr_rate 3e-4): ValueError "Some specified arguments are not used by the
                     HfArgumentParser"                                config_error.invalid_value
  hf_round_multiple  TrainingArguments(load_best_model_at_end=True, save_steps=500,
                     eval_steps=300): "requires the saving steps to be a round multiple"
                                                                      config_error.invalid_value
  hf_strategy_match  TrainingArguments(load_best_model_at_end=True, eval_strategy="epoch",
                     save_strategy="steps"): "requires the save and eval strategy to match"
                                                                      config_error.invalid_value
  hf_scheduler_name  TrainingArguments(lr_scheduler_type="cosine_annealing"): "is not a valid
                     SchedulerType"                                   config_error.invalid_value
  hf_removed_kwarg   fine-tuning script written for transformers 4.x passes warmup_ratio=0.1 to
                     TrainingArguments on transformers 5.x: TypeError "got an unexpected keyword
                     argument 'warmup_ratio'"                         config_error.invalid_value
  cuda_to_device     device = torch.device("cuda"); model.to(device) on this CPU-only build:
                     "Torch not compiled with CUDA enabled"           cuda_setup.cpu_only_torch
  cuda_ckpt_load     torch.load without map_location of a checkpoint whose storages are tagged
                     "cuda:0" (the file is written by this script with torch.save after
                     registering a location tagger that reports cuda:0, which is exactly what a
                     GPU run writes): "Attempting to deserialize object on a CUDA device but
                     torch.cuda.is_available() is False"              cuda_setup.cpu_only_torch
  dtype_mask_interp  segmentation masks (int64) resized with F.interpolate(mode="bilinear"):
                     "upsample_bilinear2d_channels_last" not implemented for 'Long'
                                                                      dtype_mismatch.not_implemented
  dtype_ctc_half     speech model cast to half for memory, CTC loss on CPU:
                     "ctc_loss_cpu" not implemented for 'Half'       dtype_mismatch.not_implemented
  image_corrupt      ImageFolder-style Dataset with PIL, DataLoader(num_workers=2); one .jpg is an
                     HTML error page saved by a failed download: "Caught UnidentifiedImageError in
                     DataLoader worker process N" / "cannot identify image file"
                                                                      data_error.unreadable_image
  image_truncated    same, one JPEG cut short by an interrupted copy: "OSError: image file is
                     truncated (N bytes not processed)"               data_error.unreadable_image
  worker_keyerror    Dataset looks labels up in a dict built from a CSV that lacks one image id:
                     "Caught KeyError in DataLoader worker process 0"
                                                                      dataloader_worker.exception_in_worker
  ddp_unused         (torchrun, 2 procs, gloo) a model with an auxiliary head that forward() never
                     uses, DDP(find_unused_parameters=False): "Expected to have finished reduction
                     in the prior iteration before starting a new one"
                                                                      ddp_unused_parameters.unfinished_reduction
  ddp_ckpt_twice     (torchrun, 2 procs, gloo) one shared block applied twice, each time through
                     reentrant torch.utils.checkpoint, DDP(find_unused_parameters=True):
                     "Expected to mark a variable ready only once"   ddp_unused_parameters.marked_twice
  host_alloc_vocab   embedding table sized from a corrupted vocab_size (250M x 4096 fp32):
                     "DefaultCPUAllocator: not enough memory: you tried to allocate ..."
                                                                      host_oom.cpu_allocator
  import_torch_six   old training code doing `from torch._six import inf` on torch 2.13:
                     ModuleNotFoundError: No module named 'torch._six'
                                                                      import_error.module_not_found
  import_hf_adamw    old fine-tuning code doing `from transformers import AdamW` on
                     transformers 5.x: "ImportError: cannot import name 'AdamW' from
                     'transformers'"                                  import_error.cannot_import_name
  preempt_sigterm    (torchrun, 2 procs, gloo) healthy DDP training with a sleep per step; the
                     driver sends SIGTERM to rank 1's worker process from outside mid-training,
                     as a preempting scheduler would: torchrun reports exitcode -15 /
                     "Signal 15 (SIGTERM) received by PID" for local_rank 1
                                                                      preemption.sigterm

Run one variant:   python corpus/generate/more_failures.py --variant image_corrupt
torchrun variants: torchrun --nproc_per_node 2 corpus/generate/more_failures.py --variant ddp_unused
Make the corpus cases (from the repository root):
                   python corpus/generate/more_failures.py --make-cases            # all
                   python corpus/generate/more_failures.py --make-cases image_corrupt ...
"""
import argparse
import glob
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.dirname(HERE)
ROOT = os.path.dirname(CORPUS)
SCRIPT = "corpus/generate/more_failures.py"

# case name, variant, extra args, category, rule, framework, difficulty, launcher
CASES = [
    ("checkpoint_weights_only_argparse_namespace", "ckpt_namespace", [], "checkpoint_load",
     "checkpoint_load.weights_only", "pytorch", "medium", "python"),
    ("config_yaml_tab_indent", "config_yaml_tab", [], "config_error", "config_error.unparsable_file",
     "pytorch", "easy", "python"),
    ("config_json_empty_file", "config_json_empty", [], "config_error", "config_error.unparsable_file",
     "pytorch", "easy", "python"),
    ("config_argparse_unrecognized_lr_rate", "argparse_unknown", ["--epochs", "3", "--lr_rate", "3e-4"],
     "config_error", "config_error.bad_argument", "pytorch", "easy", "python"),
    ("config_hf_argparser_invalid_int", "hf_argparse_int",
     ["--output_dir", "/tmp/out", "--per_device_train_batch_size", "8.0"],
     "config_error", "config_error.bad_argument", "hf", "easy", "python"),
    ("config_hf_argparser_unused_args", "hf_unused_args", ["--output_dir", "/tmp/out", "--lr_rate", "3e-4"],
     "config_error", "config_error.invalid_value", "hf", "easy", "python"),
    ("config_hf_load_best_round_multiple", "hf_round_multiple", [], "config_error",
     "config_error.invalid_value", "hf", "easy", "python"),
    ("config_hf_load_best_strategy_mismatch", "hf_strategy_match", [], "config_error",
     "config_error.invalid_value", "hf", "easy", "python"),
    ("config_hf_invalid_scheduler_type", "hf_scheduler_name", [], "config_error",
     "config_error.invalid_value", "hf", "easy", "python"),
    ("config_hf_training_args_removed_kwarg", "hf_removed_kwarg", [], "config_error",
     "config_error.invalid_value", "hf", "easy", "python"),
    ("cuda_setup_to_device_cpu_build", "cuda_to_device", [], "cuda_setup", "cuda_setup.cpu_only_torch",
     "pytorch", "easy", "python"),
    ("cuda_setup_load_cuda_checkpoint_no_map_location", "cuda_ckpt_load", [], "cuda_setup",
     "cuda_setup.cpu_only_torch", "pytorch", "medium", "python"),
    ("dtype_mask_interpolate_long", "dtype_mask_interp", [], "dtype_mismatch", "dtype_mismatch.not_implemented",
     "pytorch", "easy", "python"),
    ("dtype_ctc_loss_half_cpu", "dtype_ctc_half", [], "dtype_mismatch", "dtype_mismatch.not_implemented",
     "pytorch", "easy", "python"),
    ("data_image_unidentified_worker", "image_corrupt", [], "data_error", "data_error.unreadable_image",
     "pytorch", "medium", "python"),
    ("data_image_truncated_worker", "image_truncated", [], "data_error", "data_error.unreadable_image",
     "pytorch", "medium", "python"),
    ("dataloader_worker_keyerror_label", "worker_keyerror", [], "dataloader_worker",
     "dataloader_worker.exception_in_worker", "pytorch", "medium", "python"),
    ("ddp_unused_aux_head_unfinished_reduction", "ddp_unused", [], "ddp_unused_parameters",
     "ddp_unused_parameters.unfinished_reduction", "pytorch", "medium", "torchrun"),
    ("ddp_reentrant_checkpoint_marked_twice", "ddp_ckpt_twice", [], "ddp_unused_parameters",
     "ddp_unused_parameters.marked_twice", "pytorch", "medium", "torchrun"),
    ("host_oom_embedding_huge_vocab", "host_alloc_vocab", [], "host_oom", "host_oom.cpu_allocator",
     "pytorch", "easy", "python"),
    ("import_torch_six_module_not_found", "import_torch_six", [], "import_error",
     "import_error.module_not_found", "pytorch", "easy", "python"),
    ("import_transformers_adamw_cannot_import", "import_hf_adamw", [], "import_error",
     "import_error.cannot_import_name", "hf", "easy", "python"),
    ("preemption_sigterm_torchrun_rank1", "preempt_sigterm", [], "preemption", "preemption.sigterm",
     "pytorch", "medium", "torchrun"),
]


def log(*a):
    print(*a, flush=True)


# ----------------------------------------------------------------------------------------------
# variants
# ----------------------------------------------------------------------------------------------
def tiny_train(steps=30, log_every=10, seed=0):
    """A few real optimisation steps so the log has a normal preamble; returns model, optimizer."""
    import torch
    import torch.nn as nn
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(512, 16), torch.randint(0, 4, (512,))
    for step in range(1, steps + 1):
        idx = torch.randint(0, 512, (32,))
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % log_every == 0:
            log(f"step {step}/{steps} loss {loss.item():.4f}")
    return model, opt


def v_ckpt_namespace(rest):
    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=2)
    run_args = ap.parse_args([])
    model, opt = tiny_train()
    d = tempfile.mkdtemp(prefix="more_")
    path = os.path.join(d, "last.pt")
    torch.save({"epoch": 1, "model": model.state_dict(), "optimizer": opt.state_dict(), "args": run_args}, path)
    log(f"saved checkpoint {path}")
    log(f"resuming from {path}")
    ckpt = torch.load(path)
    model.load_state_dict(ckpt["model"])


def v_config_yaml_tab(rest):
    import yaml
    d = tempfile.mkdtemp(prefix="more_")
    path = os.path.join(d, "train.yaml")
    with open(path, "w") as f:
        f.write("model:\n  name: resnet18\n  num_classes: 10\noptimizer:\n  name: adamw\n\tlr: 3.0e-4\n"
                "  weight_decay: 0.05\ntrainer:\n  epochs: 30\n")
    log(f"loading config {path}")
    with open(path) as f:
        cfg = yaml.safe_load(f)
    log(cfg)


def v_config_json_empty(rest):
    import json
    d = tempfile.mkdtemp(prefix="more_")
    path = os.path.join(d, "config.json")
    open(path, "w").close()  # the writer of the previous run died before writing anything
    log(f"loading model config from {path}")
    with open(path) as f:
        cfg = json.load(f)
    log(cfg)


def v_argparse_unknown(rest):
    ap = argparse.ArgumentParser(prog="train.py", description="train a classifier")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--data-dir", default="data/")
    a = ap.parse_args(rest)
    log(a)


def _hf_parser():
    from dataclasses import dataclass, field
    from transformers import HfArgumentParser, TrainingArguments

    @dataclass
    class ScriptArguments:
        model_name_or_path: str = field(default="gpt2")
        max_seq_length: int = field(default=512)

    return HfArgumentParser((ScriptArguments, TrainingArguments))


def v_hf_argparse_int(rest):
    script_args, training_args = _hf_parser().parse_args_into_dataclasses(args=rest)
    log(training_args)


def v_hf_unused_args(rest):
    script_args, training_args = _hf_parser().parse_args_into_dataclasses(args=rest)
    log(training_args)


def _training_args(**kw):
    from transformers import TrainingArguments
    log(f"TrainingArguments({', '.join(f'{k}={v!r}' for k, v in kw.items())})")
    return TrainingArguments(output_dir=tempfile.mkdtemp(prefix="hf_out_"), report_to="none", **kw)


def v_hf_round_multiple(rest):
    _training_args(eval_strategy="steps", eval_steps=300, save_strategy="steps", save_steps=500,
                   load_best_model_at_end=True, metric_for_best_model="eval_loss")


def v_hf_strategy_match(rest):
    _training_args(eval_strategy="epoch", save_strategy="steps", save_steps=500, load_best_model_at_end=True)


def v_hf_scheduler_name(rest):
    _training_args(learning_rate=5e-5, lr_scheduler_type="cosine_annealing", warmup_steps=100)


def v_hf_removed_kwarg(rest):
    _training_args(learning_rate=5e-5, lr_scheduler_type="cosine", warmup_ratio=0.1)


def v_cuda_to_device(rest):
    import torch
    import torch.nn as nn
    device = torch.device("cuda")
    log(f"using device {device}")
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    model = model.to(device)


def v_cuda_ckpt_load(rest):
    import torch
    model, opt = tiny_train()
    d = tempfile.mkdtemp(prefix="more_")
    path = os.path.join(d, "model_best.pt")
    # Write the file the way a GPU run does: storages tagged "cuda:0".  A location tagger with a
    # higher priority than the built-in cpu one reports cuda:0 for every storage during this save.
    torch.serialization.register_package(1, lambda obj: "cuda:0", lambda obj, loc: None)
    torch.save({"model": model.state_dict(), "epoch": 12}, path)
    torch.serialization._package_registry.pop(0)  # the tagger is only for writing the file
    log(f"evaluating checkpoint {path}")
    ckpt = torch.load(path, weights_only=True)
    model.load_state_dict(ckpt["model"])


def v_dtype_mask_interp(rest):
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    images = torch.rand(4, 3, 96, 96)
    masks = torch.randint(0, 21, (4, 1, 96, 96))  # class ids, int64
    log(f"batch images {tuple(images.shape)} {images.dtype}, masks {tuple(masks.shape)} {masks.dtype}")
    images = F.interpolate(images, size=(128, 128), mode="bilinear", align_corners=False)
    masks = F.interpolate(masks, size=(128, 128), mode="bilinear", align_corners=False)


def v_dtype_ctc_half(rest):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(80, 256), nn.ReLU(), nn.Linear(256, 32)).half()
    ctc = nn.CTCLoss(blank=0)
    feats = torch.randn(50, 4, 80).half()
    targets = torch.randint(1, 32, (4, 12))
    log("model dtype: float16 (memory saving)")
    log_probs = model(feats).log_softmax(-1)
    loss = ctc(log_probs, targets, torch.full((4,), 50), torch.full((4,), 12))
    loss.backward()


def _image_dir(broken):
    from PIL import Image
    import numpy as np
    d = tempfile.mkdtemp(prefix="imgs_")
    rng = np.random.default_rng(0)
    paths = []
    for i in range(48):
        p = os.path.join(d, f"img_{i:04d}.jpg")
        Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(p, quality=90)
        paths.append(p)
    bad = paths[29]
    if broken == "html":
        with open(bad, "wb") as f:
            f.write(b"<!DOCTYPE html>\n<html><head><title>403 Forbidden</title></head>"
                    b"<body><h1>Forbidden</h1></body></html>\n")
    else:
        size = os.path.getsize(bad)
        with open(bad, "rb") as f:
            data = f.read()
        with open(bad, "wb") as f:
            f.write(data[: size // 2])
    return paths


def _image_loader(paths):
    import torch
    from PIL import Image
    from torch.utils.data import DataLoader, Dataset

    class ImageDataset(Dataset):
        def __init__(self, files):
            self.files = files

        def __len__(self):
            return len(self.files)

        def __getitem__(self, i):
            img = Image.open(self.files[i]).convert("RGB")
            x = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(64, 64, 3)
            return x.permute(2, 0, 1).float() / 255.0, i % 10

    return DataLoader(ImageDataset(paths), batch_size=8, shuffle=False, num_workers=2)


def _image_train(broken):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    loader = _image_loader(_image_dir(broken))
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log(f"epoch {epoch} step {step} loss {loss.item():.4f}")


def v_image_corrupt(rest):
    _image_train("html")


def v_image_truncated(rest):
    _image_train("truncated")


def v_worker_keyerror(rest):
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, Dataset
    torch.manual_seed(0)
    ids = [f"sample_{i:05d}" for i in range(200)]
    labels = {sid: i % 5 for i, sid in enumerate(ids) if sid != "sample_00071"}  # row missing from labels.csv

    class FeatureDataset(Dataset):
        def __len__(self):
            return len(ids)

        def __getitem__(self, i):
            sid = ids[i]
            return torch.randn(16), labels[sid]

    loader = DataLoader(FeatureDataset(), batch_size=16, num_workers=2)
    model = nn.Linear(16, 5)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")


def _ddp_setup():
    import torch.distributed as dist
    from datetime import timedelta
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # whole rank output in torchrun's stderr log
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    log(f"[rank {rank}] initialized process group: backend=gloo world_size={dist.get_world_size()}")
    return rank


def v_ddp_unused(rest):
    import torch
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    rank = _ddp_setup()
    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Linear(32, 64), nn.ReLU())
            self.head = nn.Linear(64, 10)
            self.aux_head = nn.Linear(64, 10)  # only meant for the (disabled) auxiliary loss

        def forward(self, x):
            return self.head(self.backbone(x))

    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    torch.manual_seed(rank)
    for step in range(1, 21):
        x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log(f"[rank {rank}] step {step} loss {loss.item():.4f}")


def v_ddp_ckpt_twice(rest):
    import torch
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.checkpoint import checkpoint
    rank = _ddp_setup()
    torch.manual_seed(0)

    class SharedBlockNet(nn.Module):
        """ALBERT-style: one block, weights shared across 2 applications, activation checkpointing."""

        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(32, 64)
            self.block = nn.Sequential(nn.Linear(64, 64), nn.GELU())
            self.head = nn.Linear(64, 10)

        def forward(self, x):
            h = self.embed(x)
            for _ in range(2):
                h = checkpoint(self.block, h, use_reentrant=True)
            return self.head(h)

    model = DDP(SharedBlockNet(), find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    torch.manual_seed(rank)
    for step in range(1, 21):
        x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log(f"[rank {rank}] step {step} loss {loss.item():.4f}")


def v_host_alloc_vocab(rest):
    import torch.nn as nn
    model, opt = tiny_train(steps=20)
    cfg = {"vocab_size": 250_000_000, "d_model": 4096}  # vocab_size read from a corrupted tokenizer.json
    log(f"building LM head with config {cfg}")
    emb = nn.Embedding(cfg["vocab_size"], cfg["d_model"])
    log(emb)


def v_import_torch_six(rest):
    log("importing training utilities ...")
    from torch._six import inf  # noqa: F401  (old clip_grad_norm helper)


def v_import_hf_adamw(rest):
    log("importing fine-tuning dependencies ...")
    from transformers import AdamW, get_linear_schedule_with_warmup  # noqa: F401


def v_preempt_sigterm(rest):
    import torch
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    rank = _ddp_setup()
    piddir = os.environ.get("MORE_FAILURES_PIDDIR")
    if piddir:
        with open(os.path.join(piddir, f"rank{rank}.pid"), "w") as f:
            f.write(str(os.getpid()))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    torch.manual_seed(rank)
    for step in range(1, 1001):
        x = torch.randn(32, 32)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            log(f"[rank {rank}] step {step}/1000 loss {loss.item():.4f}")
        time.sleep(0.1)  # stands in for a real data pipeline


# ----------------------------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------------------------
def header(cmd_str, torch_version, extra=None):
    lines = [f"# crashcart-corpus: command={cmd_str}",
             f"# torch={torch_version} device=cpu python={platform.python_version()}"]
    if extra:
        lines.append(f"# {extra}")
    return "\n".join(lines) + "\n"


def make_case(name, variant, extra, category, rule, framework, difficulty, launcher, tv):
    out_dir = os.path.join(CORPUS, name)
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="100", PYTHONWARNINGS="default")
    argv = [SCRIPT, "--variant", variant] + extra
    logdir = piddir = None
    if launcher == "torchrun":
        logdir = tempfile.mkdtemp(prefix="torchrun_logs_")
        real = [os.path.join(os.path.dirname(sys.executable), "torchrun"), "--nproc_per_node=2",
                "--log-dir", logdir, "--redirects", "3", "--tee", "3"] + argv
        shown = ["torchrun", "--nproc_per_node=2", "--log-dir", "LOGDIR", "--redirects", "3", "--tee", "3"] + argv
    else:
        real = [sys.executable] + argv
        shown = ["python"] + argv
    if variant == "preempt_sigterm":
        piddir = tempfile.mkdtemp(prefix="pids_")
        env["MORE_FAILURES_PIDDIR"] = piddir
    t0 = time.time()
    proc = subprocess.Popen(real, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if piddir:
        # wait until rank 1 is training, then preempt it from outside
        pidfile = os.path.join(piddir, "rank1.pid")
        while not os.path.exists(pidfile) and proc.poll() is None:
            time.sleep(0.2)
        time.sleep(6)
        with open(pidfile) as f:
            pid = int(f.read())
        log(f"  sending SIGTERM to rank 1 worker pid {pid}")
        os.kill(pid, signal.SIGTERM)
    try:
        output, _ = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
    cmd_str = " ".join(shown)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "train.log"), "wb") as f:
        f.write(header(cmd_str, tv).encode())
        f.write(output)
    if logdir:
        for rank_dir in sorted(glob.glob(os.path.join(logdir, "*", "attempt_0", "*"))):
            rank = os.path.basename(rank_dir)
            with open(os.path.join(out_dir, f"rank{rank}.log"), "wb") as f:
                f.write(header(cmd_str, tv, f"per-rank log: local_rank={rank} (torchrun --log-dir stderr.log)")
                        .encode())
                for n in ("stdout.log", "stderr.log"):
                    with open(os.path.join(rank_dir, n), "rb") as src:
                        f.write(src.read())
        shutil.rmtree(logdir, ignore_errors=True)
    lines = [f"category: {category}", "alternatives: []", f"rule: {rule}", f"source: generated-by {SCRIPT}",
             f"framework: {framework}", f"torch: {tv}", "device: cpu", f"difficulty: {difficulty}"]
    with open(os.path.join(out_dir, "expected.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    log(f"{name:50s} rc={proc.returncode} {time.time() - t0:5.1f}s {len(output):7d} bytes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant")
    ap.add_argument("--make-cases", nargs="*")
    a, rest = ap.parse_known_args()
    if a.make_cases is not None:
        import torch
        tv = torch.__version__.split("+")[0]
        names = {c[0] for c in CASES}
        for n in a.make_cases:
            if n not in names:
                sys.exit(f"unknown case {n}")
        for c in CASES:
            if not a.make_cases or c[0] in a.make_cases:
                make_case(*c, tv)
        return
    fn = globals().get("v_" + (a.variant or ""))
    if fn is None:
        sys.exit(f"unknown variant {a.variant}")
    if a.variant not in ("argparse_unknown", "hf_argparse_int", "hf_unused_args") and rest:
        sys.exit(f"unexpected arguments {rest}")
    fn(rest)


if __name__ == "__main__":
    main()
