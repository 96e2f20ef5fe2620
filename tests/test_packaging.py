"""What pyproject.toml says about Pythons is what the smoke matrix tests."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

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
