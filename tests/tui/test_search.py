"""``/`` searches the log text in the evidence and tail views (and filters runs on the lists);
``w`` wraps long evidence lines, which otherwise scroll sideways (issue 17, item 8)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Log

from crashcart.tui.widgets import EvidenceView, RunsTable, TailView
from tests.tui.conftest import async_test, new_app, settle, wait_for
from tests.tui.test_layout import screen_text


async def _loaded(pilot) -> EvidenceView:
    await settle(pilot)
    view = pilot.app.query_one(EvidenceView)
    await wait_for(pilot, lambda: len(view._marks) >= 2)
    await pilot.pause(0.3)
    return view


@async_test
async def test_slash_on_the_evidence_searches_its_text(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        view = await _loaded(pilot)
        rows = app.query_one(RunsTable).row_count
        view.focus()
        await pilot.press("slash", *"attn_output")
        await pilot.pause(0.2)
        assert len(view.matches) == 2  # the two lines holding "attn_output"
        assert view.match == 0
        assert "/attn_output: 2 matching line(s) 1/2" in screen_text(app)
        assert app.name_filter == "" and app.query_one(RunsTable).row_count == rows
        await pilot.press("enter")
        assert app.focused is view
        await pilot.press("n")
        assert view.match == 1
        await pilot.press("n")
        assert view.match == 0
        await pilot.press("N")
        assert view.match == 1
        await pilot.press("escape")
        assert view.pattern is None and not view.matches
        assert "evidence 1/2" in screen_text(app)  # n/N jump between evidence lines again


@async_test
async def test_slash_on_the_tail_finds_and_shows_the_match(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _loaded(pilot)
        await pilot.press("t")
        tail = app.query_one(TailView)
        log = app.query_one("#tail-log", Log)
        await wait_for(pilot, lambda: log.line_count > 0)
        log.focus()
        log.scroll_end(animate=False)
        await pilot.pause(0.2)
        await pilot.press("slash", *"rank11")
        await pilot.pause(0.2)
        first = [n for n, line in enumerate(log.lines) if "rank11" in line.lower()]
        assert tail.matches == first and first
        await pilot.press("enter", "N")
        await pilot.pause(0.2)
        line = tail.matches[tail.match]
        assert log.scroll_y <= line < log.scroll_y + log.scrollable_content_region.height
        assert "rank11" in screen_text(app)
        assert log.max_scroll_x > 0  # the tail's long lines scroll sideways, not cut


@async_test
async def test_slash_on_the_runs_list_still_filters(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _loaded(pilot)
        await pilot.press("slash", "o", "k")
        await pilot.pause(0.5)
        assert app.name_filter == "ok"
        assert app.search_view is None


@async_test
async def test_search_and_wrap_on_an_empty_pane_do_not_crash(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _loaded(pilot)
        await pilot.press("j", "j")  # the healthy run: no diagnosis, no evidence
        await pilot.pause(0.3)
        view = app.query_one(EvidenceView)
        view.focus()
        await pilot.press("slash", "x", "enter", "n", "N", "w", "w", "escape")
        assert view.pattern is None and not view.wrap


@async_test
async def test_long_evidence_lines_scroll_sideways_or_wrap(runs_dir: Path) -> None:
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        view = await _loaded(pilot)
        longest = max(view._lines, key=len)
        assert len(longest) > 80
        assert view.max_scroll_x > 0  # not cut: it scrolls sideways
        view.focus()
        await pilot.press("right", "right")
        assert view.scroll_x > 0
        await pilot.press("w")
        await pilot.pause(0.3)
        assert view.wrap and view.max_scroll_x == 0
        # the end of the longest line is on the screen, wrapped
        view.scroll_to(y=view._y(view._lines.index(longest)), animate=False)
        await pilot.pause(0.2)
        assert longest.split()[-1] in screen_text(app)
