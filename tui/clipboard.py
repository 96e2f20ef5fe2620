"""Copying a fix: say only what is known to have happened, and what to set otherwise.

Whether a terminal honours OSC 52 (the escape sequence Textual's ``copy_to_clipboard`` sends,
which works over SSH) cannot be asked. What can be known is used:

- a clipboard tool on this machine (``wl-copy``, ``xclip``, ``xsel``, ``pbcopy``,
  ``clip.exe``) copies for certain;
- under tmux, ``tmux show -gv set-clipboard`` says whether tmux passes OSC 52 on (``on``) or
  drops it from applications (``external``, tmux's default, and ``off``); the text also goes
  into tmux's paste buffer, so ``prefix ]`` pastes it either way;
- otherwise OSC 52 is sent and the message says it depends on the terminal.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass

_TIMEOUT = 2.0


@dataclass(frozen=True)
class Outcome:
    """What copying did: ``copied`` only when the text is known to be on the clipboard;
    ``doubtful`` when it is known not to be (the message says what to set)."""

    copied: bool
    doubtful: bool
    message: str


def _tools(env: Mapping[str, str]) -> list[list[str]]:
    """Clipboard commands that can work here, best first."""
    tools = []
    if env.get("WAYLAND_DISPLAY"):
        tools.append(["wl-copy"])
    if env.get("DISPLAY"):
        tools += [["xclip", "-selection", "clipboard"], ["xsel", "--clipboard", "--input"]]
    if sys.platform == "darwin":
        tools.append(["pbcopy"])
    tools.append(["clip.exe"])  # Windows and WSL
    return [tool for tool in tools if shutil.which(tool[0], path=env.get("PATH"))]


def _run(command: list[str], text: str, env: Mapping[str, str]) -> bool:
    try:
        done = subprocess.run(
            command,
            input=text.encode(),
            capture_output=True,
            timeout=_TIMEOUT,
            env=dict(env),
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def tmux_set_clipboard(env: Mapping[str, str]) -> str | None:
    """tmux's ``set-clipboard`` option (on, external, off), or None outside tmux."""
    if not env.get("TMUX") or not shutil.which("tmux", path=env.get("PATH")):
        return None
    try:
        done = subprocess.run(
            ["tmux", "show", "-gv", "set-clipboard"],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            env=dict(env),
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def copy(text: str, env: Mapping[str, str] | None = None) -> Outcome:
    """Copy ``text`` by the surest means here (the caller also sends OSC 52, harmless where
    it is dropped); the outcome says what is known to have worked. Runs commands: call it
    from a worker thread."""
    env = os.environ if env is None else env
    for tool in _tools(env):
        if _run(tool, text, env):
            return Outcome(True, False, f"Copied to the clipboard (with {tool[0]}).")
    setting = tmux_set_clipboard(env)
    if setting is not None:
        buffered = _run(["tmux", "load-buffer", "-"], text, env)
        paste = " It is in tmux's paste buffer (prefix ] pastes it)." if buffered else ""
        if setting == "on":
            return Outcome(
                False,
                False,
                "Sent to the terminal's clipboard through tmux (set-clipboard on); it arrives "
                f"if the terminal allows OSC 52.{paste}",
            )
        return Outcome(
            False,
            True,
            f"Not copied to the system clipboard: tmux's set-clipboard is {setting!r}, which "
            "drops a program's copy. Run: tmux set -g set-clipboard on "
            f"(or install xclip / wl-copy).{paste}",
        )
    return Outcome(
        False,
        False,
        "Sent to the terminal's clipboard (OSC 52); if nothing pastes, allow clipboard access "
        "in the terminal's settings or install xclip / wl-copy.",
    )
