"""Opening a directory of many runs (issue 17, item 8): the list comes first, and the run the
person is looking at is analysed before the rest of the backlog."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.tui.widgets import RunsTable
from tests.tui.conftest import OOM_LOG, async_test, new_app, wait_for

RUNS = 30


@pytest.fixture
def many_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """30 healthy runs of ~200 KB each, and ``zz``, which crashed (last in the list)."""
    monkeypatch.chdir(tmp_path)
    root = Path("runs")
    body = "".join(f"step {i} loss {2.5 / (1 + i / 300):.4f} it/s 5.1\n" for i in range(6000))
    for index in range(RUNS):
        (root / f"r{index:02d}").mkdir(parents=True)
        (root / f"r{index:02d}" / "train.log").write_text(body)
    (root / "zz").mkdir()
    (root / "zz" / "rank0.log").write_text(body + OOM_LOG.read_text())
    return root


@async_test
async def test_the_selected_run_is_analysed_before_the_backlog(many_runs: Path) -> None:
    app = new_app()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(RunsTable)
        await wait_for(pilot, lambda: len(app.runs) == RUNS + 1 and table.row_count)
        assert app.model.backlog() > RUNS // 2  # listed before most runs were analysed
        table.focus()
        await pilot.press("G")  # the last run, zz: the one on screen now
        await wait_for(pilot, lambda: app.selected_run == "runs/zz")
        await wait_for(pilot, lambda: app.diagnoses.get("runs/zz"), timeout=60)
        assert app.diagnoses["runs/zz"][0].category == "cuda_oom"
        # most of the other runs still wait: zz did not queue behind them
        assert app.model.backlog() > RUNS // 2
        await wait_for(pilot, lambda: app.model.backlog() == 0, timeout=120)
