"""OS errors (errno), failed checkpoint writes, shared-memory failures and killed DataLoader workers.

Real examples::

    OSError: [Errno 28] No space left on device: '/ckpt/step_1000/pytorch_model.bin'
    cp: write error: No space left on device
    RuntimeError: [enforce fail at inline_container.cc:471] . PytorchStreamWriter failed writing file data/3: file write failed
    RuntimeError: [enforce fail at inline_container.cc:664] . unexpected pos 704 vs 598
    RuntimeError: basic_ios::clear: iostream error
    RuntimeError: unable to write to file </torch_722_783672312_1>: No space left on device (28)
    ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).
    include/shm.h:48 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-CsYXMW (size 9637888)
    [8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)
    RuntimeError: DataLoader worker (pid 56811) is killed by signal: Bus error. It is possible that
    dataloader's workers are out of shared memory. Please try to raise your shared memory limit.
    RuntimeError: DataLoader worker (pid(s) 1234, 1235) exited unexpectedly

Kinds: ``os_error`` (errno, strerror, path, dir, mount_hint), ``save_error`` (file, detail,
pos, expected_pos), ``shm_error`` (variant, pid), ``worker_killed`` (pid, pids, signal_name,
detail). A bus error in a DataLoader worker yields both ``shm_error`` and ``worker_killed``; a
full ``/torch_*`` shm file yields both ``os_error`` (with ``mount_hint: /dev/shm``) and
``shm_error``.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache
from typing import Any

from .base import Draft, never_raises
from .lazy import pp

TRIGGERS: dict[str, str] = {
    "os_errno": r"\[Errno \d+\] [A-Z]",
    "os_no_space": r"No space left on device",
    "os_disk_quota": r"Disk quota exceeded",
    "os_cannot_allocate": r"Cannot allocate memory \(12\)",
    "save_stream_writer": r"PytorchStreamWriter failed writing",
    "save_unexpected_pos": r"unexpected pos \d+ vs \d+",
    "shm_insufficient": r"insufficient shared memory",
    "shm_out_of_shared_memory": r"out of shared memory",
    "shm_torch_file": r"unable to (?:write to file|open shared memory object|mmap \d+ bytes from file) </",
    "shm_nccl_segment": r"Error while creating shared memory segment",
    # A crash handler's backtrace (UCX's "==== backtrace ====") through NCCL's segment opener.
    "shm_nccl_open_frame": r"\bncclShmOpen\(\)",
    "shm_nccl_fallocate": r"NCCL WARN Call to posix_fallocate failed",
    "shm_caught_sigbus": r"Caught signal 7 \(Bus error",
    "worker_killed": r"DataLoader worker \(pid",
}


_STRERRORS = {
    "No space left on device": 28,
    "Cannot allocate memory": 12,
    "No such file or directory": 2,
    "Permission denied": 13,
    "Disk quota exceeded": 122,
    "Too many open files": 24,
    "Read-only file system": 30,
    "Input/output error": 5,
    "Stale file handle": 116,
    "File too large": 27,
}
_SIGNALS = {
    "killed": "SIGKILL",
    "bus error": "SIGBUS",
    "segmentation fault": "SIGSEGV",
    "aborted": "SIGABRT",
    "terminated": "SIGTERM",
    "floating point exception": "SIGFPE",
    "illegal instruction": "SIGILL",
    "interrupt": "SIGINT",
    "hangup": "SIGHUP",
}


@lru_cache(maxsize=1)
def _grammar() -> dict[str, pp.ParserElement]:
    """Build the grammars once."""
    integer = pp.common.integer
    path = (
        pp.QuotedString("'", convert_whitespace_escapes=False)
        | pp.QuotedString('"', convert_whitespace_escapes=False)
        | pp.QuotedString("<", end_quote_char=">", convert_whitespace_escapes=False)
    )
    strerror = pp.Regex(r"[A-Za-z][A-Za-z /\-]*[A-Za-z]")
    # "[Errno 28] No space left on device: '/ckpt/x.bin'"
    errno_form = (
        pp.Literal("[Errno")
        + integer("errno")
        + pp.Literal("]")
        + strerror("strerror")
        + pp.Opt(pp.Literal(":") + path("path"))
    )
    # "unable to write to file </torch_1_2_0>: No space left on device (28)"
    paren_form = pp.Regex(r"(?P<strerror>[A-Za-z][A-Za-z /\-]{0,60}[A-Za-z]) \((?P<errno>\d+)\)")
    quoted_path = pp.Regex(r"(?:file|object|to|from) ") + path("path")
    writer = pp.Regex(
        r"PytorchStreamWriter failed writing (?:file (?P<file>[^:\s]+)|(?P<central>central directory))"
    )
    unexpected = (
        pp.Literal("unexpected pos") + integer("pos") + pp.Literal("vs") + integer("expected_pos")
    )
    worker = (
        pp.Literal("DataLoader worker (")
        + pp.Regex(r"pid(?:\(s\))?")
        + pp.DelimitedList(integer)("pids")
        + pp.Literal(")")
        + (
            pp.Literal("is killed by signal:") + pp.Regex(r"[A-Za-z][A-Za-z ]*")("signal")
            | pp.Literal("exited unexpectedly")("exited")
        )
    )
    return {
        "errno_form": errno_form,
        "paren_form": paren_form,
        "quoted_path": quoted_path,
        "writer": writer,
        "unexpected": unexpected,
        "worker": worker,
    }


def _first(expr: pp.ParserElement, text: str) -> pp.ParseResults | None:
    for tokens, _start, _end in expr.scan_string(text, max_matches=1):
        return tokens
    return None


def mount_hint(path: str) -> str | None:
    """Which kind of filesystem ``path`` lives on, when its name says so: /dev/shm, /tmp, cache."""
    if path.startswith("/dev/shm") or re.match(r"/?torch_\d+", path):
        return "/dev/shm"
    lowered = path.lower()
    # A cache can live anywhere, /tmp included; its own name is the more specific hint.
    if ".cache/huggingface" in lowered or "huggingface/hub" in lowered or "hf_home" in lowered:
        return "cache"
    if "transformers_cache" in lowered or "/.cache/" in lowered:
        return "cache"
    if path == "/tmp" or path.startswith("/tmp/"):
        return "/tmp"
    return None


def _os_error(text: str, grammar: dict[str, pp.ParserElement]) -> Draft | None:
    fields: dict[str, Any] = {}
    errno_form = _first(grammar["errno_form"], text) if "[Errno" in text else None
    if errno_form is not None:
        fields["errno"] = int(errno_form.errno)
        fields["strerror"] = errno_form.strerror.strip()
        if errno_form.path:
            fields["path"] = errno_form.path
    else:
        known = [s for s in _STRERRORS if s in text]
        if not known:
            return None
        # only the ones that are failures by themselves, not e.g. "Permission denied" chatter
        standalone = ("No space left", "Disk quota", "Cannot allocate memory")
        if not any(s in text for s in standalone) and _first(grammar["paren_form"], text) is None:
            return None
        fields["strerror"] = known[0]
        paren = _first(grammar["paren_form"], text)
        if paren is not None and paren.strerror.strip().endswith(known[0]):
            fields["errno"] = int(paren.errno)
        else:
            fields["errno"] = _STRERRORS[known[0]]
        quoted = _first(grammar["quoted_path"], text)
        if quoted is not None:
            fields["path"] = quoted.path
    path = fields.get("path")
    if path:
        directory = posixpath.dirname(path)
        hint = mount_hint(path)
        if hint:
            fields["mount_hint"] = hint
        if hint == "/dev/shm" and not path.startswith("/dev/shm"):
            directory = "/dev/shm"  # torch names its shm files "/torch_<pid>_..." under /dev/shm
        if directory:
            fields["dir"] = directory
    if "joblib will operate in serial mode" in text:
        # joblib probes for working semaphores, which live in /dev/shm.
        fields["mount_hint"] = "/dev/shm"
    # "disk" when nothing says otherwise, so that rules can tell ordinary filesystems from shm.
    fields.setdefault("mount_hint", "disk")
    return Draft("os_error", fields)


def _save_error(text: str, grammar: dict[str, pp.ParserElement]) -> Draft | None:
    fields: dict[str, Any] = {}
    writer = _first(grammar["writer"], text) if "PytorchStreamWriter" in text else None
    if writer is not None:
        if writer.get("central"):
            fields["detail"] = "central_directory"
        else:
            fields["file"] = writer["file"]
            fields["detail"] = "file_write_failed"
    if "basic_ios::clear: iostream error" in text:
        # torch.save's zip writer on a full device (seen writing to /dev/full); only a save
        # error when it came from torch.save, which the rules check with the phase.
        fields["detail"] = "stream_error"
    unexpected = _first(grammar["unexpected"], text) if "unexpected pos" in text else None
    if unexpected is not None:
        fields.setdefault("detail", "unexpected_pos")
        fields["pos"] = int(unexpected.pos)
        fields["expected_pos"] = int(unexpected.expected_pos)
    return Draft("save_error", fields) if fields else None


def _worker(text: str, grammar: dict[str, pp.ParserElement]) -> Draft | None:
    tokens = _first(grammar["worker"], text) if "DataLoader worker (" in text else None
    if tokens is None:
        return None
    pids = [int(pid) for pid in tokens.pids]
    fields: dict[str, Any] = {"pid": pids[0]}
    if len(pids) > 1:
        fields["pids"] = pids
    if tokens.signal:
        detail = tokens.signal.strip()
        fields["detail"] = detail
        name = _SIGNALS.get(detail.lower())
        if name:
            fields["signal_name"] = name
    else:
        fields["detail"] = "exited unexpectedly"
    return Draft("worker_killed", fields)


def _shm_error(text: str, worker: Draft | None) -> Draft | None:
    variant = None
    shm_file = re.search(r"</?torch_(\d+)_", text)
    if "bus error" in text.lower() and ("shared memory" in text or worker is not None):
        variant = "bus_error"
    elif "Caught signal 7 (Bus error" in text:
        variant = "bus_error"  # UCX's and NCCL's crash handlers: SIGBUS on a full /dev/shm
    elif "NCCL WARN Call to posix_fallocate failed" in text and "No space left" in text:
        variant = "no_space"  # NCCL sizes its /dev/shm segments with posix_fallocate
    elif "Error while creating shared memory segment" in text or "ncclShmOpen()" in text:
        variant = "nccl_segment"
    elif shm_file and "No space left on device" in text:
        variant = "no_space"
    elif shm_file and "Too many open files" in text:
        variant = "too_many_open_files"
    elif shm_file and re.search(r"unable to (?:write to file|mmap \d+ bytes from file) <", text):
        variant = "write_failed"
    elif "insufficient shared memory" in text or "out of shared memory" in text or shm_file:
        variant = "other"
    if variant is None:
        return None
    fields: dict[str, Any] = {"variant": variant}
    if worker is not None:
        fields["pid"] = worker.fields["pid"]
    elif shm_file:
        fields["pid"] = int(shm_file.group(1))
    return Draft("shm_error", fields)


@never_raises
def parse(text: str) -> list[Draft]:
    """Return the OS/save/shm/worker drafts found in one message or log line, else ``[]``."""
    grammar = _grammar()
    drafts: list[Draft] = []
    worker = _worker(text, grammar)
    for draft in (
        _os_error(text, grammar),
        _save_error(text, grammar),
        _shm_error(text, worker),
        worker,
    ):
        if draft is not None:
            drafts.append(draft)
    return drafts
