"""A random model of log writers run against the real follower, with every line numbered.

In the manner of Vector's file-source model tests: a seeded random sequence of writes and file
operations runs against real files in a directory that a :class:`Follower` follows, while a
thread collects what it delivers. Every line written is ``L<file>.<seq>.<length>:<body>\\n``,
where ``<file>`` names the file it was written to (one number per file created, whatever names
it has later) and ``<body>`` is generated from the three numbers, so any fragment delivered can
be told apart: a whole line, the start of a line (torn), or bytes of two lines run together.

The contract checked (see :func:`check`): every line that still exists on disk when the
follower looks is delivered exactly once, in order within its file, never mixed with another;
a line that a truncation destroyed before it was read may be lost, but only if a ``truncated``
notice comes between the lines delivered before and after it, and the bytes such notices say
were lost never exceed the bytes really lost.

Used by tests/parsers/test_follow_model.py (a few short sequences in ``make test``) and by
benchmarks/follow_soak.py (as many as asked).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from crashcart.parsers.follow import Data, Follower, Notice

HEADER = re.compile(rb"L(\d+)\.(\d+)\.(\d+):")
SEEN = re.compile(rb"(?:^|\n)L(\d+)\.")
_RAW = bytes(range(256)).replace(b"\n", b"N").replace(b"\r", b"R")  # invalid UTF-8 kept
_TEXT = bytes(33 + b % 94 for b in range(256))  # printable ASCII


def line_bytes(file: int, seq: int, length: int) -> bytes:
    """The numbered line ``seq`` of file ``file`` with a body of ``length`` bytes."""
    body = random.Random(file * 1_000_003 + seq).randbytes(length)
    # Two lines in three are printable text; the third is raw bytes (invalid UTF-8, NULs).
    body = body.translate(_RAW if seq % 3 == 0 else _TEXT)
    return b"L%d.%d.%d:" % (file, seq, length) + body + b"\n"


@dataclass
class _Line:
    length: int  # bytes, newline included
    destroyed: int | None = None  # the truncation that destroyed it, if one did


@dataclass
class _Truncation:
    file: int
    first_after: int  # the first seq written to the file after it


@dataclass
class _Log:
    """One writer: its base name, and the file it writes to (or none: deleted)."""

    base: str
    fd: int | None = None
    file: int = -1  # the file number being written
    on_disk: list[int] = field(default_factory=list)  # seqs in the file since it was emptied
    moved: int = 0  # rotations to names the follower does not follow


class Collector(threading.Thread):
    """Takes everything the follower delivers, in order, in a thread of its own."""

    def __init__(self, follower: Follower) -> None:
        super().__init__(daemon=True, name="model-collector")
        self.follower = follower
        self.events: list[Data | Notice] = []
        self.seen: set[int] = set()  # files whose lines have started to arrive
        self.last = time.monotonic()  # when the last event came
        self._carry: dict[str, bytes] = {}
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            item = self.follower.get(timeout=0.05)
            if item is None:
                continue
            self.events.append(item)
            self.last = time.monotonic()
            if isinstance(item, Data):
                text = self._carry.get(item.path, b"\n") + item.data
                self.seen.update(int(m) for m in SEEN.findall(text))
                self._carry[item.path] = text[-40:]

    def finish(self) -> None:
        self._done.set()
        self.join()


class Model:
    """One random sequence of operations, seeded, against one follower."""

    def __init__(
        self,
        seed: int,
        directory: Path,
        *,
        poll: bool,
        drain: float = 1.0,
        max_line: int = 300_000,
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.dir = directory
        self.drain = drain
        self.max_line = max_line
        self.logs: list[_Log] = []
        self.lines: dict[tuple[int, int], _Line] = {}
        self.next_seq: dict[int, int] = {}
        self.truncations: list[_Truncation] = []
        self.files = 0
        self.operations: list[str] = []
        self.follower = Follower(
            [directory], globs=["*.log"], poll=poll, poll_interval=0.02, drain_seconds=drain
        )
        self.collector = Collector(self.follower)

    # Running.

    def run(self, steps: int) -> list[Data | Notice]:
        """Run ``steps`` random operations, wait until the follower is quiet, and stop it."""
        self.follower.start()
        self.collector.start()
        try:
            self._new_log()
            for _ in range(steps):
                self.step()
            for log in self.logs:
                self._close(log)
            self._quiet()
        finally:
            self.follower.stop()
            self.collector.finish()
        return self.collector.events

    def _quiet(self, timeout: float = 20.0) -> None:
        """Wait until nothing has been delivered for a while (drains included)."""
        deadline = time.monotonic() + timeout
        quiet = max(0.5, self.drain + 0.3)
        while time.monotonic() < deadline and time.monotonic() - self.collector.last < quiet:
            time.sleep(0.05)

    def step(self) -> None:
        """One random operation, chosen by weight among those that apply."""
        log = self.rng.choice(self.logs)
        if log.fd is None:
            choices = [("recreate", 3), ("new_log", 1), ("pause", 1)]
        else:
            choices = [
                ("burst", 8), ("slow", 3), ("split", 3), ("long_line", 1), ("pause", 2),
                ("rename_rotate", 2), ("numbered_rotate", 2), ("copytruncate", 2),
                ("truncate", 2), ("truncate_and_write", 2), ("delete", 1), ("new_log", 1),
            ]  # fmt: skip
        names, weights = zip(*choices, strict=True)
        name = self.rng.choices(names, weights)[0]
        if name == "new_log" and len(self.logs) >= 4:
            name = "pause"
        self.operations.append(f"{name} {log.base}")
        getattr(self, "_" + name)(log)

    # Writing.

    def _write_lines(self, log: _Log, lengths: list[int]) -> bytes:
        return self._lines_for(log.file, log.on_disk, lengths)

    def _lines_for(self, file: int, on_disk: list[int], lengths: list[int]) -> bytes:
        data = bytearray()
        for length in lengths:
            seq = self.next_seq[file]
            self.next_seq[file] = seq + 1
            line = line_bytes(file, seq, length)
            self.lines[(file, seq)] = _Line(len(line))
            on_disk.append(seq)
            data += line
        return bytes(data)

    def _lengths(self, count: int) -> list[int]:
        return [self.rng.choice((0, 5, 20, 60, 120, 400)) for _ in range(count)]

    def _burst(self, log: _Log) -> None:
        assert log.fd is not None
        os.write(log.fd, self._write_lines(log, self._lengths(self.rng.randint(1, 150))))

    def _slow(self, log: _Log) -> None:
        assert log.fd is not None
        for _ in range(self.rng.randint(2, 8)):
            os.write(log.fd, self._write_lines(log, self._lengths(1)))
            time.sleep(self.rng.uniform(0.002, 0.03))

    def _split(self, log: _Log) -> None:
        """A line written in pieces, with pauses between: the follower sees it half done."""
        assert log.fd is not None
        line = self._write_lines(log, self._lengths(1))
        cuts = sorted(self.rng.sample(range(1, len(line)), min(2, len(line) - 1)))
        for start, end in zip([0, *cuts], [*cuts, len(line)], strict=True):
            os.write(log.fd, line[start:end])
            time.sleep(self.rng.uniform(0.005, 0.06))

    def _long_line(self, log: _Log) -> None:
        assert log.fd is not None
        os.write(log.fd, self._write_lines(log, [self.rng.randint(50_000, self.max_line)]))

    def _pause(self, log: _Log) -> None:
        time.sleep(self.rng.uniform(0.01, 0.25))

    # Files.

    def _path(self, log: _Log, number: int = 0) -> Path:
        return self.dir / (f"{log.base}.{number}.log" if number else f"{log.base}.log")

    def _open(self, log: _Log) -> None:
        """The writer (re)opens its name, creating a new file there if none is."""
        log.fd = os.open(self._path(log), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.files += 1
        log.file, log.on_disk = self.files, []
        self.next_seq[log.file] = 0

    def _close(self, log: _Log) -> None:
        if log.fd is not None:
            os.close(log.fd)
            log.fd = None

    def _new_log(self, _log: _Log | None = None) -> None:
        log = _Log(base="abcdefgh"[len(self.logs)])
        self.logs.append(log)
        self._open(log)
        self._burst(log)

    def _recreate(self, log: _Log) -> None:
        self._open(log)
        if self.rng.random() < 0.7:
            self._burst(log)

    def _seen(self, log: _Log) -> None:
        """Wait until the follower has the file open before it leaves every followed name.

        A file that lives at a name for less than the follower takes to look is never seen,
        whoever follows by name (``tail -F`` neither); that documented limit is not tested.
        """
        if not log.on_disk:
            self._burst(log)
        deadline = time.monotonic() + 10
        while log.file not in self.collector.seen and time.monotonic() < deadline:
            time.sleep(0.005)

    def _reopen(self, log: _Log) -> None:
        """After a rotation: a new file at the name, written at once, while the old writer
        goes on with its descriptor a little (one that has not reopened yet), then closes."""
        assert log.fd is not None
        old = (log.fd, log.file, log.on_disk)
        new_first = self.rng.random() < 0.5
        if new_first:
            self._open(log)
            self._burst(log)
        for _ in range(self.rng.randint(0, 3)):
            lengths = self._lengths(self.rng.randint(1, 5))
            os.write(old[0], self._lines_for(old[1], old[2], lengths))
            if self.rng.random() < 0.5:
                time.sleep(self.rng.uniform(0.0, 0.1))
        os.close(old[0])
        if not new_first:
            self._open(log)
            if self.rng.random() < 0.7:
                self._burst(log)

    def _rename_rotate(self, log: _Log) -> None:
        """``a.log -> a.log.N``, a name not followed; a new ``a.log``."""
        self._seen(log)
        log.moved += 1
        os.rename(self._path(log), self.dir / f"{log.base}.log.{log.moved}")
        self._reopen(log)

    def _numbered_rotate(self, log: _Log) -> None:
        """logrotate's ``a.log -> a.1.log -> a.2.log``: every name is followed."""
        self._seen(log)
        oldest = self._path(log, 2)
        if oldest.exists() and self.rng.random() < 0.5:
            oldest.unlink()  # else renamed over
        if self._path(log, 1).exists():
            os.rename(self._path(log, 1), oldest)
        os.rename(self._path(log), self._path(log, 1))
        self._reopen(log)

    def _copytruncate(self, log: _Log) -> None:
        copies = len(list(self.dir.glob(f"{log.base}.log.c*")))
        shutil.copyfile(self._path(log), self.dir / f"{log.base}.log.c{copies}")
        self._truncate(log)

    def _truncate(self, log: _Log) -> None:
        os.truncate(self._path(log), 0)
        number = len(self.truncations)
        self.truncations.append(_Truncation(log.file, self.next_seq[log.file]))
        for seq in log.on_disk:
            self.lines[(log.file, seq)].destroyed = number
        log.on_disk = []

    def _truncate_and_write(self, log: _Log) -> None:
        """Truncated, then written at once past where it was: the follower may never see
        it small."""
        size = os.fstat(log.fd).st_size if log.fd is not None else 0
        self._truncate(log)
        assert log.fd is not None
        while os.fstat(log.fd).st_size <= size:
            os.write(log.fd, self._write_lines(log, self._lengths(self.rng.randint(5, 60))))

    def _delete(self, log: _Log) -> None:
        """Deleted while the writer has it open; it writes a few lines more, then closes."""
        self._seen(log)
        self._path(log).unlink()
        assert log.fd is not None
        for _ in range(self.rng.randint(0, 3)):
            os.write(log.fd, self._write_lines(log, self._lengths(self.rng.randint(1, 5))))
            time.sleep(self.rng.uniform(0.0, 0.05))
        self._close(log)


@dataclass
class Result:
    """What the checker found, by class."""

    lines: int = 0  # written
    bytes: int = 0  # written
    delivered: int = 0  # exactly once
    duplicates: int = 0  # extra deliveries
    reordered: int = 0
    mixed: int = 0  # fragments that are no whole line: two lines run together, or a torn one
    lost_announced: int = 0  # destroyed by a truncation before they were read, and said so
    lost_announced_bytes: int = 0
    # Destroyed by a truncation before the follower had read a byte of the file: it cannot
    # know (a file it has read nothing of has nothing to lose); like a file that lives at a
    # name for less time than the follower takes to look, this loss is unavoidable.
    lost_unseen: int = 0
    lost_unannounced: int = 0  # still on disk and never delivered, or destroyed silently
    lost_unannounced_bytes: int = 0
    said_lost_bytes: int = 0  # what the truncation notices said was lost
    truncations: int = 0
    notices: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The contract: nothing twice, out of order, mixed or lost without a notice."""
        return (
            self.duplicates == self.reordered == self.mixed == self.lost_unannounced == 0
            and self.said_lost_bytes <= self.lost_announced_bytes
        )

    def _example(self, text: str) -> None:
        if len(self.examples) < 8:
            self.examples.append(text)


def check(model: Model, events: list[Data | Notice]) -> Result:
    """Classify every line written by what the follower delivered."""
    result = Result(lines=len(model.lines), bytes=sum(x.length for x in model.lines.values()))
    result.truncations = len(model.truncations)
    deliveries: dict[tuple[int, int], list[int]] = defaultdict(list)
    # line -> where its start was delivered: just before the notice that ended it, so that
    # this very notice counts as the one between the lines before and after the truncation
    torn: dict[tuple[int, int], float] = {}
    torn_bytes = 0  # the starts of torn lines: delivered, so not lost
    truncated_at: dict[str, list[int]] = defaultdict(list)  # path -> event indexes
    paths_of: dict[int, set[str]] = defaultdict(set)
    pending: dict[str, bytearray] = defaultdict(bytearray)

    def fragment(path: str, text: bytes, end: str, index: int) -> None:
        match = HEADER.match(text)
        if match:
            file, seq, length = (int(g) for g in match.groups())
            expected = line_bytes(file, seq, length)[:-1]
            if (file, seq) in model.lines:
                paths_of[file].add(path)
                if end == "\n" and text == expected:
                    deliveries[(file, seq)].append(index)
                    return
                if end == "truncated" and expected.startswith(text):
                    nonlocal torn_bytes
                    torn[(file, seq)] = index - 0.5
                    torn_bytes += len(text)
                    return
        result.mixed += 1
        result._example(f"mixed under {path} (ended by {end!r}): {text[:60]!r}...")

    for index, event in enumerate(events):
        if isinstance(event, Data):
            buffer = pending[event.path]
            buffer += event.data
            *complete, rest = bytes(buffer).split(b"\n")
            for text in complete:
                fragment(event.path, text, "\n", index)
            pending[event.path] = bytearray(rest)
        else:
            result.notices[event.what] = result.notices.get(event.what, 0) + 1
            if event.what == "truncated":
                truncated_at[event.path].append(index)
                result.said_lost_bytes += getattr(event, "lost", 0)
            if pending[event.path]:
                fragment(event.path, bytes(pending[event.path]), event.what, index)
                pending[event.path] = bytearray()
    for path, rest in pending.items():
        if rest:
            fragment(path, bytes(rest), "end", len(events))

    by_file: dict[int, list[tuple[int, int]]] = defaultdict(list)  # file -> (index, seq)
    for (file, seq), indexes in deliveries.items():
        result.duplicates += len(indexes) - 1
        if len(indexes) > 1:
            result._example(f"line {file}.{seq} delivered {len(indexes)} times")
        by_file[file].extend((i, seq) for i in indexes)
    for file, delivered in by_file.items():
        highest = -1
        for _, seq in sorted(delivered):
            if seq < highest:
                result.reordered += 1
                result._example(f"line {file}.{seq} delivered after {file}.{highest}")
            highest = max(highest, seq)

    for (file, seq), line in model.lines.items():
        if deliveries.get((file, seq)):
            result.delivered += 1
            continue
        how = "on disk"
        if line.destroyed is not None:
            how = _announced(
                model.truncations[line.destroyed], by_file[file], torn, truncated_at, paths_of[file]
            )
        if how == "announced":
            result.lost_announced += 1
            result.lost_announced_bytes += line.length
        elif how == "unseen":
            result.lost_unseen += 1
        else:
            result.lost_unannounced += 1
            result.lost_unannounced_bytes += line.length
            result._example(f"line {file}.{seq} ({line.length} bytes, {how}) lost unannounced")
    result.lost_announced_bytes -= torn_bytes  # a torn line's start was delivered
    return result


def _announced(
    truncation: _Truncation,
    delivered: list[tuple[int, int]],
    torn: dict[tuple[int, int], float],
    truncated_at: dict[str, list[int]],
    paths: set[str],
) -> str:
    """``announced`` when a ``truncated`` notice sits between the file's lines delivered
    before the truncation and those delivered after it, under a name the file was delivered
    under; ``unseen`` when nothing of the file was delivered before it; else ``destroyed
    silently``."""
    before = [i for i, seq in delivered if seq < truncation.first_after]
    before += [
        i for (f, s), i in torn.items() if f == truncation.file and s < truncation.first_after
    ]
    after = [i for i, seq in delivered if seq >= truncation.first_after]
    low, high = max(before, default=-1), min(after, default=1 << 62)
    if any(low < i < high for path in paths for i in truncated_at.get(path, ())):
        return "announced"
    return "unseen" if not before else "destroyed silently"


def run_sequence(seed: int, steps: int, directory: Path, **options: object) -> tuple[Model, Result]:
    """Run one seeded sequence in ``directory`` (which it empties first) and check it."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    poll = options.pop("poll", seed % 2 == 0)
    model = Model(seed, directory, poll=bool(poll), **options)  # type: ignore[arg-type]
    events = model.run(steps)
    return model, check(model, events)
