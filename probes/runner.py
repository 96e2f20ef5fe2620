"""The parent side of a probe: run the child in its own process group, under a hard time limit.

The child (``python -m crashcart.probes NAME --context JSON``) runs in a fresh temporary
directory that is also its ``TMPDIR``, so anything it writes is removed afterwards. On timeout
the whole process group is killed (the NCCL probe's ranks included). Whatever goes wrong (a
crash, a hang, a signal, garbage on stdout) becomes an ``unavailable`` result with the reason;
this module never raises for a probe's sake.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from crashcart.probes.base import STATUSES
from crashcart.probes.system import tail

#: Seconds to wait for a killed process group's pipes to close before giving up on them.
_REAP_SECONDS = 2.0


def child_argv(name: str, context: dict[str, Any]) -> list[str]:
    """The command line that runs probe ``name`` in a child interpreter."""
    return [sys.executable, "-m", "crashcart.probes", name, "--context", json.dumps(context)]


def run_child(argv: list[str], timeout: float) -> tuple[dict[str, Any], float]:
    """Run ``argv`` as a probe child; its parsed result (or an unavailable one) and seconds."""
    workdir = tempfile.mkdtemp(prefix="crashcart-probe-")
    env = dict(os.environ, TMPDIR=workdir, PYTHONUNBUFFERED="1")
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, so a timeout kills its children too
        )
    except OSError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        return _unavailable(f"could not start the probe: {exc}"), time.monotonic() - start
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        stdout, stderr = _reap(proc)
    finally:
        _kill_group(proc.pid)  # stragglers a finished probe left behind
        shutil.rmtree(workdir, ignore_errors=True)
    seconds = time.monotonic() - start
    err = tail(stderr.decode("utf-8", "replace"), lines=20, chars=2000)
    if timed_out:
        reason = f"probe timed out after {timeout:g} s and was killed"
        return _unavailable(reason, stderr=err), seconds
    return parse_result(stdout, proc.returncode, err), seconds


def parse_result(stdout: bytes, returncode: int, stderr: str = "") -> dict[str, Any]:
    """The child's JSON result from its stdout, or an unavailable result saying what was wrong."""
    if returncode != 0:
        how = (
            f"killed by signal {-returncode}"
            if returncode < 0
            else f"exited with status {returncode}"
        )
        return _unavailable(f"probe crashed ({how})", stderr=stderr)
    lines = [line for line in stdout.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return _unavailable("probe printed no result", stderr=stderr)
    try:
        result = json.loads(lines[-1])
    except json.JSONDecodeError:
        return _unavailable(f"probe printed no JSON result: {lines[-1][:120]!r}", stderr=stderr)
    if (
        not isinstance(result, dict)
        or result.get("status") not in STATUSES
        or not isinstance(result.get("summary"), str)
        or not isinstance(result.get("details", {}), dict)
    ):
        return _unavailable(f"probe printed a malformed result: {lines[-1][:120]!r}", stderr=stderr)
    return {
        "status": result["status"],
        "summary": result["summary"],
        "details": result.get("details", {}),
    }


def _unavailable(reason: str, **details: Any) -> dict[str, Any]:
    """An ``unavailable`` result whose summary is ``reason``."""
    kept = {k: v for k, v in details.items() if v}
    return {"status": "unavailable", "summary": reason, "details": {"reason": reason, **kept}}


def _kill_group(pgid: int) -> None:
    """SIGKILL every process in group ``pgid``; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _reap(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Collect a killed child's output; give up after a moment if a pipe is held elsewhere."""
    try:
        return proc.communicate(timeout=_REAP_SECONDS)
    except subprocess.TimeoutExpired:
        # A grandchild that left the group still holds the pipes: stop reading, do not hang.
        proc.kill()
        proc.wait()
        return b"", b""
