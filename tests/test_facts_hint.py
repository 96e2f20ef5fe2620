"""The ``--facts`` command suggested for an unrecognised failure runs as printed."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

UNKNOWN = (
    b"step 1 loss 2.0\nTraceback (most recent call last):\n"
    b'  File "train.py", line 9, in <module>\n    main()\nZorkError: the frobnicator jammed\n'
)


def analyze_json(*args: str, stdin: bytes | None = None) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "crashcart", "analyze", "--json", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout)


def facts_command(report: dict) -> str:
    (top,) = report["diagnoses"]
    assert top["rule"] == "unrecognised"
    return top["fixes"][0]["command"]


def run_printed(command: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Run the printed command as a shell would (``crashcart`` is this interpreter's module)."""
    argv = shlex.split(command)  # raises on what a shell could not parse either
    assert argv[0] == "crashcart"
    return subprocess.run(
        [sys.executable, "-m", "crashcart", *argv[1:]],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_stdin_gets_a_runnable_facts_command() -> None:
    command = facts_command(analyze_json("-", stdin=UNKNOWN))
    assert "<stdin>" not in command
    assert command == "crashcart analyze --facts -"
    result = run_printed(command, stdin=UNKNOWN)
    assert result.returncode == 1
    assert any(json.loads(line)["kind"] == "exception" for line in result.stdout.splitlines())


def test_a_path_with_a_space_is_quoted(tmp_path: Path) -> None:
    log = tmp_path / "my run.log"
    log.write_bytes(UNKNOWN)
    command = facts_command(analyze_json(str(log)))
    result = run_printed(command)
    assert result.returncode == 1, result.stderr
    assert result.stdout.strip()
