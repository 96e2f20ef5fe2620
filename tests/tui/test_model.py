"""The TUI model's evidence context: from the kept tail, else from disk only when it matches."""

from __future__ import annotations

from pathlib import Path

from crashcart.parsers.lines import LogLine
from crashcart.tui.model import evidence_context

LINES = [f"step {i} loss {1 / i:.3f}" for i in range(1, 31)]


def test_context_comes_from_the_kept_tail() -> None:
    kept = list(enumerate(LINES, 1))
    evidence = [LogLine("a.log", 20, LINES[19])]
    context = evidence_context("a.log", evidence, kept, around=2)
    assert context == [(n, LINES[n - 1]) for n in range(18, 23)]


def test_context_read_from_disk_when_the_tail_no_longer_holds_it(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("\n".join(LINES) + "\n")
    evidence = [LogLine(str(log), 3, LINES[2])]
    kept = list(enumerate(LINES, 1))[20:]  # the tail moved past line 3
    context = evidence_context(str(log), evidence, kept, around=1)
    assert context == [(2, LINES[1]), (3, LINES[2]), (4, LINES[3])]


def test_disk_is_not_trusted_after_the_file_changed(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("".join(f"other line {i}\n" for i in range(10)))  # truncated and rewritten
    evidence = [LogLine(str(log), 3, "RuntimeError: CUDA out of memory.")]
    context = evidence_context(str(log), evidence, [], around=2)
    assert context == [(3, "RuntimeError: CUDA out of memory.")]


def test_peeled_evidence_matches_its_prefixed_line(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("[rank1]: boom\n[rank1]: RuntimeError: bad\n")
    evidence = [LogLine(str(log), 2, "RuntimeError: bad", rank=1)]
    context = evidence_context(str(log), evidence, [], around=1)
    assert context == [(1, "[rank1]: boom"), (2, "[rank1]: RuntimeError: bad")]
