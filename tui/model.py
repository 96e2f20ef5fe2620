"""The TUI's model: one worker thread owns the follower and an analyzer per run.

The thread reads what :class:`~crashcart.parsers.follow.Follower` delivers, feeds each run's
:class:`~crashcart.analyzer.Analyzer` (the same pipeline as ``analyze`` and ``watch``), keeps a
bounded tail of every file, and every :data:`PUBLISH_EVERY` seconds posts *snapshots* of what
changed to the app: :class:`RunUpdated` (the runs list), :class:`FileActivity` (new lines of a
file) and :class:`DiagnosesChanged`. Widgets never touch the analyzers; the messages carry plain,
immutable data, so the UI thread does no parsing and never waits for the model.

A run is the directory holding log files (as in ``crashcart watch``). The rule base loads in a
second thread while the files are already being listed, so the first screen does not wait for
the rules to compile; bytes read meanwhile wait in memory and are fed once the rules are ready.
"""

from __future__ import annotations

import os
import queue
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from textual.message import Message

from ..analyzer import Analyzer, RuleBase, default_rulebase
from ..engine.diagnosis import Diagnosis
from ..engine.ranking import apply_probe, order
from ..parsers.base import Draft
from ..parsers.extract import Finding
from ..parsers.follow import DEFAULT_GLOBS, Data, Follower, Notice
from ..parsers.lines import LogLine, clean
from ..watch import CONCLUDE_EVERY, EVIDENCE_WAIT, HANG_FACTOR

PUBLISH_EVERY = 0.1  # seconds between snapshots posted to the app (at most)
#: Seconds per cycle for analysing the bytes read while the rules were loading (a directory of
#: large logs): the rest of the cycle the UI thread has the interpreter to itself.
CATCH_UP_BUDGET = 0.05
#: Seconds per cycle for giving runs with nothing waiting their analyzer (see _attach_analyzers).
ATTACH_BUDGET = 0.02
TAIL_LINES = 2000  # lines kept per file for the tail view
SERIES_POINTS = 120  # metric values sent for a sparkline

# Statuses, worst first: the runs list sorts on this order.
FAILED, HANG, WARNING, HEALTHY = "failed", "hang", "warning", "healthy"
SEVERITY = {FAILED: 0, HANG: 1, WARNING: 2, HEALTHY: 3}
#: Categories that mean "the run is still going but something is off", not a crash.
WARNING_CATEGORIES = frozenset(
    {
        "loss_plateau",
        "slow_training",
        "overfitting",
        "memory_leak",
        "gradient_explosion",
        "unrecognised",
    }
)


def status_of(diagnoses: Sequence[Diagnosis], hang_suspected: bool = False) -> str:
    """The badge of a run (or a file) from its diagnoses: failed > hang > warning > healthy."""
    categories = {d.category for d in diagnoses}
    if categories - WARNING_CATEGORIES - {"hang"}:
        return FAILED
    if hang_suspected or "hang" in categories:
        return HANG
    if categories:
        return WARNING
    return HEALTHY


def run_name(path: str) -> str:
    """The run a followed file belongs to: the directory holding it."""
    return os.path.dirname(path) or "."


# -- snapshots: plain data handed to the UI thread ---------------------------------------------


@dataclass(frozen=True)
class FileInfo:
    """One followed file as the runs list shows it."""

    path: str
    run: str
    status: str
    last_activity: float | None  # wall-clock time of the last bytes read
    lines: int
    bytes: int
    note: str = ""  # the last notice (truncated, rotated, deleted, error)


@dataclass(frozen=True)
class RunInfo:
    """One run as the runs list shows it: status, activity, progress and its files."""

    name: str
    status: str
    last_activity: float | None
    step: float | None
    loss: float | None
    files: tuple[FileInfo, ...]
    loss_series: tuple[float, ...] = ()
    speed_series: tuple[float, ...] = ()
    speed_name: str = ""
    diagnoses: int = 0

    @property
    def sort_key(self) -> tuple[int, str]:
        """Failures first, then by name (stable: busy runs do not reshuffle the list)."""
        return (SEVERITY[self.status], self.name)


# -- messages: posted from the model's thread ---------------------------------------------------


class RunUpdated(Message):
    """Runs' snapshots changed (status, activity, progress, files); one message per cycle
    carries every run that changed, so 200 busy files cost the UI ten messages a second."""

    def __init__(self, runs: list[RunInfo]) -> None:
        super().__init__()
        self.runs = runs


class FileActivity(Message):
    """New complete lines were read from a file (for the tail view)."""

    def __init__(self, path: str, lines: list[str], total: int, reset: bool = False) -> None:
        super().__init__()
        self.path = path
        self.lines = lines
        self.total = total  # lines read from the file so far, the new ones included
        self.reset = reset  # the file started over (truncated, replaced): clear the view first


class DiagnosesChanged(Message):
    """The ranked diagnoses of a run changed."""

    def __init__(self, run: str, diagnoses: list[Diagnosis], config: dict) -> None:
        super().__init__()
        self.run = run
        self.diagnoses = diagnoses
        self.config = config


class ModelNotice(Message):
    """Something to tell the person: following mode, a rotated file, an error."""

    def __init__(self, text: str, severity: str = "information") -> None:
        super().__init__()
        self.text = text
        self.severity = severity


class ModelReady(Message):
    """The rules are loaded: diagnoses start coming."""


class EvidenceLoaded(Message):
    """The log lines around a diagnosis' evidence, read by a worker."""

    def __init__(self, key: str, context: dict[str, list[tuple[int, str]]]) -> None:
        super().__init__()
        self.key = key  # "run|rule" of the diagnosis it was read for
        self.context = context


class ProbeDone(Message):
    """A probe run from the UI finished (``result`` is ``ProbeResult.to_dict()``)."""

    def __init__(self, run: str, rule: str, result: dict) -> None:
        super().__init__()
        self.run = run
        self.rule = rule
        self.result = result


# -- the state the model's thread owns ---------------------------------------------------------


@dataclass
class _FileState:
    path: str
    #: The last lines read, numbered as the analyzer numbers them (numbering goes on across a
    #: truncation or rotation, so evidence is found here even when the file on disk changed).
    tail: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    partial: bytes = b""
    lines: int = 0
    bytes: int = 0
    last_activity: float | None = None
    last_write: float = 0.0  # monotonic, for the evidence bound
    new: list[str] = field(default_factory=list)
    reset: bool = False
    note: str = ""
    flushed: bool = False  # its open blocks were closed since its last bytes were analysed


@dataclass
class _RunState:
    name: str
    analyzer: Analyzer | None = None
    files: dict[str, _FileState] = field(default_factory=dict)
    pending: deque[Data] = field(default_factory=deque)  # read before its analysis could start
    diagnoses: list[Diagnosis] = field(default_factory=list)
    signature: tuple = ()
    progress: deque[float] = field(default_factory=lambda: deque(maxlen=64))
    probes: dict[str, dict] = field(default_factory=dict)  # rule -> verdict of a probe run here
    points: int = 0
    hang_suspected: bool = False
    concluded_at: float = 0.0
    fed: bool = True  # bytes were analysed since the last conclude (else it would find the same)
    dirty: bool = True
    touched: bool = False  # the analyzer has new findings to publish


class Model:
    """Follows ``targets``, analyses each run, and posts snapshots through ``post``.

    ``post`` is called from the model's thread (``App.post_message`` is thread-safe). Call
    :meth:`run` in a worker thread; it returns when :meth:`stop` is called.
    """

    def __init__(
        self,
        targets: Sequence[str],
        post: Callable[[Message], object],
        *,
        rulebase: RuleBase | None = None,
        globs: Sequence[str] = DEFAULT_GLOBS,
        poll: bool | None = None,
        hang_after: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.targets = list(targets)
        self.post = post
        self.globs = tuple(globs)
        self.poll = poll
        self.hang_after = hang_after
        self.clock = clock
        self.runs: dict[str, _RunState] = {}
        self._rulebase = rulebase
        self._rules_ready = threading.Event()
        self._stop = threading.Event()
        self._ready_told = False
        self._inbox: queue.Queue[Callable[[], None]] = queue.Queue()
        self._starting = threading.Lock()
        self._waiting: set[str] = set()  # runs with bytes waiting for analysis
        self.follower: Follower | None = None
        #: The file whose new lines the app shows (FileActivity is posted for it only).
        self.watched: str | None = None
        if rulebase is not None:
            self._rules_ready.set()

    # -- control, from any thread ----------------------------------------------------------------

    def stop(self) -> None:
        """Ask the model's thread to finish (it stops the follower on its way out)."""
        self._stop.set()

    def call(self, function: Callable[[], None]) -> None:
        """Run ``function`` on the model's thread (the only one that may touch analyzers)."""
        self._inbox.put(function)

    def tail(self, path: str) -> tuple[list[str], int]:
        """A copy of the kept tail of ``path`` and the lines read so far (safe from any thread)."""
        kept = self._kept(path)
        return [text for _, text in kept], (kept[-1][0] if kept else 0)

    def context(self, path: str, evidence: Sequence[LogLine]) -> list[tuple[int, str]]:
        """The numbered lines around ``evidence`` (lines of ``path``): from the kept tail where
        it holds them, else from the file (see :func:`evidence_context`). Any thread."""
        return evidence_context(path, evidence, self._kept(path))

    def record_probe(self, run_name: str, rule: str, result: dict) -> None:
        """A probe run from the UI finished: its verdict becomes a ``probe`` fact of the run and
        moves the diagnosis up (confirmed) or down (refuted), as ``analyze --probe`` does.
        Call it through :meth:`call` (it touches the run's analyzer)."""
        run = self.runs.get(run_name)
        if run is None or run.analyzer is None:
            return
        result = dict(result, rule=rule)
        run.probes[rule] = result
        for diagnosis in run.diagnoses:
            if diagnosis.rule == rule:
                run.analyzer.record_probe(diagnosis, result)
        run.touched = True

    def backlog(self) -> int:
        """How many runs still have bytes waiting for analysis (or no analyzer yet). Any
        thread: it only reads (for the benchmark and the app's progress line)."""
        return sum(run.analyzer is None or bool(run.pending) for run in list(self.runs.values()))

    def _kept(self, path: str) -> list[tuple[int, str]]:
        for run in list(self.runs.values()):
            file = run.files.get(path)
            if file is not None:
                return list(file.tail)  # a deque copy is atomic under the GIL
        return []

    # -- the thread ------------------------------------------------------------------------------

    def start_following(self) -> None:
        """Find the files and start reading them (a few ms; call it early, before the UI
        starts, so that the first screen lists them)."""
        with self._starting:  # the app's on_load and the worker may both ask
            if self.follower is None:
                follower = Follower(self.targets, globs=self.globs, poll=self.poll)
                follower.start()
                self.follower = follower

    def run(self, cancelled: Callable[[], bool] | None = None) -> None:
        """Follow, analyse and publish until :meth:`stop` (or ``cancelled()`` is true)."""
        self.start_following()
        assert self.follower is not None
        self.post(ModelNotice(f"following: {self.follower.mode_reason}"))
        try:
            # List the files first, then load the rules: compiling them would hold the GIL
            # while the first screen waits for the listing.
            self._list_initial_files()
            if self._rulebase is None:
                threading.Thread(
                    target=self._load_rules, name="crashcart-rules", daemon=True
                ).start()
            while not self._stop.is_set() and not (cancelled and cancelled()):
                try:
                    self._cycle()
                except Exception as error:  # a bug must not silently stop the diagnoses
                    self.post(ModelNotice(f"crashcart: internal error: {error!r}", "error"))
                    time.sleep(PUBLISH_EVERY)
        finally:
            self.follower.stop()
            for run in self.runs.values():
                if run.analyzer is not None:
                    run.analyzer.close()

    def _load_rules(self) -> None:
        try:
            self._rulebase = default_rulebase()
        except Exception as error:  # a broken rule file must not kill the UI
            self.post(ModelNotice(f"rules could not be loaded: {error}", "error"))
        finally:
            self._rules_ready.set()

    def _list_initial_files(self, limit: float = 1.0) -> None:
        """Take what the follower reads at start until it goes quiet, and publish it."""
        assert self.follower is not None
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline and not self._stop.is_set():
            item = self.follower.get(timeout=0.05)
            if item is None:
                break
            if isinstance(item, Data):
                self._data(item)
            elif isinstance(item, Notice):
                self._notice(item)
        self._publish()

    def _cycle(self) -> None:
        """Read for up to PUBLISH_EVERY seconds, then check timers and publish what changed."""
        assert self.follower is not None
        deadline = time.monotonic() + PUBLISH_EVERY
        catching_up = 0.0
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self._stop.is_set():
                break
            backlog = self._backlog() if catching_up < CATCH_UP_BUDGET else None
            item = self.follower.get(timeout=0 if backlog else min(left, 0.05))
            if isinstance(item, Data):
                self._data(item)
            elif isinstance(item, Notice):
                self._notice(item)
            elif backlog is not None:  # nothing new to read: analyse what waits
                started = time.monotonic()
                if backlog.analyzer is None:
                    self._attach(backlog)
                self._feed(backlog, backlog.pending.popleft())
                catching_up += time.monotonic() - started
        while True:
            try:
                self._inbox.get_nowait()()
            except queue.Empty:
                break
        self._tick()
        self._publish()
        # After publishing: the runs are listed before the bytes read so far are analysed.
        if self._rules_ready.is_set() and self._rulebase is not None:
            self._attach_analyzers()

    # -- input -----------------------------------------------------------------------------------

    def _run_for(self, path: str) -> _RunState:
        name = run_name(path)
        run = self.runs.get(name)
        if run is None:
            run = self.runs[name] = _RunState(name)
        return run

    def _file_for(self, run: _RunState, path: str) -> _FileState:
        file = run.files.get(path)
        if file is None:
            file = run.files[path] = _FileState(path)
            run.dirty = True
        return file

    def _notice(self, item: Notice) -> None:
        run = self._run_for(item.path)
        file = self._file_for(run, item.path)
        if item.what in ("truncated", "recreated", "rotated"):
            file.tail.clear()
            file.partial = b""
            file.new = []
            file.reset = True
        if item.what != "opened":
            file.note = item.what
            severity = "error" if item.what == "error" else "information"
            self.post(ModelNotice(f"{item.path}: {item.what}: {item.detail}", severity))
        run.dirty = True

    def _data(self, item: Data) -> None:
        run = self._run_for(item.path)
        file = self._file_for(run, item.path)
        file.bytes += len(item.data)
        file.last_activity = self._written_at(item.path)
        file.last_write = time.monotonic()
        text = file.partial + item.data
        *complete, file.partial = text.split(b"\n")
        for raw in complete:
            line = clean(raw)
            file.lines += 1
            file.tail.append((file.lines, line))
            file.new.append(line)
        if len(file.new) > TAIL_LINES:
            del file.new[:-TAIL_LINES]
        run.dirty = True
        if run.analyzer is None or run.pending:  # keep the order: older bytes wait first
            run.pending.append(item)
            self._waiting.add(run.name)
        else:
            self._feed(run, item)

    def _written_at(self, path: str) -> float:
        """When the bytes just read were written: the file's modification time (a log last
        written two days ago was not active when it was opened), never later than now."""
        now = self.clock()
        try:
            return min(now, os.stat(path).st_mtime)
        except OSError:  # gone, or stdin: it was read just now
            return now

    def _feed(self, run: _RunState, item: Data) -> None:
        assert run.analyzer is not None
        if run.analyzer.feed(item.path, item.data):
            run.touched = True
        run.fed = True
        file = run.files.get(item.path)
        if file is not None:
            file.flushed = False
        points = run.analyzer.extractor.series.points
        if points > run.points:
            run.points = points
            run.progress.append(time.monotonic())
            if run.hang_suspected and run.analyzer.diagnoser.retract("silence"):
                run.hang_suspected = False
                run.touched = True

    def _attach(self, run: _RunState) -> None:
        run.analyzer = Analyzer(self._rulebase)
        run.concluded_at = 0.0
        run.touched = run.dirty = True

    def _attach_analyzers(self, budget: float = ATTACH_BUDGET) -> None:
        """Give the runs with nothing waiting their analyzer, for at most ``budget`` seconds a
        cycle (a few ms each: 700 at once held the interpreter for seconds and froze the UI);
        runs with bytes waiting get theirs when the backlog reaches them."""
        if not self._ready_told:
            self._ready_told = True
            self.post(ModelReady())
        started = time.monotonic()
        for run in list(self.runs.values()):
            if run.analyzer is None and not run.pending:
                self._attach(run)
                if time.monotonic() - started > budget:
                    break

    def _backlog(self) -> _RunState | None:
        """A run with bytes waiting for analysis (read while the rules were loading), if any:
        they are analysed between reads, so a directory of large logs never stops the model
        from publishing."""
        # The run on screen first: its diagnoses are what the person is waiting for.
        ready = self._rules_ready.is_set() and self._rulebase is not None
        watched = self.runs.get(run_name(self.watched)) if self.watched else None
        if watched is not None and watched.pending and ready:
            return watched
        for name in list(self._waiting):
            run = self.runs[name]
            if not run.pending:
                self._waiting.discard(name)
            elif ready:
                return run
        return None

    # -- timers ----------------------------------------------------------------------------------

    def _tick(self) -> None:
        now = time.monotonic()
        for run in self.runs.values():
            if run.analyzer is None:
                continue
            for file in run.files.values():
                if run.pending:
                    break  # its bytes are not all analysed yet: nothing to close early
                quiet = file.last_write and now - file.last_write > EVIDENCE_WAIT
                if quiet and not file.flushed:  # once per quiet spell, not every cycle
                    file.flushed = True
                    if run.analyzer.flush_blocks(file.path):
                        run.touched = True
            # Only a run that read something since: concluding 700 unchanged runs every few
            # seconds kept the model thread from analysing the rest (a directory took ~50 s).
            if run.fed and not run.pending and now - run.concluded_at > CONCLUDE_EVERY:
                run.concluded_at = now
                run.fed = False
                if run.analyzer.conclude():
                    run.touched = True
            if self._check_hang(run, now):
                run.touched = True

    def _check_hang(self, run: _RunState, now: float) -> bool:
        """Like ``crashcart watch``: progress silent for many times its own cadence."""
        if run.hang_suspected or len(run.progress) < 3 or run.analyzer is None:
            return False
        gaps = [b - a for a, b in zip(run.progress, list(run.progress)[1:], strict=False)]
        cadence = statistics.median(gaps)
        silence = now - run.progress[-1]
        if silence < max(HANG_FACTOR * cadence, self.hang_after):
            return False
        series = run.analyzer.extractor.series
        last = series.last_line
        if last is None:
            return False
        run.hang_suspected = True
        fields: dict[str, object] = {
            "silence_s": round(silence, 1),
            "cadence_s": round(cadence, 2),
            "last_progress": last.text[:200],
        }
        if series.last_step is not None:
            fields["step"] = int(series.last_step)
        run.analyzer.diagnoser.add(Finding(Draft("silence", fields), [last], last.rank))
        return True

    # -- output ----------------------------------------------------------------------------------

    def _publish(self) -> None:
        changed: list[RunInfo] = []
        watched = self.watched
        for run in self.runs.values():
            if run.touched and run.analyzer is not None:
                run.touched = False
                diagnoses = run.analyzer.diagnoses()
                if run.probes:
                    for diagnosis in diagnoses:
                        if diagnosis.rule in run.probes:
                            apply_probe(diagnosis, run.probes[diagnosis.rule])
                    diagnoses = order(diagnoses)
                signature = tuple(
                    (
                        d.rule,
                        round(d.confidence, 3),
                        len(d.evidence),
                        d.summary,
                        d.probe and d.probe["status"],
                    )
                    for d in diagnoses
                )
                if signature != run.signature:
                    run.signature = signature
                    run.diagnoses = diagnoses
                    config = dict(run.analyzer.diagnoser.config)
                    self.post(DiagnosesChanged(run.name, diagnoses, config))
                    run.dirty = True
            for file in run.files.values():
                if (file.new or file.reset) and file.path == watched:
                    self.post(FileActivity(file.path, file.new, file.lines, file.reset))
                file.new = []
                file.reset = False
            if run.dirty:
                run.dirty = False
                changed.append(self._snapshot(run))
        if changed:
            self.post(RunUpdated(changed))

    def _snapshot(self, run: _RunState) -> RunInfo:
        files = []
        for file in run.files.values():
            mine = [d for d in run.diagnoses if any(e.path == file.path for e in d.evidence)]
            files.append(
                FileInfo(
                    path=file.path,
                    run=run.name,
                    status=status_of(mine),
                    last_activity=file.last_activity,
                    lines=file.lines,
                    bytes=file.bytes,
                    note=file.note,
                )
            )
        files.sort(key=lambda f: (SEVERITY[f.status], f.path))
        step = loss = None
        loss_series: tuple[float, ...] = ()
        speed_series: tuple[float, ...] = ()
        speed_name = ""
        if run.analyzer is not None:
            tracker = run.analyzer.extractor.series
            step = tracker.last_step
            if "loss" in tracker.series:
                loss_series = tuple(p.value for p in tracker.series["loss"].points[-SERIES_POINTS:])
                loss = loss_series[-1] if loss_series else None
            speeds = [k for k in tracker.series if k == "it_s" or k.startswith("it_s/")]
            if speeds:
                # The bar with the most points: the training loop, not an eval bar.
                speed_name = max(speeds, key=lambda k: len(tracker.series[k].points))
                points = tracker.series[speed_name].points[-SERIES_POINTS:]
                speed_series = tuple(p.value for p in points)
        activity = [f.last_activity for f in run.files.values() if f.last_activity is not None]
        return RunInfo(
            name=run.name,
            status=status_of(run.diagnoses, run.hang_suspected),
            last_activity=max(activity) if activity else None,
            step=step,
            loss=loss,
            files=tuple(files),
            loss_series=loss_series,
            speed_series=speed_series,
            speed_name=speed_name,
            diagnoses=len(run.diagnoses),
        )


def evidence_context(
    path: str, evidence: Sequence[LogLine], kept: Sequence[tuple[int, str]], around: int = 6
) -> list[tuple[int, str]]:
    """The numbered lines within ``around`` lines of each evidence line of ``path``.

    Taken from ``kept`` (the model's numbered tail) when it holds every evidence line; else read
    from the file, but only trusted when each evidence line is found where the analyzer saw it:
    after a truncation or a rotation the file on disk numbers its lines differently, and then
    only the evidence lines themselves are shown, never a stranger's context.
    """
    mine = sorted({(line.lineno, line.text) for line in evidence if line.path == path})
    by_number = dict(kept)
    if all(lineno in by_number for lineno, _ in mine):
        wanted = {n for lineno, _ in mine for n in range(lineno - around, lineno + around + 1)}
        return [(n, by_number[n]) for n in sorted(wanted) if n in by_number]
    found = load_context(path, [lineno for lineno, _ in mine], around)
    on_disk = dict(found)
    if all(text.strip() in on_disk.get(lineno, "\0") for lineno, text in mine):
        return found
    return mine


def load_context(path: str, linenos: Sequence[int], around: int = 6) -> list[tuple[int, str]]:
    """The lines of ``path`` within ``around`` lines of each of ``linenos`` (1-based), in order,
    cleaned like the analyzer sees them. Read in a worker thread: the file may be large."""
    wanted: set[int] = set()
    for lineno in linenos:
        wanted.update(range(max(1, lineno - around), lineno + around + 1))
    if not wanted:
        return []
    last = max(wanted)
    found: list[tuple[int, str]] = []
    try:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                if number in wanted:
                    found.append((number, clean(raw.rstrip(b"\r\n"))))
                if number >= last:
                    break
    except OSError:
        return []
    return found
