"""``crashcart watch``: diagnoses the moment a run goes wrong, from a pipe or followed files.

Each directory of followed files is one run (its files are the ranks), stdin is a run of its
own, and each run has its own :class:`~crashcart.analyzer.Analyzer`, the same pipeline
``analyze`` uses, fed as bytes arrive. A diagnosis is printed once, as soon as its evidence is
complete, and again as an *update* when new evidence changes its rank, rule or confidence.

Evidence bound: a traceback is complete at its final exception line, but the lines right after
it may still belong to it (NCCL's "Last error:", the rest of a CUDA message). A block is
closed when the next record starts or, at the latest, ``EVIDENCE_WAIT`` seconds after its
source last wrote, so a diagnosis never waits longer than that for a quiet stream. Partial
lines wait for their newline (or the end of input).

A guess from the words (a ``vocabulary`` rule's diagnosis) waits until the run settles: no
block open and every source ended or quiet past the evidence bound, since the lines still to
come may explain it. A diagnosis that later lines withdraw is *retracted*.

Live hang: when a run's metric lines stop for ``HANG_FACTOR`` times its own cadence (and at
least ``--hang-after`` seconds), a suspected hang is reported with the last progress line and
the silence; it is retracted if progress resumes.
"""

from __future__ import annotations

import json
import queue
import statistics
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .analyzer import Analyzer, RuleBase, errors_warning
from .engine.diagnosis import Diagnosis
from .parsers.base import Draft
from .parsers.extract import Finding
from .parsers.follow import DEFAULT_GLOBS, Data, Follower, Notice

EVIDENCE_WAIT = 0.5
HANG_FACTOR = 10.0
CONCLUDE_EVERY = 10.0  # seconds between trend checks of a live run
STDIN = "<stdin>"
_EOF = object()


@dataclass
class _Run:
    """One run being watched: its analyzer and what has been shown of it."""

    name: str
    analyzer: Analyzer
    shown: dict[str, tuple[str, int, float]] = field(default_factory=dict)
    last_write: dict[str, float] = field(default_factory=dict)
    progress: deque[float] = field(default_factory=lambda: deque(maxlen=64))
    points: int = 0
    hang_suspected: bool = False
    concluded_at: float = 0.0
    errors_warned: bool = False
    #: Sources whose input ended.
    ended: set[str] = field(default_factory=set)
    #: A guess from the words (a vocabulary diagnosis) is waiting for the run to settle.
    holding: bool = False

    def settled(self, now: float) -> bool:
        """Whether no later line can still withdraw a guess from the words: no block is open,
        and every source has ended or has been quiet past the evidence bound."""
        return not self.analyzer.extractor.reading_blocks() and all(
            path in self.ended or now - written > EVIDENCE_WAIT
            for path, written in self.last_write.items()
        )


class Watcher:
    """Follows inputs, feeds runs, and reports diagnoses as they appear and change."""

    def __init__(
        self,
        targets: list[str],
        *,
        use_stdin: bool,
        rulebase: RuleBase,
        out: TextIO,
        json_lines: bool,
        render: Callable[[int, Diagnosis, str], None] | None = None,
        poll: bool | None = None,
        globs: tuple[str, ...] = DEFAULT_GLOBS,
        exec_command: str | None = None,
        exec_timeout: float = 30.0,
        hang_after: float = 300.0,
        from_start: bool = True,
    ) -> None:
        self.rulebase = rulebase
        self.out = out
        self.json_lines = json_lines
        self.render = render
        self.hang_after = hang_after
        self.exec_command = exec_command
        self.exec_timeout = exec_timeout
        self.runs: dict[str, _Run] = {}
        self._failures: set[str] = set()
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=16)  # at most 16 MiB waiting
        self._stop = threading.Event()
        self._stdin = use_stdin
        self._executor = ThreadPoolExecutor(max_workers=4) if exec_command else None
        self.follower = (
            Follower(targets, globs=globs, poll=poll, from_start=from_start) if targets else None
        )

    # -- inputs ----------------------------------------------------------------------------

    def _pump_stdin(self) -> None:
        stream = sys.stdin.buffer
        while not self._stop.is_set():
            # read1: whatever is there now, up to 1 MiB: small writes pass at once, a backlog in
            # big chunks (the analyzer's per-chunk work is then amortised).
            data = stream.read1(1 << 20) if hasattr(stream, "read1") else stream.read(1 << 16)
            if not data:
                break
            self._queue.put(Data(STDIN, data))
        self._queue.put(_EOF)

    def _pump_follower(self) -> None:
        assert self.follower is not None
        while not self._stop.is_set():
            item = self.follower.get(timeout=0.2)
            if item is not None:
                self._queue.put(item)

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> int:
        """Watch until stdin ends (when it is the only input) or until interrupted."""
        threads = []
        if self.follower is not None:
            self.follower.start()
            self._emit(
                {"event": "notice", "what": "following", "detail": self.follower.mode_reason}
            )
            threads.append(threading.Thread(target=self._pump_follower, daemon=True))
        if self._stdin:
            threads.append(threading.Thread(target=self._pump_stdin, daemon=True))
        for thread in threads:
            thread.start()
        try:
            while True:
                try:
                    item = self._queue.get(timeout=0.1)
                except queue.Empty:
                    item = None
                if item is _EOF:
                    self._contained(self._end_of_input, STDIN)
                    if self.follower is None:
                        break
                elif isinstance(item, Data):
                    self._contained(self._data, item)
                elif isinstance(item, Notice):
                    self._emit(
                        {
                            "event": "notice",
                            "path": item.path,
                            "what": item.what,
                            "detail": item.detail,
                        }
                    )
                self._contained(self._tick)
        except KeyboardInterrupt:
            pass  # Ctrl-C: stop following; the summary below is the clean ending
        finally:
            self._stop.set()
            if self.follower is not None:
                self.follower.stop()
            if self._executor is not None:
                self._executor.shutdown(wait=True)
        return self._summary()

    def _contained(self, step: Callable[..., None], *args: Any) -> None:
        """Run one step of the loop; an error in it is warned about, and watching goes on.

        The pipeline contains a parser's error per line already (counted per run, warned about
        once below); this is the last guard, so that no input can end a live session."""
        try:
            step(*args)
        except Exception as error:
            what = f"{type(error).__name__}: {error}"
            if what not in self._failures:  # a step that fails every tick warns once
                self._failures.add(what)
                self._warn(f"skipped a step that failed ({what}); please report this as a bug")
        for run in self.runs.values():
            if run.analyzer.errors.count and not run.errors_warned:
                run.errors_warned = True
                errors = run.analyzer.errors
                print(errors_warning(errors.count, errors.examples), file=sys.stderr, flush=True)

    def _run_for(self, path: str) -> _Run:
        name = STDIN if path == STDIN else str(Path(path).parent)
        run = self.runs.get(name)
        if run is None:
            run = self.runs[name] = _Run(name, Analyzer(self.rulebase))
        return run

    def _data(self, item: Data) -> None:
        run = self._run_for(item.path)
        now = time.monotonic()
        run.last_write[item.path] = now
        touched = run.analyzer.feed(item.path, item.data)
        points = run.analyzer.extractor.series.points
        if points > run.points:
            run.points = points
            run.progress.append(now)
            if run.hang_suspected and run.analyzer.diagnoser.retract("silence"):
                run.hang_suspected = False
                self._emit(
                    {
                        "event": "retracted",
                        "run": run.name,
                        "category": "hang",
                        "detail": "progress resumed",
                    }
                )
                run.shown.pop("hang", None)
        if touched:
            self._publish(run)

    def _end_of_input(self, path: str) -> None:
        run = self._run_for(path)
        run.ended.add(path)
        run.analyzer.finish(path)
        run.analyzer.conclude()
        self._publish(run)

    def _tick(self) -> None:
        now = time.monotonic()
        for run in self.runs.values():
            touched = []
            for path, written in run.last_write.items():
                if now - written > EVIDENCE_WAIT:
                    touched += run.analyzer.flush_blocks(path)
            if now - run.concluded_at > CONCLUDE_EVERY:
                run.concluded_at = now
                touched += run.analyzer.conclude()
            touched += self._check_hang(run, now)
            if touched or (run.holding and run.settled(now)):
                self._publish(run)

    def _check_hang(self, run: _Run, now: float) -> list[Any]:
        if run.hang_suspected or len(run.progress) < 3:
            return []
        gaps = [b - a for a, b in zip(run.progress, list(run.progress)[1:], strict=False)]
        cadence = statistics.median(gaps)
        silence = now - run.progress[-1]
        if silence < max(HANG_FACTOR * cadence, self.hang_after):
            return []
        series = run.analyzer.extractor.series
        last = series.last_line
        if last is None:
            return []
        run.hang_suspected = True
        fields = {
            "silence_s": round(silence, 1),
            "cadence_s": round(cadence, 2),
            "last_progress": last.text[:200],
        }
        if series.last_step is not None:
            fields["step"] = int(series.last_step)
        return run.analyzer.diagnoser.add(Finding(Draft("silence", fields), [last], last.rank))

    # -- output ------------------------------------------------------------------------------

    def _publish(self, run: _Run) -> None:
        diagnoses = run.analyzer.diagnoses()
        current = {diagnosis.category for diagnosis in diagnoses}
        for category in [category for category in run.shown if category not in current]:
            # Later lines withdrew it (a rule's ``none`` fact came, or a specific rule read
            # the same lines better): say so, as a hang that resumed is.
            del run.shown[category]
            self._emit(
                {
                    "event": "retracted",
                    "run": run.name,
                    "category": category,
                    "detail": "later lines explain the failure otherwise",
                }
            )
        # A guess from the words alone, and any change to it, waits until the run settles: the
        # traceback being read, or the record after this line, may hold the error that explains
        # it (a launcher stops its workers before the failed rank's traceback is complete).
        settled = run.settled(time.monotonic())
        run.holding = False
        for position, diagnosis in enumerate(diagnoses, 1):
            state = (diagnosis.rule, position, round(diagnosis.confidence, 2))
            before = run.shown.get(diagnosis.category)
            if before == state:
                continue
            if diagnosis.tier == "vocabulary" and not settled:
                run.holding = True
                continue
            event = "diagnosis" if before is None else "update"
            run.shown[diagnosis.category] = state
            if self.json_lines:
                self._emit(
                    {
                        "event": event,
                        "run": run.name,
                        "position": position,
                        "diagnosis": diagnosis.to_json(),
                    }
                )
            elif self.render is not None:
                self.render(position, diagnosis, f"{event} in {run.name}")
            if event == "diagnosis" and self._executor is not None:
                document = json.dumps({"run": run.name, "diagnosis": diagnosis.to_json()})
                self._executor.submit(self._exec, document)

    def _exec(self, document: str) -> None:
        try:
            result = subprocess.run(
                self.exec_command,
                shell=True,
                input=document,
                text=True,
                capture_output=True,
                timeout=self.exec_timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            self._warn(f"--exec command timed out after {self.exec_timeout:g} s")
            return
        except OSError as error:
            self._warn(f"--exec command could not run: {error}")
            return
        if result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
            self._warn(f"--exec command exited with {result.returncode}: {detail[0]}")

    def _warn(self, message: str) -> None:
        print(f"crashcart: warning: {message}", file=sys.stderr, flush=True)

    def _emit(self, event: dict[str, Any]) -> None:
        if self.json_lines:
            self.out.write(json.dumps(event, ensure_ascii=False) + "\n")
            self.out.flush()
        elif event["event"] in ("notice", "retracted"):
            where = event.get("path") or event.get("run") or ""
            text = event.get("detail", "")
            label = event.get("what", event["event"])
            print(
                f"crashcart: {label}{' ' + where if where else ''}: {text}",
                file=sys.stderr,
                flush=True,
            )

    def _summary(self) -> int:
        found = sum(len(run.shown) for run in self.runs.values())
        files: dict[str, dict[str, int]] = {}
        for run in self.runs.values():
            for name, stats in run.analyzer.extractor.stats().items():
                files[name] = {"bytes": stats.bytes, "lines": stats.lines}
        if self.follower is not None:
            for name, stats in self.follower.stats().items():
                files.setdefault(name, {}).update(
                    {"truncations": stats.truncations, "rotations": stats.rotations}
                )
        if self.json_lines:
            self._emit(
                {"event": "summary", "runs": len(self.runs), "diagnoses": found, "files": files}
            )
        else:
            total = sum(f.get("bytes", 0) for f in files.values())
            print(
                f"crashcart: watched {len(files)} file(s), {total} bytes, in {len(self.runs)} run(s);"
                f" {found} diagnosis(es)",
                file=sys.stderr,
                flush=True,
            )
        for run in self.runs.values():
            run.analyzer.close()
        return 1 if found else 0
