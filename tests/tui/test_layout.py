"""The TUI's layout (issue 17, item 8): columns that hold their headers and values, titles that
use the free width, the evidence's file named once, and at 80x24 three diagnoses and the top fix.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console

from crashcart.report import fix_lines
from crashcart.tui.widgets import DiagnosesTable, FixPanel, RunsTable, VimTable
from tests.tui.conftest import ROOT, async_test, new_app, settle, wait_for

THREE = ROOT / "corpus" / "cascade_nan_rollback_missing_last_good_ckpt" / "train.log"


def screen_text(app) -> str:
    """What the terminal shows, as plain text."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


def assert_fits(table: VimTable) -> None:
    """No column is cut: every header and cell fits its column, the columns fit the pane."""
    widths = {column.key: column.get_render_width(table) for column in table.columns.values()}
    assert sum(widths.values()) <= table.available_width(), widths
    for column in table.columns.values():
        cells = [table.get_cell(row.key, column.key) for row in table.ordered_rows]
        longest = max([cell_len(str(column.label))] + [cell_len(str(cell)) for cell in cells])
        assert longest <= column.width, (column.key, longest, column.width)


@async_test
async def test_columns_hold_headers_and_values_and_titles_use_the_width(runs_dir: Path) -> None:
    long = runs_dir / "a-run-with-a-rather-long-name-lr3e-4-bs512-seed1234-warmup"
    long.mkdir()
    (long / "train.log").write_text("step 41 loss 0.000012345 it/s 5.1\n" * 3)
    for size in ((80, 24), (160, 48)):
        app = new_app()
        async with app.run_test(size=size) as pilot:
            await settle(pilot, runs=3)
            runs, diagnoses = app.query_one(RunsTable), app.query_one(DiagnosesTable)
            await wait_for(pilot, lambda app=app: app.runs[str(long)].loss is not None)
            await pilot.pause(0.5)
            assert_fits(runs)
            assert "1.234e-05" in str(runs.get_row(f"run:{long}")[4])
            # the diagnosis title gets the pane's free width, not a fixed ~30 cells
            title = diagnoses.columns[diagnoses.ordered_columns[-1].key]
            others = sum(c.get_render_width(diagnoses) for c in diagnoses.ordered_columns[:-1])
            assert title.get_render_width(diagnoses) == diagnoses.available_width() - others
            assert title.width > 30
            text = screen_text(app)
            assert "CUDA OOM with gigabytes reserved" in text
            assert any("step      loss" in line for line in text.splitlines()[:3])


@async_test
async def test_the_evidence_names_its_file_once(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        view = app.query_one("EvidenceView")
        await wait_for(pilot, lambda: len(view._marks) >= 2)
        await pilot.pause(0.3)
        assert screen_text(app).count("runs/oom/rank0.log") == 1


@async_test
async def test_80x24_shows_three_diagnoses_and_the_top_fix(runs_dir: Path) -> None:
    shutil.rmtree(runs_dir / "oom")
    (runs_dir / "three").mkdir()
    shutil.copyfile(THREE, runs_dir / "three" / "train.log")
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(app.diagnoses.get("runs/three", [])) >= 3)
        await wait_for(pilot, lambda: app.selected_run == "runs/three")
        await pilot.pause(0.6)
        diagnoses = app.diagnoses["runs/three"]
        text = screen_text(app)
        for diagnosis in diagnoses[:3]:
            assert diagnosis.title[:20] in text, (diagnosis.title, text)
        await pilot.press("f")
        await pilot.pause(0.4)
        fixes = app.query_one(FixPanel).fixes
        assert fixes
        text = screen_text(app)
        assert fixes[0]["title"][:30] in text, text
        for line in fix_lines(fixes[0])[:2]:
            assert line[:30] in text, text
