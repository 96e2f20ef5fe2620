"""The TUI's rough edges of issue 17 (item 8): activity from the file, a list that stays put."""

from __future__ import annotations

import os
import time
from pathlib import Path

from crashcart.tui.widgets import RunsTable
from tests.tui.conftest import OOM_LOG, async_test, new_app, settle, wait_for


def row_keys(table: RunsTable) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


@async_test
async def test_active_comes_from_the_files_modification_time(runs_dir: Path) -> None:
    two_days_ago = time.time() - 2 * 86400 - 60
    for log in runs_dir.glob("*/*.log"):
        os.utime(log, (two_days_ago, two_days_ago))
    app = new_app(clock=time.time)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert abs(app.runs["runs/ok"].last_activity - two_days_ago) < 2
        table = app.query_one(RunsTable)
        row = table.get_row("run:runs/ok")
        assert str(row[2]) == "2d"


@async_test
async def test_the_runs_list_does_not_reorder_under_the_cursor(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.query_one(RunsTable)
        await pilot.press("j", "j")  # onto the healthy run, below the failed one
        assert table.current_key() == "run:runs/ok"
        before = row_keys(table)
        (runs_dir / "new").mkdir()  # a new run that fails: it goes after, not to the top
        (runs_dir / "new" / "rank0.log").write_bytes(OOM_LOG.read_bytes())
        await wait_for(pilot, lambda: app.runs.get("runs/new") and app.diagnoses.get("runs/new"))
        await pilot.pause(0.6)
        after = row_keys(table)
        assert after[: len(before)] == before
        assert table.current_key() == "run:runs/ok"
