"""End to end in a real terminal: ``crashcart tui DIR`` in tmux, a crash appended by another
process, the diagnosis read off the screen."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.tui.conftest import HEALTHY_LOG, OOM_LOG

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None,
    reason="tmux is not installed (apt-get install -y tmux); the end-to-end TUI test needs it",
)


def _capture(session: str) -> str:
    return subprocess.run(
        ["tmux", "capture-pane", "-p", "-t", session],
        capture_output=True,
        text=True,
        check=False,
    ).stdout


def test_crash_appended_to_a_watched_file_shows_on_screen(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "job"
    run.mkdir(parents=True)
    log = run / "rank0.log"
    log.write_bytes(HEALTHY_LOG.read_bytes()[:4000])
    crashcart = Path(sys.executable).with_name("crashcart")
    command = (
        f"{crashcart} tui {tmp_path / 'runs'}"
        if crashcart.exists()
        else (f"{sys.executable} -m crashcart tui {tmp_path / 'runs'}")
    )
    session = f"crashcart-test-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "TERM": "xterm-256color"}
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "48", command],
        check=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 20
        while "job" not in _capture(session) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "job" in _capture(session), _capture(session)
        # Another process appends the crash, as a training job would.
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"open({str(log)!r}, 'ab').write(open({str(OOM_LOG)!r}, 'rb').read())",
            ],
            check=True,
        )
        screen = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            screen = _capture(session)
            if "cuda_oom" in screen and "FAILED" in screen:
                break
            time.sleep(0.25)
        assert "cuda_oom" in screen, screen
        assert "✗ FAILED" in screen
        assert "CUDA OOM" in screen
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
