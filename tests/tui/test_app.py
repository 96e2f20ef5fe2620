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


@async_test
async def test_probe_verdict_reranks_the_diagnosis(runs_dir: Path) -> None:
    """The shared_memory probe runs for real on this machine (no GPU needed); its verdict moves
    the diagnosis' confidence the way ``analyze --probe`` does."""
    shm_log = Path(__file__).resolve().parents[2] / "rules/examples/shared_memory/bus_error.log"
    (runs_dir / "shm").mkdir()
    (runs_dir / "shm" / "train.log").write_bytes(shm_log.read_bytes())
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, runs=3)
        await wait_for(pilot, lambda: app.diagnoses.get("runs/shm"))
        table = app.query_one(RunsTable)
        table.move_cursor(row=row_keys(table).index("run:runs/shm"))
        await wait_for(pilot, lambda: app.selected_run == "runs/shm")
        before = app.selected_diagnosis()
        assert before is not None and before.probe_name == "shared_memory"
        await pilot.press("p")
        key = ("runs/shm", before.rule)
        await wait_for(pilot, lambda: app.probes[key]["status"] != "running", timeout=60)
        status = app.probes[key]["status"]
        assert status in ("confirmed", "refuted")  # /dev/shm is either small or roomy

        def reranked():
            return next(
                (d for d in app.diagnoses["runs/shm"] if d.rule == before.rule and d.probe), None
            )

        await wait_for(pilot, reranked)
        after = reranked()
        assert after.probe["status"] == status
        if status == "refuted":
            assert after.confidence < before.confidence
        else:
            assert after.confidence > before.confidence
        assert f"{status} by the shared_memory probe" in after.reason
        await pilot.pause(0.3)
        assert app.query_one(DiagnosesTable).get_row_at(0)[3].plain.endswith(status)


@async_test
async def test_evidence_survives_the_file_being_truncated(runs_dir: Path) -> None:
    """After a truncation the file on disk numbers its lines anew: the evidence view shows the
    lines the analyzer read (kept in memory), not whatever now sits at those line numbers."""
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        diagnosis = app.selected_diagnosis()
        assert diagnosis is not None
        evidence_text = diagnosis.evidence[0].text
        log = runs_dir / "oom" / "rank0.log"
        log.write_text("".join(f"replacement line {i}\n" for i in range(40)))
        await wait_for(pilot, lambda: "truncated" in str(app.runs["runs/oom"].files[0].note))
        await pilot.press("enter", "enter")  # runs -> diagnoses -> evidence
        view = app.query_one(EvidenceView)
        await wait_for(pilot, lambda: len(view._marks) >= 1)
        shown = str(view.query_one("#evidence-text").render())
        assert evidence_text in shown
        assert "replacement line" not in shown


@async_test
async def test_user_rules_reach_the_ui(runs_dir: Path, tmp_path: Path) -> None:
    """A rule passed with ``--rules`` (here: through the RuleBase the CLI builds) diagnoses."""
    from crashcart.analyzer import RuleBase

    rules = tmp_path / "my_rules"
    rules.mkdir()
    (rules / "quota.yaml").write_text(
        "id: config_error.lab_quota\ncategory: config_error\ntitle: The lab's GPU quota ran out\n"
        "confidence: 0.9\nwhen:\n  all:\n    - fact: line\n"
        '      regex: "quota exceeded for project (?P<project>\\\\w+)"\n'
        "summary: Project {project} used its GPU hours.\nfixes:\n"
        "  - title: Ask for more hours\n    command: labctl quota request {project}\n"
    )
    (runs_dir / "lab").mkdir()
    (runs_dir / "lab" / "train.log").write_text(
        "step 1 loss 2.0\nquota exceeded for project vision\n"
    )
    app = new_app(rulebase=RuleBase.load([rules]))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.diagnoses.get("runs/lab"))
        assert app.diagnoses["runs/lab"][0].rule == "config_error.lab_quota"
