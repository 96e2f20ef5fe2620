"""Facts: the only thing rules see, and the one place their kinds and fields are documented.

A fact is a kind, typed fields, and the log lines that prove it. Every fact also carries the
common fields ``rank`` (-1 when unknown), ``seq`` (its order in the run) and ``line``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..parsers.lines import LogLine

COMMON_FIELDS = {
    "rank": "the rank that printed it (-1 when unknown)",
    "seq": "order of the fact in the run (later facts have larger seq)",
    "line": "line number of its first evidence line",
    "phase": "what the program was doing: train | eval | generate | save | load | data, from the"
    " traceback frames (unknown for a message outside a traceback)",
    "steps_logged": "metric lines seen before the fact (0: nothing was logged before it)",
    "attempt": "which attempt of the job printed it (1, then 2 after an elastic restart or resume)",
}

#: kind -> {field: description}. Rules may only name these (checked when rules load).
FACT_KINDS: dict[str, dict[str, str]] = {
    "exception": {
        "type": "exception class name without module (OutOfMemoryError)",
        "qualname": "exception class as printed (torch.OutOfMemoryError)",
        "message": "first line of the exception message",
        "detail": "the whole message, its lines joined by spaces (first 1000 characters)",
        "calls": "function names of the innermost frames, space-separated, innermost last",
        "files": "file paths of the innermost frames, space-separated, innermost last",
        "phase": "train | eval | generate | save | load | data, from the frames",
        "frames": "number of frames in the traceback",
        "chained": "true when it was raised while handling another exception",
        "cause_type": "class name of the exception it was raised from, if chained",
        "cut": "true when the traceback ends before its exception line (type and message empty)",
        "code": "the innermost frame's line of code (the assert statement of a bare"
        " AssertionError)",
        "quote": "the error as a summary quotes it: `Type: message`, or the line of code for an"
        " exception printed without a message",
        "steps_logged": "metric lines seen before it",
        "reraised": "true for a cut worker traceback below the error the main process raised"
        " (torch's `Original Traceback`)",
        "logging_error": "true when a logging handler caught it (`--- Logging error ---`): the"
        " program went on",
    },
    "cuda_oom": {
        "backend": "cuda | hip | cublas",
        "requested_gib": "size of the allocation that failed",
        "gpu": "GPU index",
        "total_gib": "GPU capacity",
        "free_gib": "free memory when it failed",
        "allocated_gib": "allocated by PyTorch",
        "reserved_gib": "reserved by PyTorch's caching allocator",
        "reserved_unallocated_gib": "reserved but not allocated (fragmentation)",
        "process_in_use_gib": "memory this process held, PyTorch and not",
        "processes": "number of processes the message lists",
        "other_processes_gib": "memory held by other processes on the GPU",
        "fragmentation_hint": "the message itself suggests fragmentation settings",
        "fits_in_reserved": "the request was smaller than the reserved-but-unallocated memory",
        "phase": "train | eval | generate | save | load | data, from the frames",
        "steps_logged": "metric lines seen before the OOM (0: it failed on the first step)",
    },
    "nccl_error": {
        "code": "unhandled_system_error | unhandled_cuda_error | internal_error | invalid_usage"
        " | remote_error | invalid_argument | duplicate_gpu | aborted | other",
        "version": "NCCL version",
        "cuda_failure": "the CUDA failure NCCL reports inside (e.g. out of memory)",
        "last_error": "NCCL's 'Last error:' text",
        "message": "first line of the message",
    },
    "nccl_warn": {
        "subsystem": "source file or subsystem of the WARN",
        "message": "the warning text",
        "cuda_failure": "CUDA failure named in the warning",
        "gpu": "local GPU index",
    },
    "collective_timeout": {
        "backend": "nccl | gloo",
        "op": "the collective (ALLREDUCE, BROADCAST, recv, ...)",
        "seq_num": "collective sequence number",
        "timeout_ms": "configured timeout",
        "ran_ms": "how long it ran before timing out",
    },
    "peer_closed": {"backend": "gloo", "message": "the message"},
    "store_timeout": {
        "message": "the message",
        "timeout_s": "timeout in seconds",
        "joined": "clients that joined",
        "expected": "clients expected",
    },
    "process_exit": {
        "local_rank": "local rank of the failed worker",
        "exitcode": "exit code (negative: killed by that signal)",
        "signal": "signal number",
        "signal_name": "signal name (SIGKILL)",
        "host": "host name",
        "pid": "process id",
        "root_cause": "true for torchrun's 'Root Cause (first observed failure)' entry",
        "time": "time of failure as torchrun printed it",
    },
    "stalled": {
        "wait": "extension_build | rendezvous | stack_dump | waiting | training_start | evaluation |"
        " evaluation_stage | progress_at_zero | collective_setup: what the last lines show"
        " the run waiting for",
        "text": "the wait line",
    },
    "error_line": {
        "signature": "fatal_logged | error_level | error_doing | last_logged | error_in |"
        " tf_op_failed | thc_check | cxx_raised | cxx_check | c_assert | crash_frame | physx_error"
        " | nccl_warn_failure | compiler_fatal | compiler | error_report | nccl_trace | os_error"
        " | last_line:"
        " the form of the line (a logger's FATAL or ERROR, a kernel's `error in f:`, ...)",
        "message": "the text after the error marker",
        "quote": "the same text, under the name the exception's quote has",
        "detail": "the whole line (up to 1000 characters), for vocabulary rules",
    },
    "fatal": {
        "signal_name": "the fatal signal (SIGSEGV, SIGKILL, SIGABRT, ...), where the line says",
        "exitcode": "the non-zero exit code, where the line says",
        "message": "the line",
    },
    "process_terminated": {"pid": "process id", "signal_name": "signal sent to it"},
    "device_mismatch": {
        "device_a": "first device named (cuda:0, cpu, meta)",
        "device_b": "second device named",
        "argument": "the argument that was on the wrong device",
        "op": "the operator or kernel wrapper",
        "where": "tensors | input_weight",
    },
    "cudnn_error": {
        "status": "NOT_SUPPORTED | INTERNAL_ERROR | EXECUTION_FAILED | NOT_INITIALIZED"
        " | MAPPING_ERROR | BAD_PARAM | ALLOC_FAILED | NO_ENGINE | FRONTEND | BUILD_FAILED | OTHER",
        "message": "the message",
        "library": "cuDNN | MIOpen (ROCm's cuDNN)",
    },
    "cublas_error": {"status": "status without CUBLAS_STATUS_", "call": "the cuBLAS call"},
    "cuda_error": {"error": "normalised CUDA error", "message": "the message"},
    "device_assert": {
        "file": "kernel source file",
        "source_line": "line in the kernel source",
        "kernel": "kernel name",
        "assertion": "the condition that failed",
    },
    "requires_grad_error": {
        "variant": "no_grad_fn | leaf_inplace | numpy_requires_grad | hook_no_grad"
        " | differentiated_no_grad",
        "element": "index of the output without grad",
    },
    "os_error": {
        "errno": "errno number (28: no space left)",
        "strerror": "errno text",
        "path": "the path in the message",
        "dir": "its directory",
        "mount_hint": "/dev/shm | /tmp | cache | disk: the kind of filesystem, from the path"
        " or the traceback (semaphores and shared tensors live in /dev/shm)",
    },
    "save_error": {
        "file": "entry of the checkpoint archive being written",
        "detail": "file_write_failed | unexpected_pos | central_directory | stream_error",
    },
    "shm_error": {
        "variant": "bus_error | no_space | too_many_open_files | write_failed | nccl_segment | other",
        "pid": "pid",
    },
    "worker_killed": {"pid": "worker pid", "signal_name": "signal", "detail": "the message"},
    "nonfinite_metric": {
        "metric": "loss | grad_norm | eval_loss",
        "value": "nan | inf | -inf",
        "step": "step at which it turned non-finite",
        "points_before": "finite values seen before it (0: from the first step)",
        "last_finite": "last finite value",
        "best": "best (lowest) finite value",
        "median": "median of the finite window",
        "rise_ratio": "last finite value / best value (>= 2: it was diverging)",
        "persisted": "true when it stayed non-finite (two records in a row, or to the log's end)",
        "overflow_step": "grad_norm only: inf beside a loss at the run's own scale (a step the loss scaler skipped)",
    },
    "printed_nan": {
        "form": "tensor (a printed tensor of NaN) | row (a table row of NaN cells) | record (named values all NaN) | number (bare nan lines, or a key-value table's loss rows)",
        "lines": "lines of printed NaN seen when it was reported",
        "text": "the last of them",
        "points_before": "metric lines read before it",
        "step": "the last step logged before it",
    },
    "loss_scale_collapse": {
        "overflows": "overflow/skip messages seen",
        "scale": "loss scale reached",
        "lg_scale": "log2 of the loss scale reached, where the log prints that (guided-diffusion)",
        "first_scale": "loss scale at the first overflow",
        "at_minimum": "the scaler said it was at its minimum",
        "step": "step of the collapse",
    },
    "divergence": {
        "metric": "loss | grad_norm",
        "value": "the last value",
        "best": "the best (lowest) value of the run",
        "baseline": "median of the first half of the run",
        "ratio": "last value / best value",
        "step": "step of the last value",
        "limit": "set when the last values are all beyond this magnitude, which no healthy run reaches",
        "spike_text": "set when only the last record blew up: its value, as printed",
        "before_text": "with spike_text: the record before it, as printed",
    },
    "collapsed": {
        "metric": "loss",
        "before": "the last loss before it fell to exactly zero, as printed",
        "records": "records at the end that printed a loss of exactly zero",
        "step": "step of the first zero",
        "epoch": "epoch of the first zero",
    },
    "plateau": {
        "metric": "loss",
        "first": "median loss at the start",
        "last": "median loss at the end",
        "best": "lowest loss seen",
        "improvement_pct": "how much the loss fell from start to end, in percent",
        "points": "loss values seen",
        "step": "last step",
        "chance_classes": "k when the loss sits at ln(k), chance level for k classes",
        "frozen_records": "records at the end that printed exactly the same loss",
        "flat_records": "records at the end whose loss moved by less than one part in 10,000",
        "high_text": "with flat_records: the highest of those losses, as printed",
        "last_text": "the last loss as printed (frozen and chance-level plateaus)",
        "best_text": "the lowest loss as printed (chance-level plateaus)",
        "accuracy_text": "the accuracy printed beside the last loss, as printed, when it is at"
        " chance too",
    },
    "lr_zero": {
        "metric": "loss",
        "records": "records in a row that printed a zero learning rate beside a loss",
        "first_step": "step of the first of them",
        "step": "step of the last of them",
        "total_steps": "the step count the lines printed after the step (Step 510000/1000000)",
        "loss_low": "lowest loss printed on them, as printed",
        "loss_high": "highest loss printed on them, as printed",
        "first_loss": "loss of the first of them",
        "last_loss": "loss of the last of them",
    },
    "throughput_drop": {
        "metric": "it_s/<bar total> | samples_s",
        "baseline": "the run's median speed",
        "recent": "median speed of the last values",
        "ratio": "recent / baseline",
        "points": "speed values seen",
        "step": "last step",
    },
    "slowdown": {
        "metric": "step_time_s: seconds per step as the log printed them (Time, time:, Megatron's"
        " elapsed time per iteration)",
        "baseline_s": "median step time early in the run",
        "recent_s": "the last step time",
        "ratio": "recent_s / baseline_s",
        "points": "step times seen",
        "step": "last step",
    },
    "memory_growth": {
        "metric": "memory_gib | memory (a value the line printed without a unit)",
        "first_gib": "first memory value (in GiB for memory_gib)",
        "last_gib": "last memory value (in GiB for memory_gib)",
        "first_text": "first memory value as printed (555 MB, 20.4 MB, 0.18)",
        "last_text": "last memory value as printed",
        "growth_pct": "growth in percent",
        "points": "memory values seen",
        "step": "last step",
    },
    "overfitting": {
        "best_eval": "best validation loss",
        "best_step": "step of the best validation loss",
        "last_eval": "last validation loss",
        "evals_since_best": "evaluations since the best",
        "train_then": "training loss around the best evaluation",
        "train_now": "training loss at the end",
        "step": "last step",
    },
    "silence": {
        "silence_s": "seconds between the last progress line and the end of the log",
        "cadence_s": "median seconds between progress lines",
        "last_progress": "the last progress line",
        "step": "last step logged",
    },
    "probe": {
        "name": "the probe that ran",
        "status": "confirmed | refuted | inconclusive | unavailable",
        "rule": "the rule whose diagnosis it tested",
        "summary": "what it found, in one sentence",
    },
    "config": {
        "key": "framework | micro_batch | grad_accum | lr | max_grad_norm | precision | fp16"
        " | bf16 | gradient_checkpointing | alloc_conf | world_size",
        "value": "the value echoed in the log",
    },
    "line": {
        "pattern": "id of the rule pattern that matched (set by the compiler)",
        "text": "the line",
    },
}


def markdown_reference() -> str:
    """The fact kinds and fields as Markdown tables (the reference section of docs/rules.md)."""
    parts = ["| field | meaning |", "|---|---|"]
    parts += [f"| `{name}` | {doc} |" for name, doc in COMMON_FIELDS.items()]
    for kind, fields in FACT_KINDS.items():
        parts += ["", f"**`{kind}`**", "", "| field | meaning |", "|---|---|"]
        parts += [f"| `{name}` | {doc} |" for name, doc in fields.items()]
    return "\n".join(parts) + "\n"


@dataclass
class Fact:
    """A fact with provenance: the lines that prove it."""

    kind: str
    fields: dict[str, Any]
    evidence: list[LogLine]
    seq: int
    rank: int | None = None
    attempt: int = 1
    #: Metric lines of its source read when the fact was made (did training go on after it?).
    progress: int = 0

    @property
    def line(self) -> LogLine:
        """The evidence line that best stands for the fact (the last, usually the message)."""
        return self.evidence[-1]

    def to_engine(self, sid: str) -> dict[str, Any]:
        """The JSON-safe message asserted into the rules engine."""
        message: dict[str, Any] = {}
        for name, value in self.fields.items():
            if isinstance(value, float) and not math.isfinite(value):
                value = str(value)
            if isinstance(value, (str, int, float, bool)):
                message[name] = value
        # The common fields come last so that no parser field can shadow them.
        message |= {
            "sid": sid,
            "id": self.seq,
            "seq": self.seq,
            "kind": self.kind,
            "rank": -1 if self.rank is None else self.rank,
            "line": self.line.lineno,
            "attempt": self.attempt,
        }
        return message


if __name__ == "__main__":
    print(markdown_reference(), end="")
