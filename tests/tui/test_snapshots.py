"""Snapshot tests of the main screens at 80x24 and 160x48 (pytest-textual-snapshot).

Update the snapshots after an intended change: ``pytest tests/tui --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.conftest import new_app, settle, wait_for

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


def _all_read(app) -> bool:
    """Every file's lines are in the model's snapshot (under load, quiet is not enough)."""
    files = [file for run in app.runs.values() for file in run.files]
    return bool(files) and all(
        file.lines == Path(file.path).read_bytes().count(b"\n") for file in files
    )


async def _ready(pilot) -> None:
    await settle(pilot)
    await wait_for(pilot, lambda: _all_read(pilot.app))
    view = pilot.app.query_one("EvidenceView")
    await wait_for(pilot, lambda: len(view._marks) >= 2)
    await pilot.pause(1.0)


@pytest.mark.parametrize("size", SIZES)
def test_main_screen(snap_compare, runs_dir: Path, size: tuple[int, int]) -> None:
    assert snap_compare(new_app(), terminal_size=size, run_before=_ready)


@pytest.mark.parametrize("size", SIZES)
def test_fix_tab(snap_compare, runs_dir: Path, size: tuple[int, int]) -> None:
    async def run_before(pilot) -> None:
        await _ready(pilot)
        await pilot.press("f")
        await pilot.pause(1.0)  # generous: the suite shares two cores with other tests

    assert snap_compare(new_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_help_screen(snap_compare, runs_dir: Path, size: tuple[int, int]) -> None:
    async def run_before(pilot) -> None:
        await _ready(pilot)
        await pilot.press("question_mark")
        await pilot.pause(1.0)  # generous: the suite shares two cores with other tests

    assert snap_compare(new_app(), terminal_size=size, run_before=run_before)
