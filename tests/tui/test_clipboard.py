"""Copying a fix says what is known to have happened (issue 17, item 9), with a real tmux."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from crashcart.tui import clipboard

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def tmux_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A private tmux server (its own socket), and the environment of a program inside it,
    with no clipboard tool on PATH and no display."""
    socket = tmp_path / "tmux.sock"
    base = ["tmux", "-S", str(socket), "-f", "/dev/null"]
    subprocess.run([*base, "new-session", "-d", "-s", "t"], check=True, timeout=10)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(shutil.which("tmux"), bin_dir / "tmux")
    env = {"PATH": str(bin_dir), "TMUX": f"{socket},1,0", "HOME": str(tmp_path)}
    try:
        yield env
    finally:
        subprocess.run([*base, "kill-server"], check=False, timeout=10)


def set_clipboard(env: dict[str, str], value: str) -> None:
    socket = env["TMUX"].split(",")[0]
    subprocess.run(["tmux", "-S", socket, "set", "-g", "set-clipboard", value], check=True)


def buffer(env: dict[str, str]) -> str:
    socket = env["TMUX"].split(",")[0]
    return subprocess.run(
        ["tmux", "-S", socket, "show-buffer"], capture_output=True, text=True, check=False
    ).stdout


def test_tmux_external_is_not_called_copied(tmux_env: dict[str, str]) -> None:
    set_clipboard(tmux_env, "external")
    assert clipboard.tmux_set_clipboard(tmux_env) == "external"
    outcome = clipboard.copy("export A=1", tmux_env)
    assert not outcome.copied and outcome.doubtful
    assert "Copied to the clipboard" not in outcome.message
    assert "tmux set -g set-clipboard on" in outcome.message
    assert buffer(tmux_env) == "export A=1"  # prefix ] still pastes it


def test_tmux_on_passes_osc52_on(tmux_env: dict[str, str]) -> None:
    set_clipboard(tmux_env, "on")
    outcome = clipboard.copy("export A=2", tmux_env)
    assert not outcome.doubtful and "set-clipboard on" in outcome.message


def test_outside_tmux_without_tools_says_it_depends_on_the_terminal(tmp_path: Path) -> None:
    outcome = clipboard.copy("x", {"PATH": str(tmp_path)})
    assert not outcome.copied and not outcome.doubtful and "OSC 52" in outcome.message
