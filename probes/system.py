"""Read-only looks at the system outside Python: nvidia-smi, the kernel log, filesystems.

Every helper here answers None (or an empty result) instead of raising when a tool is missing,
not permitted or slow: a probe reports what it could read and says what it could not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any

#: Seconds any one external command may take; the probe's own limit is the hard stop.
COMMAND_TIMEOUT = 10.0


def run_tool(argv: list[str], timeout: float = COMMAND_TIMEOUT) -> str | None:
    """stdout of ``argv`` when it exits 0 within ``timeout``; None when missing, denied or slow."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, errors="replace"
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def nvidia_smi_csv(query_flag: str, fields: list[str]) -> list[dict[str, str]] | None:
    """Rows of ``nvidia-smi --<query_flag>=<fields> --format=csv,noheader,nounits`` as dicts.

    None when nvidia-smi is missing or fails; ``[]`` when it answers with no rows.
    """
    out = run_tool(
        ["nvidia-smi", f"--{query_flag}={','.join(fields)}", "--format=csv,noheader,nounits"]
    )
    if out is None:
        return None
    rows = []
    for line in out.splitlines():
        if not line.strip() or line.startswith("No running"):
            continue
        values = [v.strip() for v in line.split(",")]
        if len(values) == len(fields):
            rows.append(dict(zip(fields, values, strict=True)))
    return rows


def kernel_log(pattern: re.Pattern[str], limit: int = 20) -> dict[str, Any]:
    """The last ``limit`` kernel-log lines matching ``pattern``, from the first readable source.

    Tries ``dmesg``, ``journalctl -k`` and the classic log files; ``readable`` lists the sources
    that could be read, so "no records" can be told apart from "could not look".
    """
    sources: list[tuple[str, str | None]] = [
        ("dmesg", None),
        ("journalctl -k", None),
        ("/var/log/kern.log", "/var/log/kern.log"),
        ("/var/log/messages", "/var/log/messages"),
    ]
    readable: list[str] = []
    matches: list[str] = []
    for label, path in sources:
        text = _read_source(label, path)
        if text is None:
            continue
        readable.append(label)
        found = [line.strip() for line in text.splitlines() if pattern.search(line)]
        if found:
            matches = found[-limit:]
            break
    return {"readable": readable, "matches": matches}


def _read_source(label: str, path: str | None) -> str | None:
    """The text of one kernel-log source, or None; files are read from their last 4 MiB only."""
    if label == "dmesg":
        return run_tool(["dmesg", "--time-format", "iso"]) or run_tool(["dmesg"])
    if label.startswith("journalctl"):
        return run_tool(["journalctl", "-k", "--no-pager", "-n", "5000", "-q"])
    assert path is not None
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - (4 << 20)))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


def tail(text: str, lines: int = 40, chars: int = 4000) -> str:
    """The last ``lines`` lines of ``text``, at most ``chars`` characters, for result details."""
    kept = "\n".join(text.splitlines()[-lines:])
    return kept[-chars:]
