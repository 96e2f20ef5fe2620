"""The TUI's widgets: runs list, diagnoses table, evidence and tail views, fix and probe panels.

Widgets only render the snapshots the model posts (see :mod:`crashcart.tui.model`); none reads a
file or runs the analyzer. Every status is a word and a symbol as well as a colour, so the UI
reads the same without colour (``NO_COLOR``) or in a monochrome terminal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from rich.highlighter import Highlighter
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Log, Sparkline, Static
from textual.widgets.data_table import ColumnKey

from ..engine.diagnosis import Diagnosis
from ..report import fix_lines
from .model import FAILED, HANG, HEALTHY, WARNING, RunInfo

#: status -> (symbol and word, style): readable without colour.
BADGES = {
    FAILED: ("✗ FAILED", "bold red"),
    HANG: ("⧗ HANG?", "bold magenta"),
    WARNING: ("▲ WARN", "bold yellow"),
    HEALTHY: ("✓ ok", "green"),
}
PROBE_BADGES = {
    "confirmed": ("✓ confirmed", "bold green"),
    "refuted": ("✗ refuted", "bold red"),
    "inconclusive": ("? inconclusive", "yellow"),
    "unavailable": ("– unavailable", "dim"),
    "running": ("… running", "cyan"),
}


def badge(status: str) -> Text:
    """The status badge: a symbol and a word, coloured."""
    word, style = BADGES.get(status, (status, ""))
    return Text(word, style=style)


def age(seconds: float | None) -> str:
    """``42s``, ``5m``, ``3h``, ``2d``: how long ago, in at most four characters."""
    if seconds is None:
        return "–"
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def number(value: float | None) -> str:
    """A step or a loss, short: ``1200``, ``0.4312``, ``nan``."""
    if value is None:
        return "–"
    if value == int(value) and abs(value) < 1e9:
        return str(int(value))
    return f"{value:.4g}"


def relative(name: str, root: str) -> str:
    """``runs/a/b`` under root ``runs`` -> ``a/b``; the root itself is ``.``."""
    root = root.rstrip("/")
    if root in ("", "."):
        return name
    if name == root:
        return "."
    return name[len(root) + 1 :] if name.startswith(root + "/") else name


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


MATCH_STYLE = "black on yellow"


def search_pattern(query: str) -> re.Pattern[str] | None:
    """The pattern ``/`` looks for: the text as typed, any case (None for an empty query)."""
    return re.compile(re.escape(query), re.IGNORECASE) if query else None


class MatchHighlighter(Highlighter):
    """Marks every match of the search in a line of the tail."""

    def __init__(self, pattern: re.Pattern[str] | None) -> None:
        self.pattern = pattern

    def highlight(self, text: Text) -> None:
        """Style the matches in ``text``."""
        if self.pattern is not None:
            for match in self.pattern.finditer(text.plain):
                text.stylize(MATCH_STYLE, match.start(), match.end())


def _next_match(matches: Sequence[int], current: int | None, step: int, start: int) -> int | None:
    """The index in ``matches`` after (``step`` 1) or before (-1) ``current``; with no current
    one, the first match at or after line ``start``."""
    if not matches:
        return None
    if current is None:
        return next((i for i, line in enumerate(matches) if line >= start), 0)
    return (current + step) % len(matches)


class VimTable(DataTable):
    """A row-cursor table with vim keys (j/k/g/G) besides the arrows."""

    BINDINGS = [  # noqa: RUF012 (Textual's declarative bindings)
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "Top", show=False),
        Binding("G", "scroll_bottom", "Bottom", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        #: Keep the cursor on the first row (the worst run) until the person moves it.
        self.follow_top = True

    def _moved(self) -> None:
        self.follow_top = False

    def action_cursor_down(self) -> None:
        """Down a row (the person chose: stop following the top)."""
        self._moved()
        super().action_cursor_down()

    def action_cursor_up(self) -> None:
        """Up a row."""
        self._moved()
        super().action_cursor_up()

    def action_scroll_top(self) -> None:
        """First row."""
        self._moved()
        super().action_scroll_top()

    def action_scroll_bottom(self) -> None:
        """Last row."""
        self._moved()
        super().action_scroll_bottom()

    def on_click(self) -> None:
        """A click picks a row."""
        self._moved()

    def _update_dimensions(self, new_rows: Any) -> None:
        """Skip measuring the new rows' cells when every column has a fixed width (they are
        only measured to size auto-width columns): with 1,600 rows, a rebuild of the runs list
        spent up to 2 s measuring cells whose widths nothing used."""
        if not any(column.auto_width for column in self.columns.values()):
            new_rows = [key for key in new_rows if getattr(self.rows.get(key), "auto_height", 0)]
        super()._update_dimensions(new_rows)

    def available_width(self) -> int:
        """Cells the columns may use: the pane's width less its scrollbar (80 before layout)."""
        width = self.scrollable_content_region.width or self.size.width
        return width or 80

    def fit_columns(self, widths: dict[str, int]) -> bool:
        """Give the columns these widths (column key -> cells, padding not included); say whether
        any changed. Fixed widths: the table never re-measures a column as cells change."""
        changed = False
        for key, width in widths.items():
            column = self.columns.get(ColumnKey(key))
            if column is not None and (column.width != width or column.auto_width):
                column.width, column.auto_width = width, False
                changed = True
        if changed:
            self._require_update_dimensions = True
            self._clear_caches()
            self.refresh()
        return changed

    def flexible(self, fixed: Sequence[int], least: int) -> int:
        """The width left for the one flexible column once the ``fixed`` ones and every
        column's padding are placed (at least ``least``)."""
        padding = 2 * self.cell_padding * (len(fixed) + 1)
        return max(least, self.available_width() - sum(fixed) - padding)

    def current_key(self) -> str | None:
        """The key of the row under the cursor, if any."""
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:  # the table is being rebuilt
            return None

    def replace_rows(self, rows: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Show ``rows`` (key, cells), keeping the cursor on the same key where it still is;
        when only the cells changed, update them in place (no flicker, no cursor jump)."""
        keys = [key for key, _ in rows]
        current = [row.key.value for row in self.ordered_rows]
        if keys == current:
            columns = self.ordered_columns
            for key, cells in rows:
                for column, cell in zip(columns, cells, strict=False):
                    text = str(cell)
                    if str(self.get_cell(key, column.key)) != text:
                        # Only ever widen a column in place: Textual re-measures the whole
                        # column when a cell gets narrower, which with 200 rows updated every
                        # second froze the UI for seconds. A rebuild recomputes the widths.
                        wider = column.auto_width and cell_len(text) > column.content_width
                        self.update_cell(key, column.key, cell, update_width=wider)
            return
        selected = self.current_key()
        self.clear()
        for key, cells in rows:
            self.add_row(*cells, key=key)
        if self.follow_top:
            self.move_cursor(row=0, animate=False)
        elif selected in keys:
            self.move_cursor(row=keys.index(selected), animate=False)


class RunsTable(VimTable):
    """Every run, and under it its files: status, last activity, latest step and loss."""

    class Picked(Message):
        """The cursor moved to a run or a file."""

        def __init__(self, run: str, path: str | None) -> None:
            super().__init__()
            self.run = run
            self.path = path

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: run name -> its place in the list as last shown
        self.shown_order: dict[str, int] = {}

    def on_mount(self) -> None:
        """Set up the columns."""
        # Fixed widths that hold every header and value (a step up to 99,999,999, a loss as
        # ``-1.234e-05``); the name takes what the pane has left (see fit).
        self.add_column("status", key="status", width=self.WIDTHS["status"])
        self.add_column("run / file", key="name", width=12)
        self.add_column("active", key="active", width=self.WIDTHS["active"])
        self.add_column("step", key="step", width=self.WIDTHS["step"])
        self.add_column("loss", key="loss", width=self.WIDTHS["loss"])
        self.fit()

    WIDTHS = {"status": 8, "active": 6, "step": 8, "loss": 10}  # noqa: RUF012

    def name_width(self) -> int:
        """Cells for the run / file column: the pane's width less the fixed columns."""
        return self.flexible(list(self.WIDTHS.values()), 12)

    def fit(self) -> bool:
        """Size the name column to the pane (on mount and on resize); True if it changed."""
        return self.fit_columns({"name": self.name_width()})

    def on_resize(self) -> None:
        """The pane changed size: the names get the new width (the app redraws the rows)."""
        if self.fit():
            self.post_message(self.Resized())

    class Resized(Message):
        """The name column changed width: the rows' labels must be shortened again."""

    def show(
        self, runs: Sequence[RunInfo], now: float, name_filter: str = "", root: str = ""
    ) -> None:
        """Show the runs, failures first; ``name_filter`` keeps the runs or files containing it.
        Run names are shown relative to ``root``, the watched directory."""
        rows: list[tuple[str, Sequence[Any]]] = []
        needle = name_filter.lower()
        width = self.name_width()
        ordered = sorted(runs, key=lambda r: r.sort_key)
        if not self.follow_top:
            # The person has moved the cursor: runs keep the places they were shown in (a run
            # that fails does not jump to the top under the cursor); new runs come after.
            ordered.sort(
                key=lambda r: (r.name not in self.shown_order, self.shown_order.get(r.name, 0))
            )
        self.shown_order = {run.name: index for index, run in enumerate(ordered)}
        for run in ordered:
            files = run.files
            if needle and needle not in run.name.lower():
                files = tuple(f for f in files if needle in f.path.lower())
                if not files:
                    continue
            when = None if run.last_activity is None else now - run.last_activity
            count = f" ({run.diagnoses})" if run.diagnoses else ""
            label = Text(_short(relative(run.name, root), width - len(count)), style="bold")
            label.append(count, style="dim")
            rows.append(
                (
                    f"run:{run.name}",
                    [badge(run.status), label, age(when), number(run.step), number(run.loss)],
                )
            )
            for file in files:
                when = None if file.last_activity is None else now - file.last_activity
                name = file.path[len(run.name) + 1 :] if run.name != "." else file.path
                note = f" [{file.note}]" if file.note else ""
                label = Text("  " + _short(name, max(4, width - 2 - len(note))), no_wrap=True)
                label.append(note, style="dim")
                status = badge(file.status) if file.status != HEALTHY else Text("  ·", style="dim")
                rows.append((f"file:{file.path}", [status, label, age(when), "", ""]))
        self.replace_rows(rows)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Tell the app what is selected."""
        key = (event.row_key.value if event.row_key is not None else None) or ""
        kind, _, name = key.partition(":")
        if kind == "run":
            self.post_message(self.Picked(name, None))
        elif kind == "file":
            from .model import run_name

            self.post_message(self.Picked(run_name(name), name))


class DiagnosesTable(VimTable):
    """The selected run's diagnoses, best first: category, title, confidence, probe verdict."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shown: tuple[Sequence[Diagnosis], dict[str, dict[str, Any]]] = ((), {})

    def on_mount(self) -> None:
        """Set up the columns."""
        self.add_column("#", key="n", width=1)
        self.add_column("category", key="category", width=8)
        self.add_column("conf", key="conf", width=4)
        self.add_column("probe", key="probe", width=6)
        self.add_column("title", key="title", width=20)

    def on_resize(self) -> None:
        """The pane changed size: the titles take the new width."""
        self.show(*self._shown)

    def _fit(self, rows: Sequence[Sequence[Any]]) -> int:
        """Size #, category and probe to what is shown; the title takes the rest of the pane
        (it was cut at about 30 cells while the pane had room). Returns the title's width."""
        widths = {"n": 1, "category": 8, "conf": 4, "probe": 5}
        for cells in rows:
            for key, cell in zip(widths, cells, strict=False):
                widths[key] = max(widths[key], cell_len(str(cell)))
        title = self.flexible(list(widths.values()), 20)
        self.fit_columns({**widths, "title": title})
        return title

    def show(self, diagnoses: Sequence[Diagnosis], probes: dict[str, dict[str, Any]]) -> None:
        """Show ``diagnoses``; ``probes`` maps a rule to the probe result run from the UI."""
        self._shown = (diagnoses, probes)
        rows = []
        for index, diagnosis in enumerate(diagnoses, 1):
            result = probes.get(diagnosis.rule) or diagnosis.probe
            if result is not None:
                word, style = PROBE_BADGES.get(result["status"], (result["status"], ""))
                verdict = Text(word, style=style)
            elif diagnosis.probe_name:
                verdict = Text("p: run", style="dim")
            else:
                verdict = Text("–", style="dim")
            category = Text(diagnosis.category, style="bold red" if index == 1 else "yellow")
            title = Text(diagnosis.title, no_wrap=True, overflow="ellipsis")
            if diagnosis.explained_by:
                title.append(f" (symptom of {diagnosis.explained_by})", style="dim")
            rows.append(
                (
                    f"{index}:{diagnosis.rule}",
                    [str(index), category, f"{diagnosis.confidence:.2f}", verdict, title],
                )
            )
        width = self._fit([cells for _, cells in rows])
        for _, cells in rows:  # an ellipsis where a title is cut, not a silent crop
            cells[-1].truncate(width, overflow="ellipsis")
        self.replace_rows(rows)


class EvidenceView(ScrollableContainer):
    """The log around a diagnosis' evidence lines, evidence marked ``▶`` and highlighted;
    ``n`` / ``N`` jump between the evidence lines (between the matches while a ``/`` search is
    on). Long lines scroll sideways, or wrap (``w``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._marks: list[int] = []  # line numbers of the evidence lines in the rendered text
        self._where: list[str] = []
        self.index = 0
        self.wrap = False
        self._text = Text()
        self._lines: list[str] = []  # the rendered lines, plain
        self.pattern: re.Pattern[str] | None = None
        self.matches: list[int] = []  # rendered lines that match the search
        self.match: int | None = None

    def compose(self) -> ComposeResult:
        """A title line and the text."""
        yield Label("", id="evidence-title")
        yield Static("Select a diagnosis to see its evidence.", id="evidence-text")

    def show(self, diagnosis: Diagnosis | None, context: dict[str, list[tuple[int, str]]]) -> None:
        """Render the evidence of ``diagnosis`` inside ``context`` (path -> numbered lines)."""
        text = Text()
        self._marks, self._where, self.index = [], [], 0
        self._text, self._lines, self.matches, self.match = text, [], [], None
        if diagnosis is None:
            self.query_one("#evidence-title", Label).update("")
            self.query_one("#evidence-text", Static).update("No diagnosis selected.")
            return
        evidence = {(line.path, line.lineno) for line in diagnosis.evidence}
        paths = list(dict.fromkeys(line.path for line in diagnosis.evidence))
        y = 0
        for path in paths:
            if len(paths) > 1:  # one file: the title line names it (it was said twice)
                text.append(f"── {path}\n", style="bold cyan")
                y += 1
            numbered = context.get(path) or [
                (line.lineno, line.text) for line in diagnosis.evidence if line.path == path
            ]
            previous = None
            for lineno, body in numbered:
                if previous is not None and lineno != previous + 1:
                    text.append("   ⋮\n", style="dim")
                    y += 1
                previous = lineno
                if (path, lineno) in evidence:
                    self._marks.append(y)
                    self._where.append(f"{path}:{lineno}")
                    text.append(f"▶{lineno:>6} ", style="bold reverse")
                    text.append(body + "\n", style="bold yellow")
                else:
                    text.append(f" {lineno:>6} ", style="dim")
                    text.append(body + "\n")
                y += 1
        self._lines = text.plain.split("\n")
        self._draw()
        if self.pattern is not None:
            self.search(self.pattern)
        else:
            self._title()
            self.call_after_refresh(self.jump, 0)

    def _draw(self) -> None:
        """Put the text on screen, wrapped or not, with the search's matches marked."""
        text = self._text.copy()
        text.no_wrap = not self.wrap
        if self.pattern is not None:
            for number in self.matches:
                start = sum(len(line) + 1 for line in self._lines[:number])
                for match in self.pattern.finditer(self._lines[number]):
                    text.stylize(MATCH_STYLE, start + match.start(), start + match.end())
        self.set_class(self.wrap, "-wrap")
        self.query_one("#evidence-text", Static).update(text)

    def toggle_wrap(self) -> None:
        """Wrap long lines, or scroll them sideways (the default)."""
        self.wrap = not self.wrap
        self.set_class(self.wrap, "-wrap")
        if not self._lines:  # nothing shown but a message
            return
        self._draw()
        self.call_after_refresh(self._scroll_to_line, self._current_line())

    def _current_line(self) -> int:
        if self.match is not None and self.matches:
            return self.matches[self.match]
        return self._marks[self.index] if self._marks else 0

    def _y(self, line: int) -> int:
        """The row on screen of rendered line ``line`` (wrapped lines take several)."""
        if not self.wrap:
            return line
        width = max(1, self.query_one("#evidence-text", Static).content_region.width)
        return sum(max(1, math.ceil(cell_len(text) / width)) for text in self._lines[:line])

    def _scroll_to_line(self, line: int) -> None:
        self.scroll_to(y=max(0, self._y(line) - 3), animate=False)

    def search(self, pattern: re.Pattern[str] | None) -> int:
        """Mark the lines matching ``pattern`` and go to the first one from the top of the view;
        returns how many lines match (None clears the search)."""
        self.pattern = pattern
        self.matches = (
            [n for n, line in enumerate(self._lines) if pattern.search(line)] if pattern else []
        )
        self.match = None
        if self._lines:
            self._draw()
        if self.matches:
            self.step_match(0)
        else:
            self._title()
        return len(self.matches)

    def step_match(self, step: int) -> None:
        """Go to the next (1) or previous (-1) match of the search."""
        first = int(self.scroll_y) if self.match is None else 0
        self.match = _next_match(self.matches, self.match, step, first)
        if self.match is not None:
            self._scroll_to_line(self.matches[self.match])
        self._title()

    def _title(self) -> None:
        if self.pattern is not None:
            where = f" {self.match + 1}/{len(self.matches)}" if self.match is not None else ""
            label = f"/{self.pattern.pattern}: {len(self.matches)} matching line(s){where}"
            label += "   (n/N: next/previous match, esc: end the search)"
        elif self._marks:
            label = f"evidence {self.index + 1}/{len(self._marks)}  {self._where[self.index]}"
            label += "   (n/N: next/previous)"
        else:
            label = "no evidence lines"
        self.query_one("#evidence-title", Label).update(label)

    def jump(self, step: int) -> None:
        """Move to the next (``step`` 1), previous (-1) or current (0) evidence line."""
        if not self._marks:
            return
        self.index = (self.index + step) % len(self._marks)
        self._scroll_to_line(self._marks[self.index])
        self._title()


class TailView(Vertical):
    """The selected file's last lines, following new ones; scrolling up pauses following and a
    badge counts the lines waiting below (``G`` or End follows again)."""

    BINDINGS = [  # noqa: RUF012
        Binding("G", "follow", "Follow", show=False),
        Binding("end", "follow", "Follow", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.path: str | None = None
        self.waiting = 0
        self.pattern: re.Pattern[str] | None = None
        self.match: int | None = None
        self.matches: list[int] = []

    def search(self, pattern: re.Pattern[str] | None) -> int:
        """Mark the lines matching ``pattern`` and go to the first one from the top of the
        view (scrolling up pauses following); returns how many lines match."""
        self.pattern = pattern
        log = self.log_widget
        log.highlighter = MatchHighlighter(pattern)
        log.highlight = pattern is not None
        log._render_line_cache.clear()  # the kept renders have the old marks
        log.refresh()
        self.match = None
        self._find()
        if self.matches:
            self.step_match(0)
        else:
            self._title()
        return len(self.matches)

    def _find(self) -> None:
        lines = self.log_widget.lines
        pattern = self.pattern
        self.matches = (
            [n for n, line in enumerate(lines) if pattern.search(line)] if pattern else []
        )

    def step_match(self, step: int) -> None:
        """Go to the next (1) or previous (-1) match (lines may have come in meanwhile)."""
        log = self.log_widget
        current = self.matches[self.match] if self.match is not None and self.matches else None
        self._find()
        if current is not None and current in self.matches:
            self.match = self.matches.index(current)
        elif current is not None:
            self.match = None
        first = int(log.scroll_y) if self.match is None else 0
        self.match = _next_match(self.matches, self.match, step, first)
        if self.match is not None:
            log.scroll_to(y=max(0, self.matches[self.match] - 3), animate=False)
        self._title()

    def compose(self) -> ComposeResult:
        """The header (file, following state) and the log."""
        yield Label("", id="tail-title")
        yield Log(max_lines=5000, highlight=False, id="tail-log")

    @property
    def log_widget(self) -> Log:
        """The Log holding the lines."""
        return self.query_one("#tail-log", Log)

    def load(self, path: str | None, lines: list[str]) -> None:
        """Show ``path`` from its kept tail, following."""
        self.path = path
        self.waiting = 0
        log = self.log_widget
        log.clear()
        log.write_lines(lines, scroll_end=True)
        self._title()

    def append(self, lines: list[str], reset: bool = False) -> None:
        """Add new lines: follow if at the bottom, else count them as waiting."""
        log = self.log_widget
        if reset:
            log.clear()
            self.waiting = 0
        following = log.is_vertical_scroll_end or log.max_scroll_y == 0
        log.write_lines(lines, scroll_end=following)
        if not following:
            self.waiting += len(lines)
        self._title()

    def on_mouse_scroll_down(self) -> None:
        """Back at the bottom: following again."""
        self.call_after_refresh(self._check_end)

    def _check_end(self) -> None:
        if self.log_widget.is_vertical_scroll_end and self.waiting:
            self.waiting = 0
            self._title()

    def action_follow(self) -> None:
        """Jump to the end and follow."""
        self.log_widget.scroll_end(animate=False)
        self.waiting = 0
        self._title()

    def _title(self) -> None:
        if self.path is None:
            self.query_one("#tail-title", Label).update("Select a run or a file to follow it.")
            return
        title = Text(f"tail -F {self.path}  ")
        if self.pattern is not None:
            where = f" {self.match + 1}/{len(self.matches)}" if self.match is not None else ""
            title.append(f"/{self.pattern.pattern}: {len(self.matches)} match(es){where} ", "bold")
            title.append("(n/N, esc)  ", "dim")
        if self.waiting:
            title.append(f" ⏸ paused: {self.waiting} new line(s) below (G: follow) ", "reverse")
        else:
            title.append("▼ following", style="green")
        self.query_one("#tail-title", Label).update(title)


class FixPanel(VerticalScroll):
    """The fixes of the selected diagnosis with their rendered patch or env change; ``]`` / ``[``
    pick a fix, ``c`` copies it, ``s`` saves the run's Markdown report."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fixes: list[dict[str, Any]] = []
        self.index = 0
        self._diagnosis: Diagnosis | None = None

    def compose(self) -> ComposeResult:
        """The rendered fixes."""
        yield Static("Select a diagnosis to see its fixes.", id="fix-text")

    def show(self, diagnosis: Diagnosis | None) -> None:
        """Show the fixes of ``diagnosis`` (the first one picked)."""
        self.fixes = list(diagnosis.fixes) if diagnosis else []
        self.index = 0
        self._diagnosis = diagnosis
        self._draw(diagnosis)

    def pick(self, step: int) -> None:
        """Pick the next (1) or previous (-1) fix."""
        if self.fixes:
            self.index = (self.index + step) % len(self.fixes)
            self._draw(self._diagnosis)

    def selected_text(self) -> str | None:
        """The copy-pastable lines of the picked fix (its title when it has none)."""
        if not self.fixes:
            return None
        fix = self.fixes[self.index]
        lines = fix_lines(fix)
        return "\n".join(lines) if lines else str(fix.get("title", ""))

    def _draw(self, diagnosis: Diagnosis | None) -> None:
        static = self.query_one("#fix-text", Static)
        if diagnosis is None:
            static.update("Select a diagnosis to see its fixes.")
            return
        # The fixes first (the diagnosis' title is the row above it in the diagnoses table):
        # at 80x24 the top fix and its lines fit without scrolling; the why comes after.
        text = Text()
        if not self.fixes:
            text.append("No fix is known for this diagnosis.\n", style="dim")
        for index, fix in enumerate(self.fixes):
            picked = index == self.index
            text.append("▶ " if picked else "  ", style="bold")
            text.append(f"{index + 1}. {fix['title']}\n", style="bold green" if picked else "green")
            if fix.get("change"):
                text.append(f"     ({fix['change']})\n", style="dim")
            for line in fix_lines(fix):
                text.append(f"     {line}\n", style="reverse" if picked else "")
            if fix.get("note"):
                text.append(f"     {fix['note']}\n", style="dim")
        text.append(f"\nWhy: {diagnosis.title}\n", style="bold")
        text.append(f"{diagnosis.summary}\n")
        text.append("\n c: copy the picked fix   ]/[: next/previous fix   s: save report", "dim")
        static.update(text)


class ProbePanel(VerticalScroll):
    """The result of the selected diagnosis' probe, run with ``p``."""

    def compose(self) -> ComposeResult:
        """The result text."""
        yield Static("p: run the selected diagnosis' probe (in the background).", id="probe-text")

    def show(self, diagnosis: Diagnosis | None, result: dict[str, Any] | None) -> None:
        """Render ``result`` (a ProbeResult dict, or ``{"status": "running"}``)."""
        static = self.query_one("#probe-text", Static)
        if diagnosis is None:
            static.update("No diagnosis selected.")
            return
        if not diagnosis.probe_name:
            static.update(f"No probe can test {diagnosis.category} ({diagnosis.rule}).")
            return
        text = Text(f"probe {diagnosis.probe_name} for {diagnosis.rule}\n\n", style="bold")
        if result is None:
            text.append("Not run yet. p: run it in the background.", style="dim")
        else:
            word, style = PROBE_BADGES.get(result["status"], (result["status"], ""))
            text.append(word, style=style)
            if result["status"] != "running":
                text.append(f"  ({result.get('seconds', 0):.1f} s)\n")
                text.append(f"{result.get('summary', '')}\n")
                for key, value in (result.get("details") or {}).items():
                    text.append(f"  {key}: {value}\n", style="dim")
        static.update(text)


class Metrics(Horizontal):
    """Sparklines of the selected run's loss and throughput, with their latest values."""

    def compose(self) -> ComposeResult:
        """Two labelled sparklines."""
        with Vertical(classes="metric"):
            yield Label("loss –", id="loss-label")
            yield Sparkline([], id="loss-spark")
        with Vertical(classes="metric"):
            yield Label("it/s –", id="speed-label")
            yield Sparkline([], id="speed-spark")

    def show(self, run: RunInfo | None) -> None:
        """Plot ``run``'s series (empty when the log has none)."""
        loss = list(run.loss_series) if run else []
        speed = list(run.speed_series) if run else []
        self.query_one("#loss-spark", Sparkline).data = loss
        self.query_one("#speed-spark", Sparkline).data = speed
        self.query_one("#loss-label", Label).update(
            f"loss {number(loss[-1])}" if loss else "loss: none logged"
        )
        self.query_one("#speed-label", Label).update(
            f"it/s {number(speed[-1])}" if speed else "it/s: none logged"
        )
        # Nothing to plot: the pane collapses and its rows go to the lists and details.
        self.set_class(not loss and not speed, "-empty")


HELP = """\
[b]crashcart tui[/b]: what is wrong with your runs, live.

[b]Move[/b]
  j / k, ↓ / ↑     next / previous row          g / G   first / last row
  tab / shift+tab  next / previous pane          enter   open (run → diagnoses → evidence)
  mouse            click a row, a tab; wheel scrolls

[b]Look[/b]
  e  evidence of the selected diagnosis          n / N  next / previous evidence line
  t  tail of the selected file (follows; scroll up to pause, G to follow again)
  w  wrap long evidence lines (else they scroll sideways: ←/→)
  f  fixes                                       ] / \\[  next / previous fix
  r  probe result

[b]Act[/b]
  c  copy the picked fix to the clipboard (OSC 52: works over SSH and in tmux)
  s  save a Markdown report of the run: ./crashcart-report-<run>.md
  p  run the selected diagnosis' probe in the background

[b]Other[/b]
  /  lists: filter runs and files by name; evidence or tail: search the log text
     (matches marked, n / N next / previous match; esc ends either)
  ?  this help   q  quit

Status: ✗ FAILED · ⧗ HANG? (progress stopped) · ▲ WARN (a trend) · ✓ ok
"""


class HelpScreen(ModalScreen[None]):
    """The key bindings."""

    BINDINGS = [  # noqa: RUF012
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def compose(self) -> ComposeResult:
        """The help text in a box."""
        with VerticalScroll(id="help-box"):
            yield Static(HELP, id="help-text")
