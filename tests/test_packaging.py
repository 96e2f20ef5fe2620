"""Building crashcart's wheel is quiet: the install is the first thing a newcomer sees (issue 17)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What setuptools prints when the configuration is deprecated or leaves data out of `packages`.
WARNINGS = ("SetuptoolsDeprecationWarning", "would be ignored", "absent from the `packages`")


def test_wheel_builds_without_setuptools_warnings(tmp_path: Path) -> None:
    """A verbose wheel build (the build backend's own output) has no setuptools warning, and
    the wheel still carries the rules, their examples and the TUI's stylesheet."""
    pytest.importorskip("setuptools")
    build = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation"),
            *("--wheel-dir", str(tmp_path), str(ROOT)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    output = build.stdout + build.stderr
    found = [line for line in output.splitlines() if any(w in line for w in WARNINGS)]
    assert not found, "\n".join(found[:10])
    (wheel,) = tmp_path.glob("crashcart-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "crashcart/rules/cuda_oom.yaml" in names
    assert "crashcart/rules/examples/cuda_oom/fragmentation.log" in names
    assert "crashcart/rules/examples/README.md" in names
    assert "crashcart/tui/app.tcss" in names
    assert "crashcart/probes/README.md" in names
