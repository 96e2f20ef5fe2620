"""The file follower, on real files and a real writer process: nothing lost, nothing twice."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from crashcart.parsers.follow import (
    QUEUE_ITEMS,
    Data,
    FileStats,
    Follower,
    Notice,
    filesystem_type,
)

MODES = [pytest.param(True, id="poll"), pytest.param(False, id="events")]


class Collector:
    """Gathers a follower's events and waits for conditions on them."""

    def __init__(self, follower: Follower) -> None:
        self.follower = follower
        self.events: list[Data | Notice] = []

    def pump(self, timeout: float = 0.02) -> None:
        item = self.follower.get(timeout=timeout)
        while item is not None:
            self.events.append(item)
            item = self.follower.get(timeout=0)

    def data(self, path: str) -> bytes:
        return b"".join(e.data for e in self.events if isinstance(e, Data) and e.path == path)

    def notices(self, path: str) -> list[str]:
        return [e.what for e in self.events if isinstance(e, Notice) and e.path == path]

    def wait(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"timed out; events: {self.events[-8:]}"
            self.pump()

    def wait_data(self, path: str, expected: bytes, timeout: float = 5.0) -> None:
        self.wait(lambda: len(self.data(path)) >= len(expected), timeout)
        self.pump(0.05)  # anything extra (a duplicate) would arrive now
        assert self.data(path) == expected

    def quiet(self, seconds: float) -> None:
        """Collect for a while, e.g. to show that nothing more arrives."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.pump()


def following(**defaults: object) -> Iterator[Callable[..., Collector]]:
    """Start followers on demand (``make(*targets, **options)``, ``defaults`` under the
    options); stop every one when the generator is closed. The fixtures yield from it."""
    started: list[Follower] = []

    def make(*targets: Path, **options: object) -> Collector:
        options = {"poll_interval": 0.02, **defaults, **options}
        follower = Follower(list(targets), **options)  # type: ignore[arg-type]
        follower.start()
        started.append(follower)
        return Collector(follower)

    try:
        yield make
    finally:
        for follower in started:
            follower.stop()


@pytest.fixture
def follow() -> Iterator[Callable[..., Collector]]:
    yield from following(drain_seconds=0.3)


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


@pytest.mark.parametrize("poll", MODES)
def test_appends_and_a_partial_line_completed_later(poll, follow, tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"step 1\nstep 2\nlo")
    c = follow(log, poll=poll)
    c.wait_data(str(log), b"step 1\nstep 2\nlo")
    append(log, b"ss 0.5\n")
    c.wait_data(str(log), b"step 1\nstep 2\nloss 0.5\n")
    assert c.notices(str(log)) == ["opened"]
    assert c.follower.stats()[str(log)] == FileStats(bytes=23, lines=3)
    assert c.follower.mode == ("polling" if poll else "events")


@pytest.mark.parametrize("poll", MODES)
def test_copytruncate_starts_over_and_says_so(poll, follow, tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"old line\n" * 3)
    c = follow(log, poll=poll)
    c.wait_data(str(log), b"old line\n" * 3)
    shutil.copy(log, tmp_path / "train.log.1")
    os.truncate(log, 0)
    c.wait(lambda: "truncated" in c.notices(str(log)))
    append(log, b"new line\n")
    c.wait_data(str(log), b"old line\n" * 3 + b"new line\n")
    notice = next(e for e in c.events if isinstance(e, Notice) and e.what == "truncated")
    assert "27 to 0 bytes" in notice.detail
    assert c.follower.stats()[str(log)].truncations == 1


@pytest.mark.parametrize("poll", MODES)
def test_rename_rotation_then_a_new_file(poll, follow, tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"first\n")
    c = follow(log, poll=poll)
    c.wait_data(str(log), b"first\n")
    log.rename(tmp_path / "train.log.1")
    log.write_bytes(b"second\n")
    c.wait_data(str(log), b"first\nsecond\n")
    assert c.notices(str(log)) == ["opened", "rotated"]
    assert c.follower.stats()[str(log)].rotations == 1


@pytest.mark.parametrize("poll", MODES)
def test_writer_keeps_writing_to_the_renamed_file(poll, follow, tmp_path) -> None:
    log = tmp_path / "train.log"
    with open(log, "ab", buffering=0) as writer:
        writer.write(b"before\n")
        c = follow(log, poll=poll, drain_seconds=30.0)
        c.wait_data(str(log), b"before\n")
        log.rename(tmp_path / "train.log.1")
        log.write_bytes(b"new file\n")
        # The new file is read at once, not after the old one's drain window (30 s here).
        c.wait_data(str(log), b"before\nnew file\n")
        writer.write(b"late 1\n")
        time.sleep(0.1)
        writer.write(b"late 2\n")
    # Tail -F would lose the late lines; here they come, under the name, as whole lines.
    c.wait_data(str(log), b"before\nnew file\nlate 1\nlate 2\n")
    whats = [e.what if isinstance(e, Notice) else e.data for e in c.events]
    assert whats.index("rotated") < whats.index(b"new file\n")


@pytest.mark.parametrize("poll", MODES)
def test_delete_and_recreate(poll, follow, tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"one\n")
    c = follow(log, poll=poll, drain_seconds=0.1)
    c.wait_data(str(log), b"one\n")
    log.unlink()
    c.wait(lambda: "deleted" in c.notices(str(log)))
    log.write_bytes(b"two\n")
    c.wait_data(str(log), b"one\ntwo\n")
    assert c.notices(str(log)) == ["opened", "deleted", "recreated"]


@pytest.mark.parametrize("poll", MODES)
def test_new_files_in_a_watched_directory_by_glob(poll, follow, tmp_path) -> None:
    c = follow(tmp_path, poll=poll)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "rank1.out").write_bytes(b"r1\n")
    (tmp_path / "rank0.log").write_bytes(b"r0\n")
    (tmp_path / "model.bin").write_bytes(b"not a log\n")
    c.wait_data(str(tmp_path / "rank0.log"), b"r0\n")
    c.wait_data(str(tmp_path / "sub" / "rank1.out"), b"r1\n")
    c.quiet(0.2)
    assert set(c.follower.stats()) == {str(tmp_path / "rank0.log"), str(tmp_path / "sub/rank1.out")}


@pytest.mark.parametrize("poll", MODES)
def test_a_file_renamed_to_a_matching_name_is_not_read_twice(poll, follow, tmp_path) -> None:
    log = tmp_path / "rank0.log"
    log.write_bytes(b"a\nb\n")
    c = follow(tmp_path, poll=poll, drain_seconds=0.1)
    c.wait_data(str(log), b"a\nb\n")
    log.rename(tmp_path / "rank0.1.log")
    c.wait(lambda: str(tmp_path / "rank0.1.log") in c.follower.stats())  # drained, handed on
    append(tmp_path / "rank0.1.log", b"c\n")
    c.wait_data(str(tmp_path / "rank0.1.log"), b"c\n")
    assert c.data(str(log)) == b"a\nb\n"


@pytest.mark.parametrize("poll", MODES)
def test_invalid_utf8_and_binary_pass_through_unchanged(poll, follow, tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    c = follow(log, poll=poll)
    blob = b"ok \xff\xfe\n" + bytes(range(256)) + b"\x00" * 1000 + b"\xe2\x82"
    append(log, blob)
    c.wait_data(str(log), blob)


@pytest.mark.parametrize("poll", MODES)
def test_from_start_false_begins_at_the_end(poll, follow, tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"history\n")
    c = follow(log, poll=poll, from_start=False)
    append(log, b"live\n")
    c.wait_data(str(log), b"live\n")


@pytest.mark.parametrize("poll", MODES)
def test_a_file_that_does_not_exist_yet(poll, follow, tmp_path) -> None:
    log = tmp_path / "later.log"
    c = follow(log, poll=poll)
    c.quiet(0.1)
    log.write_bytes(b"here now\n")
    c.wait_data(str(log), b"here now\n")


def test_a_full_queue_blocks_the_reader_instead_of_dropping(follow, tmp_path) -> None:
    log = tmp_path / "big.log"
    payload = b"".join(b"line %06d\n" % i for i in range(40_000))  # 440 kB in 1 kB reads
    log.write_bytes(payload)
    c = follow(log, poll=True, read_size=1024)
    deadline = time.monotonic() + 5
    while c.follower._queue.qsize() < QUEUE_ITEMS and time.monotonic() < deadline:
        time.sleep(0.01)
    assert c.follower._queue.qsize() == QUEUE_ITEMS  # bounded: the reader waits for us
    c.wait_data(str(log), payload, timeout=20)
    assert c.follower.stats()[str(log)] == FileStats(bytes=len(payload), lines=40_000)


def test_stop_is_idempotent_and_the_mode_is_explained(tmp_path) -> None:
    follower = Follower([tmp_path], poll=True)
    follower.start()
    assert (follower.mode, follower.mode_reason) == ("polling", "polling was asked for")
    follower.stop()
    follower.stop()
    assert list(follower) == []
    assert filesystem_type(tmp_path)  # a real mount type, e.g. "ext4" or "tmpfs"


class FollowMachine(RuleBasedStateMachine):
    """Random writes, rotations, truncations and deletions against a model of the output.

    The model is the byte stream that must come out: every byte written at the name, in
    order, once. A truncation or a new file starts the file over but not the stream. Before a
    step that replaces or shrinks the file the machine waits until the follower has caught up,
    as a real writer's lines would have been read before a rotation; after a truncation it
    waits until the follower has seen it, since a file that regrows past the offset read
    between two looks is a truncation no follower can detect.
    """

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="follow-"))
        self.log = self.dir / "train.log"
        self.expected = bytearray()
        self.length = 0  # of the file now at the name; -1: no file there
        self.truncations = 0
        self.rotations = 0
        self.follower = Follower(
            [self.log], poll=True, poll_interval=0.005, drain_seconds=0.0, read_size=7
        )
        self.follower.start()
        self.c = Collector(self.follower)
        self.length = -1

    def caught_up(self) -> None:
        self.c.wait(lambda: len(self.c.data(str(self.log))) >= len(self.expected))

    @rule(data=st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\n", b"") + b"\n"))
    def write_line(self, data: bytes) -> None:
        self.write(data)

    @rule(data=st.binary(min_size=1, max_size=20))
    def write_partial(self, data: bytes) -> None:
        self.write(data)

    def write(self, data: bytes) -> None:
        append(self.log, data)
        self.expected += data
        self.length = max(self.length, 0) + len(data)

    @precondition(lambda self: self.length >= 0)
    @rule()
    def rotate_rename(self) -> None:
        self.caught_up()
        self.log.rename(self.dir / f"train.log.{self.rotations}")
        self.rotations += 1
        self.length = -1

    @precondition(lambda self: self.length >= 0)
    @rule()
    def truncate(self) -> None:
        self.caught_up()
        os.truncate(self.log, 0)
        if self.length > 0:
            self.truncations += 1
            self.c.wait(
                lambda: self.follower.stats()[str(self.log)].truncations == self.truncations
            )
        self.length = 0

    @precondition(lambda self: self.length >= 0)
    @rule()
    def delete(self) -> None:
        self.caught_up()
        self.log.unlink()
        self.length = -1

    @precondition(lambda self: self.length < 0)
    @rule()
    def recreate(self) -> None:
        self.log.write_bytes(b"")
        self.length = 0

    @rule()
    def read(self) -> None:
        self.caught_up()
        self.check()

    def check(self) -> None:
        self.c.pump(0.02)
        assert self.c.data(str(self.log)) == bytes(self.expected)
        stats = self.follower.stats().get(str(self.log), FileStats())
        assert (stats.bytes, stats.lines) == (len(self.expected), self.expected.count(b"\n"))

    def teardown(self) -> None:
        try:
            self.caught_up()
            self.check()
        finally:
            self.follower.stop()
            shutil.rmtree(self.dir, ignore_errors=True)


FollowMachine.TestCase.settings = settings(max_examples=15, stateful_step_count=20, deadline=None)
test_follow_machine = FollowMachine.TestCase


WRITER = textwrap.dedent(
    """
    import os, sys

    log = sys.argv[1]
    n = 0
    written = 0

    def lines(handle, count):
        global n, written
        for _ in range(count):
            line = b"line %d\\n" % n
            handle.write(line)
            n += 1
            written += len(line)

    def sync():
        # Wait until the follower has read everything: a real truncation or deletion loses
        # the lines not yet read, and this test counts lines.
        print(written, flush=True)
        sys.stdin.readline()

    w = open(log, "ab", buffering=0)
    lines(w, 500)
    os.rename(log, log + ".1")           # rotation: the writer goes on with the old file ...
    lines(w, 50)
    w.close()
    w = open(log, "ab", buffering=0)     # ... and then reopens the name
    lines(w, 500)
    sync()
    os.truncate(log, 0)                  # copytruncate; the writer's O_APPEND goes on at 0
    lines(w, 300)
    sync()
    w.close()
    os.unlink(log)                       # deleted, and created again
    w = open(log, "ab", buffering=0)
    lines(w, 300)
    w.close()
    print(written, "done", flush=True)
    """
)


@pytest.mark.parametrize("poll", MODES)
def test_a_real_writer_process(poll, follow, tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    c = follow(log, poll=poll, drain_seconds=0.5)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert writer.stdin is not None and writer.stdout is not None
    try:
        while True:
            reply = writer.stdout.readline().split()
            assert reply, "the writer died"
            written = int(reply[0])
            c.wait(lambda n=written: len(c.data(str(log))) >= n, timeout=10)
            if reply[1:] == [b"done"]:
                break
            writer.stdin.write(b"\n")
            writer.stdin.flush()
    finally:
        writer.stdin.close()
        writer.wait(timeout=10)
    c.quiet(0.1)
    data = c.data(str(log))
    assert data.splitlines() == [b"line %d" % i for i in range(1650)]
    stats = c.follower.stats()[str(log)]
    assert (stats.bytes, stats.lines) == (written, 1650)
    assert stats.truncations == 1
    assert stats.rotations == 2
