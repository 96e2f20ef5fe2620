"""Packaging: building the wheel is quiet (the install is the first thing a newcomer sees), and
what pyproject.toml says about Pythons is what the smoke matrix tests."""

from __future__ import annotations

import importlib.util
import re
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


tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the suite runs on .venv's Python


def smoke_matrix():
    spec = importlib.util.spec_from_file_location("smoke_matrix", ".ci/smoke_matrix.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_classifiers_and_requires_python_name_the_tested_pythons() -> None:
    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    matrix = smoke_matrix()
    assert project["requires-python"] == f">=3.{matrix.FIRST_MINOR}"
    listed = [
        int(m.group(1))
        for c in project["classifiers"]
        if (m := re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", c))
    ]
    # every minor the matrix looks for, but the newest, which it runs only where it can be had
    assert listed == list(range(matrix.FIRST_MINOR, matrix.LAST_MINOR))
