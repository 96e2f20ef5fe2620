"""Shared helpers: run the real pipeline on inline log text, run the real command line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Collection
from typing import Any

import pytest

from crashcart.analyzer import Analyzer, Report, default_rulebase


def run_text(text: str, *, chunk: int | None = None, source: str = "train.log") -> Report:
    """Analyse ``text`` (dedented) as one source, optionally fed in ``chunk``-byte pieces."""
    data = textwrap.dedent(text).encode()
    analyzer = Analyzer(default_rulebase())
    try:
        step = chunk or max(len(data), 1)
        for start in range(0, len(data), step):
            analyzer.feed(source, data[start : start + step])
        analyzer.finish(source)
        analyzer.conclude()
        return analyzer.report()
    finally:
        analyzer.close()


def categories(report: Report) -> list[str]:
    """The categories of a report's diagnoses, best first."""
    return [d.category for d in report.diagnoses]


@pytest.fixture
def analyze_text():
    """The :func:`run_text` helper as a fixture."""
    return run_text


CRASHCART = [sys.executable, "-m", "crashcart"]
#: The exit statuses crashcart has: nothing found, diagnoses found, usage or input error.
EXIT_CODES = (0, 1, 2)


def assert_started(
    returncode: int | None, stderr: str | bytes | None, expected: Collection[int] = EXIT_CODES
) -> None:
    """Fail the test unless crashcart ran and ended as ``expected``: a traceback on stderr, or an
    exit status outside ``expected``, is a failure. A crashcart that cannot start (an engine
    that does not import) exits with a traceback and status 1, the code for "diagnoses found",
    so a check of the exit status alone would let it pass."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr or ""
    if "Traceback (most recent call last)" in text or returncode not in expected:
        pytest.fail(
            f"crashcart exited with {returncode}, expected one of {sorted(expected)}; "
            f"stderr:\n{text[-4000:]}",
            pytrace=False,
        )


def run_crashcart(
    *args: str,
    expected: Collection[int] = EXIT_CODES,
    env: dict[str, str] | None = None,
    **options: Any,
) -> subprocess.CompletedProcess:
    """Run ``python -m crashcart ARGS`` to its end (``options`` go to :func:`subprocess.run`:
    ``input``, ``text``, ``timeout``, ``stdin``), then :func:`assert_started` on it."""
    options.setdefault("timeout", 120)
    result = subprocess.run(
        [*CRASHCART, *args],
        capture_output=True,
        env={**os.environ, **(env or {})},
        check=False,
        **options,
    )
    assert_started(result.returncode, result.stderr, expected)
    return result
