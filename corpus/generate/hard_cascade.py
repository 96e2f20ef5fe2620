"""hard_cascade: failures whose LAST error is not the root cause, or whose root cause is buried.

Each variant is a real (small, CPU, single-process) training that makes a realistic mistake;
an except/finally handler then fails differently ("During handling of the above exception,
another exception occurred"), or the failure sits under long healthy output, progress bars,
warnings, a logged-and-swallowed traceback, or inside a DataLoader worker. The expected
category is always the ROOT cause. Nothing in a log is written by hand: the log is the
process's own stdout+stderr. Where a full filesystem is needed, the file a handler writes is a
link to /dev/full (a real ENOSPC).

    python corpus/generate/hard_cascade.py --variant shape_view_batch_emergency_save
    python corpus/generate/hard_cascade.py --record shape_view_batch_emergency_save  # -> corpus/<case>/

Variants (--variant):
  shape_view_batch_emergency_save  conv1d model with `x.view(BATCH, ...)` hard-coded: the last,
                               partial batch of epoch 1 fails (`shape '[64, 8, 6]' is invalid`);
                               the except handler's emergency torch.save hits a full disk
                               (`unexpected pos` / PytorchStreamWriter).
  dtype_val_npy_float64_tensorboard  training on float32 tensors; the validation set is np.load'ed
                               (float64) at step 200: `mat1 and mat2 must have the same dtype`;
                               the finally block lazily imports torch.utils.tensorboard to export
                               the curves: ModuleNotFoundError/ImportError (tensorboard missing).
  requires_grad_probe_closed_metrics  stage 1 trains 150 steps writing metrics.jsonl in a `with`
                               block; stage 2 ("linear probe") freezes model.parameters() AFTER
                               replacing the head: `element 0 of tensors does not require grad`;
                               the except handler writes to the closed metrics file
                               (`I/O operation on closed file`).
  autograd_inplace_clamp_event_json  json event lines; after warm-up the sigmoid output is clamped
                               in place: `modified by an inplace operation`; the error event's
                               json.dumps gets the loss tensor (`Object of type Tensor is not JSON
                               serializable`).
  data_error_worker_csv_na_tqdm  CSV dataset in 2 DataLoader workers under a tqdm bar; a row has
                               price "N/A": `Caught ValueError in DataLoader worker process ...`
                               (`could not convert string to float`).
  config_error_worker_init_tta_yaml  the validation loader's worker_init_fn parses the TTA yaml,
                               which has a tab indentation: `Caught ScannerError in DataLoader worker
                               process 0` at the first validation, after 200 healthy steps.
  data_error_blank_fallback_collate  a truncated .npy sample is caught by logging.exception and
                               replaced by a blank of the configured 224x224 size while the data is
                               64x64: default_collate's `stack expects each tensor to be equal size`.
  checkpoint_load_ema_keys_crash_report  stage 1 saves AveragedModel(model).state_dict() as the
                               best checkpoint; stage 2 loads it into the plain model (`Missing
                               key(s)` / `Unexpected key(s)` module.*, n_averaged); the handler's
                               crash report open()s a file in a never-created dir
                               (FileNotFoundError).
  hf_label_oob_save_state_dev_full  HF Trainer, GPT2ForSequenceClassification(num_labels=3); a
                               rare class seen only late in the data is mapped to id 3: `Target 3
                               is out of bounds`; the except handler's trainer.save_state() writes
                               trainer_state.json to a full disk (Errno 28).
  host_oom_one_hot_sentinel_memory_summary  F.one_hot without num_classes; a record carries the
                               upstream "unknown" sentinel 2147483000: DefaultCPUAllocator can't
                               allocate ~1 TB; the OOM handler prints torch.cuda.memory_summary()
                               on this CPU-only build: KeyError 'allocated_bytes.all.current'.
  lightning_nan_anomaly_on_exception_ckpt  Lightning, detect_anomaly=True, lr too high: the
                               regression diverges, `Function 'MseLossBackward0' returned nan
                               values`; a callback's on_exception torch.save()s a crash checkpoint to a
                               full disk (`unexpected pos` / PytorchStreamWriter).
  eos_target_oob_export_best   vocab built from the training split; eval appends an EOS id equal
                               to len(vocab) to the targets: `Target 200 is out of bounds` at the first eval
                               (step 300); the finally block copies best.pt, never written
                               (FileNotFoundError).
  device_meta_init_no_assign_mlflow  model built under torch.device("meta"), then
                               load_state_dict() without assign=True (a no-op, one UserWarning per
                               tensor): `Tensor on device meta is not on the expected device cpu!`;
                               the handler imports mlflow to tag the run failed
                               (ModuleNotFoundError).
  import_flash_attn_fallback_none  `from flash_attn import ...` fails, logging.exception logs it
                               and sets the function to None; batches longer than 256 tokens later
                               call it: `'NoneType' object is not callable`.
  config_yaml_lr_string_stage2_save  tqdm bars for stage 1; YAML reads `lr: 5e-5` as a string
                               (YAML 1.1), stage 2's AdamW fails (`'<=' not supported between
                               instances of 'float' and 'str'`); the finally block saves to an
                               output_dir that was never created (`Parent directory ... does not
                               exist`).
  hf_multihot_labels_shape_evaluate  HF Trainer, multi-hot int labels [B, 3] with problem_type
                               unset: single-label CE, `Expected input batch_size (8) to match
                               target batch_size (24)`; the finally block's trainer.evaluate()
                               has no eval_dataset (ValueError).
  nan_target_clip_nonfinite_histc  2400 healthy `step/loss/grad_norm` lines, then a NaN target:
                               clip_grad_norm_(error_if_nonfinite=True) raises; the debugging
                               handler's torch.histc over the nan grads fails (`range of [nan,
                               nan] is not finite`).
  autograd_cached_prompt_refresh_workers  class-prompt embeddings cached under no_grad, refreshed
                               at step 100 without no_grad: `Trying to backward through the graph
                               a second time` at step 101; DataLoader workers (not persistent)
                               repeat a torch UserWarning every epoch.
  shape_worker_special_tokens_collate  tokenised text truncated to max_len BEFORE BOS/EOS are
                               added, then padded to max_len: a long text becomes max_len+2; `Caught RuntimeError in DataLoader
                               worker process ...`: `stack expects each tensor to be equal size`.
  lightning_bf16_index_add_val_callback  Lightning precision="bf16-mixed" on CPU; validation's
                               segment pooling index_add_'s bf16 features into a float32 buffer
                               (`index_add_(): self (Float) and source (BFloat16)`) at step 50; a
                               callback's on_exception json-dumps callback_metrics (tensors).
  nan_rollback_missing_last_good  lr warm-up to a too-high peak: loss becomes nan at ~step 150,
                               the check logs it with logging.exception and rolls back with
                               torch.load of a last-good checkpoint saved only every 500 steps
                               (FileNotFoundError).
"""

import argparse
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "corpus")

# variant -> (case name, category, alternatives, framework, difficulty)
CASES = {
    "shape_view_batch_emergency_save": (
        "cascade_shape_view_last_batch_emergency_save_disk_full",
        "shape_mismatch",
        [],
        "pytorch",
        "hard",
    ),
    "dtype_val_npy_float64_tensorboard": (
        "cascade_dtype_val_float64_finally_tensorboard_import",
        "dtype_mismatch",
        [],
        "pytorch",
        "hard",
    ),
    "requires_grad_probe_closed_metrics": (
        "cascade_requires_grad_frozen_probe_closed_metrics_file",
        "requires_grad",
        [],
        "pytorch",
        "hard",
    ),
    "autograd_inplace_clamp_event_json": (
        "cascade_autograd_inplace_clamp_event_json_tensor",
        "autograd_graph",
        [],
        "pytorch",
        "hard",
    ),
    "data_error_worker_csv_na_tqdm": (
        "cascade_data_error_worker_csv_na_tqdm",
        "data_error",
        [],
        "pytorch",
        "hard",
    ),
    "config_error_worker_init_tta_yaml": (
        "cascade_config_error_worker_init_tta_yaml",
        "config_error",
        [],
        "pytorch",
        "hard",
    ),
    "data_error_blank_fallback_collate": (
        "cascade_data_error_logged_fallback_blank_collate",
        "data_error",
        ["shape_mismatch"],
        "pytorch",
        "hard",
    ),
    "checkpoint_load_ema_keys_crash_report": (
        "cascade_checkpoint_load_ema_keys_crash_report_missing_dir",
        "checkpoint_load",
        [],
        "pytorch",
        "hard",
    ),
    "hf_label_oob_save_state_dev_full": (
        "cascade_hf_label_out_of_bounds_save_state_disk_full",
        "cuda_device_assert",
        [],
        "hf",
        "hard",
    ),
    "host_oom_one_hot_sentinel_memory_summary": (
        "cascade_host_oom_one_hot_sentinel_memory_summary",
        "host_oom",
        [],
        "pytorch",
        "hard",
    ),
    "lightning_nan_anomaly_on_exception_ckpt": (
        "cascade_lightning_nan_anomaly_on_exception_ckpt_disk_full",
        "nan_loss",
        ["gradient_explosion"],
        "lightning",
        "hard",
    ),
    "eos_target_oob_export_best": (
        "cascade_eos_target_out_of_bounds_export_missing_best",
        "cuda_device_assert",
        [],
        "pytorch",
        "hard",
    ),
    "device_meta_init_no_assign_mlflow": (
        "cascade_device_meta_init_no_assign_mlflow_import",
        "device_mismatch",
        [],
        "pytorch",
        "hard",
    ),
    "import_flash_attn_fallback_none": (
        "cascade_import_flash_attn_logged_fallback_none",
        "import_error",
        [],
        "pytorch",
        "hard",
    ),
    "config_yaml_lr_string_stage2_save": (
        "cascade_config_yaml_lr_string_stage2_save_no_dir",
        "config_error",
        [],
        "pytorch",
        "hard",
    ),
    "hf_multihot_labels_shape_evaluate": (
        "cascade_hf_multihot_labels_shape_finally_evaluate",
        "shape_mismatch",
        [],
        "hf",
        "hard",
    ),
    "nan_target_clip_nonfinite_histc": (
        "cascade_nan_target_clip_nonfinite_histc",
        "nan_loss",
        ["data_error"],
        "pytorch",
        "hard",
    ),
    "autograd_cached_prompt_refresh_workers": (
        "cascade_autograd_cached_prompt_refresh_backward_twice",
        "autograd_graph",
        [],
        "pytorch",
        "hard",
    ),
    "shape_worker_special_tokens_collate": (
        "cascade_shape_worker_special_tokens_collate",
        "shape_mismatch",
        [],
        "pytorch",
        "hard",
    ),
    "lightning_bf16_index_add_val_callback": (
        "cascade_lightning_bf16_index_add_val_callback_json",
        "dtype_mismatch",
        [],
        "lightning",
        "hard",
    ),
    "nan_rollback_missing_last_good": (
        "cascade_nan_rollback_missing_last_good_ckpt",
        "nan_loss",
        ["gradient_explosion"],
        "pytorch",
        "hard",
    ),
}

p = argparse.ArgumentParser()
p.add_argument("--variant")
p.add_argument("--record")
args = p.parse_args()


def record(variant):
    import torch

    name, category, alternatives, framework, difficulty = CASES[variant]
    script = os.path.relpath(os.path.abspath(__file__), ROOT)
    argv = [script, "--variant", variant]
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="100")
    t0 = time.time()
    r = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    out_dir = os.path.join(CORPUS, name)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    tv = torch.__version__.split("+")[0]
    with open(os.path.join(out_dir, "train.log"), "wb") as f:
        f.write(f"# crashcart-corpus: command=python {' '.join(argv)}\n".encode())
        f.write(f"# torch={tv} device=cpu python={platform.python_version()}\n".encode())
        f.write(r.stdout)
    lines = [
        f"category: {category}",
        f"alternatives: [{', '.join(alternatives)}]",
        f"source: generated-by {script}",
        f"framework: {framework}",
        f"torch: {tv}",
        "device: cpu",
        f"difficulty: {difficulty}",
    ]
    with open(os.path.join(out_dir, "expected.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{name:60s} rc={r.returncode} {time.time() - t0:6.1f}s {len(r.stdout):8d} bytes")


if args.record:
    record(args.record)
    sys.exit(0)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.manual_seed(0)
torch.set_num_threads(1)
warnings.simplefilter("default")
V = args.variant


def _cls_data(n=4096, dim=32, n_cls=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, dim, generator=g)
    W = torch.randn(dim, n_cls, generator=g)
    Y = (X @ W + 0.5 * torch.randn(n, n_cls, generator=g)).argmax(1)
    return X, Y


def _mlp(d_in=32, d_h=64, d_out=4):
    return nn.Sequential(nn.Linear(d_in, d_h), nn.ReLU(), nn.Linear(d_h, d_out))


def _log(fmt="%(asctime)s %(levelname)s %(name)s: %(message)s"):
    logging.basicConfig(level=logging.INFO, format=fmt)
    return logging.getLogger("train")


# ------------------------------------------------------------------ handler fails differently
def shape_view_batch_emergency_save():
    tmp = tempfile.mkdtemp(prefix="run_")
    ckdir = os.path.join(tmp, "checkpoints")
    os.makedirs(ckdir)
    emergency = os.path.join(ckdir, "emergency.pt")
    os.symlink("/dev/full", emergency)  # the checkpoint volume is full
    X, Y = _cls_data(n=4000, dim=48)
    BATCH = 64

    class FrameNet(nn.Module):  # 48 features = 8 channels x 6 frames
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(8, 32, 3, padding=1)
            self.head = nn.Linear(32 * 6, 4)

        def forward(self, x):
            h = torch.relu(self.conv(x.view(BATCH, 8, 6)))
            return self.head(h.view(BATCH, -1))

    model = FrameNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    ds = torch.utils.data.TensorDataset(X, Y)
    dl = torch.utils.data.DataLoader(ds, batch_size=BATCH, shuffle=True)
    print(f"train samples {len(ds)}, batch_size {BATCH}, steps/epoch {len(dl)}")
    step = 0
    try:
        for epoch in range(3):
            for x, y in dl:
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                step += 1
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
    except Exception:
        print(
            f"training crashed at step {step}; writing emergency checkpoint to {emergency}",
            flush=True,
        )
        torch.save(
            {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}, emergency
        )
        raise


def dtype_val_npy_float64_tensorboard():
    import numpy as np

    tmp = tempfile.mkdtemp(prefix="run_")
    rng = np.random.default_rng(0)
    Xv = rng.normal(size=(512, 32))  # numpy's default dtype: float64
    np.save(os.path.join(tmp, "val_x.npy"), Xv)
    np.save(os.path.join(tmp, "val_y.npy"), rng.integers(0, 4, 512))
    X, Y = _cls_data()
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    history = []
    try:
        for step in range(1, 401):
            idx = torch.randint(0, len(X), (64,))
            loss = F.cross_entropy(model(X[idx]), Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            history.append((step, loss.item()))
            print(f"step {step:4d} | loss {loss.item():.4f} | lr {opt.param_groups[0]['lr']:.3g}")
            if step % 200 == 0:
                xv = torch.from_numpy(np.load(os.path.join(tmp, "val_x.npy")))
                yv = torch.from_numpy(np.load(os.path.join(tmp, "val_y.npy")))
                with torch.no_grad():
                    vl = F.cross_entropy(model(xv), yv).item()
                print(f"validation step {step} val_loss {vl:.4f}")
    finally:
        # export the curves to TensorBoard at the end (imported lazily: tensorboard is optional)
        from torch.utils.tensorboard import SummaryWriter

        w = SummaryWriter(os.path.join(tmp, "tb"))
        for s, v in history:
            w.add_scalar("train/loss", v, s)
        w.close()


def requires_grad_probe_closed_metrics():
    log = _log()
    tmp = tempfile.mkdtemp(prefix="run_")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(
                nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU()
            )
            self.head = nn.Linear(64, 4)

        def forward(self, x):
            return self.head(self.backbone(x))

    model = Net()
    X, Y = _cls_data()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    metrics_path = os.path.join(tmp, "metrics.jsonl")
    with open(metrics_path, "w") as mf:
        for step in range(1, 151):
            idx = torch.randint(0, len(X), (64,))
            loss = F.cross_entropy(model(X[idx]), Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            mf.write(json.dumps({"stage": "pretrain", "step": step, "loss": loss.item()}) + "\n")
            if step % 5 == 0:
                log.info("pretrain step %d loss %.4f", step, loss.item())
    log.info("pretrain done; metrics in %s", metrics_path)
    # stage 2: linear probe on a 3-class task: new head, frozen backbone
    X2, Y2 = _cls_data(n=2048, n_cls=3, seed=1)
    model.head = nn.Linear(64, 3)
    for prm in model.parameters():  # meant: model.backbone.parameters()
        prm.requires_grad_(False)
    opt = torch.optim.SGD(model.head.parameters(), lr=0.1)
    log.info(
        "linear probe: trainable params %d",
        sum(q.numel() for q in model.parameters() if q.requires_grad),
    )
    step = 0
    try:
        for step in range(1, 101):
            idx = torch.randint(0, len(X2), (64,))
            loss = F.cross_entropy(model(X2[idx]), Y2[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            mf.write(json.dumps({"stage": "probe", "step": step, "loss": loss.item()}) + "\n")
    except Exception as e:
        mf.write(
            json.dumps({"stage": "probe", "step": step, "status": "failed", "error": repr(e)})
            + "\n"
        )
        raise


def autograd_inplace_clamp_event_json():
    def log_event(event, **fields):
        print(json.dumps({"ts": round(time.time(), 3), "event": event, **fields}), flush=True)

    g = torch.Generator().manual_seed(0)
    X = torch.randn(4096, 24, generator=g)
    y = ((X[:, :4].sum(1) + 0.3 * torch.randn(4096, generator=g)) > 0).float().unsqueeze(1)
    model = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    warmup = 120
    log_event("run_start", lr=1e-3, warmup_steps=warmup, batch_size=64)
    for step in range(1, 301):
        idx = torch.randint(0, 4096, (64,), generator=g)
        probs = torch.sigmoid(model(X[idx]))
        if step > warmup:
            probs.clamp_(1e-4, 1 - 1e-4)  # "stabilise BCE once the model gets confident"
        loss = F.binary_cross_entropy(probs, y[idx])
        opt.zero_grad()
        try:
            loss.backward()
        except RuntimeError as e:
            log_event("train_error", step=step, loss=loss, error=str(e))
            raise
        opt.step()
        log_event("train_step", step=step, loss=round(loss.item(), 5), lr=1e-3)


# ------------------------------------------------------------------ first failure in a worker
def data_error_worker_csv_na_tqdm():
    from torch.utils.data import DataLoader, Dataset
    from tqdm import tqdm

    tmp = tempfile.mkdtemp(prefix="data_")
    path = os.path.join(tmp, "listings.csv")
    g = torch.Generator().manual_seed(0)
    feats = torch.randn(5000, 8, generator=g)
    with open(path, "w") as f:
        f.write(",".join([f"f{i}" for i in range(8)] + ["price"]) + "\n")
        for i in range(5000):
            price = "N/A" if i == 4870 else f"{feats[i, :3].sum().item() * 10 + 100:.2f}"
            f.write(",".join(f"{v:.4f}" for v in feats[i].tolist()) + f",{price}\n")

    class Listings(Dataset):
        def __init__(self, p):
            with open(p) as f:
                self.rows = f.read().splitlines()[1:]

        def __len__(self):
            return len(self.rows)

        def __getitem__(self, i):
            cols = self.rows[i].split(",")
            return torch.tensor([float(c) for c in cols[:8]]), torch.tensor([float(cols[8])]) / 100

    dl = DataLoader(Listings(path), batch_size=32, shuffle=False, num_workers=2)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(2):
        pbar = tqdm(dl, desc=f"Epoch {epoch}", mininterval=0.05)
        for x, y in pbar:
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            pbar.set_postfix(loss=f"{loss.item():.4f}")
            time.sleep(0.003)


def config_error_worker_init_tta_yaml():
    import yaml
    from torch.utils.data import DataLoader, Dataset, get_worker_info

    tmp = tempfile.mkdtemp(prefix="cfg_")
    with open(os.path.join(tmp, "train_aug.yaml"), "w") as f:
        f.write("noise_std: 0.05\nscale:\n  min: 0.9\n  max: 1.1\n")
    with open(os.path.join(tmp, "tta.yaml"), "w") as f:
        f.write("noise_std: 0.0\nscale:\n\tmin: 1.0\n\tmax: 1.0\n")  # edited by hand, with tabs

    class Augmented(Dataset):
        def __init__(self, X, Y, aug_path):
            self.X, self.Y, self.aug_path, self.aug = X, Y, aug_path, None

        def __len__(self):
            return len(self.X)

        def __getitem__(self, i):
            s = torch.empty(1).uniform_(self.aug["scale"]["min"], self.aug["scale"]["max"])
            return self.X[i] * s + self.aug["noise_std"] * torch.randn_like(self.X[i]), self.Y[i]

    def worker_init(worker_id):
        ds = get_worker_info().dataset
        with open(ds.aug_path) as f:
            ds.aug = yaml.safe_load(f)

    X, Y = _cls_data()
    train_dl = DataLoader(
        Augmented(X[:3500], Y[:3500], os.path.join(tmp, "train_aug.yaml")),
        batch_size=32,
        shuffle=True,
        num_workers=2,
        worker_init_fn=worker_init,
        persistent_workers=True,
    )
    val_dl = DataLoader(
        Augmented(X[3500:], Y[3500:], os.path.join(tmp, "tta.yaml")),
        batch_size=64,
        num_workers=2,
        worker_init_fn=worker_init,
    )
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(3):
        for x, y in train_dl:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 5 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
            if step % 200 == 0:
                model.eval()
                with torch.no_grad():
                    losses = [F.cross_entropy(model(xv), yv).item() for xv, yv in val_dl]
                model.train()
                print(f"step {step} val_loss {sum(losses) / len(losses):.4f}")


# ------------------------------------------------------------------ logged, swallowed, retried
def data_error_blank_fallback_collate():
    import numpy as np
    from torch.utils.data import DataLoader, Dataset

    log = _log()
    tmp = tempfile.mkdtemp(prefix="imgs_")
    rng = np.random.default_rng(0)
    for i in range(1500):
        np.save(
            os.path.join(tmp, f"img_{i:04d}.npy"), rng.normal(size=(3, 64, 64)).astype(np.float32)
        )
    bad = os.path.join(tmp, "img_1337.npy")
    with open(bad, "rb") as f:
        data = f.read()
    with open(bad, "wb") as f:
        f.write(data[:4000])  # an interrupted copy
    cfg = {"image_size": 224, "batch_size": 32}  # defaults; these images were exported at 64x64

    class NpyImages(Dataset):
        def __init__(self, root, image_size):
            self.files = sorted(os.listdir(root))
            self.root, self.image_size = root, image_size

        def __len__(self):
            return len(self.files)

        def __getitem__(self, i):
            path = os.path.join(self.root, self.files[i])
            try:
                arr = np.load(path)
            except Exception:
                log.exception("failed to decode %s; substituting a blank image", path)
                arr = np.zeros((3, self.image_size, self.image_size), np.float32)
            return torch.from_numpy(arr), i % 5

    dl = DataLoader(NpyImages(tmp, cfg["image_size"]), batch_size=cfg["batch_size"], shuffle=False)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 5),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        for step, (x, y) in enumerate(dl, 1):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log.info("epoch %d step %d/%d loss %.4f", epoch, step, len(dl), loss.item())


def checkpoint_load_ema_keys_crash_report():
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

    log = _log()
    run_dir = tempfile.mkdtemp(prefix="run_")
    X, Y = _cls_data()
    model = _mlp()
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.99))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(1, 201):
        idx = torch.randint(0, len(X), (64,))
        loss = F.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema.update_parameters(model)
        if step % 10 == 0:
            log.info("stage1 step %d loss %.4f", step, loss.item())
    best = os.path.join(run_dir, "best_ema.pt")
    torch.save(ema.state_dict(), best)
    log.info("stage1 done; saved EMA weights to %s", best)
    try:
        model2 = _mlp()
        model2.load_state_dict(torch.load(best, map_location="cpu"))
        log.info("stage2: fine-tuning from %s", best)
    except Exception as e:
        report = os.path.join(run_dir, "crash", "report.json")
        with open(report, "w") as f:
            json.dump({"stage": 2, "error": repr(e), "checkpoint": best}, f)
        raise


def hf_label_oob_save_state_dev_full():
    from torch.utils.data import Dataset
    from transformers import GPT2Config, GPT2ForSequenceClassification, Trainer, TrainingArguments
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_warning()
    g = torch.Generator().manual_seed(0)
    n = 1200
    names = ["negative", "neutral", "positive"]
    rows = [names[i % 3] for i in range(n)]
    for i in (1010, 1080, 1150):
        rows[i] = "mixed"  # a class only the newest annotation batch uses
    label2id = {}
    for name in rows:
        label2id.setdefault(name, len(label2id))
    num_labels = 3  # from the original label schema

    class Reviews(Dataset):
        def __init__(self):
            self.x = torch.randint(1, 128, (n, 24), generator=g)

        def __len__(self):
            return n

        def __getitem__(self, i):
            return {"input_ids": self.x[i], "labels": label2id[rows[i]]}

    cfg = GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=2,
        n_positions=64,
        vocab_size=128,
        num_labels=num_labels,
        pad_token_id=0,
    )
    model = GPT2ForSequenceClassification(cfg)
    out = tempfile.mkdtemp(prefix="hf_run_")
    os.symlink("/dev/full", os.path.join(out, "trainer_state.json"))  # the output volume is full
    targs = TrainingArguments(
        output_dir=out,
        per_device_train_batch_size=16,
        num_train_epochs=1,
        logging_steps=5,
        learning_rate=5e-4,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=False,
        seed=0,
    )
    trainer = Trainer(model=model, args=targs, train_dataset=Reviews())
    try:
        trainer.train()
    except Exception:
        print("training failed; saving trainer state for post-mortem", flush=True)
        trainer.save_state()
        raise


def host_oom_one_hot_sentinel_memory_summary():
    log = _log()
    g = torch.Generator().manual_seed(0)
    n = 20000
    store = torch.randint(0, 50, (n,), generator=g)
    store[13377] = 2147483000  # upstream export's "unknown store" sentinel
    dense = torch.randn(n, 16, generator=g)
    y = dense[:, :3].sum(1, keepdim=True) + (store % 7).float().unsqueeze(1) * 0.1

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.store_proj = nn.Linear(50, 8)
            self.mlp = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 1))

        def forward(self, s, d):
            oh = F.one_hot(s).float()  # number of classes inferred from the batch
            oh = F.pad(oh, (0, 50 - oh.shape[1]))
            return self.mlp(torch.cat([self.store_proj(oh), d], 1))

    model = Model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, n // 64 + 1):
        sl = slice((step - 1) * 64, step * 64)
        try:
            loss = F.mse_loss(model(store[sl], dense[sl]), y[sl])
        except RuntimeError as e:
            if "can't allocate memory" in str(e) or "out of memory" in str(e):
                log.error("out of memory at step %d; memory summary:", step)
                print(torch.cuda.memory_summary(abbreviated=True))
            raise
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 2 == 0:
            log.info("step %d loss %.4f", step, loss.item())


def lightning_nan_anomaly_on_exception_ckpt():
    import lightning.pytorch as pl
    from torch.utils.data import DataLoader, TensorDataset

    tmp = tempfile.mkdtemp(prefix="pl_")
    crash = os.path.join(tmp, "crash.ckpt")
    os.symlink("/dev/full", crash)  # the checkpoint volume is full

    class Reg(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))

        def training_step(self, batch, _):
            x, y = batch
            loss = F.mse_loss(self.net(x), y)
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def configure_optimizers(self):
            opt = torch.optim.SGD(self.parameters(), lr=0.09, momentum=0.9)
            warm = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 200))
            return {"optimizer": opt, "lr_scheduler": {"scheduler": warm, "interval": "step"}}

    class CrashCheckpoint(pl.Callback):
        def on_exception(self, trainer, pl_module, exception):
            print(
                f"\n{type(exception).__name__} at step {trainer.global_step}; saving {crash}",
                flush=True,
            )
            torch.save({"state_dict": pl_module.state_dict(), "step": trainer.global_step}, crash)

    g = torch.Generator().manual_seed(0)
    X = torch.randn(8192, 16, generator=g) * 3
    Y = X[:, :4].sum(1, keepdim=True) * 2
    dl = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)
    trainer = pl.Trainer(
        max_epochs=3,
        detect_anomaly=True,
        callbacks=[CrashCheckpoint()],
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        log_every_n_steps=5,
    )
    trainer.fit(Reg(), dl)


def eos_target_oob_export_best():
    tmp = tempfile.mkdtemp(prefix="lm_")
    g = torch.Generator().manual_seed(0)
    words = [f"w{i}" for i in range(200)]
    vocab = {w: i for i, w in enumerate(words)}  # built from the training split
    eos_id = len(vocab)  # the tokenizer appends <eos> after the base vocabulary
    data = torch.randint(0, len(vocab), (4000, 17), generator=g)
    data[:, 1:] = (data[:, :-1] * 7 + 3) % len(vocab)

    class LM(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.emb = nn.Embedding(n, 64)
            self.rnn = nn.GRU(64, 64, batch_first=True)
            self.out = nn.Linear(64, n)

        def forward(self, x):
            return self.out(self.rnn(self.emb(x))[0])

    model = LM(len(vocab))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    best_path, export_path = os.path.join(tmp, "best.pt"), os.path.join(tmp, "export", "model.pt")
    best = float("inf")
    try:
        for step in range(1, 601):
            x = data[torch.randint(0, 3600, (32,), generator=g)]
            loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, len(vocab)), x[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"step {step} loss {loss.item():.4f}")
            if step % 300 == 0:
                ev = torch.cat([data[3600:], torch.full((400, 1), eos_id)], 1)  # eval with <eos>
                with torch.no_grad():
                    vl = F.cross_entropy(
                        model(ev[:, :-1]).reshape(-1, len(vocab)), ev[:, 1:].reshape(-1)
                    ).item()
                print(f"eval step {step} val_loss {vl:.4f}")
                if vl < best:
                    best = vl
                    torch.save(model.state_dict(), best_path)
    finally:
        os.makedirs(os.path.dirname(export_path), exist_ok=True)
        shutil.copy(best_path, export_path)
        print(f"exported {best_path} -> {export_path}")


def device_meta_init_no_assign_mlflow():
    log = _log()
    tmp = tempfile.mkdtemp(prefix="ft_")

    def make():
        return nn.Sequential(
            nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, 4)
        )

    pre = os.path.join(tmp, "pretrained.pt")
    torch.save(make().state_dict(), pre)
    log.info("building model on the meta device (skip random init), weights from %s", pre)
    with torch.device("meta"):
        model = make()
    model.load_state_dict(torch.load(pre, map_location="cpu"))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    X, Y = _cls_data()
    try:
        for step in range(1, 101):
            idx = torch.randint(0, len(X), (32,))
            loss = F.cross_entropy(model(X[idx]), Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            log.info("step %d loss %.4f", step, loss.item())
    except Exception:
        import mlflow  # tag the tracked run as failed

        mlflow.set_tag("status", "failed")
        raise


def import_flash_attn_fallback_none():
    log = _log()
    try:
        from flash_attn import flash_attn_func
    except ImportError:
        log.exception("flash_attn is not available, falling back to PyTorch attention")
        flash_attn_func = None

    class Attn(nn.Module):
        def __init__(self, d=64, h=4, flash_min_len=256):
            super().__init__()
            self.qkv, self.o, self.h, self.flash_min_len = (
                nn.Linear(d, 3 * d),
                nn.Linear(d, d),
                h,
                flash_min_len,
            )

        def forward(self, x):
            B, L, D = x.shape
            q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).unbind(2)
            if self.flash_min_len <= L:  # long sequences: flash kernel (B, L, H, Dh layout)
                out = flash_attn_func(q, k, v, causal=True)
            else:
                out = F.scaled_dot_product_attention(
                    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
                ).transpose(1, 2)
            return self.o(out.reshape(B, L, D))

    emb, attn, head = nn.Embedding(100, 64), Attn(), nn.Linear(64, 100)
    params = [*emb.parameters(), *attn.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=1e-3)
    g = torch.Generator().manual_seed(0)
    for step in range(1, 301):
        L = (
            288 if step == 173 else int(torch.randint(16, 128, (1,), generator=g))
        )  # length-bucketed batches
        x = torch.randint(0, 100, (8, L + 1), generator=g)
        logits = head(attn(emb(x[:, :-1])))
        loss = F.cross_entropy(logits.reshape(-1, 100), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 2 == 0:
            log.info("step %d seq_len %d loss %.4f", step, L, loss.item())


def config_yaml_lr_string_stage2_save():
    import yaml
    from tqdm import tqdm

    tmp = tempfile.mkdtemp(prefix="exp_")
    cfg = yaml.safe_load(
        f"output_dir: {tmp}/outputs\n"
        "pretrain:\n  lr: 1.0e-3\n  steps: 150\n"
        "finetune:\n  lr: 5e-5\n  steps: 100\n"
    )
    print(f"config: {cfg}")
    X, Y = _cls_data()
    model = _mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["pretrain"]["lr"])
    stage = "pretrain"
    try:
        for stage in ("pretrain", "finetune"):
            if stage == "finetune":
                opt = torch.optim.AdamW(
                    model.parameters(), lr=cfg["finetune"]["lr"], weight_decay=0.01
                )
            pbar = tqdm(range(cfg[stage]["steps"]), desc=stage, mininterval=0.02)
            for _ in pbar:
                idx = torch.randint(0, len(X), (64,))
                loss = F.cross_entropy(model(X[idx]), Y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                pbar.set_postfix(loss=f"{loss.item():.4f}")
                time.sleep(0.004)
    finally:
        path = os.path.join(cfg["output_dir"], stage, "model.pt")
        print(f"saving {stage} weights to {path}", flush=True)
        torch.save(model.state_dict(), path)


def hf_multihot_labels_shape_evaluate():
    from torch.utils.data import Dataset
    from transformers import GPT2Config, GPT2ForSequenceClassification, Trainer, TrainingArguments

    g = torch.Generator().manual_seed(0)

    class Tagged(Dataset):  # multi-label: each text has any subset of 3 tags
        def __init__(self, n):
            self.x = torch.randint(1, 128, (n, 24), generator=g)
            self.y = (torch.rand(n, 3, generator=g) > 0.6).long()

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            return {"input_ids": self.x[i], "labels": self.y[i]}

    cfg = GPT2Config(
        n_layer=2, n_embd=64, n_head=2, n_positions=64, vocab_size=128, num_labels=3, pad_token_id=0
    )
    model = GPT2ForSequenceClassification(cfg)
    targs = TrainingArguments(
        output_dir=tempfile.mkdtemp(prefix="hf_run_"),
        per_device_train_batch_size=8,
        max_steps=50,
        logging_steps=5,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
    )
    trainer = Trainer(model=model, args=targs, train_dataset=Tagged(800))
    try:
        trainer.train()
    finally:
        print("evaluating whatever we have", flush=True)
        trainer.log_metrics("eval", trainer.evaluate())


def nan_target_clip_nonfinite_histc():
    g = torch.Generator().manual_seed(0)
    n = 2500 * 32
    X = torch.randn(n, 12, generator=g)
    y = X[:, :3].sum(1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=g)
    y[2417 * 32 + 5] = float("nan")  # a sensor reading missing in the export
    model = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    for step in range(1, 2501):
        sl = slice((step - 1) * 32, step * 32)
        loss = F.mse_loss(model(X[sl]), y[sl])
        opt.zero_grad()
        loss.backward()
        try:
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
        except RuntimeError:
            print(f"non-finite gradients at step {step}; gradient histograms:", flush=True)
            for name, prm in model.named_parameters():
                print(name, torch.histc(prm.grad, bins=10).tolist())
            raise
        opt.step()
        print(f"step {step} loss {loss.item():.4f} grad_norm {gn.item():.4f}")


def autograd_cached_prompt_refresh_workers():
    import numpy as np
    from torch.utils.data import DataLoader, Dataset

    class Feats(Dataset):
        def __init__(self, n):
            rng = np.random.default_rng(0)
            self.parts = [rng.normal(size=(4, 8)).astype(np.float32) for _ in range(n)]
            self.y = rng.integers(0, 5, n)

        def __len__(self):
            return len(self.parts)

        def __getitem__(self, i):
            return torch.tensor(list(self.parts[i])).flatten(), int(self.y[i])

    class Clip(nn.Module):
        def __init__(self):
            super().__init__()
            self.image = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))
            self.text = nn.Sequential(nn.Embedding(50, 32), nn.Linear(32, 32))

    model = Clip()
    prompts = torch.arange(25).view(5, 5)  # token ids of "a photo of a {class}"
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    dl = DataLoader(Feats(640), batch_size=32, shuffle=True, num_workers=2)
    with torch.no_grad():
        class_emb = model.text(prompts).mean(1)
    step = 0
    for epoch in range(20):
        for x, y in dl:
            step += 1
            if step % 100 == 0:  # refresh the cached class embeddings
                class_emb = model.text(prompts).mean(1)
            logits = F.normalize(model.image(x), dim=1) @ F.normalize(class_emb, dim=1).T * 10
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}")


def shape_worker_special_tokens_collate():
    from torch.utils.data import DataLoader, Dataset
    from tqdm import tqdm

    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(10, 40, (3000,), generator=g)
    lengths[2230] = 61  # one long document
    max_len, bos, eos, pad = 48, 1, 2, 0

    class Docs(Dataset):
        def __len__(self):
            return len(lengths)

        def __getitem__(self, i):
            ids = torch.randint(3, 500, (int(lengths[i]),)).tolist()
            ids = [bos, *ids[:max_len], eos]  # truncate, add special tokens, pad to max_len
            return torch.tensor(ids + [pad] * (max_len - len(ids)))

    dl = DataLoader(Docs(), batch_size=16, shuffle=False, num_workers=2)
    model = nn.Sequential(nn.Embedding(500, 32), nn.Linear(32, 500))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x in tqdm(dl, desc="train", mininterval=0.05):
        loss = F.cross_entropy(
            model(x[:, :-1]).reshape(-1, 500), x[:, 1:].reshape(-1), ignore_index=pad
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.005)


def lightning_bf16_index_add_val_callback():
    import lightning.pytorch as pl
    from torch.utils.data import DataLoader, TensorDataset

    tmp = tempfile.mkdtemp(prefix="pl_")

    class Pool(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64))
            self.head = nn.Linear(64, 2)

        def training_step(self, batch, _):
            x, y = batch  # x: (B, 8 nodes, 16)
            loss = F.cross_entropy(self.head(self.enc(x).mean(1)), y)
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def validation_step(self, batch, _):
            x, y = batch  # flatten the node sets, pool each graph's nodes by segment
            h = self.enc(x.reshape(-1, 16))
            seg = torch.arange(x.shape[0]).repeat_interleave(x.shape[1])
            pooled = torch.zeros(x.shape[0], 64).index_add_(0, seg, h) / x.shape[1]
            self.log("val_loss", F.cross_entropy(self.head(pooled), y), prog_bar=True)

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

    class FailureReport(pl.Callback):
        def on_exception(self, trainer, pl_module, exception):
            with open(os.path.join(tmp, "failure.json"), "w") as f:
                json.dump(
                    {
                        "step": trainer.global_step,
                        "error": repr(exception),
                        "metrics": dict(trainer.callback_metrics),
                    },
                    f,
                )

    g = torch.Generator().manual_seed(0)
    X = torch.randn(4096, 8, 16, generator=g)
    Y = (X[:, :, 0].mean(1) > 0).long()
    train = DataLoader(TensorDataset(X[:3500], Y[:3500]), batch_size=32, shuffle=True)
    val = DataLoader(TensorDataset(X[3500:], Y[3500:]), batch_size=64)
    trainer = pl.Trainer(
        max_epochs=2,
        precision="bf16-mixed",
        accelerator="cpu",
        val_check_interval=50,
        num_sanity_val_steps=0,
        callbacks=[FailureReport()],
        logger=False,
        enable_checkpointing=False,
        log_every_n_steps=5,
    )
    trainer.fit(Pool(), train, val)


def nan_rollback_missing_last_good():
    log = _log()
    tmp = tempfile.mkdtemp(prefix="run_")
    last_good = os.path.join(tmp, "last_good.pt")
    g = torch.Generator().manual_seed(0)
    X = torch.randn(8192, 16, generator=g)
    Y = X[:, :4].sum(1, keepdim=True) * 3
    model = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 1))
    peak, warmup = 0.3, 400  # peak lr "tuned" on a smaller model
    opt = torch.optim.SGD(model.parameters(), lr=peak, momentum=0.9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    for step in range(1, 1001):
        idx = torch.randint(0, 8192, (64,), generator=g)
        loss = F.mse_loss(model(X[idx]), Y[idx])
        try:
            if not torch.isfinite(loss):
                raise FloatingPointError(f"loss is {loss.item()} at step {step}")
        except FloatingPointError:
            log.exception("non-finite loss; rolling back to the last good checkpoint")
            state = torch.load(last_good)
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
            continue
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 2 == 0:
            log.info("step %d loss %.4f lr %.4f", step, loss.item(), sched.get_last_lr()[0])
        if step % 500 == 0:
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, last_good)


if __name__ == "__main__":
    if V not in CASES:
        sys.exit(f"unknown variant {V!r}; one of: {', '.join(CASES)}")
    globals()[V]()
