"""Shared helpers: run the real pipeline on inline log text."""

from __future__ import annotations

import textwrap

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
