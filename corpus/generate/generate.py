"""Corpus driver: runs every generator case for real and writes corpus/<case>/.

For each case it runs the real command (cwd = repository root, stdout+stderr merged,
PYTHONUNBUFFERED=1 so stdout and stderr stay in order), prefixes the captured output with
a header that records the command, torch version, device and python version, and writes
`expected.yaml`.  torchrun cases also get one log per rank (rank0.log, rank1.log) taken
from torchrun's --log-dir (the scripts route their stdout into stderr so each rank's file
holds its whole output in order).

Disk-full cases that need a real full filesystem (not /dev/full) mount a tiny tmpfs; this
needs root. Without root those cases are skipped with a message.

Usage (from the repository root, torch 2.13.0 CPU venv):
    python corpus/generate/generate.py                 # all cases
    python corpus/generate/generate.py nan_tqdm ...    # only these cases
    python corpus/generate/generate.py --list
"""
import argparse
import glob
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.dirname(HERE)
ROOT = os.path.dirname(CORPUS)
BIN = os.path.dirname(sys.executable)
G = "corpus/generate/"


def case(name, argv, category, difficulty, framework="pytorch", alternatives=(), rule=None,
         launcher="python", fullfs_kb=None, timeout=300, nproc=2, torchrun_args=()):
    return dict(name=name, argv=argv, category=category, difficulty=difficulty, framework=framework,
                alternatives=list(alternatives), rule=rule, launcher=launcher, fullfs_kb=fullfs_kb,
                timeout=timeout, nproc=nproc, torchrun_args=list(torchrun_args))


CASES = [
    # ---- requires_grad
    case("requires_grad_no_grad_loss", [G + "requires_grad.py", "--variant", "no_grad"], "requires_grad", "easy"),
    case("requires_grad_all_frozen", [G + "requires_grad.py", "--variant", "frozen"], "requires_grad", "easy"),
    case("requires_grad_detached_logits", [G + "requires_grad.py", "--variant", "detach"], "requires_grad", "easy"),
    case("requires_grad_leaf_inplace_init", [G + "requires_grad.py", "--variant", "leaf_inplace"], "requires_grad", "easy"),
    case("requires_grad_checkpoint_frozen_inputs", [G + "requires_grad.py", "--variant", "ckpt_frozen"],
         "requires_grad", "medium"),
    # ---- autograd_graph
    case("autograd_backward_twice_rnn", [G + "autograd_graph.py", "--variant", "backward_twice"], "autograd_graph", "easy"),
    case("autograd_inplace_sigmoid", [G + "autograd_graph.py", "--variant", "inplace"], "autograd_graph", "easy"),
    case("autograd_inplace_anomaly", [G + "autograd_graph.py", "--variant", "inplace_anomaly"], "autograd_graph", "medium"),
    # ---- nan_loss
    case("nan_diverge_fast_plain", [G + "nan_loss.py", "--variant", "diverge"], "nan_loss", "easy",
         alternatives=["gradient_explosion"]),
    case("nan_diverge_after_warmup_plain", [G + "nan_loss.py", "--variant", "diverge", "--peak-lr", "0.2",
                                            "--warmup", "150", "--steps", "400", "--log-every", "10"],
         "nan_loss", "medium", alternatives=["gradient_explosion"]),
    case("nan_raise_check_long", [G + "nan_loss.py", "--variant", "raise_check", "--peak-lr", "0.2",
                                  "--warmup", "150", "--steps", "400", "--log-every", "2"],
         "nan_loss", "medium", alternatives=["gradient_explosion"]),
    case("nan_first_step_log_zero", [G + "nan_loss.py", "--variant", "first_step"], "nan_loss", "easy"),
    case("nan_detect_anomaly_softmax", [G + "nan_loss.py", "--variant", "anomaly"], "nan_loss", "medium"),
    case("nan_tqdm_postfix", [G + "nan_loss.py", "--variant", "tqdm", "--peak-lr", "0.3", "--warmup", "100",
                              "--steps", "300"], "nan_loss", "hard", alternatives=["gradient_explosion"]),
    case("nan_amp_gradscaler_cpu", [G + "nan_loss.py", "--variant", "amp_scaler", "--peak-lr", "0.3",
                                    "--warmup", "100", "--steps", "300", "--log-every", "10"],
         "nan_loss", "medium", alternatives=["gradient_explosion"]),
    case("hf_trainer_nan_filtered_loss_zero", [G + "hf_trainer.py", "--mode", "nan", "--max-steps", "60", "--lr", "5",
                                               "--scheduler", "constant_with_warmup"],
         "nan_loss", "hard", framework="hf", alternatives=["gradient_explosion"]),
    case("lightning_nan_progress_bar", [G + "lightning_run.py", "--mode", "nan", "--lr", "8"], "nan_loss", "hard",
         framework="lightning"),
    case("lightning_nan_early_stop_not_finite", [G + "lightning_run.py", "--mode", "nan_stop", "--lr", "8"],
         "nan_loss", "medium", framework="lightning"),
    case("lightning_detect_anomaly_nan", [G + "lightning_run.py", "--mode", "anomaly", "--lr", "8"],
         "nan_loss", "medium", framework="lightning"),
    # ---- disk_full
    case("disk_full_torch_save_dev_full", [G + "disk_full.py", "--variant", "torch_save", "--path", "/dev/full"],
         "disk_full", "medium"),
    case("disk_full_torch_save_tmpfs", [G + "disk_full.py", "--variant", "torch_save", "--path", "{FULL}/checkpoints"],
         "disk_full", "hard", fullfs_kb=64),
    case("disk_full_save_every_midrun", [G + "disk_full.py", "--variant", "save_every", "--path",
                                         "{FULL}/checkpoints", "--log-every", "10"], "disk_full", "hard", fullfs_kb=64),
    case("disk_full_torch_save_legacy", [G + "disk_full.py", "--variant", "torch_save_legacy", "--path", "/dev/full"],
         "disk_full", "easy"),
    case("disk_full_json_metrics", [G + "disk_full.py", "--variant", "json_metrics", "--path", "/dev/full"],
         "disk_full", "easy"),
    case("disk_full_logging_filehandler", [G + "disk_full.py", "--variant", "logging_file", "--path", "/dev/full",
                                           "--steps", "100"], "disk_full", "hard"),
    case("disk_full_numpy_partial_write", [G + "disk_full.py", "--variant", "numpy_save", "--path", "{FULL}/export"],
         "disk_full", "hard", fullfs_kb=16),
    case("hf_trainer_save_checkpoint_dev_full", [G + "hf_trainer.py", "--mode", "save_full", "--max-steps", "40"],
         "disk_full", "medium", framework="hf"),
    case("hf_trainer_save_checkpoint_tmpfs", [G + "hf_trainer.py", "--mode", "save_full", "--max-steps", "40",
                                              "--output-dir", "{FULL}/gpt2-tiny-run"], "disk_full", "medium",
         framework="hf", fullfs_kb=128),
    case("lightning_checkpoint_tmpfs", [G + "lightning_run.py", "--mode", "save_full", "--ckpt-dir",
                                        "{FULL}/lightning_ckpts", "--epochs", "2"], "disk_full", "medium",
         framework="lightning", fullfs_kb=32),
    # ---- device_mismatch
    case("device_meta_model_cpu_input", [G + "device_mismatch.py", "--variant", "meta_model"], "device_mismatch", "easy"),
    case("device_cpu_model_meta_input", [G + "device_mismatch.py", "--variant", "meta_input"], "device_mismatch", "easy"),
    case("device_meta_targets_in_loss", [G + "device_mismatch.py", "--variant", "meta_loss"], "device_mismatch", "easy"),
    case("device_lstm_meta_params", [G + "device_mismatch.py", "--variant", "lstm"], "device_mismatch", "easy"),
    # ---- distributed (torchrun, 2 procs, gloo)
    case("ddp_hang_rank1_collective_timeout", [G + "distributed.py", "--variant", "hang_rank1"],
         "distributed_timeout", "hard", launcher="torchrun", alternatives=["hang"]),
    case("ddp_store_timeout_missing_rank", [G + "distributed.py", "--variant", "store_timeout", "--timeout", "6"],
         "distributed_timeout", "easy"),
    case("ddp_rendezvous_timeout_second_node", [G + "distributed.py", "--variant", "healthy"],
         "distributed_timeout", "medium", launcher="torchrun", nproc=1,
         torchrun_args=["--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:29541",
                        "--rdzv-id", "job42", "--rdzv-conf", "join_timeout=10"]),
    case("ddp_badbatch_rank1_peer_closed", [G + "distributed.py", "--variant", "badbatch_rank1"],
         "shape_mismatch", "hard", launcher="torchrun"),
    case("ddp_alloc_fail_rank1", [G + "distributed.py", "--variant", "alloc_rank1"], "host_oom", "hard",
         launcher="torchrun"),
    case("ddp_sigkill_rank1", [G + "distributed.py", "--variant", "sigkill_rank1"], "host_oom", "hard",
         launcher="torchrun"),
    case("ddp_sigbus_rank1", [G + "distributed.py", "--variant", "sigbus_rank1"], "shared_memory", "hard",
         launcher="torchrun"),
    # ---- DataLoader workers
    case("dataloader_worker_sigbus", [G + "dataloader_crash.py", "--variant", "sigbus"], "shared_memory", "hard",
         alternatives=["dataloader_worker"]),
    case("dataloader_worker_sigkill", [G + "dataloader_crash.py", "--variant", "sigkill"], "host_oom", "medium",
         alternatives=["dataloader_worker"]),
    case("dataloader_worker_exit", [G + "dataloader_crash.py", "--variant", "exit"], "dataloader_worker", "medium"),
    # ---- assorted
    case("dtype_float64_features", [G + "misc_errors.py", "--variant", "dtype_double"], "dtype_mismatch", "easy"),
    case("dtype_bf16_model_fp32_input", [G + "misc_errors.py", "--variant", "dtype_half", "--warm-steps", "200"],
         "dtype_mismatch", "medium"),
    case("dtype_float_token_ids", [G + "misc_errors.py", "--variant", "dtype_index"], "dtype_mismatch", "easy"),
    case("shape_flatten_size", [G + "misc_errors.py", "--variant", "shape_linear"], "shape_mismatch", "easy"),
    case("shape_broadcast_loss", [G + "misc_errors.py", "--variant", "shape_broadcast", "--warm-steps", "50"],
         "shape_mismatch", "medium"),
    case("shape_conv_channels", [G + "misc_errors.py", "--variant", "shape_conv"], "shape_mismatch", "easy"),
    case("checkpoint_missing_unexpected_keys", [G + "misc_errors.py", "--variant", "ckpt_missing"],
         "checkpoint_load", "easy"),
    case("checkpoint_size_mismatch", [G + "misc_errors.py", "--variant", "ckpt_size", "--warm-steps", "300"],
         "checkpoint_load", "medium", alternatives=["shape_mismatch"]),
    case("checkpoint_truncated_zip", [G + "misc_errors.py", "--variant", "ckpt_truncated"], "checkpoint_load", "easy"),
    case("checkpoint_weights_only_custom_class", [G + "misc_errors.py", "--variant", "ckpt_weights_only"],
         "checkpoint_load", "medium"),
    case("import_missing_module", [G + "misc_errors.py", "--variant", "import_missing"], "import_error", "easy"),
    case("config_json_trailing_comma", [G + "misc_errors.py", "--variant", "config_json"], "config_error", "easy"),
    case("config_heads_not_divisible", [G + "misc_errors.py", "--variant", "config_divisible"], "config_error", "medium"),
    case("cuda_call_on_cpu_build", [G + "misc_errors.py", "--variant", "cuda_on_cpu_build"], "cuda_setup", "easy"),
    case("host_alloc_cpu_allocator", [G + "misc_errors.py", "--variant", "host_alloc", "--warm-steps", "100"],
         "host_oom", "medium"),
    case("label_out_of_bounds_cpu", [G + "misc_errors.py", "--variant", "label_oob"], "cuda_device_assert", "medium"),
    case("embedding_index_out_of_range_cpu", [G + "misc_errors.py", "--variant", "embed_oob"], "cuda_device_assert",
         "medium"),
    # ---- healthy
    case("healthy_plain_mlp", [G + "healthy.py", "--variant", "plain"], "none", "easy"),
    case("healthy_plain_mlp_long", [G + "healthy.py", "--variant", "plain", "--steps", "1000", "--log-every", "25",
                                    "--seed", "3"], "none", "easy"),
    case("healthy_logging_module", [G + "healthy.py", "--variant", "logging"], "none", "medium"),
    case("healthy_jsonl", [G + "healthy.py", "--variant", "jsonl"], "none", "easy"),
    case("healthy_transformer_warmup_restarts", [G + "healthy.py", "--variant", "transformer"], "none", "medium"),
    case("healthy_transformer_long", [G + "healthy.py", "--variant", "transformer", "--steps", "500",
                                      "--log-every", "5", "--seed", "1", "--lr", "1e-3"], "none", "medium"),
    case("healthy_cnn_tqdm", [G + "healthy.py", "--variant", "cnn_tqdm"], "none", "medium"),
    case("healthy_loss_spike_recovers", [G + "healthy.py", "--variant", "spiky", "--log-every", "5"], "none", "hard"),
    case("healthy_amp_bf16", [G + "healthy.py", "--variant", "amp_bf16", "--steps", "200"], "none", "easy"),
    case("healthy_accelerate", [G + "healthy.py", "--variant", "accelerate"], "none", "easy", framework="accelerate"),
    case("healthy_resume_from_checkpoint", [G + "healthy.py", "--variant", "resume"], "none", "medium"),
    case("hf_trainer_healthy_eval", [G + "hf_trainer.py", "--mode", "healthy", "--max-steps", "60"], "none", "medium",
         framework="hf"),
    case("hf_trainer_healthy_grad_accum", [G + "hf_trainer.py", "--mode", "healthy", "--max-steps", "40",
                                           "--grad-accum", "4", "--logging-steps", "2", "--seed", "1"],
         "none", "medium", framework="hf"),
    case("hf_trainer_healthy_restarts", [G + "hf_trainer.py", "--mode", "healthy", "--max-steps", "90",
                                         "--scheduler", "cosine_with_restarts", "--logging-steps", "3"],
         "none", "medium", framework="hf"),
    case("lightning_healthy_tqdm", [G + "lightning_run.py", "--mode", "healthy"], "none", "medium",
         framework="lightning"),
    case("lightning_healthy_rich", [G + "lightning_run.py", "--mode", "healthy", "--rich", "--epochs", "3"],
         "none", "medium", framework="lightning"),
    case("ddp_healthy_torchrun", [G + "distributed.py", "--variant", "healthy"], "none", "medium",
         launcher="torchrun"),
    case("ddp_healthy_torchrun_long", [G + "distributed.py", "--variant", "healthy", "--steps", "300",
                                       "--log-every", "20"], "none", "medium", launcher="torchrun"),
    case("healthy_jsonl_long", [G + "healthy.py", "--variant", "jsonl", "--steps", "800", "--log-every", "40",
                                "--seed", "5"], "none", "easy"),
]


def torch_version():
    return torch.__version__.split("+")[0]


def header(cmd_str, extra=None):
    lines = [f"# crashcart-corpus: command={cmd_str}",
             f"# torch={torch_version()} device=cpu python={platform.python_version()}"]
    if extra:
        lines.append(f"# {extra}")
    return "\n".join(lines) + "\n"


def mount_full(kb):
    path = tempfile.mkdtemp(prefix="crashcart-fullfs-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kb}k", "tmpfs", path], capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(path)
        return None
    return path


def unmount(path):
    subprocess.run(["umount", path], check=False)
    os.rmdir(path)


def yaml_list(xs):
    return "[" + ", ".join(xs) + "]"


def run_case(c):
    out_dir = os.path.join(CORPUS, c["name"])
    full = None
    argv = list(c["argv"])
    if c["fullfs_kb"]:
        full = mount_full(c["fullfs_kb"])
        if full is None:
            print(f"SKIP {c['name']}: cannot mount a tmpfs (needs root)")
            return False
        argv = [a.replace("{FULL}", full) for a in argv]
        for a in argv:
            if a.startswith(full):
                os.makedirs(a, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="100")
    logdir = None
    if c["launcher"] == "torchrun":
        logdir = tempfile.mkdtemp(prefix="torchrun_logs_")
        real = [os.path.join(BIN, "torchrun"), f"--nproc_per_node={c['nproc']}"] + c["torchrun_args"] + \
               ["--log-dir", logdir, "--redirects", "3", "--tee", "3"] + argv
        shown = ["torchrun", f"--nproc_per_node={c['nproc']}"] + c["torchrun_args"] + ["--log-dir", "LOGDIR", "--redirects", "3", "--tee", "3"] + argv
    else:
        shown = ["python"] + argv
        real = [sys.executable] + argv
    cmd_str = " ".join(shown)
    t0 = time.time()
    try:
        r = subprocess.run(real, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=c["timeout"])
        output, rc = r.stdout, r.returncode
    except subprocess.TimeoutExpired as e:
        output, rc = e.stdout or b"", "timeout"
    finally:
        if full:
            unmount(full)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "train.log"), "wb") as f:
        f.write(header(cmd_str).encode())
        f.write(output)
    if logdir:
        for rank_dir in sorted(glob.glob(os.path.join(logdir, "*", "attempt_0", "*"))):
            rank = os.path.basename(rank_dir)
            with open(os.path.join(out_dir, f"rank{rank}.log"), "wb") as f:
                f.write(header(cmd_str, f"per-rank log: local_rank={rank} (torchrun --log-dir stderr.log)").encode())
                for name in ("stdout.log", "stderr.log"):
                    with open(os.path.join(rank_dir, name), "rb") as src:
                        f.write(src.read())
        shutil.rmtree(logdir, ignore_errors=True)
    script = c["argv"][0]
    lines = [f"category: {c['category']}",
             f"alternatives: {yaml_list(c['alternatives'])}"]
    if c["rule"]:
        lines.append(f"rule: {c['rule']}")
    lines += [f"source: generated-by {script}",
              f"framework: {c['framework']}",
              f"torch: {torch_version()}",
              "device: cpu",
              f"difficulty: {c['difficulty']}"]
    with open(os.path.join(out_dir, "expected.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{c['name']:45s} rc={rc} {time.time() - t0:5.1f}s {len(output):7d} bytes")
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for c in CASES:
            print(f"{c['name']:45s} {c['category']:20s} {c['difficulty']}")
        return
    names = {c["name"] for c in CASES}
    for n in a.cases:
        if n not in names:
            sys.exit(f"unknown case {n}")
    for c in CASES:
        if not a.cases or c["name"] in a.cases:
            run_case(c)


if __name__ == "__main__":
    main()
