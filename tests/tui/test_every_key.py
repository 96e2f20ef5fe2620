"""Every bound key, pressed in every pane, in every state the panes can be in: the TUI survives.

The keys are read from the app itself (``active_bindings`` of each focused pane: the app's,
the screen's and the widget's own bindings), so a binding added later is pressed too.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from textual import events
from textual.widgets import TabbedContent

from crashcart.analyzer import default_rulebase
from crashcart.tui.app import CrashcartApp, exit_status
from tests.tui.conftest import HEALTHY_LOG, ROOT, async_test, new_app, wait_for

ONE_DIAGNOSIS = ROOT / "corpus" / "checkpoint_size_mismatch" / "train.log"
SEVERAL_DIAGNOSES = ROOT / "corpus" / "cascade_nan_rollback_missing_last_good_ckpt" / "train.log"
TABS = ("evidence", "tail", "fix", "probe")
#: The printable character of the keys Textual names by word.
CHARS = {
    "question_mark": "?",
    "slash": "/",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
}
QUIT_ACTIONS = {"quit", "app.quit"}
DETAIL_PANES = {"evidence-view", "tail-log", "fix-panel", "probe-panel"}

#: state -> (log copied to runs/<state>/train.log or None for no file, diagnoses expected)
STATES = {
    "empty": (None, 0),
    "healthy": (HEALTHY_LOG, 0),
    "one_diagnosis": (ONE_DIAGNOSIS, 1),
    "several_diagnoses": (SEVERAL_DIAGNOSES, 3),
}


def make_state(tmp_path: Path, state: str) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    log, _ = STATES[state]
    if log is not None:
        (runs / state).mkdir()
        shutil.copyfile(log, runs / state / "train.log")
    return runs


async def loaded(pilot, state: str) -> None:
    """Wait until the state is on screen: its run listed and diagnosed as expected."""
    app: CrashcartApp = pilot.app
    log, expected = STATES[state]
    run = f"{app.directory}/{state}"
    if log is None:
        await wait_for(pilot, lambda: app.model._rules_ready.is_set())
    else:
        await wait_for(pilot, lambda: run in app.runs and app.selected_run == run)
        await wait_for(pilot, lambda: len(app.diagnoses.get(run, [])) == expected)
    await wait_for(pilot, lambda: time.monotonic() - app.last_message > 0.5)
    await pilot.pause(0.2)


async def press(pilot, key: str) -> None:
    """Send ``key`` as the terminal driver does and wait until every widget has handled it and
    what it caused. (``pilot.press`` also waits for the whole process to be idle, twice per
    key: with the model's thread alive that is up to 2 s a key, minutes for this test.)"""
    char = CHARS.get(key, key if len(key) == 1 else None)
    event = events.Key(key, char)
    event.set_sender(pilot.app)
    pilot.app.post_message(event)
    await pilot.pause(0)
    await pilot.pause(0)


async def back_to(pilot, tab: str | None, pane_id: str | None) -> None:
    """Undo what a key did to the layout: close screens, restore zoom, reopen ``tab`` (None:
    any tab will do), refocus the pane; only what changed, as each redraw costs."""
    app: CrashcartApp = pilot.app
    changed = False
    while len(app.screen_stack) > 1:
        app.pop_screen()
        changed = True
    if app.screen.maximized is not None:
        app.screen.minimize()
        changed = True
    tabs = app.query_one(TabbedContent)
    if tab is not None and tabs.active != tab:
        tabs.active = tab
        changed = True
    if changed:
        await pilot.pause(0)
    if pane_id is not None and (app.focused is None or app.focused.id != pane_id):
        app.query_one(f"#{pane_id}").focus()
        await pilot.pause(0)


def panes(app: CrashcartApp) -> list[str | None]:
    """Ids of the focusable panes now (``None``: the tab bar, which has no id)."""
    return [widget.id for widget in app.screen.focus_chain]


@pytest.mark.parametrize("state", list(STATES))
@async_test
async def test_every_bound_key_in_every_pane(state: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    make_state(tmp_path, state)
    app = new_app("runs", report_dir=tmp_path)
    pressed: set[tuple[str, str | None, str]] = set()
    async with app.run_test(size=(160, 48)) as pilot:
        await loaded(pilot, state)
        app.action_filter()  # the filter box is a pane too once shown
        await pilot.pause()
        seen: set[str | None] = set()
        for tab in TABS:
            await back_to(pilot, tab, None)
            for pane in panes(app):
                if pane in seen:  # the runs, diagnoses, filter and tab bar: once is enough
                    continue
                seen.add(pane)
                # A pane of the detail tabs needs its tab open; the others do not care.
                needs = tab if pane in DETAIL_PANES else None
                await back_to(pilot, tab, pane)
                keys = [
                    key
                    for key, active in app.active_bindings.items()
                    if active.binding.action not in QUIT_ACTIONS
                ]
                assert keys, f"no bindings active in pane {pane}"
                for key in keys:
                    await press(pilot, key)
                    pressed.add((tab, pane, key))
                    assert app.crash is None, f"{key!r} in pane {pane} ({tab}, {state}) crashed"
                    assert app.return_code is None, f"{key!r} in pane {pane} ended the app"
                    await back_to(pilot, needs, pane)
        assert {"runs", "diagnoses", "filter", "evidence-view", "tail-log"} <= seen
        assert {"fix-panel", "probe-panel"} <= seen
        for key in ("up", "k", "down", "j", "g", "G", "enter"):
            assert ("evidence", "diagnoses", key) in pressed
            assert ("evidence", "runs", key) in pressed
        await pilot.press("q")
    assert app.crash is None
    assert exit_status(app) == 0


@async_test
async def test_an_unexpected_error_exits_non_zero_with_a_message(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    make_state(tmp_path, "empty")
    app = CrashcartApp("runs", rulebase=default_rulebase())

    def broken_zoom() -> None:  # stands for any bug in a key's handler
        raise RuntimeError("a bug in a key handler")

    app.action_zoom = broken_zoom  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):  # the pilot re-raises the app's error at its end
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("z")
    assert isinstance(app.crash, RuntimeError)
    assert exit_status(app) == 2
    err = capsys.readouterr().err
    assert "crashcart: internal error in the TUI: RuntimeError: a bug in a key handler" in err
