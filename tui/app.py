"""``crashcart tui``: the App, its layout and its key bindings.

The model (:mod:`crashcart.tui.model`) runs in a thread worker and posts snapshots; the App keeps
the latest ones, refreshes the runs list at most four times a second, and reads evidence files
and runs probes in other thread workers, so the UI thread never parses, reads or waits.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import DataTable, Footer, Header, Input, TabbedContent, TabPane

from ..analyzer import RuleBase
from ..engine.diagnosis import Diagnosis
from ..parsers.follow import DEFAULT_GLOBS
from ..report import render_markdown
from . import clipboard
from .model import (
    DiagnosesChanged,
    EvidenceLoaded,
    FileActivity,
    Model,
    ModelNotice,
    ModelReady,
    ProbeDone,
    RunInfo,
    RunUpdated,
)
from .widgets import (
    DiagnosesTable,
    EvidenceView,
    FixPanel,
    HelpScreen,
    Metrics,
    ProbePanel,
    RunsTable,
    TailView,
    search_pattern,
)

NARROW = 110  # columns below which the panes stack
SWITCH_INTERVAL = 0.0005  # seconds a thread holds the GIL before another may take it


def _while_mounted(handler: Callable[..., None]) -> Callable[..., None]:
    """Drop a message from a thread that arrives while the app is being torn down."""

    @functools.wraps(handler)
    def wrapper(self: App[None], *args: Any, **kwargs: Any) -> None:
        with contextlib.suppress(NoMatches):  # the widgets are gone: the app is closing
            handler(self, *args, **kwargs)

    return wrapper


def report_filename(run: str) -> str:
    """``crashcart-report-<run>.md``, the run's path made one safe file name."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", run.strip("./")).strip("-") or "run"
    return f"crashcart-report-{name}.md"


class CrashcartApp(App[None]):
    """Watch a directory of training logs and show what is wrong, live."""

    CSS_PATH = "app.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW, "-wide")]  # noqa: RUF012
    TITLE = "crashcart"
    BINDINGS = [  # noqa: RUF012 (Textual's declarative bindings)
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("slash", "filter", "Filter/search"),
        Binding("w", "wrap", "Wrap lines", show=False),
        Binding("e", "tab('evidence')", "Evidence"),
        Binding("t", "tab('tail')", "Tail"),
        Binding("f", "tab('fix')", "Fix"),
        Binding("c", "copy_fix", "Copy fix"),
        Binding("s", "save_report", "Save report"),
        Binding("p", "probe", "Probe"),
        Binding("r", "tab('probe')", "Probe result", show=False),
        Binding("n", "evidence(1)", "Next evidence", show=False),
        Binding("N", "evidence(-1)", "Previous evidence", show=False),
        Binding("right_square_bracket", "fix(1)", "Next fix", show=False),
        Binding("left_square_bracket", "fix(-1)", "Previous fix", show=False),
        Binding("z", "zoom", "Zoom pane", show=False),
        Binding("escape", "escape", "Clear filter", show=False),
    ]

    def __init__(
        self,
        directory: str | Path = ".",
        *,
        poll: bool | None = None,
        globs: Sequence[str] = DEFAULT_GLOBS,
        rulebase: RuleBase | None = None,
        hang_after: float = 300.0,
        clock: Callable[[], float] = time.time,
        report_dir: str | Path | None = None,
    ) -> None:
        super().__init__()
        self.directory = str(directory)
        self.clock = clock
        self.report_dir = Path(report_dir) if report_dir is not None else None
        #: The unexpected error that ended the app, if one did (see :func:`run_tui`).
        self.crash: BaseException | None = None
        self.model = Model(
            [self.directory],
            self.post_message,
            rulebase=rulebase,
            globs=globs,
            poll=poll,
            hang_after=hang_after,
            clock=clock,
        )
        self.runs: dict[str, RunInfo] = {}
        self.diagnoses: dict[str, list[Diagnosis]] = {}
        self.configs: dict[str, dict[str, Any]] = {}
        self.probes: dict[tuple[str, str], dict[str, Any]] = {}
        self.selected_run: str | None = None
        self.selected_path: str | None = None
        self.selected_rule: str | None = None
        self.name_filter = ""
        #: The view a ``/`` search runs in (evidence or tail), while one is on.
        self.search_view: EvidenceView | TailView | None = None
        self.mode = "starting"
        self.last_message = time.monotonic()  # when the model last said something (for tests)
        self._runs_dirty = False
        self._refresh_after = 0.0  # monotonic time before which the list is not redrawn
        self._switch_interval = sys.getswitchinterval()

    # -- layout ----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Runs and files | diagnoses on top; evidence, tail, fix and probe tabs below."""
        yield Header()
        with Horizontal(id="top"):
            with Vertical(id="left"):
                yield Input(placeholder="filter runs and files by name (esc clears)", id="filter")
                yield RunsTable(id="runs")
                yield Metrics(id="metrics")
            yield DiagnosesTable(id="diagnoses")
        with TabbedContent(id="detail", initial="evidence"):
            with TabPane("Evidence", id="evidence"):
                yield EvidenceView(id="evidence-view")
            with TabPane("Tail", id="tail"):
                yield TailView(id="tail-view")
            with TabPane("Fix", id="fix"):
                yield FixPanel(id="fix-panel")
            with TabPane("Probe", id="probe"):
                yield ProbePanel(id="probe-panel")
        yield Input(placeholder="search the log text (enter: keep, esc: end)", id="search")
        yield Footer()

    def on_load(self) -> None:
        """Start reading the files before the first screen is built: the listing is ready
        when the model's worker starts."""
        # The follower makes many short system calls, each giving up the GIL; with the UI
        # thread busy, each took up to the default 5 ms to get it back (hundreds of them to
        # list 50 files). A shorter interval keeps the reading threads moving.
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        self.model.start_following()

    def on_mount(self) -> None:
        """Start the model's worker and the refresh timer."""
        self.sub_title = self.directory
        self.query_one("#runs").border_title = "Runs and files"
        self.query_one("#diagnoses").border_title = "Diagnoses"
        self.query_one(RunsTable).focus()
        self.follow()
        self.set_interval(0.25, self._refresh_runs)
        self.set_interval(1.0, self._tick_ages)

    def on_unmount(self) -> None:
        """Stop the model's thread; give the interpreter its switch interval back."""
        self.model.stop()
        sys.setswitchinterval(self._switch_interval)

    # -- the model's worker and its messages -----------------------------------------------------

    @work(thread=True, group="model", exit_on_error=False)
    def follow(self) -> None:
        """Run the model (follower + analyzers) in a thread until the app ends."""
        from textual.worker import get_current_worker

        worker = get_current_worker()
        self.model.run(cancelled=lambda: worker.is_cancelled)

    @_while_mounted
    def on_run_updated(self, message: RunUpdated) -> None:
        """Keep the newest snapshot of each run; the timer redraws the list."""
        self.last_message = time.monotonic()
        listed = True
        for run in message.runs:
            old = self.runs.get(run.name)
            listed &= old is not None and len(old.files) == len(run.files)
            self.runs[run.name] = run
            if run.name == self.selected_run:
                self.query_one(Metrics).show(run)
        self._runs_dirty = True
        if self.selected_run is None or not listed:  # a new run or file shows at once
            self._refresh_runs()

    @_while_mounted
    def on_diagnoses_changed(self, message: DiagnosesChanged) -> None:
        """Show a run's new diagnoses when it is the selected one."""
        self.last_message = time.monotonic()
        self.diagnoses[message.run] = message.diagnoses
        self.configs[message.run] = message.config
        self._runs_dirty = True
        if message.run == self.selected_run:
            self._show_diagnoses()

    @_while_mounted
    def on_file_activity(self, message: FileActivity) -> None:
        """New lines of the followed file go to the tail view."""
        self.last_message = time.monotonic()
        if message.path == self.selected_path:
            self.query_one(TailView).append(message.lines, message.reset)

    def on_model_notice(self, message: ModelNotice) -> None:
        """Following mode goes in the header; anything else is a notification."""
        if message.text.startswith("following: "):
            self.mode = message.text.removeprefix("following: ")
            return
        self.notify(message.text, severity=message.severity, timeout=6)  # type: ignore[arg-type]

    def on_model_ready(self, _: ModelReady) -> None:
        """The rules are loaded."""
        self.last_message = time.monotonic()

    # -- runs list -------------------------------------------------------------------------------

    @_while_mounted
    def _refresh_runs(self, force: bool = False) -> None:
        if not self._runs_dirty:
            return
        started = time.monotonic()
        if started < self._refresh_after and not force:
            return  # the last redraw was long (hundreds of runs): leave the UI time between
        self._runs_dirty = False
        table = self.query_one(RunsTable)
        table.show(list(self.runs.values()), self.clock(), self.name_filter, self.directory)
        # A list of 700 runs and their files takes a few hundred ms to rebuild; while their
        # analyses pour in, redraw at most a quarter of the time so keys are answered.
        self._refresh_after = time.monotonic() + 3 * (time.monotonic() - started)
        failed = sum(run.status == "failed" for run in self.runs.values())
        files = sum(len(run.files) for run in self.runs.values())
        self.sub_title = (
            f"{self.directory} · {len(self.runs)} run(s), {files} file(s), {failed} failed"
        )
        if self.selected_run is None and table.row_count:
            self._pick_key(table.current_key())

    def _tick_ages(self) -> None:
        self._runs_dirty = True
        self._refresh_runs()

    def _pick_key(self, key: str | None) -> None:
        if not key:
            return
        kind, _, name = key.partition(":")
        if kind == "run":
            self._select(name, None)
        else:
            from .model import run_name

            self._select(run_name(name), name)

    def on_runs_table_resized(self, _: RunsTable.Resized) -> None:
        """The runs pane changed width: redraw the names to fit it."""
        self._runs_dirty = True
        self._refresh_runs(force=True)

    @_while_mounted
    def on_runs_table_picked(self, message: RunsTable.Picked) -> None:
        """The cursor is on a run or a file: show its diagnoses, metrics and tail."""
        self._select(message.run, message.path)

    def _select(self, run: str, path: str | None) -> None:
        info = self.runs.get(run)
        if path is None and info is not None and info.files:
            active = [f for f in info.files if f.last_activity is not None]
            latest = max(active or info.files, key=lambda f: f.last_activity or 0.0)
            path = latest.path
        if run != self.selected_run:
            self.selected_run = run
            self.selected_rule = None
            self.query_one(Metrics).show(info)
            self._show_diagnoses()
        if path != self.selected_path:
            self.selected_path = path
            self.model.watched = path
            lines, _ = self.model.tail(path) if path else ([], 0)
            self.query_one(TailView).load(path, lines)

    # -- diagnoses and their details -------------------------------------------------------------

    def selected_diagnosis(self) -> Diagnosis | None:
        """The diagnosis under the cursor of the diagnoses table."""
        diagnoses = self.diagnoses.get(self.selected_run or "", [])
        for diagnosis in diagnoses:
            if diagnosis.rule == self.selected_rule:
                return diagnosis
        return diagnoses[0] if diagnoses else None

    def _show_diagnoses(self) -> None:
        run = self.selected_run or ""
        diagnoses = self.diagnoses.get(run, [])
        probes = {rule: result for (r, rule), result in self.probes.items() if r == run}
        table = self.query_one(DiagnosesTable)
        table.show(diagnoses, probes)
        key = table.current_key()
        rule = key.partition(":")[2] if key else None
        if rule != self.selected_rule or not diagnoses:
            self.selected_rule = rule
            self._show_details()

    @_while_mounted
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """A diagnosis was highlighted: show its evidence, fixes and probe."""
        if event.data_table.id != "diagnoses" or event.row_key is None:
            return  # no row key: the cursor moved in an empty table
        rule = (event.row_key.value or "").partition(":")[2]
        if rule != self.selected_rule:
            self.selected_rule = rule
            self._show_details()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter: on a run, go to its diagnoses; on a diagnosis, open its evidence."""
        if event.data_table.id == "runs":
            self.query_one(DiagnosesTable).focus()
        elif event.data_table.id == "diagnoses":
            self.action_tab("evidence")
            self.query_one(EvidenceView).focus()

    def _show_details(self) -> None:
        diagnosis = self.selected_diagnosis()
        self.query_one(FixPanel).show(diagnosis)
        result = self.probes.get((self.selected_run or "", diagnosis.rule)) if diagnosis else None
        self.query_one(ProbePanel).show(
            diagnosis, result or (diagnosis.probe if diagnosis else None)
        )
        self.query_one(EvidenceView).show(diagnosis, {})
        if diagnosis is not None and diagnosis.evidence:
            self.load_evidence(f"{self.selected_run}|{diagnosis.rule}", diagnosis)

    @work(thread=True, exclusive=True, group="evidence", exit_on_error=False)
    def load_evidence(self, key: str, diagnosis: Diagnosis) -> None:
        """Gather the lines around the evidence (in a thread: logs can be large)."""
        paths = dict.fromkeys(line.path for line in diagnosis.evidence)
        context = {path: self.model.context(path, diagnosis.evidence) for path in paths}
        self.post_message(EvidenceLoaded(key, context))

    @_while_mounted
    def on_evidence_loaded(self, message: EvidenceLoaded) -> None:
        """Show the evidence in its context, if it is still the selected diagnosis."""
        diagnosis = self.selected_diagnosis()
        if diagnosis is not None and message.key == f"{self.selected_run}|{diagnosis.rule}":
            self.query_one(EvidenceView).show(diagnosis, message.context)

    # -- actions ---------------------------------------------------------------------------------

    def action_help(self) -> None:
        """Show the key bindings."""
        self.push_screen(HelpScreen())

    def action_tab(self, name: str) -> None:
        """Open a detail tab: evidence, tail, fix or probe."""
        self.query_one(TabbedContent).active = name

    def action_evidence(self, step: int) -> None:
        """Jump to the next or previous evidence line; while a ``/`` search is on in the focused
        view, to its next or previous match."""
        view = self.search_view
        if view is not None and view.pattern is not None and self._log_view() is view:
            view.step_match(step)
            return
        self.action_tab("evidence")
        self.query_one(EvidenceView).jump(step)

    def _log_view(self) -> EvidenceView | TailView | None:
        """The log view (evidence or tail) the focus is in, if any."""
        node = self.focused
        while node is not None:
            if isinstance(node, EvidenceView | TailView):
                return node
            node = node.parent  # type: ignore[assignment]
        return None

    def action_wrap(self) -> None:
        """Wrap the evidence's long lines, or scroll them sideways."""
        self.query_one(EvidenceView).toggle_wrap()

    def action_fix(self, step: int) -> None:
        """Pick the next or previous fix."""
        self.action_tab("fix")
        self.query_one(FixPanel).pick(step)

    def action_copy_fix(self) -> None:
        """Copy the picked fix's lines to the clipboard (OSC 52: works over SSH)."""
        text = self.query_one(FixPanel).selected_text()
        if text is None:
            self.notify("No fix to copy for this selection.", severity="warning")
            return
        self.copy_to_clipboard(text)  # OSC 52, and the app's own clipboard for pasting here
        self.copy_with_tools(text)

    @work(thread=True, exclusive=True, group="clipboard", exit_on_error=False)
    def copy_with_tools(self, text: str) -> None:
        """Copy with a clipboard tool or tmux where one is there (commands: in a thread), and
        say what is known to have happened, not "copied" when tmux dropped it."""
        outcome = clipboard.copy(text)
        first = text.splitlines()[0][:60] if text else ""
        self.call_from_thread(
            self.notify,
            f"{outcome.message}\n{first}",
            title="Fix copied"
            if outcome.copied
            else "Fix not copied"
            if outcome.doubtful
            else "Fix sent",
            severity="warning" if outcome.doubtful else "information",
            timeout=10 if outcome.doubtful else 5,
        )

    def action_save_report(self) -> None:
        """Write ./crashcart-report-<run>.md with the run's diagnoses."""
        run = self.selected_run
        if run is None:
            self.notify("No run selected.", severity="warning")
            return
        path = (self.report_dir or Path.cwd()) / report_filename(run)
        try:
            path.write_text(render_markdown(self.diagnoses.get(run, []), run), encoding="utf-8")
        except OSError as error:
            self.notify(f"Could not save the report: {error}", severity="error")
            return
        self.notify(f"Saved {path}", title="Report saved")

    def action_probe(self) -> None:
        """Run the selected diagnosis' probe in the background."""
        diagnosis = self.selected_diagnosis()
        run = self.selected_run or ""
        if diagnosis is None:
            self.notify("No diagnosis selected.", severity="warning")
            return
        if not diagnosis.probe_name:
            self.notify(f"No probe can test {diagnosis.category}.", severity="warning")
            return
        if self.probes.get((run, diagnosis.rule), {}).get("status") == "running":
            return
        self.probes[(run, diagnosis.rule)] = {"name": diagnosis.probe_name, "status": "running"}
        self.action_tab("probe")
        self._show_diagnoses()
        self._show_details()
        self.run_probe(run, diagnosis, self.configs.get(run, {}))

    @work(thread=True, group="probe", exit_on_error=False)
    def run_probe(self, run: str, diagnosis: Diagnosis, config: dict[str, Any]) -> None:
        """Run a probe in its child process, from a thread, and post the result."""
        from ..probes import run_probe
        from ..probing import probe_context

        assert diagnosis.probe_name is not None
        try:
            result = run_probe(diagnosis.probe_name, probe_context(diagnosis, config)).to_dict()
        except Exception as error:  # never let a probe take the UI down
            result = {"name": diagnosis.probe_name, "status": "unavailable", "summary": str(error)}
        self.post_message(ProbeDone(run, diagnosis.rule, result))

    @_while_mounted
    def on_probe_done(self, message: ProbeDone) -> None:
        """Show a probe's verdict; the model re-ranks the run's diagnoses with it."""
        self.probes[(message.run, message.rule)] = message.result
        self.model.call(
            functools.partial(self.model.record_probe, message.run, message.rule, message.result)
        )
        status = message.result["status"]
        self.notify(
            f"probe {message.result['name']}: {status}. {message.result.get('summary', '')}",
            severity="warning" if status in ("unavailable", "refuted") else "information",
        )
        if message.run == self.selected_run:
            self._show_diagnoses()
            self._show_details()

    def action_filter(self) -> None:
        """``/``: on the evidence or the tail, search the log text; elsewhere, filter the runs."""
        view = self._log_view()
        if view is not None:
            self.search_view = view
            box = self.query_one("#search", Input)
            box.value = view.pattern.pattern if view.pattern is not None else ""
            box.display = True
            box.focus()
            return
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        """Filter the runs list as the name is typed, or search the log as the text is."""
        if event.input.id == "search":
            if self.search_view is not None:
                self.search_view.search(search_pattern(event.value))
            return
        self.name_filter = event.value
        self._runs_dirty = True
        self._refresh_runs(force=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter: back to the (filtered) list, or to the searched view (n/N go on)."""
        if event.input.id == "search":
            event.input.display = False
            if self.search_view is not None:
                self._focus_view(self.search_view)
            return
        self.query_one(RunsTable).focus()

    def _end_search(self) -> bool:
        """Close the search box and clear the marks; False when no search was on."""
        box = self.query_one("#search", Input)
        view = self.search_view
        if not box.display and (view is None or view.pattern is None):
            return False
        box.display = False
        box.value = ""
        self.search_view = None
        if view is not None:
            view.search(None)
            self._focus_view(view)
        return True

    def _focus_view(self, view: EvidenceView | TailView) -> None:
        """Focus the searched view (the tail's focusable part is its log)."""
        (view.log_widget if isinstance(view, TailView) else view).focus()

    def action_escape(self) -> None:
        """End the search, or clear and hide the filter, or restore a zoomed pane."""
        box = self.query_one("#filter", Input)
        if self._end_search():
            return
        if box.display or box.value:
            box.value = ""
            box.display = False
            self.name_filter = ""
            self._runs_dirty = True
            self._refresh_runs(force=True)
            self.query_one(RunsTable).focus()
        elif self.screen.maximized is not None:
            self.screen.minimize()

    def action_zoom(self) -> None:
        """Maximise the focused pane, or restore it."""
        if self.screen.maximized is not None:
            self.screen.minimize()
        elif self.focused is not None:
            self.screen.maximize(self.focused)

    def _handle_exception(self, error: Exception) -> None:
        """Keep the error that ends the app, so ``run_tui`` can name it and exit non-zero."""
        self.crash = self.crash or error
        super()._handle_exception(error)

    def action_quit(self) -> None:  # type: ignore[override]
        """Stop following and leave."""
        self.model.stop()
        self.exit()


def run_tui(
    directory: str | Path = ".",
    *,
    poll: bool | None = None,
    globs: Sequence[str] = DEFAULT_GLOBS,
    rulebase: RuleBase | None = None,
    hang_after: float = 300.0,
) -> int:
    """Run the TUI on ``directory`` until the person quits (``rulebase`` None: the shipped
    rules, loaded in the background); return the process exit status (0: quit, 2: crashed)."""
    app = CrashcartApp(directory, poll=poll, globs=globs, rulebase=rulebase, hang_after=hang_after)
    app.run()
    return exit_status(app)


def exit_status(app: CrashcartApp) -> int:
    """0 when the app was quit; else one line on stderr naming the error (Textual prints its
    traceback above it) and 2, so an error never passes for a normal exit."""
    if not app.return_code and app.crash is None:
        return 0
    error = app.crash
    what = f"{type(error).__name__}: {error}" if error is not None else "the UI stopped"
    print(
        f"crashcart: internal error in the TUI: {what} (traceback above; please report it)",
        file=sys.stderr,
    )
    return 2
