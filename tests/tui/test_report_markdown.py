"""``render_markdown``: the Markdown report the TUI saves (and anyone can reuse)."""

from __future__ import annotations

from crashcart.analyzer import analyze
from crashcart.report import render_markdown
from tests.tui.conftest import OOM_LOG


def test_markdown_report_of_a_crash() -> None:
    report = analyze([OOM_LOG])
    text = render_markdown(report.diagnoses, "runs/oom")
    lines = text.splitlines()
    assert lines[0] == "# crashcart report: runs/oom"
    top = report.diagnoses[0]
    assert f"## 1. {top.title}" in lines
    assert f"**cuda_oom** · confidence {top.confidence:.2f}" in text
    assert top.summary in text
    # Evidence: a code block of file:line lines.
    start = lines.index("### Evidence") + 3
    assert lines[start - 1] == "```text"
    assert lines[start].startswith(f"{OOM_LOG}:")
    assert any(
        "torch.OutOfMemoryError" in line for line in lines[start : lines.index("```", start)]
    )
    # Fixes with their copy-pastable lines.
    assert "### Fix" in lines
    assert "   export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in lines
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_markdown_report_of_a_healthy_run() -> None:
    text = render_markdown([], "ok")
    assert text == "# crashcart report: ok\n\nNo problem found: the log looks healthy.\n"
