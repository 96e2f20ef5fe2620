"""The TUI driven by Textual's pilot: select, read, copy, save, probe, filter, help."""

from __future__ import annotations

from pathlib import Path

from crashcart.tui.app import report_filename
from crashcart.tui.widgets import DiagnosesTable, EvidenceView, HelpScreen, RunsTable, TailView
from tests.tui.conftest import async_test, new_app, settle, wait_for

EXPECTED_FIX = "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"


def row_keys(table) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


@async_test
async def test_runs_listed_failures_first(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        keys = row_keys(app.query_one(RunsTable))
        assert keys == [
            "run:runs/oom",
            "file:runs/oom/rank0.log",
            "run:runs/ok",
            "file:runs/ok/train.log",
        ]
        assert app.runs["runs/oom"].status == "failed"
        assert app.runs["runs/ok"].status == "healthy"
        assert app.runs["runs/ok"].loss is not None  # the latest loss of the tqdm log
        assert app.runs["runs/ok"].loss_series and app.runs["runs/ok"].speed_series


@async_test
async def test_select_run_shows_its_diagnoses(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.selected_run == "runs/oom"
        table = app.query_one(DiagnosesTable)
        assert row_keys(table)[0] == "1:cuda_oom.fragmentation"
        await pilot.press("j", "j")  # the healthy run: no diagnoses
        assert app.selected_run == "runs/ok"
        assert table.row_count == 0
        await pilot.press("k", "k")
        assert app.selected_run == "runs/oom"
        assert table.row_count >= 1


@async_test
async def test_open_evidence_and_jump(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # runs -> diagnoses
        assert app.focused is app.query_one(DiagnosesTable)
        await pilot.press("enter")  # diagnosis -> evidence
        view = app.query_one(EvidenceView)
        assert app.query_one("TabbedContent").active == "evidence"
        await wait_for(pilot, lambda: len(view._marks) >= 2)
        assert view.index == 0
        await pilot.press("n")
        assert view.index == 1
        assert "rank0.log:5" in view._where[view.index]
        await pilot.press("N")
        assert view.index == 0


@async_test
async def test_copy_fix_to_clipboard(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("f", "c")
        assert app.clipboard == EXPECTED_FIX
        await pilot.press("right_square_bracket", "c")
        assert app.clipboard == "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128"


@async_test
async def test_save_markdown_report(runs_dir: Path, tmp_path: Path) -> None:
    app = new_app(report_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("s")
    report = (tmp_path / report_filename("runs/oom")).read_text()
    assert report_filename("runs/oom") == "crashcart-report-runs-oom.md"
    assert report.startswith("# crashcart report: runs/oom")
    assert "runs/oom/rank0.log:5" in report
    assert EXPECTED_FIX in report


@async_test
async def test_probe_runs_in_background(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        key = ("runs/oom", "cuda_oom.fragmentation")
        assert app.query_one("TabbedContent").active == "probe"
        await wait_for(pilot, lambda: app.probes[key]["status"] != "running", timeout=60)
        result = app.probes[key]
        assert result["name"] == "cuda_memory"
        assert result["status"] == "unavailable"  # no GPU here: says so, with the reason
        assert result["summary"]


@async_test
async def test_filter_by_name(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.query_one(RunsTable)
        await pilot.press("slash", *"train")
        await pilot.pause(0.1)
        assert row_keys(table) == ["run:runs/ok", "file:runs/ok/train.log"]
        await pilot.press("enter")
        assert app.focused is table
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert len(row_keys(table)) == 4


@async_test
async def test_help_opens_and_closes(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


@async_test
async def test_new_files_appear_and_tail_follows(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        late = runs_dir / "late" / "train.log"
        late.parent.mkdir()
        late.write_text("step 1 loss 2.0\n")
        await wait_for(pilot, lambda: "runs/late" in app.runs)
        table = app.query_one(RunsTable)
        await wait_for(pilot, lambda: "file:runs/late/train.log" in row_keys(table))
        table.move_cursor(row=row_keys(table).index("file:runs/late/train.log"))
        await wait_for(pilot, lambda: app.selected_path == "runs/late/train.log")
        tail = app.query_one(TailView)
        with late.open("a") as handle:
            handle.write("step 2 loss 1.5\n")
        await wait_for(pilot, lambda: "step 2 loss 1.5" in tail.log_widget.lines)
        assert tail.waiting == 0
